// The LL protocol of the device collectives (rules in coll_impl.hpp), for small calls.
//
// A round sends each member one message into its LL slot [channel][r % 2][me]: a header (the
// call's digest, then its record), then the data, in 16-byte units whose two 8-byte words each
// hold 4 data bytes and the round's flag. Every thread moves its own units: it stores them into
// the receivers' slots, then polls its units of every sender's message together until their flags
// are the round's, and reduces or copies them; the last threads of the block wait for the
// senders' digests meanwhile. There is no fence and no separate signal, so a round costs one trip
// over NVLink.
//
// Every member sends every other member a message every round (a header alone when it has no
// data for it), so, as with Simple, no member gets more than one round ahead of another and the
// half a message lands in was consumed a round earlier. A barrier closes each round so that a
// thread with no units in one round cannot run ahead of its block into the next.
#pragma once

#include "axon/device/impl/coll_common_impl.hpp"
#include "axon/device/impl/coll_simple_impl.hpp"
#include "axon/device/impl/reduce_impl.hpp"

namespace axon {
namespace device {
namespace detail {

// The 8 data bytes of a unit as elements of T.
template <class T>
union LlWord {
  unsigned long long bits;
  T v[8 / sizeof(T)];
};

// Bytes [8u, 8u + 8) of the `bytes` bytes at p, zero past the end.
AXON_DEVICE_INLINE unsigned long long llGather(const char* p, SizeT u, SizeT bytes) {
  const char* q = p + 8 * u;
  const SizeT left = bytes - 8 * u;
  const unsigned long long at = reinterpret_cast<unsigned long long>(q);
  if (left >= 8 && (at & 7) == 0) return *reinterpret_cast<const unsigned long long*>(q);
  if (left >= 8 && (at & 3) == 0) {
    const unsigned* w = reinterpret_cast<const unsigned*>(q);
    return static_cast<unsigned long long>(w[1]) << 32 | w[0];
  }
  unsigned long long v = 0;
  const SizeT k = left < 8 ? left : 8;
  for (SizeT i = 0; i < k; ++i) {
    v |= static_cast<unsigned long long>(static_cast<unsigned char>(q[i])) << (8 * i);
  }
  return v;
}

// Writes the bytes of `v` that fall inside the `bytes` bytes at p, at [8u, 8u + 8).
AXON_DEVICE_INLINE void llScatter(char* p, SizeT u, SizeT bytes, unsigned long long v) {
  char* q = p + 8 * u;
  const SizeT left = bytes - 8 * u;
  const unsigned long long at = reinterpret_cast<unsigned long long>(q);
  if (left >= 8 && (at & 7) == 0) {
    *reinterpret_cast<unsigned long long*>(q) = v;
    return;
  }
  if (left >= 8 && (at & 3) == 0) {
    unsigned* w = reinterpret_cast<unsigned*>(q);
    w[0] = static_cast<unsigned>(v);
    w[1] = static_cast<unsigned>(v >> 32);
    return;
  }
  const SizeT k = left < 8 ? left : 8;
  for (SizeT i = 0; i < k; ++i) q[i] = static_cast<char>(v >> (8 * i));
}

// The rest of a wait that the fast spin in llWait did not finish: polls with the abort, mismatch
// and timeout checks of every wait. For a header unit it also recognizes a member that took the
// Simple protocol in this round (it signalled its ready word with this round): a different call.
// A ready word past this round is no mismatch: the member finished this LL round (it had every
// message of it, this PE's included) and signalled a later Simple one. Its header, stored before
// that release, is visible after the acquire; a member that took Simple in this round cannot get
// past it, as this PE never signals it.
inline AXON_DEVICE_NOINLINE bool llWaitSlow(const CollHandle& h, const CollJob& job,
                                            const LlUnit* p, unsigned flag, int from,
                                            unsigned long long r, bool header,
                                            unsigned long long* out) {
  for (PollPacer pace;;) {
    const LlUnit u = llLoad(p);
    if (u.f0 == flag && u.f1 == flag) {
      *out = llData(u);
      return true;
    }
    if (pace.next()) {
      if (collAborted(h)) {
        collAdopt(h);
        return false;
      }
      unsigned long long* ready = collReady(h, h.myIndex, job.channel, from);
      if (header && loadRelaxedSys(ready) >= r) {
        const unsigned long long seen = loadAcquireSys(ready);
        const LlUnit again = llLoad(p);
        if (again.f0 == flag && again.f1 == flag) {
          *out = llData(again);
          return true;
        }
        if (seen == r) {
          const CollSlotRecord* rec =
              collRecordAt(h, h.myIndex, job.channel, static_cast<int>(r & 1ull), from);
          collMismatch(h, job, from, rec->call, r, seen);
          return false;
        }
      }
      if (pace.expired(h.timeoutNs)) {
        collTimeout(h, job, from, p, flag, u.f0 != flag ? u.f0 : u.f1);
        return false;
      }
    }
  }
}

// Waits (this thread) until unit `p` of member `from`'s message carries this round's flag, and
// returns its data bytes in *out. False, with the report written, when the wait failed.
AXON_DEVICE_INLINE bool llWait(const CollHandle& h, const CollJob& job, const LlUnit* p,
                               unsigned flag, int from, unsigned long long r, bool header,
                               unsigned long long* out) {
  for (unsigned i = 0; i < kTimerCheckPolls; ++i) {
    const LlUnit u = llLoad(p);
    if (u.f0 == flag && u.f1 == flag) {
      *out = llData(u);
      return true;
    }
  }
  return llWaitSlow(h, job, p, flag, from, r, header, out);
}

// Members whose units a thread waits for at once: the loads of a batch are in flight together,
// so receiving every sender's unit costs about one memory latency instead of one per sender.
constexpr int kLlBatch = 8;

// Waits (this thread) for unit `unit` of members [k0, k0 + kLlBatch) (all but this PE and those
// past the team) and returns their data bytes in out[]. Every pass reloads all the units still
// missing together; what the fast passes did not receive goes through llWaitSlow one by one.
AXON_DEVICE_INLINE bool llTakeBatch(const CollHandle& h, const CollJob& job, int half, int k0,
                                    SizeT unit, unsigned flag, unsigned long long r,
                                    unsigned long long (&out)[kLlBatch]) {
  unsigned pending = 0;
#pragma unroll
  for (int b = 0; b < kLlBatch; ++b) {
    const int k = k0 + b;
    if (k < h.size && k != h.myIndex) pending |= 1u << b;
  }
  for (unsigned polls = 0; pending != 0 && polls < kTimerCheckPolls; ++polls) {
    LlUnit got[kLlBatch];
#pragma unroll
    for (int b = 0; b < kLlBatch; ++b) {
      if (pending >> b & 1u) got[b] = llLoad(collLlUnit(h, h.myIndex, job.channel, half, k0 + b, unit));
    }
#pragma unroll
    for (int b = 0; b < kLlBatch; ++b) {
      if ((pending >> b & 1u) && got[b].f0 == flag && got[b].f1 == flag) {
        out[b] = llData(got[b]);
        pending &= ~(1u << b);
      }
    }
  }
  for (int b = 0; pending != 0 && b < kLlBatch; ++b) {
    if (!(pending >> b & 1u)) continue;
    const int k = k0 + b;
    if (!llWaitSlow(h, job, collLlUnit(h, h.myIndex, job.channel, half, k, unit), flag, k, r,
                    false, &out[b])) {
      return false;
    }
    pending &= ~(1u << b);
  }
  return true;
}

// Every member's message starts with the header: this PE's call digest, then its record. The
// block's threads share the stores (one unit each).
AXON_DEVICE_INLINE void llSendHeaders(const CollHandle& h, const CollJob& job, int half,
                                      unsigned flag) {
  const unsigned long long* words = reinterpret_cast<const unsigned long long*>(&job.record);
  const int units = static_cast<int>(kCollLlHeaderUnits);
  for (int i = static_cast<int>(linearThreadIndex()); i < h.size * units;
       i += static_cast<int>(blockThreadCount())) {
    const int j = i / units, unit = i % units;
    if (j == h.myIndex) continue;
    llStore(collLlUnit(h, j, job.channel, half, h.myIndex, unit),
            unit == 0 ? collDigest(job.record) : words[unit - 1], flag);
  }
}

// Compares every member's digest with this PE's: thread size - 1 - j checks member j, so that in
// a small call these waits run beside the data waits of the first threads. On a difference it
// reads the member's record and reports the mismatch. 1 when this thread found a failure.
AXON_DEVICE_INLINE int llCheckHeaders(const CollHandle& h, const CollJob& job, int half,
                                      unsigned flag, unsigned long long r) {
  const int size = static_cast<int>(blockThreadCount());
  const unsigned long long mine = collDigest(job.record);
  for (int j = size - 1 - static_cast<int>(linearThreadIndex()); j < h.size; j += size) {
    if (j == h.myIndex) continue;
    unsigned long long theirs;
    if (!llWait(h, job, collLlUnit(h, h.myIndex, job.channel, half, j, 0), flag, j, r, true,
                &theirs)) {
      return 1;
    }
    if (theirs == mine) continue;
    CollRecord record;
    unsigned long long* words = reinterpret_cast<unsigned long long*>(&record);
    for (unsigned i = 0; i < kCollLlRecordUnits; ++i) {
      if (!llWait(h, job, collLlUnit(h, h.myIndex, job.channel, half, j, 1 + i), flag, j, r, true,
                  &words[i])) {
        return 1;
      }
    }
    collMismatch(h, job, j, record, r, r);
    return 1;
  }
  return 0;
}

// Starts round r + 1, returning it. A round whose flag would be 0 first runs as a Simple exchange
// (which clears the LL slots, see collExchange); false if that exchange failed.
AXON_DEVICE_INLINE bool llNextRound(const CollHandle& h, const CollJob& job,
                                    unsigned long long* r) {
  if (llFlag(*r + 1) == 0 && !collExchange(h, job, ++*r)) return false;
  ++*r;
  return true;
}

// ── The collectives, LL protocol ──────────────────────────────────────────────────────────────

// Reduce, allreduce (one-shot) and reduce_scatter on elements of T.
template <class T, ReduceOp Op>
AXON_DEVICE_INLINE bool collRunReduceLl(const CollHandle& h, const CollJob& job) {
  constexpr unsigned kPer = 8 / sizeof(T);
  static_assert(kPer * sizeof(T) == 8, "LL reductions take elements of 1, 2, 4 or 8 bytes");
  const int n = h.size, me = h.myIndex, c = job.channel, root = job.record.root;
  const unsigned rank = linearThreadIndex(), size = blockThreadCount();
  const unsigned kind = job.record.collective;
  const SizeT chunk = h.llChunkBytes / sizeof(T);
  const SizeT len = job.hi - job.lo;
  unsigned long long r = collLoadRounds(h, c);
  bool ok = collStart(h);
  for (SizeT off = 0; ok; off += chunk) {
    if (!(ok = llNextRound(h, job, &r))) break;
    const int half = static_cast<int>(r & 1ull);
    const unsigned flag = llFlag(r);
    const SizeT at = job.lo + off;
    const SizeT bytes = collMin(chunk, len - off) * sizeof(T);
    const SizeT units = (bytes + 7) / 8;
    const char* own =
        job.src + ((kind == kCollReduceScatter ? static_cast<SizeT>(me) * job.block : 0) + at) *
                      sizeof(T);
    llSendHeaders(h, job, half, flag);
    for (SizeT u = rank; u < units; u += size) {
      if (kind == kCollReduceScatter) {
        for (int j = 0; j < n; ++j) {
          if (j == me) continue;
          const char* part = job.src + (static_cast<SizeT>(j) * job.block + at) * sizeof(T);
          llStore(collLlUnit(h, j, c, half, me, kCollLlHeaderUnits + u), llGather(part, u, bytes),
                  flag);
        }
      } else if (kind == kCollAllreduce || me != root) {
        const unsigned long long v = llGather(own, u, bytes);
        for (int j = 0; j < n; ++j) {
          if (j == me || (kind == kCollReduce && j != root)) continue;
          llStore(collLlUnit(h, j, c, half, me, kCollLlHeaderUnits + u), v, flag);
        }
      }
    }
    int failed = llCheckHeaders(h, job, half, flag, r);
    if (!failed && (kind != kCollReduce || me == root)) {
      char* out = job.dst + at * sizeof(T);
      for (SizeT u = rank; u < units && !failed; u += size) {
        const SizeT unit = kCollLlHeaderUnits + u;
        const unsigned long long mine = llGather(own, u, bytes);
        // In member order, so every member computes bit-identical results.
        LlWord<T> acc, w;
        for (int k0 = 0; k0 < n && !failed; k0 += kLlBatch) {
          unsigned long long got[kLlBatch];
          if (!llTakeBatch(h, job, half, k0, unit, flag, r, got)) {
            failed = 1;
            break;
          }
#pragma unroll
          for (int b = 0; b < kLlBatch; ++b) {
            const int k = k0 + b;
            if (k >= n) continue;
            w.bits = k == me ? mine : got[b];
            if (k == 0) {
              acc = w;
            } else {
#pragma unroll
              for (unsigned e = 0; e < kPer; ++e) acc.v[e] = Reducer<Op, T>::apply(acc.v[e], w.v[e]);
            }
          }
        }
        if (!failed) llScatter(out, u, bytes, acc.bits);
      }
    }
    if (__syncthreads_or(failed)) ok = false;
    if (!ok || off + chunk >= len) break;
  }
  collStoreRounds(h, c, r);
  return ok;
}

// Broadcast, allgather and alltoall: copies of bytes (job.block and the range in bytes). Barriers
// never take LL (collUsesLl).
AXON_DEVICE_INLINE bool collRunCopyLl(const CollHandle& h, const CollJob& job) {
  const int n = h.size, me = h.myIndex, c = job.channel, root = job.record.root;
  const unsigned rank = linearThreadIndex(), size = blockThreadCount();
  const unsigned kind = job.record.collective;
  const SizeT chunk = h.llChunkBytes;
  const SizeT len = job.hi - job.lo;
  unsigned long long r = collLoadRounds(h, c);
  bool ok = collStart(h);
  for (SizeT off = 0; ok; off += chunk) {
    if (!(ok = llNextRound(h, job, &r))) break;
    const int half = static_cast<int>(r & 1ull);
    const unsigned flag = llFlag(r);
    const SizeT at = job.lo + off;
    const SizeT bytes = collMin(chunk, len - off);
    const SizeT units = (bytes + 7) / 8;
    // Member k's part of a buffer of n blocks (allgather's dst, alltoall's src and dst).
    auto part = [&](int k) { return static_cast<SizeT>(k) * job.block + at; };
    llSendHeaders(h, job, half, flag);
    for (SizeT u = rank; u < units; u += size) {
      if (kind == kCollAlltoall) {
        for (int j = 0; j < n; ++j) {
          if (j != me) {
            llStore(collLlUnit(h, j, c, half, me, kCollLlHeaderUnits + u),
                    llGather(job.src + part(j), u, bytes), flag);
          }
        }
      } else if (kind == kCollAllgather || (kind == kCollBroadcast && me == root)) {
        const unsigned long long v = llGather(job.src + at, u, bytes);
        for (int j = 0; j < n; ++j) {
          if (j != me) llStore(collLlUnit(h, j, c, half, me, kCollLlHeaderUnits + u), v, flag);
        }
      }
    }
    int failed = llCheckHeaders(h, job, half, flag, r);
    for (SizeT u = rank; u < units && !failed; u += size) {
      if (kind == kCollBroadcast) {
        unsigned long long v;
        if (me == root) {
          if (job.dst != job.src) llScatter(job.dst + at, u, bytes, llGather(job.src + at, u, bytes));
        } else if (llWait(h, job, collLlUnit(h, me, c, half, root, kCollLlHeaderUnits + u), flag,
                          root, r, false, &v)) {
          llScatter(job.dst + at, u, bytes, v);
        } else {
          failed = 1;
        }
        continue;
      }
      const SizeT unit = kCollLlHeaderUnits + u;
      for (int k0 = 0; k0 < n && !failed; k0 += kLlBatch) {  // allgather, alltoall
        unsigned long long got[kLlBatch];
        if (!llTakeBatch(h, job, half, k0, unit, flag, r, got)) {
          failed = 1;
          break;
        }
#pragma unroll
        for (int b = 0; b < kLlBatch; ++b) {
          const int k = k0 + b;
          if (k >= n) continue;
          const unsigned long long v =
              k == me ? llGather(job.src + (kind == kCollAllgather ? at : part(me)), u, bytes)
                      : got[b];
          llScatter(job.dst + part(k), u, bytes, v);
        }
      }
    }
    if (__syncthreads_or(failed)) ok = false;
    if (!ok || off + chunk >= len) break;
  }
  collStoreRounds(h, c, r);
  return ok;
}

}  // namespace detail
}  // namespace device
}  // namespace axon
