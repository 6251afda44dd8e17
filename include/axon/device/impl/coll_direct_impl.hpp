// The Direct protocol of the device collectives (rules in coll_impl.hpp), for calls whose buffers
// are on the symmetric GPU heap at the same offsets on every member.
//
// A call takes two rounds of signals, whatever its size. In the first, every member sends the
// heap offsets of its src and dst with its call record, and every member decides from all of them
// alike: when the offsets a collective needs agree (collDirectAgrees), the block reads its share of
// the members' src and writes the members' dst itself, over the peers' heap mappings; otherwise
// the call goes on as Simple (the rounds that follow are the Simple protocol's). The second round
// closes the call: past it, every member has finished reading this PE's src and writing its dst.
//
// Each byte crosses NVLink once and lands where it belongs: no slots, no copy out of them, no
// round per chunk. What each collective moves (n members, one block of `len` per member):
//   allreduce       member j reduces part j of every member's src and writes the result into every
//                   member's dst (reduce-scatter and allgather in one pass; in place is safe, as
//                   no member writes a part that another still reads).
//   reduce          member j but the root reduces part j (of n - 1) of every member's src into the
//                   root's dst, so that the root's link carries each byte once each way; when the
//                   root's dst is not on the heap, the root reads every member's src.
//   reduce_scatter  member j reads block j of every member's src.
//   broadcast       one-shot: the root writes every member's dst. Two-shot: member j but the root
//                   reads part j of the root's src and writes it into every member's dst but the
//                   root's, so the root's link carries each byte once.
//   allgather       every member writes its block into every member's dst.
//   alltoall        every member writes its block j into member j's dst.
// Allreduce of large blocks takes the pushed algorithm (kAlgoPushed, AXON_COLL_GPU_PUSH_MIN): a
// round per chunk, as Simple's two-shot, but one round, not two: every member pushes its share of
// part j into member j's slot, then member j reduces its slots with its own src and stores the
// result straight into every member's dst. Every byte on NVLink is then a store (loads of peers'
// memory move fewer bytes per second: on 4 H200s, 320 against 348 GB/s of bus bandwidth at 512
// MiB in one kernel of each kind).
#pragma once

#include "axon/device/impl/coll_common_impl.hpp"
#include "axon/device/impl/coll_simple_impl.hpp"
#include "axon/device/impl/reduce_impl.hpp"

namespace axon {
namespace device {
namespace detail {

// Member k's mapping of heap offset `offset`, as this PE sees it.
AXON_DEVICE_INLINE char* collHeapAt(const CollHandle& h, int k, unsigned long long offset) {
  return h.heapBase + heapSlotsTo(h.myPe, collWorldPe(h, k), h.heapPeStride) * h.heapStride +
         static_cast<long long>(offset);
}

// Bytes from member k's mapping of an offset to member k + 1's. Direct calls run only on teams
// without a member table (the host proposes no offsets for the others), whose members' heap slots
// are evenly spaced.
AXON_DEVICE_INLINE long long collHeapMemberStride(const CollHandle& h) {
  return heapSlotsTo(0, h.teamStride, h.heapPeStride) * h.heapStride;
}

// Members whose loads a thread keeps in flight together while reducing, and vectors per member:
// reading peers over NVLink costs a round trip, so a step should pay one, not one per member.
constexpr int kDirectBatch = 4;
constexpr unsigned kDirectUnroll = 4;

// For every d in [0, dsts): dst0 + d * dstStride gets, element by element, the reduction in member
// order of src0 + k * srcStride over k in [0, n), so every member computes bit-identical results.
// In 16-byte vectors when src0 and dst0 are 16-byte aligned (the strides are multiples of 16);
// the rest, and unaligned buffers, element by element.
template <class T, ReduceOp Op>
AXON_DEVICE_INLINE void collReduceDirect(char* dst0, long long dstStride, int dsts,
                                         const char* src0, long long srcStride, int n,
                                         SizeT count) {
  const unsigned rank = linearThreadIndex(), size = blockThreadCount();
  constexpr unsigned kPer = 16 / sizeof(T);
  constexpr unsigned U = kDirectUnroll;
  const bool aligned =
      ((reinterpret_cast<unsigned long long>(dst0) | reinterpret_cast<unsigned long long>(src0)) &
       15) == 0;
  SizeT done = 0;
  if (aligned && kPer * sizeof(T) == 16) {
    const SizeT vectors = count / kPer;
    const SizeT step = static_cast<SizeT>(size) * U;
    for (SizeT base = 0; base < vectors; base += step) {
      CollVector<T> acc[U];
      for (int k0 = 0; k0 < n; k0 += kDirectBatch) {
        CollVector<T> v[kDirectBatch][U];
#pragma unroll
        for (int b = 0; b < kDirectBatch; ++b) {
          if (k0 + b >= n) continue;
          const uint4* from = reinterpret_cast<const uint4*>(src0 + (k0 + b) * srcStride);
#pragma unroll
          for (unsigned j = 0; j < U; ++j) {
            const SizeT i = base + rank + j * static_cast<SizeT>(size);
            if (i < vectors) v[b][j].bits = from[i];
          }
        }
#pragma unroll
        for (int b = 0; b < kDirectBatch; ++b) {
          if (k0 + b >= n) continue;
#pragma unroll
          for (unsigned j = 0; j < U; ++j) {
            if (k0 + b == 0) {
              acc[j] = v[b][j];
              continue;
            }
#pragma unroll
            for (unsigned e = 0; e < kPer; ++e) {
              acc[j].v[e] = Reducer<Op, T>::apply(acc[j].v[e], v[b][j].v[e]);
            }
          }
        }
      }
      for (int d = 0; d < dsts; ++d) {
        uint4* out = reinterpret_cast<uint4*>(dst0 + d * dstStride);
#pragma unroll
        for (unsigned j = 0; j < U; ++j) {
          const SizeT i = base + rank + j * static_cast<SizeT>(size);
          if (i < vectors) out[i] = acc[j].bits;
        }
      }
    }
    done = vectors * kPer;
  }
  for (SizeT i = done + rank; i < count; i += size) {
    T acc = reinterpret_cast<const T*>(src0)[i];
    for (int k = 1; k < n; ++k) {
      acc = Reducer<Op, T>::apply(acc, reinterpret_cast<const T*>(src0 + k * srcStride)[i]);
    }
    for (int d = 0; d < dsts; ++d) reinterpret_cast<T*>(dst0 + d * dstStride)[i] = acc;
  }
}

// `bytes` from src into dst0 + d * dstStride for every d in [0, dsts) but `skip` (-1: none): each
// vector is loaded once and stored to every destination.
AXON_DEVICE_INLINE void collCopyToAll(char* dst0, long long dstStride, int dsts, int skip,
                                      const char* src, SizeT bytes) {
  const unsigned rank = linearThreadIndex(), size = blockThreadCount();
  SizeT done = 0;
  if (((reinterpret_cast<unsigned long long>(dst0) | reinterpret_cast<unsigned long long>(src)) &
       15) == 0) {
    constexpr unsigned U = kDirectUnroll;
    const SizeT vectors = bytes / 16;
    const SizeT step = static_cast<SizeT>(size) * U;
    const uint4* in = reinterpret_cast<const uint4*>(src);
    for (SizeT base = 0; base < vectors; base += step) {
      uint4 v[U];
#pragma unroll
      for (unsigned j = 0; j < U; ++j) {
        const SizeT i = base + rank + j * static_cast<SizeT>(size);
        if (i < vectors) v[j] = in[i];
      }
      for (int d = 0; d < dsts; ++d) {
        if (d == skip) continue;
        uint4* out = reinterpret_cast<uint4*>(dst0 + d * dstStride);
#pragma unroll
        for (unsigned j = 0; j < U; ++j) {
          const SizeT i = base + rank + j * static_cast<SizeT>(size);
          if (i < vectors) out[i] = v[j];
        }
      }
    }
    done = vectors * 16;
  }
  for (int d = 0; d < dsts; ++d) {
    if (d != skip) collCopy(dst0 + d * dstStride + done, src + done, bytes - done);
  }
}

// The first round of a Direct call, from the channel's round counter (*r, advanced). False when
// it failed (reported). When the members' buffers do not allow direct access (verdict->direct
// false), the counter is stored for the Simple protocol to go on from (collStoreRounds ends with
// the barrier that orders the store before its threads read the counter).
AXON_DEVICE_INLINE bool collDirectOpen(const CollHandle& h, const CollJob& job,
                                       unsigned long long* r, CollDirectVerdict* verdict) {
  *r = collLoadRounds(h, job.channel);
  verdict->direct = false;
  if (!collStart(h) || !collExchange(h, job, ++*r, verdict)) return false;
  if (!verdict->direct) collStoreRounds(h, job.channel, *r);
  return true;
}

// Ends a Direct call: the closing round when the call went direct, then the channel's counter.
AXON_DEVICE_INLINE bool collDirectClose(const CollHandle& h, const CollJob& job,
                                        unsigned long long r, bool ok) {
  if (ok) ok = collExchange(h, job, ++r);
  collStoreRounds(h, job.channel, r);
  return ok;
}

// The pushed allreduce's rounds (rules at the top), from the channel's round counter *r. Per
// round, up to n * chunk elements of the channel's range, in n parts. In place is safe: the part
// member j stores into member k's dst in round r is what k pushed to j before signalling r.
// Member j rewrites its slots' half r % 2 in round r + 2, after every member signalled r + 1,
// that is, after every member finished reducing round r.
template <class T, ReduceOp Op>
AXON_DEVICE_INLINE bool collRunAllreducePushed(const CollHandle& h, const CollJob& job,
                                               unsigned long long* r) {
  const int n = h.size, me = h.myIndex, c = job.channel;
  const SizeT e = sizeof(T), len = job.hi - job.lo, unit = collUnitOf<T>();
  const SizeT per = h.chunkBytes / e * static_cast<SizeT>(n);
  const long long ms = collHeapMemberStride(h);
  const T* src = reinterpret_cast<const T*>(job.src);
  for (SizeT off = 0; off < len; off += per) {
    const SizeT m = collMin(per, len - off), at = job.lo + off;
    auto part = [&](int j, SizeT* lo, SizeT* hi) { collPartRange(m, n, j, unit, lo, hi); };
    const int half = static_cast<int>(++*r & 1ull);
    for (int i = 1; i < n; ++i) {
      const int j = collPeer(me, i, n);
      SizeT lo, hi;
      part(j, &lo, &hi);
      collCopy(collSlot(h, j, c, half, me), src + at + lo, (hi - lo) * e);
    }
    if (!collExchange(h, job, *r)) return false;
    SizeT lo, hi;
    part(me, &lo, &hi);
    collReduceFrom<T, Op>(collHeapAt(h, 0, job.dstOffset) + (at + lo) * e, ms, n, src + at + lo,
                          collSlot(h, me, c, half, 0), h.chunkBytes, n, me, hi - lo);
  }
  return true;
}

// Reduce, allreduce and reduce_scatter on elements of T.
template <class T, ReduceOp Op>
AXON_DEVICE_INLINE bool collRunReduceDirect(const CollHandle& h, const CollJob& job) {
  unsigned long long r;
  CollDirectVerdict verdict;
  bool ok = collDirectOpen(h, job, &r, &verdict);
  if (ok && !verdict.direct) return collRunReduceSimple<T, Op>(h, job);
  if (ok && job.record.algo == kAlgoPushed) {
    ok = collRunAllreducePushed<T, Op>(h, job, &r);
  } else if (ok) {
    const int n = h.size, me = h.myIndex;
    const long long ms = collHeapMemberStride(h);
    const SizeT len = job.hi - job.lo, e = sizeof(T);
    const unsigned kind = job.record.collective;
    if (kind == kCollAllreduce) {
      SizeT lo, hi;
      collPartRange(len, n, me, collUnitOf<T>(), &lo, &hi);
      collReduceDirect<T, Op>(collHeapAt(h, 0, job.dstOffset) + (job.lo + lo) * e, ms, n,
                              collHeapAt(h, 0, job.srcOffset) + (job.lo + lo) * e, ms, n, hi - lo);
    } else if (kind == kCollReduceScatter) {
      collReduceDirect<T, Op>(job.dst + job.lo * e, 0, 1,
                              collHeapAt(h, 0, job.srcOffset) + (me * job.block + job.lo) * e, ms,
                              n, len);
    } else if (verdict.rootDst != kCollNoOffset) {  // reduce, into the root's dst on the heap
      const int root = job.record.root;
      if (me != root) {
        SizeT lo, hi;
        collPartRange(len, n - 1, me < root ? me : me - 1, collUnitOf<T>(), &lo, &hi);
        collReduceDirect<T, Op>(collHeapAt(h, root, verdict.rootDst) + (job.lo + lo) * e, 0, 1,
                                collHeapAt(h, 0, job.srcOffset) + (job.lo + lo) * e, ms, n, hi - lo);
      }
    } else if (me == job.record.root) {  // reduce, into a dst of the root's own
      collReduceDirect<T, Op>(job.dst + job.lo * e, 0, 1,
                              collHeapAt(h, 0, job.srcOffset) + job.lo * e, ms, n, len);
    }
  }
  return collDirectClose(h, job, r, ok);
}

// Broadcast, allgather and alltoall (job.block and the range in bytes).
AXON_DEVICE_INLINE bool collRunCopyDirect(const CollHandle& h, const CollJob& job) {
  unsigned long long r;
  CollDirectVerdict verdict;
  const bool ok = collDirectOpen(h, job, &r, &verdict);
  if (ok && !verdict.direct) return collRunCopySimple(h, job);
  if (ok) {
    const int n = h.size, me = h.myIndex, root = job.record.root;
    const long long ms = collHeapMemberStride(h);
    const SizeT len = job.hi - job.lo;
    const unsigned kind = job.record.collective;
    if (kind == kCollBroadcast) {
      char* dst0 = collHeapAt(h, 0, job.dstOffset) + job.lo;
      // Two-shot reads the root's src, so it needs that on the heap too; the root said where.
      if (job.record.algo == kAlgoTwoShot && verdict.rootSrc != kCollNoOffset) {
        if (me == root) {
          if (job.dst != job.src) collCopy(job.dst + job.lo, job.src + job.lo, len);  // in place: there already
        } else {
          SizeT lo, hi;
          collPartRange(len, n - 1, me < root ? me : me - 1, 16, &lo, &hi);
          collCopyToAll(dst0 + lo, ms, n, root, collHeapAt(h, root, verdict.rootSrc) + job.lo + lo,
                        hi - lo);
        }
      } else if (me == root) {
        collCopyToAll(dst0, ms, n, job.dst == job.src ? me : -1, job.src + job.lo, len);
      }
    } else if (kind == kCollAllgather) {
      const bool inPlace = job.src == job.dst + me * job.block;
      collCopyToAll(collHeapAt(h, 0, job.dstOffset) + me * job.block + job.lo, ms, n,
                    inPlace ? me : -1, job.src + job.lo, len);
    } else if (kind == kCollAlltoall) {
      for (int i = 1; i <= n; ++i) {  // the peers from this PE's successor on, itself last
        const int j = collPeer(me, i, n);
        collCopy(collHeapAt(h, j, job.dstOffset) + me * job.block + job.lo,
                 job.src + j * job.block + job.lo, len);
      }
    }
  }
  return collDirectClose(h, job, r, ok);
}

}  // namespace detail
}  // namespace device
}  // namespace axon
