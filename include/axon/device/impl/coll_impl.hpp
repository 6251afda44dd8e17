// Bodies of the device collectives (declared in axon/device/collectives.hpp). One engine serves
// them all, and the library's own stream-ordered kernels are built from it (one block per channel).
//
// A call on a channel runs in rounds. In round r every member
//   1. pushes the data it owes each member into that member's workspace: slot [channel][r % 2][me];
//   2. signals every other member (data or not): its call record into the receiver's
//      records[channel][r % 2][me], then ready[channel][me] = r with a release at system scope;
//   3. waits until every other member's ready[channel][them] reaches r (acquire), and compares
//      their call record with its own: a different call is reported, not waited out;
//   4. consumes what arrived (reduces or copies from its own slots into dst).
// Because every member signals every other in every round, no member gets more than one round
// ahead of any other; so when a member pushes round r + 2 into half r % 2, every receiver has
// signalled round r + 1, that is, has finished consuming round r. Two halves, one exchange per
// round, no separate acknowledgements.
//
// Rounds are counted per channel in this PE's own workspace (rounds[channel]), so kernels captured
// in a CUDA graph count on when the graph is replayed.
#pragma once

#include "axon/device/coll_types.hpp"
#include "axon/device/impl/copy.hpp"
#include "axon/device/impl/diagnostics.hpp"
#include "axon/device/impl/ptx.hpp"
#include "axon/device/impl/reduce_impl.hpp"
#include "axon/device/impl/scope.hpp"
#include "axon/device/impl/wait.hpp"

namespace axon {
namespace device {
namespace detail {

// As axon::Collective and axon::coll::Algo on the host.
enum CollKind : unsigned { kCollBarrier = 0, kCollBroadcast, kCollReduce, kCollAllreduce,
                           kCollAllgather, kCollReduceScatter, kCollAlltoall };
enum CollAlgo : unsigned { kAlgoLocal = 0, kAlgoOneShot, kAlgoTwoShot };

// Device collectives run at block scope only.
template <class Scope> struct IsBlock { static constexpr bool value = false; };
template <> struct IsBlock<Block> { static constexpr bool value = true; };

template <class T>
struct ReducibleType {
  static_assert(DataTypeOf<T>::known,
                "device reductions take signed/unsigned char, int, unsigned, long (long), unsigned "
                "long (long), float, double, axon::device::Half or axon::device::BFloat16");
  static constexpr bool value = true;
};

// One channel's share of a call.
struct CollJob {
  CollRecord record;
  const char* src;
  char* dst;
  SizeT block;  // elements of one member's block (count; in bytes for the copy collectives)
  SizeT lo, hi; // this channel's elements of each block
  int channel;
};

// ── Workspace addressing ────────────────────────────────────────────────────────────────────────

AXON_DEVICE_INLINE char* collMember(const CollHandle& h, int m) {
  return h.base + static_cast<long long>(m) * h.stride;
}
AXON_DEVICE_INLINE unsigned long long* collRounds(const CollHandle& h, int c) {
  return reinterpret_cast<unsigned long long*>(collMember(h, h.myIndex) + h.roundsOffset +
                                               static_cast<SizeT>(c) * kCollLine);
}
AXON_DEVICE_INLINE unsigned long long* collReady(const CollHandle& h, int m, int c, int from) {
  const SizeT line = static_cast<SizeT>(c) * h.size + from;
  return reinterpret_cast<unsigned long long*>(collMember(h, m) + h.readyOffset + line * kCollLine);
}
AXON_DEVICE_INLINE CollSlotRecord* collRecordAt(const CollHandle& h, int m, int c, int half,
                                                int from) {
  const SizeT line = (static_cast<SizeT>(c) * 2 + half) * h.size + from;
  return reinterpret_cast<CollSlotRecord*>(collMember(h, m) + h.recordsOffset + line * kCollLine);
}
AXON_DEVICE_INLINE char* collSlot(const CollHandle& h, int m, int c, int half, int from) {
  const SizeT slot = (static_cast<SizeT>(c) * 2 + half) * h.size + from;
  return collMember(h, m) + h.dataOffset + slot * h.chunkBytes;
}
AXON_DEVICE_INLINE CollError* collAbortArea(const CollHandle& h, int m) {
  return reinterpret_cast<CollError*>(collMember(h, m));
}
AXON_DEVICE_INLINE int collWorldPe(const CollHandle& h, int m) {
  return h.teamStart + m * h.teamStride;
}

// ── Errors ────────────────────────────────────────────────────────────────────────────────────

// Writes `v` into the report at `e` unless one is there already (the first error wins).
inline AXON_DEVICE_NOINLINE void collPublish(CollError* e, const CollError& v) {
  if (::atomicCAS_system(&e->state, 0ull, 1ull) != 0ull) return;
  volatile CollError* out = e;
  out->code = v.code;
  out->pe = v.pe;
  out->peer = v.peer;
  out->channel = v.channel;
  out->address = v.address;
  out->expected = v.expected;
  out->seen = v.seen;
  const unsigned* from = reinterpret_cast<const unsigned*>(&v.mine);
  volatile unsigned* to = reinterpret_cast<volatile unsigned*>(&out->mine);
  for (unsigned i = 0; i < 2 * sizeof(CollRecord) / sizeof(unsigned); ++i) to[i] = from[i];
  fenceSys();
  storeReleaseSys(&e->state, 2ull);
}

// Reports an error met by this PE: into its host report, then into every member's abort area
// (its own included, so that its other channels stop too), and one line on stdout.
inline AXON_DEVICE_NOINLINE void collRaise(const CollHandle& h, const CollError& v) {
  collPublish(h.error, v);
  for (int m = 0; m < h.size; ++m) collPublish(collAbortArea(h, m), v);
  if (v.code == static_cast<int>(CollErrorCode::Timeout)) {
    printf("axon: PE %d: device collective timed out after %.1f s on channel %d waiting for PE %d: "
           "ready word at %p expected >= %llu, seen %llu\n",
           v.pe, static_cast<double>(h.timeoutNs) * 1e-9, v.channel, v.peer,
           reinterpret_cast<void*>(v.address), v.expected, v.seen);
  } else {
    printf("axon: PE %d: device collective mismatch on channel %d: this PE called collective %u "
           "(count %llu, type %u, op %u, root %d, algo %u, channels %u), PE %d called collective "
           "%u (count %llu, type %u, op %u, root %d, algo %u, channels %u)\n",
           v.pe, v.channel, v.mine.collective, v.mine.count, v.mine.dtype, v.mine.op, v.mine.root,
           v.mine.algo, v.mine.channels, v.peer, v.theirs.collective, v.theirs.count,
           v.theirs.dtype, v.theirs.op, v.theirs.root, v.theirs.algo, v.theirs.channels);
  }
}

// A member reported an error into this PE's abort area: copy it into this PE's host report.
inline AXON_DEVICE_NOINLINE void collAdopt(const CollHandle& h) {
  CollError* area = collAbortArea(h, h.myIndex);
  const unsigned long long start = globalTimerNs();
  while (loadAcquireSys(&area->state) != 2ull && globalTimerNs() - start < 100000000ull) {
    __nanosleep(1000);
  }
  CollError copy;
  const volatile CollError* in = area;
  copy.code = in->code;
  copy.pe = in->pe;
  copy.peer = in->peer;
  copy.channel = in->channel;
  copy.address = in->address;
  copy.expected = in->expected;
  copy.seen = in->seen;
  const volatile unsigned* from = reinterpret_cast<const volatile unsigned*>(&in->mine);
  unsigned* to = reinterpret_cast<unsigned*>(&copy.mine);
  for (unsigned i = 0; i < 2 * sizeof(CollRecord) / sizeof(unsigned); ++i) to[i] = from[i];
  collPublish(h.error, copy);
}

AXON_DEVICE_INLINE bool collAborted(const CollHandle& h) {
  return loadRelaxedSys(&collAbortArea(h, h.myIndex)->state) != 0ull;
}

// ── The round's exchange ──────────────────────────────────────────────────────────────────────

// Waits (one thread) until member `from` signalled round `r` on the job's channel. False when the
// wait timed out or a member aborted the team's collectives (the report is then written).
inline AXON_DEVICE_NOINLINE bool collWait(const CollHandle& h, const CollJob& job, int from,
                                          unsigned long long r) {
  const unsigned long long* word = collReady(h, h.myIndex, job.channel, from);
  const unsigned long long start = globalTimerNs();
  unsigned sleepNs = 32;
  bool backoff = false;
  for (unsigned polls = 1;; ++polls) {
    const unsigned long long seen = loadRelaxedSys(word);
    if (seen >= r) {
      loadAcquireSys(word);
      return true;
    }
    if (backoff) {
      __nanosleep(sleepNs);
      if (sleepNs < kMaxSleepNs) sleepNs *= 2;
    }
    if (polls % kTimerCheckPolls == 0) {
      if (collAborted(h)) {
        collAdopt(h);
        return false;
      }
      const unsigned long long elapsed = globalTimerNs() - start;
      backoff = elapsed > kFreeSpinNs;
      if (h.timeoutNs != 0 && elapsed > h.timeoutNs) {
        CollError e{};
        e.code = static_cast<int>(CollErrorCode::Timeout);
        e.pe = h.myPe;
        e.peer = collWorldPe(h, from);
        e.channel = job.channel;
        e.address = reinterpret_cast<unsigned long long>(word);
        e.expected = r;
        e.seen = seen;
        e.mine = job.record;
        collRaise(h, e);
        return false;
      }
    }
  }
}

AXON_DEVICE_INLINE bool collSameCall(const CollRecord& a, const CollRecord& b) {
  return a.collective == b.collective && a.dtype == b.dtype && a.op == b.op && a.algo == b.algo &&
         a.root == b.root && a.channels == b.channels && a.count == b.count;
}

// Steps 2 and 3 of a round, by the whole block: the block's pushes are complete before any signal.
// True in every thread when every member signalled the same call; false in every thread otherwise.
AXON_DEVICE_INLINE bool collExchange(const CollHandle& h, const CollJob& job, unsigned long long r) {
  __syncthreads();
  const unsigned rank = linearThreadIndex(), size = blockThreadCount();
  const int n = h.size, me = h.myIndex, c = job.channel, half = static_cast<int>(r & 1ull);
  int failed = 0;
  for (int j = static_cast<int>(rank); j < n; j += static_cast<int>(size)) {
    if (j == me) continue;
    // No fence: the release below is cumulative, so the block's pushes, which this thread has
    // observed through the barrier, are visible to whoever acquires the signal.
    CollSlotRecord* rec = collRecordAt(h, j, c, half, me);
    rec->call = job.record;
    rec->round = r;
    storeReleaseSys(collReady(h, j, c, me), r);
  }
  for (int j = static_cast<int>(rank); j < n; j += static_cast<int>(size)) {
    if (j == me) continue;
    if (!collWait(h, job, j, r)) {
      failed = 1;
      continue;
    }
    const CollSlotRecord* rec = collRecordAt(h, me, c, half, j);
    const CollRecord theirs = rec->call;
    if (!collSameCall(job.record, theirs) || rec->round != r) {
      CollError e{};
      e.code = static_cast<int>(CollErrorCode::Mismatch);
      e.pe = h.myPe;
      e.peer = collWorldPe(h, j);
      e.channel = c;
      e.expected = r;
      e.seen = rec->round;
      e.mine = job.record;
      e.theirs = theirs;
      collRaise(h, e);
      failed = 1;
    }
  }
  // Carries the waiting threads' acquires to the whole block, and their verdict.
  return __syncthreads_or(failed) == 0;
}

// ── Consuming ─────────────────────────────────────────────────────────────────────────────────

// dst[i] = own[i] (member me) reduced with slot k's [i] (every other member k), in member order,
// so every member computes bit-identical results. Slots of consecutive members are `stride` apart.
template <class T, ReduceOp Op>
AXON_DEVICE_INLINE void collReduceFrom(T* dst, const T* own, const char* slot0, SizeT stride,
                                       int n, int me, SizeT count) {
  const unsigned rank = linearThreadIndex(), size = blockThreadCount();
  for (SizeT i = rank; i < count; i += size) {
    T acc = me == 0 ? own[i] : reinterpret_cast<const T*>(slot0)[i];
    for (int k = 1; k < n; ++k) {
      const T v = k == me ? own[i] : reinterpret_cast<const T*>(slot0 + k * stride)[i];
      acc = Reducer<Op, T>::apply(acc, v);
    }
    dst[i] = acc;
  }
}

AXON_DEVICE_INLINE void collCopy(void* dst, const void* src, SizeT bytes) {
  if (bytes == 0 || dst == src) return;
  copyCooperative(dst, src, bytes, linearThreadIndex(), blockThreadCount());
}

AXON_DEVICE_INLINE SizeT collMin(SizeT a, SizeT b) { return a < b ? a : b; }

// ── The collectives ───────────────────────────────────────────────────────────────────────────

// Reduce, allreduce (one-shot or two-shot) and reduce_scatter on elements of T.
template <class T, ReduceOp Op>
AXON_DEVICE_INLINE bool collRunReduce(const CollHandle& h, const CollJob& job) {
  const int n = h.size, me = h.myIndex, c = job.channel;
  unsigned long long* roundsWord = collRounds(h, c);
  unsigned long long r = *reinterpret_cast<volatile unsigned long long*>(roundsWord);
  const SizeT chunk = h.chunkBytes / sizeof(T);
  const SizeT len = job.hi - job.lo;
  const SizeT stride = h.chunkBytes;  // between consecutive senders' slots
  const T* src = reinterpret_cast<const T*>(job.src);
  T* dst = reinterpret_cast<T*>(job.dst);
  const unsigned kind = job.record.collective;
  bool ok = !collAborted(h);
  if (!ok && linearThreadIndex() == 0) collAdopt(h);  // a member stopped the team earlier
  if (ok && kind == kCollAllreduce && job.record.algo == kAlgoTwoShot) {
    // Per pair of rounds, up to n * chunk elements: part j is reduced by member j (round A), then
    // every member's reduced part goes to every member (round B).
    const SizeT per = chunk * static_cast<SizeT>(n);
    const SizeT unit = sizeof(T) >= 16 ? 1 : 16 / sizeof(T);
    for (SizeT off = 0;; off += per) {
      const SizeT m = collMin(per, len - off);
      const SizeT p = collAlignUp((m + n - 1) / n, unit);
      const T* s = src + job.lo + off;
      T* d = dst + job.lo + off;
      auto partLo = [&](int j) { return collMin(m, static_cast<SizeT>(j) * p); };
      auto partLen = [&](int j) { return partLo(j + 1) - partLo(j); };
      ++r;
      int half = static_cast<int>(r & 1ull);
      for (int j = 0; j < n; ++j) {
        if (j != me) collCopy(collSlot(h, j, c, half, me), s + partLo(j), partLen(j) * sizeof(T));
      }
      if (!(ok = collExchange(h, job, r))) break;
      collReduceFrom<T, Op>(d + partLo(me), s + partLo(me), collSlot(h, me, c, half, 0), stride, n,
                            me, partLen(me));
      __syncthreads();  // the reduced part is complete before any thread pushes it
      ++r;
      half = static_cast<int>(r & 1ull);
      for (int j = 0; j < n; ++j) {
        if (j != me) collCopy(collSlot(h, j, c, half, me), d + partLo(me), partLen(me) * sizeof(T));
      }
      if (!(ok = collExchange(h, job, r))) break;
      for (int k = 0; k < n; ++k) {
        if (k != me) collCopy(d + partLo(k), collSlot(h, me, c, half, k), partLen(k) * sizeof(T));
      }
      if (off + per >= len) break;
    }
  } else if (ok) {
    const int root = job.record.root;
    for (SizeT off = 0;; off += chunk) {
      const SizeT m = collMin(chunk, len - off);
      const SizeT at = job.lo + off;
      ++r;
      const int half = static_cast<int>(r & 1ull);
      for (int j = 0; j < n; ++j) {
        if (j == me || (kind == kCollReduce && j != root)) continue;
        const T* from = kind == kCollReduceScatter ? src + static_cast<SizeT>(j) * job.block + at
                                                   : src + at;
        collCopy(collSlot(h, j, c, half, me), from, m * sizeof(T));
      }
      if (!(ok = collExchange(h, job, r))) break;
      const char* slots = collSlot(h, me, c, half, 0);
      if (kind == kCollReduceScatter) {
        collReduceFrom<T, Op>(dst + at, src + static_cast<SizeT>(me) * job.block + at, slots,
                              stride, n, me, m);
      } else if (kind == kCollAllreduce || me == root) {
        collReduceFrom<T, Op>(dst + at, src + at, slots, stride, n, me, m);
      }
      if (off + chunk >= len) break;
    }
  }
  __syncthreads();
  if (linearThreadIndex() == 0) *reinterpret_cast<volatile unsigned long long*>(roundsWord) = r;
  return ok;
}

// Barrier, broadcast, allgather and alltoall: copies of bytes (job.block and the range in bytes).
AXON_DEVICE_INLINE bool collRunCopy(const CollHandle& h, const CollJob& job) {
  const int n = h.size, me = h.myIndex, c = job.channel;
  unsigned long long* roundsWord = collRounds(h, c);
  unsigned long long r = *reinterpret_cast<volatile unsigned long long*>(roundsWord);
  const SizeT chunk = h.chunkBytes;
  const SizeT len = job.hi - job.lo;
  const unsigned kind = job.record.collective;
  const int root = job.record.root;
  bool ok = !collAborted(h);
  if (!ok && linearThreadIndex() == 0) collAdopt(h);  // a member stopped the team earlier
  for (SizeT off = 0; ok; off += chunk) {
    const SizeT m = kind == kCollBarrier ? 0 : collMin(chunk, len - off);
    const SizeT at = job.lo + off;
    ++r;
    const int half = static_cast<int>(r & 1ull);
    for (int j = 0; j < n && m != 0; ++j) {
      if (j == me) continue;
      if (kind == kCollBroadcast) {
        if (me == root) collCopy(collSlot(h, j, c, half, me), job.src + at, m);
      } else if (kind == kCollAllgather) {
        collCopy(collSlot(h, j, c, half, me), job.src + at, m);
      } else if (kind == kCollAlltoall) {
        collCopy(collSlot(h, j, c, half, me), job.src + static_cast<SizeT>(j) * job.block + at, m);
      }
    }
    if (!(ok = collExchange(h, job, r))) break;
    if (kind == kCollBroadcast) {
      collCopy(job.dst + at, me == root ? job.src + at : collSlot(h, me, c, half, root), m);
    } else if (kind == kCollAllgather || kind == kCollAlltoall) {
      for (int k = 0; k < n; ++k) {
        char* d = job.dst + static_cast<SizeT>(k) * job.block + at;
        if (k != me) {
          collCopy(d, collSlot(h, me, c, half, k), m);
        } else {
          collCopy(d, kind == kCollAllgather ? job.src + at
                                             : job.src + static_cast<SizeT>(me) * job.block + at,
                   m);
        }
      }
    }
    if (kind == kCollBarrier || off + chunk >= len) break;
  }
  __syncthreads();
  if (linearThreadIndex() == 0) *reinterpret_cast<volatile unsigned long long*>(roundsWord) = r;
  return ok;
}

template <class T>
AXON_DEVICE_INLINE bool collRunReduceOp(const CollHandle& h, const CollJob& job, ReduceOp op) {
  static_assert(ReducibleType<T>::value, "");
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

AXON_DEVICE_INLINE CollJob collDeviceJob(const CollHandle& h, unsigned kind, unsigned dtype,
                                         unsigned op, unsigned algo, int root, SizeT count,
                                         const void* src, void* dst, SizeT block, SizeT len,
                                         int channel) {
  if (channel < 0 || channel >= h.channels) collBadChannel(h, channel);
  CollJob job;
  job.record.collective = kind;
  job.record.dtype = dtype;
  job.record.op = op;
  job.record.algo = algo;
  job.record.root = root;
  job.record.channels = 0;
  job.record.count = count;
  job.src = static_cast<const char*>(src);
  job.dst = static_cast<char*>(dst);
  job.block = block;
  job.lo = 0;
  job.hi = len;
  job.channel = channel;
  return job;
}

}  // namespace detail

template <class Scope>
AXON_DEVICE_INLINE bool barrier(const CollHandle& h, int channel) {
  static_assert(detail::IsBlock<Scope>::value, "device collectives take scope Block");
  const detail::CollJob job =
      detail::collDeviceJob(h, detail::kCollBarrier, 0, 0, detail::kAlgoOneShot, -1, 0, nullptr,
                            nullptr, 0, 0, channel);
  return detail::collRunCopy(h, job);
}

template <class Scope, class T>
AXON_DEVICE_INLINE bool broadcast(const CollHandle& h, const T* src, T* dst, SizeT count, int root,
                                  int channel) {
  static_assert(detail::IsBlock<Scope>::value, "device collectives take scope Block");
  const SizeT bytes = count * sizeof(T);
  const detail::CollJob job = detail::collDeviceJob(
      h, detail::kCollBroadcast, static_cast<unsigned>(detail::DataTypeOf<T>::value), 0,
      detail::kAlgoOneShot, root, detail::recordCount<T>(count), src, dst, bytes, bytes, channel);
  return detail::collRunCopy(h, job);
}

template <class Scope, class T>
AXON_DEVICE_INLINE bool allgather(const CollHandle& h, const T* src, T* dst, SizeT count,
                                  int channel) {
  static_assert(detail::IsBlock<Scope>::value, "device collectives take scope Block");
  const SizeT bytes = count * sizeof(T);
  const detail::CollJob job = detail::collDeviceJob(
      h, detail::kCollAllgather, static_cast<unsigned>(detail::DataTypeOf<T>::value), 0,
      detail::kAlgoOneShot, -1, detail::recordCount<T>(count), src, dst, bytes, bytes, channel);
  return detail::collRunCopy(h, job);
}

template <class Scope, class T>
AXON_DEVICE_INLINE bool alltoall(const CollHandle& h, const T* src, T* dst, SizeT count,
                                 int channel) {
  static_assert(detail::IsBlock<Scope>::value, "device collectives take scope Block");
  const SizeT bytes = count * sizeof(T);
  const detail::CollJob job = detail::collDeviceJob(
      h, detail::kCollAlltoall, static_cast<unsigned>(detail::DataTypeOf<T>::value), 0,
      detail::kAlgoOneShot, -1, detail::recordCount<T>(count), src, dst, bytes, bytes, channel);
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
      static_cast<unsigned>(op), algo, -1, count, src, dst, count, count, channel);
  return detail::collRunReduceOp<T>(h, job, op);
}

template <class Scope, class T>
AXON_DEVICE_INLINE bool reduce(const CollHandle& h, const T* src, T* dst, SizeT count,
                               ReduceOp op, int root, int channel) {
  static_assert(detail::IsBlock<Scope>::value, "device collectives take scope Block");
  const detail::CollJob job = detail::collDeviceJob(
      h, detail::kCollReduce, static_cast<unsigned>(detail::DataTypeOf<T>::value),
      static_cast<unsigned>(op), detail::kAlgoOneShot, root, count, src, dst, count, count,
      channel);
  return detail::collRunReduceOp<T>(h, job, op);
}

template <class Scope, class T>
AXON_DEVICE_INLINE bool reduceScatter(const CollHandle& h, const T* src, T* dst, SizeT count,
                                      ReduceOp op, int channel) {
  static_assert(detail::IsBlock<Scope>::value, "device collectives take scope Block");
  const detail::CollJob job = detail::collDeviceJob(
      h, detail::kCollReduceScatter, static_cast<unsigned>(detail::DataTypeOf<T>::value),
      static_cast<unsigned>(op), detail::kAlgoOneShot, -1, count, src, dst, count, count, channel);
  return detail::collRunReduceOp<T>(h, job, op);
}

}  // namespace device
}  // namespace axon
