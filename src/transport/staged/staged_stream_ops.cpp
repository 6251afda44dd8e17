#include "transport/staged/staged_stream_ops.hpp"

#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstring>

#include "core/log.hpp"
#include "kernels/kernels.hpp"

namespace axon::staged {
namespace {
template <class T>
std::atomic_ref<T> atomicWord(T& w) {
  return std::atomic_ref<T>(w);
}
}  // namespace

StagedStreamOps::StagedStreamOps(const gpu::DriverApi& cu, CUcontext ctx, int myPe, unsigned long long timeoutNs)
    : cu_(cu), ctx_(ctx), myPe_(myPe), timeoutNs_(timeoutNs) {
  try {
    void* ring = nullptr;
    gpu::cuCheck(cu_.cuMemHostAlloc(&ring, sizeof(StreamOpRing), CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
                 "staged stream ops: cuMemHostAlloc of the doorbell ring");
    ring_ = static_cast<StreamOpRing*>(ring);
    std::memset(ring_, 0, sizeof(StreamOpRing));
    gpu::cuCheck(cu_.cuMemAlloc(&tickets_, sizeof(std::uint64_t)), "staged stream ops: cuMemAlloc of the ticket counter");
    gpu::cuCheck(cu_.cuMemsetD8Async(tickets_, 0, sizeof(std::uint64_t), nullptr), "staged stream ops: cuMemsetD8Async");
    gpu::cuCheck(cu_.cuStreamSynchronize(nullptr), "staged stream ops: zeroing the ticket counter");
  } catch (...) {
    releaseResources();
    throw;
  }
  worker_ = std::thread([this] { run(); });
}

StagedStreamOps::~StagedStreamOps() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
  for (Request* r : requests_) delete r;  // captured ones, and any a stream never ran
  releaseResources();
}

void StagedStreamOps::releaseResources() {
  if (tickets_) cu_.cuMemFree(tickets_);
  if (ring_) cu_.cuMemFreeHost(ring_);
  tickets_ = 0;
  ring_ = nullptr;
}

void StagedStreamOps::enqueue(CUstream stream, std::function<void()> work, std::string what) {
  CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
  gpu::cuCheck(cu_.cuStreamIsCapturing(stream, &capture), what + ": cuStreamIsCapturing");
  const bool captured = capture != CU_STREAM_CAPTURE_STATUS_NONE;
  std::uint64_t number;
  {
    std::lock_guard lock(mutex_);
    if (freeNumbers_.empty()) {
      number = requests_.size();
      requests_.push_back(nullptr);
    } else {
      number = freeNumbers_.back();
      freeNumbers_.pop_back();
    }
    requests_[number] = new Request{std::move(work), std::move(what), captured};
    if (captured) ++capturedCount_;
    else ++runOnceInFlight_;
  }
  wake_.notify_one();
  try {
    kernels::stagedStreamOp(stream, ring_, reinterpret_cast<std::uint64_t*>(tickets_), number, timeoutNs_, myPe_);
  } catch (...) {
    // Not launched (the launch's own status): nothing will post it.
    std::lock_guard lock(mutex_);
    forget(number);
    throw;
  }
  if (captured) holdWithGraph(stream, number);
}

void StagedStreamOps::holdWithGraph(CUstream stream, std::uint64_t number) {
  // Without the hold the request simply stays until this object goes: log, do not fail the call.
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  CUgraph graph = nullptr;
  CUresult r = cu_.cuStreamGetCaptureInfo(stream, &status, nullptr, &graph, nullptr, nullptr, nullptr);
  if (r != CUDA_SUCCESS || status != CU_STREAM_CAPTURE_STATUS_ACTIVE || !graph) {
    log(LogLevel::Debug, myPe_, "staged stream op: no capture graph to tie request " + std::to_string(number) + " to");
    return;
  }
  auto* hold = new GraphHold{released_, number};
  CUuserObject object = nullptr;
  r = cu_.cuUserObjectCreate(&object, hold, &StagedStreamOps::onGraphReleased, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC);
  if (r != CUDA_SUCCESS) {
    delete hold;
    log(LogLevel::Debug, myPe_, "staged stream op: cuUserObjectCreate: " + gpu::cuResultText(r));
    return;
  }
  r = cu_.cuGraphRetainUserObject(graph, object, 1, CU_GRAPH_USER_OBJECT_MOVE);
  if (r != CUDA_SUCCESS) {
    hold->cancelled = true;  // the graph does not hold it: releasing ours must not free the request
    cu_.cuUserObjectRelease(object, 1);
    log(LogLevel::Debug, myPe_, "staged stream op: cuGraphRetainUserObject: " + gpu::cuResultText(r));
  }
}

// On CUDA's internal thread, once nothing can run the request again: no CUDA calls, no waiting.
void CUDA_CB StagedStreamOps::onGraphReleased(void* p) {
  auto* hold = static_cast<GraphHold*>(p);
  if (!hold->cancelled) {
    if (auto released = hold->released.lock()) {
      std::lock_guard lock(released->mutex);
      released->numbers.push_back(hold->number);
      released->any.store(true, std::memory_order_release);
    }
  }
  delete hold;
}

void StagedStreamOps::forget(std::uint64_t number) {
  Request* r = requests_[number];
  if (r->captured) --capturedCount_;
  else --runOnceInFlight_;
  delete r;
  requests_[number] = nullptr;
  freeNumbers_.push_back(number);
}

void StagedStreamOps::reclaimReleased() {
  // Called on every idle poll of the worker: the flag keeps that to one atomic load.
  if (!released_->any.exchange(false, std::memory_order_acquire)) return;
  std::vector<std::uint64_t> numbers;
  {
    std::lock_guard lock(released_->mutex);
    numbers.swap(released_->numbers);
  }
  for (std::uint64_t n : numbers) {
    if (n < requests_.size() && requests_[n]) forget(n);
  }
  if (!numbers.empty()) {
    log(LogLevel::Debug, myPe_, "staged stream ops: released " + std::to_string(numbers.size()) +
                                    " captured requests with their graphs; " + std::to_string(capturedCount_) + " held");
  }
}

std::optional<Error> StagedStreamOps::takeError() {
  std::lock_guard lock(mutex_);
  std::optional<Error> e;
  e.swap(error_);
  return e;
}

bool StagedStreamOps::serveNext(std::uint64_t head) {
  const std::uint64_t slot = head % kStreamOpRingSlots;
  StreamOpRing::Entry& entry = ring_->entries[slot];
  if (atomicWord(entry.ticket).load(std::memory_order_acquire) != head + 1) return false;
  const std::uint64_t number = atomicWord(entry.request).load(std::memory_order_relaxed);
  atomicWord(ring_->taken).store(head + 1, std::memory_order_release);  // the slot may be reused
  Request* r = nullptr;
  {
    std::lock_guard lock(mutex_);
    if (number < requests_.size()) r = requests_[number];
  }
  // The stream must not hang on a failure: it is released below either way, and the failure is
  // reported at the next host call (and in the log now).
  auto fail = [&](ErrorCode code, const std::string& why) {
    std::lock_guard lock(mutex_);
    const std::string msg = (r ? r->what : std::string("stream-ordered staged operation")) + " failed: " + why;
    if (!error_) error_.emplace(code, msg);
    log(LogLevel::Error, myPe_, msg);
  };
  if (!r) {
    fail(ErrorCode::Internal, "the GPU posted request " + std::to_string(number) + ", which this PE does not hold");
  } else {
    try {
      r->work();
    } catch (const Error& e) {
      fail(e.code(), e.what());
    } catch (const std::exception& e) {
      fail(ErrorCode::Internal, e.what());
    }
  }
  atomicWord(ring_->done[slot]).store(head + 1, std::memory_order_release);
  if (r && !r->captured) {
    // Run once: nothing posts it again.
    std::lock_guard lock(mutex_);
    forget(number);
  }
  return true;
}

void StagedStreamOps::run() {
  cu_.cuCtxSetCurrent(ctx_);
  // This thread's CUDA calls must not be refused while the program captures a graph in global
  // mode on another thread (the default mode restricts every thread).
  CUstreamCaptureMode relaxed = CU_STREAM_CAPTURE_MODE_RELAXED;
  cu_.cuThreadExchangeStreamCaptureMode(&relaxed);
  using Clock = std::chrono::steady_clock;
  std::uint64_t head = 0;
  auto lastWork = Clock::now();
  std::optional<Clock::time_point> stopSeen;
  while (true) {
    if (serveNext(head)) {
      ++head;
      lastWork = Clock::now();
      continue;
    }
    {
      std::unique_lock lock(mutex_);
      reclaimReleased();
      if (stop_) {
        // Everything posted so far is served; run-once ops still queued on streams are waited
        // for, up to the timeout (finalize synchronizes the GPU first, so normally none is left).
        if (!stopSeen) stopSeen = Clock::now();
        const auto waited = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - *stopSeen).count();
        if (runOnceInFlight_ == 0 || static_cast<unsigned long long>(waited) >= timeoutNs_) {
          if (runOnceInFlight_ != 0) {
            log(LogLevel::Warn, myPe_, std::to_string(runOnceInFlight_) +
                                           " stream-ordered staged operations never reached the GPU before shutdown");
          }
          return;
        }
      } else if (runOnceInFlight_ == 0 && capturedCount_ == 0) {
        // Nothing can be posted until the next enqueue: sleep instead of polling.
        wake_.wait(lock, [&] { return stop_ || runOnceInFlight_ > 0 || capturedCount_ > 0; });
        lastWork = Clock::now();
        continue;
      }
    }
    // Polling: spin for a while (latency), then yield, then nap, as the staging proxy does. The
    // nap ends early when an op is enqueued.
    const auto idle = Clock::now() - lastWork;
    if (idle > std::chrono::milliseconds(20)) {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, std::chrono::microseconds(50));
    } else if (idle > std::chrono::microseconds(200)) {
      sched_yield();
    }
  }
}

}  // namespace axon::staged
