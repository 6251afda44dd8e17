// Client of the key-value store. Thread-safe: threads may have requests outstanding at once (a
// rendezvous on one thread does not hold up another's), and goneRank() may be called from any
// thread. Every send and every wait is bounded by the timeout.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "axon/error.hpp"
#include "bootstrap/wire.hpp"
#include "core/net.hpp"
#include "core/secret.hpp"

namespace axon {

class StoreClient {
 public:
  // Connects, retrying while rank 0 is still starting, until `timeoutSec`, and introduces itself
  // with its rank and axon build (`version`, default: this library's), proving the job `key`
  // (bootstrap/store_handshake.hpp); `keySource` says where the key came from, for messages.
  // Throws Bootstrap naming the address when it cannot connect, or naming both builds when the
  // store's differs; PermissionDenied naming the address and the key's source when the store
  // refuses the proof, or does not prove the key itself (it is not this job's store).
  StoreClient(const net::HostPort& addr, const std::string& origin, int rank, double timeoutSec, const Secret& key,
              const std::string& keySource, std::string version = "");
  ~StoreClient();
  StoreClient(const StoreClient&) = delete;
  StoreClient& operator=(const StoreClient&) = delete;

  void set(const std::string& key, const std::string& value);
  // Waits until every key exists and returns their values in order. On timeout throws Timeout
  // naming `what`, the address and what is still missing (`labels[i]` names keys[i] in that
  // message, e.g. "PE 3"; the key itself when labels is empty); when a PE disconnected, PeerDead.
  std::vector<std::string> get(const std::vector<std::string>& keys, const std::string& what,
                               const std::vector<std::string>& labels = {});
  // Which of `keys` exist now.
  std::vector<bool> check(const std::vector<std::string>& keys);
  std::int64_t add(const std::string& key, std::int64_t delta);
  void del(const std::string& key);
  // Names member i in messages ("PE 3"); called only when a message needs it, so that a
  // rendezvous of many ranks builds no labels on its way.
  using MemberLabel = std::function<std::string(std::uint32_t)>;
  // Member `index` of the `members` members of `group` contributes `value`; returns every
  // member's value in index order once all are in. Timeout names the members still missing
  // (`label(i)` names member i, "member i" without one); PeerDead when a rank left without
  // finalize.
  std::vector<std::string> gather(const std::string& group, std::uint32_t members, std::uint32_t index,
                                  const std::string& value, const std::string& what, const MemberLabel& label = {});
  // Tells the server this rank leaves on purpose, then closes.
  void bye();

  // A rank the store reported gone (its connection closed without a goodbye), or -1. Reads the
  // store's events that have arrived, without blocking; when the store itself closed the
  // connection, rank 0 (whose process serves it). Cheap enough for every liveness check.
  int goneRank();
  // Why goneRank() answered what it did, for messages.
  std::string goneReason() const;

  const net::HostPort& addr() const { return addr_; }
  double timeoutSec() const { return timeoutSec_; }

 private:
  struct Reply {
    std::uint8_t status = 0;
    std::string body;
  };
  // Sends request `id` and waits for its reply body. Several threads may wait at once, each for
  // its own id: one of them reads the socket at a time and hands the others their replies.
  std::string roundTrip(const std::string& frame, std::uint32_t id, const std::string& what,
                        std::uint8_t& status);
  void send(const std::string& frame, const std::string& what);
  // Reads what the socket holds (waiting up to `waitMs`) and files it, as the one reader. Called
  // and returns with `lock` held; drops it while it waits on the socket.
  void readAsTheReader(std::unique_lock<std::mutex>& lock, int waitMs);
  // Files the complete frames of in_: replies for waiting requests, events. With mu_ held.
  void fileFrames();
  // The connection can no longer be used: later calls throw `code` with `why`. With mu_ held.
  void breakConnection(ErrorCode code, const std::string& why);
  // The store closed the connection: rank 0, which serves it, is gone. With mu_ held.
  void storeClosed();
  // Reads an answer's fields with `read`; a field cut short or corrupt throws Bootstrap naming
  // `what`.
  template <class Read>
  auto decodeAnswer(std::string_view body, const std::string& what, Read&& read) const {
    try {
      wire::ByteReader r(body);
      return read(r);
    } catch (const wire::Malformed& e) {
      throw Error(ErrorCode::Bootstrap, "PE " + std::to_string(rank_) + ": a corrupt answer to " + what +
                                            " from the axon store (" + e.what() + ")");
    }
  }
  [[noreturn]] void throwBroken(const std::string& what) const;
  std::vector<std::uint32_t> missingMembers(const std::string& group);
  // The values of a get or gather answer; PeerDead when the store says a rank is gone.
  std::vector<std::string> valuesOf(const std::string& body, std::uint8_t status, const std::string& what);
  // Rethrows `timeout` with the labels `missing` returns (asked of the store), or as it is when
  // the store cannot be asked.
  [[noreturn]] void throwTimeoutNaming(const Error& timeout, const std::function<std::vector<std::string>()>& missing);
  std::uint32_t nextId();
  // One connection's handshake: true when it is done; false when the store closed the connection
  // first (it was busy: try again). Throws when the store refused or could not be trusted.
  bool handshake(const Secret& key, const std::string& keySource, const std::string& version,
                 std::chrono::steady_clock::time_point deadline);

  net::HostPort addr_;
  std::string origin_;
  int rank_;
  double timeoutSec_;
  std::atomic<std::uint32_t> lastId_{0};

  std::mutex sendMu_;  // one frame at a time onto the socket
  mutable std::mutex mu_;  // everything below
  std::condition_variable arrived_;
  int fd_ = -1;
  bool reading_ = false;  // a thread is reading the socket
  bool broken_ = false;
  ErrorCode brokenCode_ = ErrorCode::Bootstrap;
  std::string brokenWhy_;
  std::string in_;
  std::set<std::uint32_t> waiting_;
  std::map<std::uint32_t, Reply> replies_;

  std::atomic<int> gone_{-1};
  std::string goneWhy_;
};

}  // namespace axon
