#include "transport/staged/stage_proxy.hpp"

#include <chrono>
#include <cstring>

#include "axon/error.hpp"
#include "axon/onesided.hpp"
#include "core/log.hpp"
#include "gpu/copy_async.hpp"
#include "kernels/kernels.hpp"

namespace axon::staged {

StageProxy::StageProxy(const gpu::DriverApi& cu, CUcontext ctx, int myPe, int nPes, char* channels,
                       std::size_t chunk, char* heapBase, std::size_t heapCapacity, void* scratch)
    : cu_(cu),
      ctx_(ctx),
      myPe_(myPe),
      channels_(channels),
      chunk_(chunk),
      heapBase_(heapBase),
      heapCapacity_(heapCapacity),
      scratch_(scratch),
      senders_(nPes) {
  gpu::cuCheck(cu_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "stage proxy: cuStreamCreate");
}

StageProxy::~StageProxy() {
  for (auto& s : senders_) {
    for (auto& p : s.pending) cu_.cuEventDestroy(p.event);
  }
  for (CUevent e : freeEvents_) cu_.cuEventDestroy(e);
  if (stream_) cu_.cuStreamDestroy(stream_);
}

void StageProxy::fail(StageSlot& slot, std::uint64_t seq, int code, const std::string& why) {
  slot.status = code;
  std::memset(slot.error, 0, sizeof(slot.error));
  std::memcpy(slot.error, why.data(), std::min(why.size(), sizeof(slot.error) - 1));
  std::atomic_ref<std::uint64_t>(slot.done).store(seq, std::memory_order_release);
  log(LogLevel::Warn, myPe_, "staged path: " + why);
}

bool StageProxy::complete(int pe, Sender& s) {
  bool any = false;
  char* channel = channels_ + static_cast<std::size_t>(pe) * channelBytes(chunk_);
  while (!s.pending.empty()) {
    Pending& p = s.pending.front();
    CUresult r = cu_.cuEventQuery(p.event);
    if (r == CUDA_ERROR_NOT_READY) break;
    StageSlot& slot = slotsOf(channel)[p.slot];
    if (r != CUDA_SUCCESS) {
      fail(slot, p.seq, static_cast<int>(ErrorCode::Cuda), "copy failed: " + gpu::cuResultText(r));
    } else {
      std::atomic_ref<std::uint64_t>(slot.done).store(p.seq, std::memory_order_release);
    }
    freeEvents_.push_back(p.event);
    s.pending.pop_front();
    any = true;
  }
  return any;
}

void StageProxy::drain(int pe, Sender& s) {
  for (auto& p : s.pending) cu_.cuEventSynchronize(p.event);
  complete(pe, s);
}

bool StageProxy::serve(int pe, Sender& s) {
  char* channel = channels_ + static_cast<std::size_t>(pe) * channelBytes(chunk_);
  const int index = static_cast<int>(s.next % kStageSlots);
  StageSlot& slot = slotsOf(channel)[index];
  if (std::atomic_ref<std::uint64_t>(slot.ready).load(std::memory_order_acquire) != s.next) return false;
  const std::uint64_t seq = s.next++;
  const auto op = static_cast<StageOp>(slot.op);
  const std::size_t bytes = slot.bytes, offset = slot.offset;
  if (offset + bytes > heapCapacity_ || offset + bytes < offset || ((op == StageOp::Put || op == StageOp::Get) && bytes > chunk_)) {
    fail(slot, seq, static_cast<int>(ErrorCode::OutOfBounds),
         "request for GPU heap offset " + std::to_string(offset) + " (+" + std::to_string(bytes) + ") is out of range");
    return true;
  }
  char* target = heapBase_ + offset;
  try {
    if (op == StageOp::Put || op == StageOp::Get) {
      CUevent e;
      if (freeEvents_.empty()) {
        gpu::cuCheck(cu_.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
      } else {
        e = freeEvents_.back();
        freeEvents_.pop_back();
      }
      CUstream st = stream_;
      void* data = dataOf(channel, chunk_, index);
      try {
        gpu::cuCheck(op == StageOp::Put ? gpu::copyAsync(cu_, target, data, bytes, st)
                                        : gpu::copyAsync(cu_, data, target, bytes, st),
                     "staged copy");
        gpu::cuCheck(cu_.cuEventRecord(e, st), "cuEventRecord");
      } catch (...) {
        freeEvents_.push_back(e);  // the request fails below; its event serves the next one
        throw;
      }
      s.pending.push_back(Pending{seq, index, e});
      return true;
    }
    // Signals and atomics follow every copy before them from this sender.
    drain(pe, s);
    if (op == StageOp::Signal) {
      kernels::signal(stream_, reinterpret_cast<std::uint64_t*>(target), slot.operand, static_cast<SignalOp>(slot.sub));
    } else if (op == StageOp::Atomic) {
      kernels::atomic(stream_, static_cast<AtomicOp>(slot.sub), static_cast<int>(bytes), target, slot.operand,
                      slot.cond, scratch_);
    } else {
      fail(slot, seq, static_cast<int>(ErrorCode::Internal), "unknown request " + std::to_string(slot.op));
      return true;
    }
    gpu::cuCheck(cu_.cuStreamSynchronize(stream_), "staged signal/atomic");
    if (op == StageOp::Atomic) std::memcpy(&slot.result, scratch_, 8);
    std::atomic_ref<std::uint64_t>(slot.done).store(seq, std::memory_order_release);
  } catch (const Error& e) {
    fail(slot, seq, static_cast<int>(e.code()), e.what());
  }
  return true;
}

bool StageProxy::hasWork() const {
  for (int pe = 0; pe < static_cast<int>(senders_.size()); ++pe) {
    if (pe == myPe_) continue;
    const Sender& s = senders_[pe];
    if (!s.pending.empty()) return true;
    const StageSlot& slot = slotsOf(channels_ + static_cast<std::size_t>(pe) * channelBytes(chunk_))[s.next % kStageSlots];
    if (std::atomic_ref<const std::uint64_t>(slot.ready).load(std::memory_order_acquire) == s.next) return true;
  }
  return false;
}

bool StageProxy::progress() {
  std::unique_lock lock(serving_, std::try_to_lock);
  if (!lock || !hasWork()) return false;
  gpu::LibraryCudaCalls calls(cu_, ctx_);
  bool any = false;
  for (int pe = 0; pe < static_cast<int>(senders_.size()); ++pe) {
    if (pe == myPe_) continue;
    Sender& s = senders_[pe];
    // Keep up to kStageSlots copies of a sender in flight; retire finished ones in order.
    while (s.pending.size() < static_cast<std::size_t>(kStageSlots) && serve(pe, s)) any = true;
    any |= complete(pe, s);
  }
  if (any) pacer_.markWork();
  return any;
}

int StageProxy::armForSleep() {
  std::unique_lock lock(serving_, std::try_to_lock);
  if (!lock || hasWork()) return kBusy;
  return pacer_.sleepHint();
}

}  // namespace axon::staged
