#include "transport/staged/staged_stream_ops.hpp"

#include <atomic>

#include "core/log.hpp"
#include "kernels/kernels.hpp"

namespace axon::staged {
namespace {
constexpr std::size_t kFlagsPerBlock = 1024;
}

StagedStreamOps::StagedStreamOps(const gpu::DriverApi& cu, CUcontext ctx, int myPe, unsigned long long timeoutNs)
    : cu_(cu), ctx_(ctx), myPe_(myPe), timeoutNs_(timeoutNs) {
  // The first flags now: allocating pinned memory while a graph is being captured may be refused.
  newFlag();
  flagsUsed_ = 0;
  worker_ = std::thread([this] { run(); });
}

StagedStreamOps::~StagedStreamOps() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  ready_.notify_all();
  if (worker_.joinable()) worker_.join();
  for (Request* r : requests_) delete r;
  for (std::uint32_t* b : flagBlocks_) cu_.cuMemFreeHost(b);
}

volatile std::uint32_t* StagedStreamOps::newFlag() {
  if (flagBlocks_.empty() || flagsUsed_ == kFlagsPerBlock) {
    void* block = nullptr;
    gpu::cuCheck(cu_.cuMemHostAlloc(&block, kFlagsPerBlock * sizeof(std::uint32_t),
                                    CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
                 "staged stream op: cuMemHostAlloc of completion flags");
    flagBlocks_.push_back(static_cast<std::uint32_t*>(block));
    flagsUsed_ = 0;
  }
  std::uint32_t* f = flagBlocks_.back() + flagsUsed_++;
  *f = 0;
  return f;
}

void StagedStreamOps::enqueue(CUstream stream, std::function<void()> work, std::string what) {
  Request* r;
  {
    std::lock_guard lock(mutex_);
    r = new Request{this, std::move(work), std::move(what), newFlag()};
    requests_.push_back(r);
  }
  gpu::cuCheck(cu_.cuLaunchHostFunc(stream, &StagedStreamOps::onHost, r), r->what + ": cuLaunchHostFunc");
  kernels::waitFlag(stream, const_cast<const std::uint32_t*>(r->flag), timeoutNs_, myPe_);
}

// Runs in a CUDA callback thread: no CUDA calls here, only hand-off. The flag goes back to 0 for
// this run (a graph replays the same request), before the stream reaches its wait.
void CUDA_CB StagedStreamOps::onHost(void* request) {
  auto* r = static_cast<Request*>(request);
  std::atomic_ref<std::uint32_t>(*const_cast<std::uint32_t*>(r->flag)).store(0, std::memory_order_release);
  {
    std::lock_guard lock(r->owner->mutex_);
    r->owner->queue_.push_back(r);
  }
  r->owner->ready_.notify_one();
}

std::optional<Error> StagedStreamOps::takeError() {
  std::lock_guard lock(mutex_);
  std::optional<Error> e;
  e.swap(error_);
  return e;
}

void StagedStreamOps::run() {
  cu_.cuCtxSetCurrent(ctx_);
  // This thread's CUDA calls must not be refused while the program captures a graph in global
  // mode on another thread (the default mode restricts every thread).
  CUstreamCaptureMode relaxed = CU_STREAM_CAPTURE_MODE_RELAXED;
  cu_.cuThreadExchangeStreamCaptureMode(&relaxed);
  while (true) {
    Request* r;
    {
      std::unique_lock lock(mutex_);
      ready_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      r = queue_.front();
      queue_.pop_front();
    }
    // The stream must not hang on a failure: release it, and report the failure at the next
    // host call (and in the log now).
    auto fail = [&](ErrorCode code, const std::string& why) {
      std::lock_guard lock(mutex_);
      const std::string msg = r->what + " failed: " + why;
      if (!error_) error_.emplace(code, msg);
      log(LogLevel::Error, myPe_, msg);
    };
    try {
      r->work();
    } catch (const Error& e) {
      fail(e.code(), e.what());
    } catch (const std::exception& e) {
      fail(ErrorCode::Internal, e.what());
    }
    std::atomic_ref<std::uint32_t>(*const_cast<std::uint32_t*>(r->flag)).store(1, std::memory_order_release);
  }
}

}  // namespace axon::staged
