// Stream-ordered operations over the staged path. A copy engine cannot carry them (the peer's
// memory is not mapped) and a host callback may not call CUDA, so each one is two stream nodes:
// a host function that hands the work to a worker thread, and a one-thread kernel that waits on a
// pinned flag the worker sets when the work is done (a kernel, not cuStreamWaitValue32, which
// stalls its whole hardware queue: the first version used it and hung on the GPU machine, likely
// behind that false dependency). Work after it on the stream starts only then. Both nodes can
// be captured into a CUDA graph; each replay runs the work again.
//
// A flag goes 0 (waiting) -> 1 (the worker is done) -> 2 (the kernel saw it and let go). A request
// enqueued outside a capture runs once: the worker frees it, and its flag is reused once it reads
// 2. A captured request and its flag live as long as this object (the graph may run it again).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "gpu/driver.hpp"

namespace axon::staged {

class StagedStreamOps {
 public:
  StagedStreamOps(const gpu::DriverApi& cu, CUcontext ctx, int myPe, unsigned long long timeoutNs);
  ~StagedStreamOps();  // finishes queued work, then stops the worker

  // Enqueues `work` (run on the worker thread, with this PE's context current) on `stream`.
  // `what` names it in error reports. With 4096 run-once ops in flight it first waits for one to
  // finish (Timeout past AXON_TIMEOUT), rather than allocate pinned memory in the middle.
  void enqueue(CUstream stream, std::function<void()> work, std::string what);

  // The first error a worker met since the last call (then cleared), or nullopt. The stream was
  // released so that it cannot hang; the host API reports the error at its next call.
  std::optional<Error> takeError();

 private:
  struct Request {
    StagedStreamOps* owner;
    std::function<void()> work;
    std::string what;
    volatile std::uint32_t* flag;  // pinned; the stream waits for it to become non-zero
    bool captured;                 // part of a graph: kept, as the graph may run it again
  };
  static void CUDA_CB onHost(void* request);
  // A free flag, set to 0, or nullptr when none is left. Called with mutex_ held.
  volatile std::uint32_t* takeFlag();
  // Allocates a block of pinned flags and adds them to free_. Called without mutex_.
  void addFlagBlock();
  void run();

  const gpu::DriverApi& cu_;
  CUcontext ctx_;
  int myPe_;
  unsigned long long timeoutNs_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Request*> queue_;
  // Captured requests (and their flags) live as long as this object: the graph may run them again
  // at any time. Others live until the worker has run them.
  std::vector<Request*> captured_;
  std::unordered_set<Request*> once_;
  std::vector<std::uint32_t*> flagBlocks_;
  std::vector<volatile std::uint32_t*> releasing_;  // run-once flags the kernel may still poll
  std::vector<volatile std::uint32_t*> free_;       // flags no kernel polls: new, or let go of (2)
  std::optional<Error> error_;
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace axon::staged
