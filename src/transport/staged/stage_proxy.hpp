// The target's side of the staged path: a client of the PE's progress engine that serves the
// requests senders leave in this PE's channels (this PE's host heap), copying between the pinned
// slots and this PE's GPU heap, and applying signals and atomics to it. The engine's thread polls
// it, and so does every wait of this PE. Copies complete in order per sender; each request's
// completion is published with a release store of its sequence number.
#pragma once

#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "core/progress_engine.hpp"
#include "gpu/driver.hpp"
#include "core/poll_pacer.hpp"
#include "transport/staged/stage_channel.hpp"

namespace axon::staged {

class StageProxy final : public ProgressClient {
 public:
  // `channels` is this PE's channel area (sender p's channel at p * channelBytes(chunk));
  // `heapBase`/`heapCapacity` this PE's GPU heap; `scratch` 8 bytes of pinned memory.
  StageProxy(const gpu::DriverApi& cu, CUcontext ctx, int myPe, int nPes, char* channels, std::size_t chunk,
             char* heapBase, std::size_t heapCapacity, void* scratch);
  // The progress engine must no longer poll it (its thread stopped, or it was never added).
  ~StageProxy() override;

  bool progress() override;
  int armForSleep() override;

 private:
  struct Pending {
    std::uint64_t seq;
    int slot;
    CUevent event;
  };
  struct Sender {
    std::uint64_t next = 1;  // the next request number expected
    std::deque<Pending> pending;
  };

  bool hasWork() const;                // a request or a copy in flight (no CUDA call)
  bool serve(int pe, Sender& s);      // true if it did anything
  bool complete(int pe, Sender& s);   // retires finished copies in order
  void drain(int pe, Sender& s);      // waits for every copy in flight of this sender
  void fail(StageSlot& slot, std::uint64_t seq, int code, const std::string& why);

  const gpu::DriverApi& cu_;
  CUcontext ctx_;
  int myPe_;
  char* channels_;
  std::size_t chunk_;
  char* heapBase_;
  std::size_t heapCapacity_;
  void* scratch_;
  std::vector<Sender> senders_;
  std::vector<CUevent> freeEvents_;
  CUstream stream_ = nullptr;  // one stream: chunks complete in order, at full bandwidth each
  std::mutex serving_;         // one thread serves at a time; others move on
  PollPacer pacer_;
};

}  // namespace axon::staged
