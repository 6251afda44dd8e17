#include "transport/staged/staged_transport.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "core/pe_context.hpp"
#include "gpu/copy_async.hpp"
#include "core/wait.hpp"

namespace axon::staged {

StagedTransport::StagedTransport(const gpu::DriverApi& cu, PeContext& rt, std::size_t chunk,
                                 std::function<char*(int)> channelOf)
    : cu_(cu), rt_(rt), chunk_(chunk), channelOf_(std::move(channelOf)), seq_(rt.nPes(), 0) {
  gpu::cuCheck(cu_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "staged path: cuStreamCreate");
  for (auto& e : events_) gpu::cuCheck(cu_.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "staged path: cuEventCreate");
}

StagedTransport::~StagedTransport() {
  for (auto& e : events_) if (e) cu_.cuEventDestroy(e);
  if (stream_) cu_.cuStreamDestroy(stream_);
}

void StagedTransport::publish(StageSlot& slot, std::uint64_t seq) {
  slot.status = 0;
  std::atomic_ref<std::uint64_t>(slot.ready).store(seq, std::memory_order_release);
}

void StagedTransport::awaitDone(int pe, StageSlot& slot, std::uint64_t seq, const char* api) {
  waitUntil(rt_, &slot.done, Cmp::Ge, seq, WaitSite{api, nullptr, -1, pe});
  if (slot.status != 0 && std::atomic_ref<std::uint64_t>(slot.done).load(std::memory_order_acquire) == seq) {
    throw Error(static_cast<ErrorCode>(slot.status),
                "PE " + std::to_string(rt_.myPe()) + ": " + api + " through the staged path: PE " +
                    std::to_string(pe) + " reported: " + std::string(slot.error, strnlen(slot.error, sizeof(slot.error))));
  }
}

StageSlot& StagedTransport::claim(int pe, StageSlot* slots, std::uint64_t seq, const char* api) {
  StageSlot& slot = slots[seq % kStageSlots];
  // The slot last carried request seq - kStageSlots: it is free once the proxy has done that one.
  if (seq > static_cast<std::uint64_t>(kStageSlots)) awaitDone(pe, slot, seq - kStageSlots, api);
  return slot;
}

void StagedTransport::put(const RemoteRef& dst, const void* src, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  const int pe = dst.pe;
  char* channel = channelOf_(pe);
  StageSlot* slots = slotsOf(channel);
  const std::size_t chunk = pipelineChunk(bytes, chunk_);
  const std::size_t n = (bytes + chunk - 1) / chunk;
  const std::uint64_t base = seq_[pe];
  auto lengthOf = [&](std::size_t k) { return std::min(chunk, bytes - k * chunk); };
  std::size_t issued = 0, published = 0;
  // Chunk k goes GPU -> slot on our stream while the proxy copies earlier chunks slot -> GPU on
  // its own: two streams, one per hop, each moving one chunk at a time at full bandwidth.
  while (published < n) {
    while (issued < n && issued - published < static_cast<std::size_t>(kStageSlots)) {
      const std::uint64_t seq = base + issued + 1;
      claim(pe, slots, seq, "put");
      CUstream s = stream_;
      gpu::cuCheck(gpu::copyAsync(cu_, dataOf(channel, chunk_, seq % kStageSlots),
                                  static_cast<const char*>(src) + issued * chunk, lengthOf(issued), s),
                   "staged put: copy to pinned host memory");
      gpu::cuCheck(cu_.cuEventRecord(events_[seq % kStageSlots], s), "staged put: cuEventRecord");
      ++issued;
    }
    const std::uint64_t seq = base + published + 1;
    StageSlot& slot = slots[seq % kStageSlots];
    gpu::cuCheck(cu_.cuEventSynchronize(events_[seq % kStageSlots]), "staged put: waiting for the copy");
    slot.op = static_cast<std::uint32_t>(StageOp::Put);
    slot.offset = dst.offset + published * chunk;
    slot.bytes = lengthOf(published);
    publish(slot, seq);
    seq_[pe] = seq;
    ++published;
  }
  // Complete at the target before returning, as the other transports' blocking put.
  for (std::uint64_t seq = base + 1 + (n > kStageSlots ? n - kStageSlots : 0); seq <= base + n; ++seq) {
    awaitDone(pe, slots[seq % kStageSlots], seq, "put");
  }
}

void StagedTransport::get(void* dst, const RemoteRef& src, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  const int pe = src.pe;
  char* channel = channelOf_(pe);
  StageSlot* slots = slotsOf(channel);
  const std::size_t chunk = pipelineChunk(bytes, chunk_);
  const std::size_t n = (bytes + chunk - 1) / chunk;
  const std::uint64_t base = seq_[pe];
  auto lengthOf = [&](std::size_t k) { return std::min(chunk, bytes - k * chunk); };
  auto request = [&](std::size_t k) {
    const std::uint64_t seq = base + k + 1;
    StageSlot& slot = claim(pe, slots, seq, "get");
    slot.op = static_cast<std::uint32_t>(StageOp::Get);
    slot.offset = src.offset + k * chunk;
    slot.bytes = lengthOf(k);
    publish(slot, seq);
    seq_[pe] = seq;
  };
  // Up to kStageSlots requests ahead; each chunk is copied out of its slot before the slot is
  // asked to carry the next one.
  std::size_t requested = 0;
  for (; requested < n && requested < static_cast<std::size_t>(kStageSlots); ++requested) request(requested);
  for (std::size_t k = 0; k < n; ++k) {
    const std::uint64_t seq = base + k + 1;
    awaitDone(pe, slots[seq % kStageSlots], seq, "get");
    CUstream s = stream_;
    gpu::cuCheck(gpu::copyAsync(cu_, static_cast<char*>(dst) + k * chunk, dataOf(channel, chunk_, seq % kStageSlots),
                                lengthOf(k), s),
                 "staged get: copy from pinned host memory");
    gpu::cuCheck(cu_.cuStreamSynchronize(s), "staged get: waiting for the copy");
    if (requested < n) request(requested++);
  }
}

std::uint64_t StagedTransport::singleRequest(int pe, const char* api,
                                             const std::function<void(StageSlot&)>& fill) {
  std::lock_guard lock(mutex_);
  StageSlot* slots = slotsOf(channelOf_(pe));
  const std::uint64_t seq = seq_[pe] + 1;
  StageSlot& slot = claim(pe, slots, seq, api);
  fill(slot);
  publish(slot, seq);
  seq_[pe] = seq;
  awaitDone(pe, slot, seq, api);
  return slot.result;
}

void StagedTransport::signal(const RemoteRef& sig, std::uint64_t value, SignalOp op) {
  singleRequest(sig.pe, "signal", [&](StageSlot& slot) {
    slot.op = static_cast<std::uint32_t>(StageOp::Signal);
    slot.sub = static_cast<std::uint32_t>(op);
    slot.offset = sig.offset;
    slot.bytes = 8;
    slot.operand = value;
  });
}

void StagedTransport::atomic(AtomicOp op, const RemoteRef& dst, std::size_t width, const void* operand,
                             const void* cond, void* result) {
  const std::uint64_t old = singleRequest(dst.pe, "atomic", [&](StageSlot& slot) {
    slot.op = static_cast<std::uint32_t>(StageOp::Atomic);
    slot.sub = static_cast<std::uint32_t>(op);
    slot.offset = dst.offset;
    slot.bytes = width;
    slot.operand = 0;
    slot.cond = 0;
    if (operand) std::memcpy(&slot.operand, operand, width);
    if (cond) std::memcpy(&slot.cond, cond, width);
  });
  if (result) std::memcpy(result, &old, width);
}

}  // namespace axon::staged
