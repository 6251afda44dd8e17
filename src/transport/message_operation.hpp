// One send or receive in flight: what the caller asked for, and how it ended. Shared by the
// caller's Request, the engine (p2p/engine.hpp) and the channel moving its data, which may
// complete it from another thread (a UCX callback): the outcome is written before `state` is
// released, and read after it is acquired.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "axon/error.hpp"
#include "axon/p2p.hpp"

namespace axon::p2p {

struct Operation {
  enum class Kind : std::uint8_t { Send, Recv };
  static constexpr std::uint64_t kPending = 0, kDone = 1, kFailed = 2;

  Kind kind = Kind::Send;
  // Send: the data; recv: where it goes (bytes: the room there).
  void* buffer = nullptr;
  std::uint64_t bytes = 0;
  bool onDevice = false;
  // Send: the destination's team index; recv: the source's, or kAnySource. peerPe: its world
  // rank (-1 for kAnySource).
  int peer = 0;
  int peerPe = -1;
  int tag = 0;  // recv: or kAnyTag
  int context = 0;       // the matching context: the team's slot (stream-ordered: + Engine::kTeamSlots)
  bool streamOrdered = false;  // send_on_stream / recv_on_stream (the tag is the call's number)
  std::string teamName;  // for messages
  double timeoutSec = 0;  // the team's own bound on waits for it (Team::setTimeout); 0: AXON_TIMEOUT
  std::uint64_t id = 0;  // unique on this PE

  // Receive: what arrived (set before completion). Send: {dest, tag, bytes}.
  Status status;
  // Bytes landed so far, for receives filled in pieces.
  std::uint64_t landed = 0;

  bool done() const { return std::atomic_ref<const std::uint64_t>(state).load(std::memory_order_acquire) != kPending; }
  bool failed() const { return std::atomic_ref<const std::uint64_t>(state).load(std::memory_order_acquire) == kFailed; }
  // The first ending wins; a later one (a late answer) is dropped.
  void complete() {
    if (claim()) finish(kDone);
  }
  void fail(ErrorCode code, std::string message) {
    if (!claim()) return;
    code_ = code;
    error_ = std::move(message);
    finish(kFailed);
  }
  // Throws the failure, if any.
  void rethrow() const {
    if (failed()) throw Error(code_, error_);
  }
  // "recv from source 1 (PE 1), tag 7, of up to 64 B on team world": for messages.
  std::string describe() const;

  // The word waits watch (kPending until it ends).
  std::uint64_t state = kPending;

 private:
  bool claim() { return !claimed_.exchange(true, std::memory_order_acq_rel); }
  void finish(std::uint64_t how) { std::atomic_ref<std::uint64_t>(state).store(how, std::memory_order_release); }
  std::atomic<bool> claimed_{false};
  ErrorCode code_ = ErrorCode::Internal;
  std::string error_;
};

}  // namespace axon::p2p
