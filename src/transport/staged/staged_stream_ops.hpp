// Stream-ordered operations over the staged path. A copy engine cannot carry them (the peer's
// memory is not mapped) and a host callback may not call CUDA, so each one is two stream nodes:
// a host function that hands the work to a worker thread, and a one-thread kernel that waits on a
// pinned flag the worker sets when the work is done (a kernel, not cuStreamWaitValue32, which
// stalls its whole hardware queue: the first version used it and hung on the GPU machine, likely
// behind that false dependency). Work after it on the stream starts only then. Both nodes can
// be captured into a CUDA graph; each replay runs the work again.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "gpu/driver.hpp"

namespace axon::staged {

class StagedStreamOps {
 public:
  StagedStreamOps(const gpu::DriverApi& cu, CUcontext ctx, int myPe, unsigned long long timeoutNs);
  ~StagedStreamOps();  // finishes queued work, then stops the worker

  // Enqueues `work` (run on the worker thread, with this PE's context current) on `stream`.
  // `what` names it in error reports.
  void enqueue(CUstream stream, std::function<void()> work, std::string what);

  // The first error a worker met since the last call (then cleared), or nullopt. The stream was
  // released so that it cannot hang; the host API reports the error at its next call.
  std::optional<Error> takeError();

 private:
  struct Request {
    StagedStreamOps* owner;
    std::function<void()> work;
    std::string what;
    volatile std::uint32_t* flag;  // pinned; the stream waits for it to become 1
  };
  static void CUDA_CB onHost(void* request);
  volatile std::uint32_t* newFlag();
  void run();

  const gpu::DriverApi& cu_;
  CUcontext ctx_;
  int myPe_;
  unsigned long long timeoutNs_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<Request*> queue_;
  // Every request (and its flag) lives as long as this object: a captured graph may run it
  // again at any time.
  std::vector<Request*> requests_;
  std::vector<std::uint32_t*> flagBlocks_;
  std::size_t flagsUsed_ = 0;
  std::optional<Error> error_;
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace axon::staged
