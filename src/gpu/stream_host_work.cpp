#include "gpu/stream_host_work.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>

#include "core/log.hpp"
#include "core/wait.hpp"
#include "kernels/kernels.hpp"

namespace axon::gpu {
namespace {
template <class T>
std::atomic_ref<T> atomicWord(T& w) {
  return std::atomic_ref<T>(w);
}
}  // namespace

StreamHostWork::StreamHostWork(const gpu::DriverApi& cu, CUcontext ctx, int myPe, unsigned long long timeoutNs)
    : cu_(cu), ctx_(ctx), myPe_(myPe), timeoutNs_(timeoutNs) {
  try {
    void* ring = nullptr;
    gpu::cuCheck(cu_.cuMemHostAlloc(&ring, sizeof(kernels::StreamOpRing), CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
                 "staged stream ops: cuMemHostAlloc of the doorbell ring");
    ring_ = static_cast<kernels::StreamOpRing*>(ring);
    std::memset(ring_, 0, sizeof(kernels::StreamOpRing));
    gpu::cuCheck(cu_.cuMemAlloc(&tickets_, sizeof(std::uint64_t)), "staged stream ops: cuMemAlloc of the ticket counter");
    gpu::cuCheck(cu_.cuMemsetD8Async(tickets_, 0, sizeof(std::uint64_t), nullptr), "staged stream ops: cuMemsetD8Async");
    gpu::cuCheck(cu_.cuStreamSynchronize(nullptr), "staged stream ops: zeroing the ticket counter");
    wakeFd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wakeFd_ < 0) throw SystemError("staged stream ops: eventfd", errno);
  } catch (...) {
    releaseResources();
    throw;
  }
}

StreamHostWork::~StreamHostWork() {
  // Run-once ops still queued on streams are released, up to the timeout, without their work:
  // the runtime that work needs is being taken down (finalize synchronizes the GPU first, so
  // normally none is left), and a stream must not hang on them.
  shuttingDown_ = true;
  gpu::LibraryCudaCalls calls(cu_, ctx_);
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  // Work under way is not waited for (what it waits on is going too): its streams are released.
  for (UnderWay& u : underWay_) {
    Request* r = requestOf(u.number);
    recordFailure(r, ErrorCode::NotInitialized, "not finished: finalize came first");
    finishTicket(u.ticket, u.number, r);
  }
  underWay_.clear();
  while (true) {
    if (serveNext(head_)) {
      ++head_;
      continue;
    }
    std::size_t left;
    {
      std::lock_guard lock(mutex_);
      left = runOnceInFlight_;
    }
    if (left == 0) break;
    const auto waited = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
    if (static_cast<unsigned long long>(waited) >= timeoutNs_) {
      log(LogLevel::Warn, myPe_, std::to_string(left) + " stream-ordered host operations never reached the GPU before shutdown");
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  for (Request* r : requests_) delete r;  // captured ones, and any a stream never ran
  releaseResources();
}

void StreamHostWork::releaseResources() {
  if (tickets_) cu_.cuMemFree(tickets_);
  if (ring_) cu_.cuMemFreeHost(ring_);
  if (wakeFd_ >= 0) ::close(wakeFd_);
  tickets_ = 0;
  ring_ = nullptr;
  wakeFd_ = -1;
}

void StreamHostWork::enqueue(CUstream stream, std::function<void()> work, std::string what) {
  enqueueAsync(
      stream,
      [work = std::move(work)]() -> Completion {
        work();
        return {};
      },
      std::move(what));
}

void StreamHostWork::enqueueAsync(CUstream stream, std::function<Completion()> start, std::string what) {
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
    requests_[number] = new Request{std::move(start), std::move(what), captured};
    if (captured) ++capturedCount_;
    else ++runOnceInFlight_;
  }
  // The engine polls without pause for a while from now, and wakes if it slept on the descriptor.
  pacer_.markWork();
  const std::uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wakeFd_, &one, sizeof(one));
  try {
    // The kernel gives up well after the host work's own bounded waits would have: the host's
    // error, which names the operation, releases the stream first; the kernel's trap is the last
    // resort for a worker that stopped.
    // A team may bound its host work longer than AXON_TIMEOUT (Team::setTimeout): the longest such.
    const unsigned long long hostNs =
        std::max(timeoutNs_, static_cast<unsigned long long>(longestTeamBound() * 1e9));
    const unsigned long long kernelTimeoutNs = timeoutNs_ ? 2 * hostNs + 10'000'000'000ull : 0;
    kernels::stagedStreamOp(stream, ring_, reinterpret_cast<std::uint64_t*>(tickets_), number, kernelTimeoutNs, myPe_);
  } catch (...) {
    // Not launched (the launch's own status): nothing will post it.
    std::lock_guard lock(mutex_);
    forget(number);
    throw;
  }
  if (captured) holdWithGraph(stream, number);
}

void StreamHostWork::holdWithGraph(CUstream stream, std::uint64_t number) {
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
  r = cu_.cuUserObjectCreate(&object, hold, &StreamHostWork::onGraphReleased, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC);
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
void CUDA_CB StreamHostWork::onGraphReleased(void* p) {
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

void StreamHostWork::forget(std::uint64_t number) {
  Request* r = requests_[number];
  if (r->captured) --capturedCount_;
  else --runOnceInFlight_;
  delete r;
  requests_[number] = nullptr;
  freeNumbers_.push_back(number);
}

void StreamHostWork::reclaimReleased() {
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

std::optional<Error> StreamHostWork::takeError() {
  std::lock_guard lock(mutex_);
  std::optional<Error> e;
  e.swap(error_);
  return e;
}

bool StreamHostWork::serveNext(std::uint64_t head) {
  const std::uint64_t slot = head % kernels::kStreamOpRingSlots;
  kernels::StreamOpRing::Entry& entry = ring_->entries[slot];
  if (atomicWord(entry.ticket).load(std::memory_order_acquire) != head + 1) return false;
  // The slot's previous ticket must have ended before this one is read (its done word only grows).
  if (head >= kernels::kStreamOpRingSlots) {
    const std::uint64_t previous = head - kernels::kStreamOpRingSlots;
    for (const UnderWay& u : underWay_) {
      if (u.ticket == previous) return false;
    }
  }
  const std::uint64_t number = atomicWord(entry.request).load(std::memory_order_relaxed);
  atomicWord(ring_->taken).store(head + 1, std::memory_order_release);  // the slot may be reused
  Request* r = requestOf(number);
  // The stream must not hang on a failure: it is released either way, and the failure is
  // reported at the next host call (and in the log now).
  Completion completion;
  if (!r) {
    recordFailure(r, ErrorCode::Internal, "the GPU posted request " + std::to_string(number) + ", which this PE does not hold");
  } else if (shuttingDown_) {
    recordFailure(r, ErrorCode::NotInitialized, "not run: it reached the GPU after finalize");
  } else {
    try {
      completion = r->start();
      if (completion && completion()) completion = nullptr;
    } catch (const Error& e) {
      recordFailure(r, e.code(), e.what());
      completion = nullptr;
    } catch (const std::exception& e) {
      recordFailure(r, ErrorCode::Internal, e.what());
      completion = nullptr;
    }
  }
  if (completion) {
    underWay_.push_back(UnderWay{head, number, std::move(completion)});
  } else {
    finishTicket(head, number, r);
  }
  return true;
}

bool StreamHostWork::pollUnderWay() {
  bool any = false;
  for (std::size_t i = 0; i < underWay_.size();) {
    UnderWay& u = underWay_[i];
    bool ended = false;
    Request* r = requestOf(u.number);
    try {
      ended = u.completion();
    } catch (const Error& e) {
      recordFailure(r, e.code(), e.what());
      ended = true;
    } catch (const std::exception& e) {
      recordFailure(r, ErrorCode::Internal, e.what());
      ended = true;
    }
    if (!ended) {
      ++i;
      continue;
    }
    finishTicket(u.ticket, u.number, r);
    underWay_.erase(underWay_.begin() + static_cast<std::ptrdiff_t>(i));
    any = true;
  }
  return any;
}

StreamHostWork::Request* StreamHostWork::requestOf(std::uint64_t number) {
  std::lock_guard lock(mutex_);
  return number < requests_.size() ? requests_[number] : nullptr;
}

void StreamHostWork::recordFailure(Request* r, ErrorCode code, const std::string& why) {
  std::lock_guard lock(mutex_);
  const std::string msg = (r ? r->what : std::string("stream-ordered host operation")) + " failed: " + why;
  if (!error_) error_.emplace(code, msg);
  log(LogLevel::Error, myPe_, msg);
}

void StreamHostWork::finishTicket(std::uint64_t ticket, std::uint64_t number, Request* r) {
  atomicWord(ring_->done[ticket % kernels::kStreamOpRingSlots]).store(ticket + 1, std::memory_order_release);
  if (r && !r->captured) {
    // Run once: nothing posts it again.
    std::lock_guard lock(mutex_);
    forget(number);
  }
}

bool StreamHostWork::progress() {
  if (!threadReady_) {
    gpu::adoptLibraryThread(cu_, ctx_);  // the engine's thread
    threadReady_ = true;
  }
  bool any = !underWay_.empty() && pollUnderWay();
  if (serveNext(head_)) {
    ++head_;
    any = true;
  }
  // Work under way keeps the engine polling (the pacer's hint), without spinning on it forever.
  if (any) {
    pacer_.markWork();
    return true;
  }
  if (!underWay_.empty()) return false;
  std::lock_guard lock(mutex_);
  reclaimReleased();
  return false;
}

int StreamHostWork::armForSleep() {
  {
    std::lock_guard lock(mutex_);
    if (runOnceInFlight_ == 0 && capturedCount_ == 0) {
      // Nothing can be posted until the next enqueue, which writes the descriptor. Emptied
      // first: a write from before this check is seen as the queue itself.
      std::uint64_t drained;
      while (::read(wakeFd_, &drained, sizeof(drained)) > 0) {
      }
      return wakeFd_;
    }
  }
  return pacer_.sleepHint();
}

}  // namespace axon::gpu
