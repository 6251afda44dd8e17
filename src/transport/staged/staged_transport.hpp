// The sender's side of the staged path: GPU memory of a PE whose GPU heap this GPU cannot map
// moves through that PE's channel in pinned host memory, chunk by chunk, with up to kStageSlots
// chunks in flight: this side copies GPU -> slot on its stream while the target's proxy
// (stage_proxy.hpp) copies earlier chunks slot -> GPU on its own.
#pragma once

#include <functional>
#include <mutex>
#include <vector>

#include "gpu/driver.hpp"
#include "transport/staged/stage_channel.hpp"
#include "transport/route.hpp"
#include "transport/transport.hpp"

namespace axon {
class PeContext;
}

namespace axon::staged {

class StagedTransport final : public Transport {
 public:
  // `channelOf(pe)` is where this process sees its own channel in PE pe's host heap.
  StagedTransport(const gpu::DriverApi& cu, PeContext& rt, std::size_t chunk, std::function<char*(int)> channelOf);
  ~StagedTransport() override;

  const char* name() const noexcept override { return routeName(Route::Staged); }
  // Its stream-ordered calls are the host's, run on the stream host worker (the default).

  bool reaches(int pe) const noexcept override { return true; }

  void put(const RemoteRef& dst, const void* src, std::size_t bytes) override;
  void get(void* dst, const RemoteRef& src, std::size_t bytes) override;
  void signal(const RemoteRef& sig, std::uint64_t value, SignalOp op) override;
  void atomic(AtomicOp op, const RemoteRef& dst, std::size_t width, const void* operand,
              const void* cond, void* result) override;
  // Every call completes at the target before it returns: nothing is left to fence or quiet.
  void fence() override {}
  void quiet() override {}

 private:
  // Waits (bounded, naming the target) until the proxy has completed request `seq` in `slot`,
  // then throws the proxy's error if it reported one.
  void awaitDone(int pe, StageSlot& slot, std::uint64_t seq, const char* api);
  void publish(StageSlot& slot, std::uint64_t seq);
  // The slot for request `seq` to `pe`, once the proxy has finished the request that used it last.
  StageSlot& claim(int pe, StageSlot* slots, std::uint64_t seq, const char* api);
  // One request (signal, atomic): `fill` writes it into its slot; returns when it is done.
  // Returns the slot's result word, read before another thread can reuse the slot.
  std::uint64_t singleRequest(int pe, const char* api, const std::function<void(StageSlot&)>& fill);

  const gpu::DriverApi& cu_;
  PeContext& rt_;
  // The host API and the stream worker (gpu/stream_host_work.hpp) both send through this transport;
  // one transfer at a time keeps each channel's requests in sequence.
  std::mutex mutex_;
  std::size_t chunk_;
  std::function<char*(int)> channelOf_;
  // [pe] the last request number published to pe, advanced at each publish: the proxy serves
  // requests strictly in order, so a call that fails halfway (a timeout, a copy error) must leave
  // the next call to start right after what it published, never reuse a number the proxy has
  // already served (its slot would look done, with stale data) or skip one (the proxy would wait
  // for it forever).
  std::vector<std::uint64_t> seq_;
  CUstream stream_ = nullptr;  // one stream: chunks complete in order, at full bandwidth each
  CUevent events_[kStageSlots] = {};
};

}  // namespace axon::staged
