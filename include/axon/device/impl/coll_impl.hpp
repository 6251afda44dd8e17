// Bodies of the device collectives (declared in axon/device/collectives.hpp). One engine serves
// them all, and the library's own stream-ordered kernels are built from it (one block per channel).
//
// A call on a channel runs in rounds, and in every round every member sends every other member
// its call record (so a different call is reported, not waited out) and the data it owes it, then
// receives the same from every other member and consumes it (reduces or copies it into dst).
// Two protocols carry a round (CollRecord::proto, chosen by size, the same on every member):
//   Simple (coll_simple_impl.hpp): plain pushes into slot [channel][r % 2][me], then the record
//     and a release store of the round number into each receiver's ready word; the receiver
//     waits with an acquire. Full bandwidth, one system-scope release per round.
//   LL (coll_ll_impl.hpp): data and the round's flag in the same 8-byte words of LL slot
//     [channel][r % 2][me]; receivers poll the data itself. Half the bandwidth, no fences: the
//     lowest latency, for small calls.
//   Direct (coll_direct_impl.hpp): for buffers on the symmetric heap, two rounds of signals around
//     loads and stores of the members' buffers themselves; as Simple when the buffers do not allow
//     it. Larger calls.
// A team that spans nodes has no workspace: its calls go whole to the host proxy
// (coll_proxy_impl.hpp).
// Because every member sends to every other in every round, no member gets more than one round
// ahead of any other; so when a member writes round r + 2 into half r % 2, every receiver has
// sent round r + 1, that is, has finished consuming round r. Two halves, no acknowledgements.
// The one exception, the chained reduce (coll_chain_impl.hpp), signals neighbours only, and keeps
// the halves safe with acknowledgements.
//
// Rounds are counted per channel in this PE's own workspace (rounds[channel]), so kernels captured
// in a CUDA graph count on when the graph is replayed.
#pragma once

#include "axon/device/coll_types.hpp"
#include "axon/device/impl/coll_chain_impl.hpp"
#include "axon/device/impl/coll_common_impl.hpp"
#include "axon/device/impl/coll_direct_impl.hpp"
#include "axon/device/impl/coll_ll_impl.hpp"
#include "axon/device/impl/coll_proxy_impl.hpp"
#include "axon/device/impl/coll_simple_impl.hpp"
#include "axon/device/impl/reduce_impl.hpp"

namespace axon {
namespace device {
namespace detail {

template <class T, ReduceOp Op>
AXON_DEVICE_INLINE bool collRunReduce(const CollHandle& h, const CollJob& job) {
  if (job.record.algo == kAlgoChain) return collRunReduceChain<T, Op>(h, job);  // on Simple's slots
  switch (job.record.proto) {
    case kProtoLl: return collRunReduceLl<T, Op>(h, job);
    case kProtoDirect: return collRunReduceDirect<T, Op>(h, job);
    default: return collRunReduceSimple<T, Op>(h, job);
  }
}

AXON_DEVICE_INLINE bool collRunCopy(const CollHandle& h, const CollJob& job) {
  if (collThroughProxy(h)) return collRunThroughProxy(h, job);
  switch (job.record.proto) {
    case kProtoLl: return collRunCopyLl(h, job);
    case kProtoDirect: return collRunCopyDirect(h, job);
    default: return collRunCopySimple(h, job);
  }
}

template <class T>
AXON_DEVICE_INLINE bool collRunReduceOp(const CollHandle& h, const CollJob& job, ReduceOp op) {
  static_assert(ReducibleType<T>::value, "");
  if (collThroughProxy(h)) return collRunThroughProxy(h, job);
  switch (op) {
    case ReduceOp::Sum: return collRunReduce<T, ReduceOp::Sum>(h, job);
    case ReduceOp::Prod: return collRunReduce<T, ReduceOp::Prod>(h, job);
    case ReduceOp::Min: return collRunReduce<T, ReduceOp::Min>(h, job);
    case ReduceOp::Max: return collRunReduce<T, ReduceOp::Max>(h, job);
  }
  return false;
}

// The count a copy collective records: elements of a known type, else bytes.
template <class T>
AXON_DEVICE_INLINE SizeT recordCount(SizeT count) {
  return DataTypeOf<T>::known ? count : count * sizeof(T);
}

// A device-callable call: the whole count on one channel.
inline AXON_DEVICE_NOINLINE void collBadChannel(const CollHandle& h, int channel) {
  const bool reporter = beginFatalReport();
  if (reporter) {
    printf("axon: PE %d: device collective on channel %d, but the team's workspace has channels "
           "[0, %d) (AXON_COLL_GPU_CHANNELS)\n",
           h.myPe, channel, h.channels);
  }
  endFatalReport(reporter);
}

// A root outside the team (broadcast, reduce): the host API refuses it with InvalidPe; here every
// member would take itself for a non-root and read a slot nobody writes.
inline AXON_DEVICE_NOINLINE void collBadRoot(const CollHandle& h, unsigned kind, int root) {
  const bool reporter = beginFatalReport();
  if (reporter) {
    printf("axon: PE %d: device %s with root %d, but the team has members [0, %d)\n", h.myPe,
           kind == kCollBroadcast ? "broadcast" : "reduce", root, h.size);
  }
  endFatalReport(reporter);
}

// The largest block a device-callable call sends on LL: one LL round's worth at most. Such a call
// runs on the caller's one block, so a larger one would take several LL rounds one after another,
// each a trip over NVLink, where one Simple round moves it all.
AXON_DEVICE_INLINE unsigned long long collDeviceLlMax(const CollHandle& h) {
  return h.llMaxBytes < h.llChunkBytes ? h.llMaxBytes : h.llChunkBytes;
}

// `blockBytes`: one member's block in bytes, which picks the protocol.
AXON_DEVICE_INLINE CollJob collDeviceJob(const CollHandle& h, unsigned kind, unsigned dtype,
                                         unsigned op, unsigned algo, int root, SizeT count,
                                         const void* src, void* dst, SizeT block, SizeT len,
                                         SizeT blockBytes, int channel) {
  if (channel < 0 || channel >= h.channels) collBadChannel(h, channel);
  if ((kind == kCollBroadcast || kind == kCollReduce) && (root < 0 || root >= h.size)) {
    collBadRoot(h, kind, root);
  }
  CollJob job;
  job.record.collective = kind;
  job.record.dtype = dtype;
  job.record.op = op;
  job.record.algo = algo;
  job.record.root = root;
  job.record.channels = 0;
  job.record.proto = collUsesLl(blockBytes, algo == kAlgoOneShot, collDeviceLlMax(h),
                                kind == kCollBarrier)
                         ? kProtoLl
                                                                                       : kProtoSimple;
  job.record.reserved = 0;
  job.record.count = count;
  job.src = static_cast<const char*>(src);
  job.dst = static_cast<char*>(dst);
  job.block = block;
  job.lo = 0;
  job.hi = len;
  job.channel = channel;
  job.srcOffset = kCollNoOffset;
  job.dstOffset = kCollNoOffset;
  return job;
}

}  // namespace detail

template <class Scope>
AXON_DEVICE_INLINE bool barrier(const CollHandle& h, int channel) {
  static_assert(detail::IsBlock<Scope>::value, "device collectives take scope Block");
  const detail::CollJob job =
      detail::collDeviceJob(h, detail::kCollBarrier, 0, 0, detail::kAlgoOneShot, -1, 0, nullptr,
                            nullptr, 0, 0, 0, channel);
  return detail::collRunCopy(h, job);
}

template <class Scope, class T>
AXON_DEVICE_INLINE bool broadcast(const CollHandle& h, const T* src, T* dst, SizeT count, int root,
                                  int channel) {
  static_assert(detail::IsBlock<Scope>::value, "device collectives take scope Block");
  const SizeT bytes = count * sizeof(T);
  const detail::CollJob job = detail::collDeviceJob(
      h, detail::kCollBroadcast, static_cast<unsigned>(detail::DataTypeOf<T>::value), 0,
      detail::kAlgoOneShot, root, detail::recordCount<T>(count), src, dst, bytes, bytes, bytes, channel);
  return detail::collRunCopy(h, job);
}

template <class Scope, class T>
AXON_DEVICE_INLINE bool allgather(const CollHandle& h, const T* src, T* dst, SizeT count,
                                  int channel) {
  static_assert(detail::IsBlock<Scope>::value, "device collectives take scope Block");
  const SizeT bytes = count * sizeof(T);
  const detail::CollJob job = detail::collDeviceJob(
      h, detail::kCollAllgather, static_cast<unsigned>(detail::DataTypeOf<T>::value), 0,
      detail::kAlgoOneShot, -1, detail::recordCount<T>(count), src, dst, bytes, bytes, bytes, channel);
  return detail::collRunCopy(h, job);
}

template <class Scope, class T>
AXON_DEVICE_INLINE bool alltoall(const CollHandle& h, const T* src, T* dst, SizeT count,
                                 int channel) {
  static_assert(detail::IsBlock<Scope>::value, "device collectives take scope Block");
  const SizeT bytes = count * sizeof(T);
  const detail::CollJob job = detail::collDeviceJob(
      h, detail::kCollAlltoall, static_cast<unsigned>(detail::DataTypeOf<T>::value), 0,
      detail::kAlgoOneShot, -1, detail::recordCount<T>(count), src, dst, bytes, bytes, bytes, channel);
  return detail::collRunCopy(h, job);
}

template <class Scope, class T>
AXON_DEVICE_INLINE bool allreduce(const CollHandle& h, const T* src, T* dst, SizeT count,
                                  ReduceOp op, int channel) {
  static_assert(detail::IsBlock<Scope>::value, "device collectives take scope Block");
  const unsigned algo = count * sizeof(T) > kDeviceTwoShotBytes && h.size > 2
                            ? detail::kAlgoTwoShot
                            : detail::kAlgoOneShot;
  const detail::CollJob job = detail::collDeviceJob(
      h, detail::kCollAllreduce, static_cast<unsigned>(detail::DataTypeOf<T>::value),
      static_cast<unsigned>(op), algo, -1, count, src, dst, count, count, count * sizeof(T), channel);
  return detail::collRunReduceOp<T>(h, job, op);
}

template <class Scope, class T>
AXON_DEVICE_INLINE bool reduce(const CollHandle& h, const T* src, T* dst, SizeT count,
                               ReduceOp op, int root, int channel) {
  static_assert(detail::IsBlock<Scope>::value, "device collectives take scope Block");
  const detail::CollJob job = detail::collDeviceJob(
      h, detail::kCollReduce, static_cast<unsigned>(detail::DataTypeOf<T>::value),
      static_cast<unsigned>(op), detail::kAlgoOneShot, root, count, src, dst, count, count,
      count * sizeof(T), channel);
  return detail::collRunReduceOp<T>(h, job, op);
}

template <class Scope, class T>
AXON_DEVICE_INLINE bool reduceScatter(const CollHandle& h, const T* src, T* dst, SizeT count,
                                      ReduceOp op, int channel) {
  static_assert(detail::IsBlock<Scope>::value, "device collectives take scope Block");
  const detail::CollJob job = detail::collDeviceJob(
      h, detail::kCollReduceScatter, static_cast<unsigned>(detail::DataTypeOf<T>::value),
      static_cast<unsigned>(op), detail::kAlgoOneShot, -1, count, src, dst, count, count,
      count * sizeof(T), channel);
  return detail::collRunReduceOp<T>(h, job, op);
}

}  // namespace device
}  // namespace axon
