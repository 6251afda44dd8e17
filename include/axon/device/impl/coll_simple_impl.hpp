// The Simple protocol of the device collectives (rules in coll_impl.hpp): a round pushes plain
// bytes into the receivers' slots, then signals each member with its call record and a
// release store of the round; receivers wait with an acquire, compare records, then consume.
#pragma once

#include "axon/device/impl/coll_common_impl.hpp"
#include "axon/device/impl/copy.hpp"
#include "axon/device/impl/reduce_impl.hpp"

namespace axon {
namespace device {
namespace detail {

// ── The round's exchange ──────────────────────────────────────────────────────────────────────

// A call record that a member posts when it enters a call, before any signal (the chained
// reduce's, coll_chain_impl.hpp): member `from`'s record of round `round`, in its own record line
// of that round's half for itself (a line that no signal writes: a member never signals itself).
struct CollPosted {
  int from;
  unsigned long long round;
};

// Member `posted.from`'s posted record, where it is there and names another call than this PE's:
// then copied to `theirs`. Read like a sequence lock (collChainPost writes the round 0 first, then
// the record, then the round with release): a record read while its member posts its next call's
// is ignored, never taken for this call's.
AXON_DEVICE_INLINE bool collPostedDiffers(const CollHandle& h, const CollJob& job, const CollPosted& posted,
                                          CollRecord* theirs) {
  const CollSlotRecord* rec =
      collRecordAt(h, posted.from, job.channel, static_cast<int>(posted.round & 1ull), posted.from);
  if (loadAcquireSys(&rec->round) != posted.round) return false;
  const volatile unsigned* from = reinterpret_cast<const volatile unsigned*>(&rec->call);
  unsigned* to = reinterpret_cast<unsigned*>(theirs);
  for (unsigned i = 0; i < sizeof(CollRecord) / sizeof(unsigned); ++i) to[i] = from[i];
  fenceSys();  // the record's loads before the round's second
  if (loadAcquireSys(&rec->round) != posted.round) return false;
  return !collSameCall(job.record, *theirs);
}

// Waits (one thread) until member `from` signalled round `r` on the job's channel. False when the
// wait timed out, a member aborted the team's collectives, `from` sent an LL message in this
// round instead, or (where `posted` is given) that member posted a record of another call (both
// a different call: reported as a mismatch); the report is then written.
inline AXON_DEVICE_NOINLINE bool collWait(const CollHandle& h, const CollJob& job, int from,
                                          unsigned long long r, const CollPosted* posted = nullptr) {
  const unsigned long long* word = collReady(h, h.myIndex, job.channel, from);
  for (PollPacer pace;;) {
    const unsigned long long seen = loadRelaxedSys(word);
    if (seen >= r) {
      acquireAfterRelaxedLoad(word);
      return true;
    }
    if (pace.next()) {
      if (collAborted(h)) {
        collAdopt(h);
        return false;
      }
      CollRecord theirs;
      if (llFlag(r) != 0 && llPeekRecord(h, job.channel, static_cast<int>(r & 1ull), from,
                                         llFlag(r), &theirs)) {
        collMismatch(h, job, from, theirs, r, r);
        return false;
      }
      if (posted && collPostedDiffers(h, job, *posted, &theirs)) {
        collMismatch(h, job, posted->from, theirs, posted->round, posted->round);
        return false;
      }
      if (pace.expired(h.timeoutNs)) {
        collTimeout(h, job, from, word, r, seen);
        return false;
      }
    }
  }
}

// Zeroes this PE's LL slots of channel c (both halves, every sender), by the block. Done in the
// Simple exchange of a round whose LL flag would be 0, before its signals: flags written before it
// cannot then be mistaken for those of rounds 2^32 later.
AXON_DEVICE_INLINE void collClearLl(const CollHandle& h, int c) {
  LlUnit* first = collLlUnit(h, h.myIndex, c, 0, 0, 0);
  const SizeT units = 2 * static_cast<SizeT>(h.size) * h.llSlotBytes / kCollLlUnit;
  const LlUnit zero{0u, 0u, 0u, 0u};
  for (SizeT i = linearThreadIndex(); i < units; i += blockThreadCount()) first[i] = zero;
}

// What the first round of a Direct call tells (coll_direct_impl.hpp): whether every member's
// buffers allow direct access, and the root's src and dst offsets.
struct CollDirectVerdict {
  bool direct;
  unsigned long long rootSrc, rootDst;
};

// Whether member `from`'s proposal (src and dst offsets) agrees with this PE's for a Direct call
// of `job`: the offsets every member's part of the data needs equal and on the heap.
AXON_DEVICE_INLINE bool collDirectAgrees(const CollJob& job, unsigned long long src,
                                         unsigned long long dst) {
  const unsigned kind = job.record.collective;
  const bool sameSrc = kind == kCollAllreduce || kind == kCollReduce || kind == kCollReduceScatter;
  const bool sameDst = kind == kCollAllreduce || kind == kCollBroadcast ||
                       kind == kCollAllgather || kind == kCollAlltoall;
  if (sameSrc && (job.srcOffset == kCollNoOffset || src != job.srcOffset)) return false;
  if (sameDst && (job.dstOffset == kCollNoOffset || dst != job.dstOffset)) return false;
  return true;
}

// Steps 2 and 3 of a round, by the whole block: the block's pushes are complete before any signal.
// True in every thread when every member signalled the same call; false in every thread otherwise.
// With `verdict` (the first round of a Direct call), each member also sends its heap offsets and
// the block learns whether all of them agree (see collDirectAgrees).
AXON_DEVICE_INLINE bool collExchange(const CollHandle& h, const CollJob& job, unsigned long long r,
                                     CollDirectVerdict* verdict = nullptr) {
  __shared__ unsigned long long rootSrc, rootDst;
  __syncthreads();
  if (llFlag(r) == 0) {
    collClearLl(h, job.channel);
    __syncthreads();
  }
  const unsigned rank = linearThreadIndex(), size = blockThreadCount();
  const int n = h.size, me = h.myIndex, c = job.channel, half = static_cast<int>(r & 1ull);
  const unsigned long long srcOffset = verdict ? job.srcOffset : kCollNoOffset;
  const unsigned long long dstOffset = verdict ? job.dstOffset : kCollNoOffset;
  int failed = 0;  // bit 0: an error (reported); bit 1: the offsets disagree
  for (int j = static_cast<int>(rank); j < n; j += static_cast<int>(size)) {
    if (j == me) continue;
    // No fence: the release below is cumulative, so the block's pushes, which this thread has
    // observed through the barrier, are visible to whoever acquires the signal.
    CollSlotRecord* rec = collRecordAt(h, j, c, half, me);
    rec->call = job.record;
    rec->round = r;
    rec->srcOffset = srcOffset;
    rec->dstOffset = dstOffset;
    storeReleaseSys(collReady(h, j, c, me), r);
  }
  for (int j = static_cast<int>(rank); j < n; j += static_cast<int>(size)) {
    if (j == me) {
      if (verdict) {
        if (!collDirectAgrees(job, srcOffset, dstOffset)) failed |= 2;
        if (j == job.record.root) {
          rootSrc = srcOffset;
          rootDst = dstOffset;
        }
      }
      continue;
    }
    if (!collWait(h, job, j, r)) {
      failed |= 1;
      continue;
    }
    const CollSlotRecord* rec = collRecordAt(h, me, c, half, j);
    const CollRecord theirs = rec->call;
    if (!collSameCall(job.record, theirs) || rec->round != r) {
      collMismatch(h, job, j, theirs, r, rec->round);
      failed |= 1;
    } else if (verdict) {
      const unsigned long long src = rec->srcOffset;
      if (!collDirectAgrees(job, src, rec->dstOffset)) failed |= 2;
      if (j == job.record.root) {
        rootSrc = src;
        rootDst = rec->dstOffset;
      }
    }
  }
  // Carries the waiting threads' acquires to the whole block, and their verdict.
  const bool bad = __syncthreads_or(failed & 1) != 0;
  if (verdict) {
    verdict->direct = __syncthreads_or(failed & 2) == 0 && !bad;
    verdict->rootSrc = job.record.root >= 0 ? rootSrc : kCollNoOffset;
    verdict->rootDst = job.record.root >= 0 ? rootDst : kCollNoOffset;
  }
  return !bad;
}

// ── Consuming ─────────────────────────────────────────────────────────────────────────────────

// 16 bytes as elements of T.
template <class T>
union CollVector {
  uint4 bits;
  T v[16 / sizeof(T)];
};

// Vectors each thread keeps in flight per member while reducing: the loads of one member are
// issued together, so a round of them costs one memory latency, not kCollReduceUnroll.
constexpr unsigned kCollReduceUnroll = 4;

// dst[i] = own[i] (member me) reduced with slot k's [i] (every other member k), in member order,
// so every member computes bit-identical results, stored into dst0 + d * dstStride for every d in
// [0, dsts) (several: the pushed allreduce stores its reduced part into every member's dst).
// Slots of consecutive members are `stride` apart (and 16-byte aligned); dstStride is a multiple
// of 16. In 16-byte vectors when own and dst0 are 16-byte aligned too; the rest, and unaligned
// buffers, element by element.
template <class T, ReduceOp Op>
AXON_DEVICE_INLINE void collReduceFrom(char* dst0, long long dstStride, int dsts, const T* own,
                                       const char* slot0, SizeT stride, int n, int me, SizeT count) {
  const unsigned rank = linearThreadIndex(), size = blockThreadCount();
  constexpr unsigned kPer = 16 / sizeof(T);
  constexpr unsigned U = kCollReduceUnroll;
  const bool aligned = ((reinterpret_cast<unsigned long long>(dst0) |
                         reinterpret_cast<unsigned long long>(own)) & 15) == 0;
  SizeT done = 0;
  if (aligned && kPer * sizeof(T) == 16) {
    const SizeT vectors = count / kPer;
    const SizeT step = static_cast<SizeT>(size) * U;
    auto from = [&](int k) {
      return k == me ? reinterpret_cast<const uint4*>(own)
                     : reinterpret_cast<const uint4*>(slot0 + k * stride);
    };
    for (SizeT base = 0; base < vectors; base += step) {
      CollVector<T> acc[U], v[U];
      const uint4* src0 = from(0);
#pragma unroll
      for (unsigned j = 0; j < U; ++j) {
        const SizeT i = base + rank + j * static_cast<SizeT>(size);
        if (i < vectors) acc[j].bits = src0[i];
      }
      for (int k = 1; k < n; ++k) {
        const uint4* srck = from(k);
#pragma unroll
        for (unsigned j = 0; j < U; ++j) {
          const SizeT i = base + rank + j * static_cast<SizeT>(size);
          if (i < vectors) v[j].bits = srck[i];
        }
#pragma unroll
        for (unsigned j = 0; j < U; ++j) {
#pragma unroll
          for (unsigned e = 0; e < kPer; ++e) acc[j].v[e] = Reducer<Op, T>::apply(acc[j].v[e], v[j].v[e]);
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
    T acc = me == 0 ? own[i] : reinterpret_cast<const T*>(slot0)[i];
    for (int k = 1; k < n; ++k) {
      const T v = k == me ? own[i] : reinterpret_cast<const T*>(slot0 + k * stride)[i];
      acc = Reducer<Op, T>::apply(acc, v);
    }
    for (int d = 0; d < dsts; ++d) reinterpret_cast<T*>(dst0 + d * dstStride)[i] = acc;
  }
}

// One destination.
template <class T, ReduceOp Op>
AXON_DEVICE_INLINE void collReduceFrom(T* dst, const T* own, const char* slot0, SizeT stride,
                                       int n, int me, SizeT count) {
  collReduceFrom<T, Op>(reinterpret_cast<char*>(dst), 0, 1, own, slot0, stride, n, me, count);
}

AXON_DEVICE_INLINE void collCopy(void* dst, const void* src, SizeT bytes) {
  if (bytes == 0 || dst == src) return;
  copyCooperative(dst, src, bytes, linearThreadIndex(), blockThreadCount());
}

// ── The collectives, Simple protocol ──────────────────────────────────────────────────────────

// Reduce, allreduce (one-shot or two-shot) and reduce_scatter on elements of T.
template <class T, ReduceOp Op>
AXON_DEVICE_INLINE bool collRunReduceSimple(const CollHandle& h, const CollJob& job) {
  const int n = h.size, me = h.myIndex, c = job.channel;
  unsigned long long r = collLoadRounds(h, c);
  const SizeT chunk = h.chunkBytes / sizeof(T);
  const SizeT len = job.hi - job.lo;
  const SizeT stride = h.chunkBytes;  // between consecutive senders' slots
  const T* src = reinterpret_cast<const T*>(job.src);
  T* dst = reinterpret_cast<T*>(job.dst);
  const unsigned kind = job.record.collective;
  bool ok = collStart(h);
  // A pushed allreduce whose buffers turned out not to be on the heap runs as two-shot.
  if (ok && kind == kCollAllreduce && (job.record.algo == kAlgoTwoShot || job.record.algo == kAlgoPushed)) {
    // Per pair of rounds, up to n * chunk elements: part j is reduced by member j (round A), then
    // every member's reduced part goes to every member (round B).
    const SizeT per = chunk * static_cast<SizeT>(n);
    const SizeT unit = collUnitOf<T>();
    for (SizeT off = 0;; off += per) {
      const SizeT m = collMin(per, len - off);
      const SizeT p = collAlignUp((m + n - 1) / n, unit);
      const T* s = src + job.lo + off;
      T* d = dst + job.lo + off;
      auto partLo = [&](int j) { return collMin(m, static_cast<SizeT>(j) * p); };
      auto partLen = [&](int j) { return partLo(j + 1) - partLo(j); };
      ++r;
      int half = static_cast<int>(r & 1ull);
      for (int i = 1; i < n; ++i) {
        const int j = collPeer(me, i, n);
        collCopy(collSlot(h, j, c, half, me), s + partLo(j), partLen(j) * sizeof(T));
      }
      if (!(ok = collExchange(h, job, r))) break;
      collReduceFrom<T, Op>(d + partLo(me), s + partLo(me), collSlot(h, me, c, half, 0), stride, n,
                            me, partLen(me));
      __syncthreads();  // the reduced part is complete before any thread pushes it
      ++r;
      half = static_cast<int>(r & 1ull);
      for (int i = 1; i < n; ++i) {
        collCopy(collSlot(h, collPeer(me, i, n), c, half, me), d + partLo(me), partLen(me) * sizeof(T));
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
      for (int i = 1; i < n; ++i) {
        const int j = collPeer(me, i, n);
        if (kind == kCollReduce && j != root) continue;
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
  collStoreRounds(h, c, r);
  return ok;
}

// Two-shot broadcast: per pair of rounds, up to (n - 1) * chunk bytes in a part per member but
// the root. Round A: the root pushes part j to member j. Round B: every other member copies its
// part into dst and pushes it to the members but the root, then copies theirs in. The root's
// NVLink egress carries each byte once (one-shot: once per member), each other member's
// (n - 2) / (n - 1) of them.
// A member reads its round-A part during round B: the root rewrites that half only in round
// A + 2, after every member signalled round B, that is, after the member's pushes.
AXON_DEVICE_INLINE bool collRunBroadcastTwoShot(const CollHandle& h, const CollJob& job,
                                                unsigned long long* r) {
  const int n = h.size, me = h.myIndex, c = job.channel, root = job.record.root;
  const SizeT len = job.hi - job.lo, per = h.chunkBytes * static_cast<SizeT>(n - 1);
  auto index = [&](int j) { return j < root ? j : j - 1; };  // the part of member j (j != root)
  for (SizeT off = 0;; off += per) {
    const SizeT m = collMin(per, len - off), at = job.lo + off;
    const SizeT p = collAlignUp((m + n - 2) / (n - 1), 16);
    auto partLo = [&](int j) { return collMin(m, static_cast<SizeT>(index(j)) * p); };
    auto partLen = [&](int j) { return collMin(m, static_cast<SizeT>(index(j) + 1) * p) - partLo(j); };
    const int halfA = static_cast<int>(++*r & 1ull);
    if (me == root) {
      for (int i = 1; i < n; ++i) {
        const int j = collPeer(me, i, n);
        collCopy(collSlot(h, j, c, halfA, me), job.src + at + partLo(j), partLen(j));
      }
      if (job.dst != job.src) collCopy(job.dst + at, job.src + at, m);  // in place: there already
    }
    if (!collExchange(h, job, *r)) return false;
    const int halfB = static_cast<int>(++*r & 1ull);
    if (me != root) {
      const char* mine = collSlot(h, me, c, halfA, root);
      for (int i = 1; i < n; ++i) {
        const int j = collPeer(me, i, n);
        if (j != root) collCopy(collSlot(h, j, c, halfB, me), mine, partLen(me));
      }
      collCopy(job.dst + at + partLo(me), mine, partLen(me));
    }
    if (!collExchange(h, job, *r)) return false;
    if (me != root) {
      for (int k = 0; k < n; ++k) {
        if (k != root && k != me) collCopy(job.dst + at + partLo(k), collSlot(h, me, c, halfB, k), partLen(k));
      }
    }
    if (off + per >= len) return true;
  }
}

// Barrier, broadcast, allgather and alltoall: copies of bytes (job.block and the range in bytes).
AXON_DEVICE_INLINE bool collRunCopySimple(const CollHandle& h, const CollJob& job) {
  const int n = h.size, me = h.myIndex, c = job.channel;
  unsigned long long r = collLoadRounds(h, c);
  const SizeT chunk = h.chunkBytes;
  const SizeT len = job.hi - job.lo;
  const unsigned kind = job.record.collective;
  const int root = job.record.root;
  bool ok = collStart(h);
  // A broadcast's two-shot on 2 GPUs is Direct's pull (coll/plan.cpp); on Simple, where the
  // members' buffers did not allow Direct, it runs one-shot: one round a chunk, not two.
  const bool twoShot = kind == kCollBroadcast && job.record.algo == kAlgoTwoShot && n > 2;
  if (ok && twoShot) ok = collRunBroadcastTwoShot(h, job, &r);
  for (SizeT off = 0; ok && !twoShot; off += chunk) {
    const SizeT m = kind == kCollBarrier ? 0 : collMin(chunk, len - off);
    const SizeT at = job.lo + off;
    ++r;
    const int half = static_cast<int>(r & 1ull);
    for (int i = 1; i < n && m != 0; ++i) {
      const int j = collPeer(me, i, n);
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
      if (me != root) collCopy(job.dst + at, collSlot(h, me, c, half, root), m);
      else if (job.dst != job.src) collCopy(job.dst + at, job.src + at, m);  // in place: there already
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
  collStoreRounds(h, c, r);
  return ok;
}

}  // namespace detail
}  // namespace device
}  // namespace axon
