#include "transport/staged/staged_stream_ops.hpp"

#include <atomic>
#include <chrono>
#include <thread>

#include "core/log.hpp"
#include "kernels/kernels.hpp"

namespace axon::staged {
namespace {
// Flags per pinned block. The first block is allocated with the object; another only when captured
// ops hold every flag. Run-once ops wait for a flag instead (below): allocating pinned memory
// waits for the whole device, which may be running the very ops that would free one.
constexpr std::size_t kFlagsPerBlock = 4096;
}

StagedStreamOps::StagedStreamOps(const gpu::DriverApi& cu, CUcontext ctx, int myPe, unsigned long long timeoutNs)
    : cu_(cu), ctx_(ctx), myPe_(myPe), timeoutNs_(timeoutNs) {
  // The first flags now; later blocks as needed (addFlagBlock).
  addFlagBlock();
  worker_ = std::thread([this] { run(); });
}

StagedStreamOps::~StagedStreamOps() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  ready_.notify_all();
  if (worker_.joinable()) worker_.join();
  for (Request* r : captured_) delete r;
  for (Request* r : once_) delete r;  // enqueued, but their stream never ran them
  for (std::uint32_t* b : flagBlocks_) cu_.cuMemFreeHost(b);
}

void StagedStreamOps::addFlagBlock() {
  // Called without mutex_: the allocation may wait for the GPU, whose host nodes (onHost) take
  // it. This thread may be capturing a graph in global mode, which refuses cuMemHostAlloc
  // ("unsafe" during a capture); relaxed mode allows it, and the allocation is not in the graph.
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
  cu_.cuThreadExchangeStreamCaptureMode(&mode);
  void* block = nullptr;
  const CUresult r = cu_.cuMemHostAlloc(&block, kFlagsPerBlock * sizeof(std::uint32_t),
                                        CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
  cu_.cuThreadExchangeStreamCaptureMode(&mode);  // back to the caller's mode
  gpu::cuCheck(r, "staged stream op: cuMemHostAlloc of completion flags");
  auto* flags = static_cast<std::uint32_t*>(block);
  std::lock_guard lock(mutex_);
  flagBlocks_.push_back(flags);
  for (std::size_t i = 0; i < kFlagsPerBlock; ++i) free_.push_back(flags + i);
}

volatile std::uint32_t* StagedStreamOps::takeFlag() {
  // When no flag is free, every flag whose kernel has let go (2) is free again: one pass per
  // refill, not one per enqueue over every op in flight.
  if (free_.empty()) {
    for (std::size_t i = 0; i < releasing_.size();) {
      if (std::atomic_ref<std::uint32_t>(*const_cast<std::uint32_t*>(releasing_[i])).load(std::memory_order_acquire) == 2) {
        free_.push_back(releasing_[i]);
        releasing_[i] = releasing_.back();
        releasing_.pop_back();
      } else {
        ++i;
      }
    }
  }
  if (free_.empty()) return nullptr;
  volatile std::uint32_t* f = free_.back();
  free_.pop_back();
  *f = 0;
  return f;
}

void StagedStreamOps::enqueue(CUstream stream, std::function<void()> work, std::string what) {
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  gpu::cuCheck(cu_.cuStreamIsCapturing(stream, &capture), what + ": cuStreamIsCapturing");
  const bool captured = capture != CU_STREAM_CAPTURE_STATUS_NONE;
  Request* r = nullptr;
  volatile std::uint32_t* flag = nullptr;
  const auto start = std::chrono::steady_clock::now();
  while (!r) {
    bool awaitRelease = false;
    {
      std::lock_guard lock(mutex_);
      flag = takeFlag();
      if (flag) {
        r = new Request{this, std::move(work), what, flag, captured};
        if (captured) captured_.push_back(r);
        else once_.insert(r);
        break;
      }
      // Run-once ops in flight (queued or done but still polled) will each give a flag back.
      awaitRelease = !captured && (!once_.empty() || !releasing_.empty());
    }
    if (!awaitRelease) {
      addFlagBlock();
      continue;
    }
    // Every flag is in flight: wait for the GPU to let go of one (back-pressure), bounded.
    const auto waited = std::chrono::steady_clock::now() - start;
    if (timeoutNs_ != 0 && static_cast<unsigned long long>(std::chrono::duration_cast<std::chrono::nanoseconds>(waited).count()) > timeoutNs_) {
      throw Error(ErrorCode::Timeout,
                  "PE " + std::to_string(myPe_) + ": " + what + ": " + std::to_string(kFlagsPerBlock) +
                      " or more stream-ordered staged operations are in flight and none completed within AXON_TIMEOUT");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  // From here a run-once request may be run and freed by the worker at any time: only the copies
  // above are used.
  const CUresult launched = cu_.cuLaunchHostFunc(stream, &StagedStreamOps::onHost, r);
  if (launched != CUDA_SUCCESS && !captured) {
    std::lock_guard lock(mutex_);
    once_.erase(r);
    delete r;
    free_.push_back(flag);  // no kernel will poll it
  }
  gpu::cuCheck(launched, what + ": cuLaunchHostFunc");
  kernels::waitFlag(stream, const_cast<std::uint32_t*>(flag), timeoutNs_, myPe_);
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
    if (!r->captured) {
      // Run once: nothing calls it again. Its flag is reused after the kernel sets it to 2.
      std::lock_guard lock(mutex_);
      releasing_.push_back(r->flag);
      once_.erase(r);
      delete r;
    }
  }
}

}  // namespace axon::staged
