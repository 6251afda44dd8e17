// What both protocols of the device collectives share (see coll_impl.hpp for the engine's rules):
// the call kinds, a channel's job, workspace addressing, the LL unit, and error reporting.
#pragma once

#include "axon/device/coll_types.hpp"
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
enum CollAlgo : unsigned { kAlgoLocal = 0, kAlgoOneShot, kAlgoTwoShot, kAlgoChain = 4, kAlgoPushed = 7 };
constexpr unsigned kProtoSimple = static_cast<unsigned>(CollProto::Simple);
constexpr unsigned kProtoLl = static_cast<unsigned>(CollProto::LL);
constexpr unsigned kProtoDirect = static_cast<unsigned>(CollProto::Direct);

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
  // Direct calls: the heap offsets of src and dst this PE proposes (kCollNoOffset: not on the
  // heap, or not usable in place); see coll_direct_impl.hpp.
  unsigned long long srcOffset, dstOffset;
};

AXON_DEVICE_INLINE SizeT collMin(SizeT a, SizeT b) { return a < b ? a : b; }

// Elements of T in one 16-byte vector (at least one): the unit in which the reductions split a
// block among channels and parts, so that each share starts 16-byte aligned when the buffer does.
template <class T>
AXON_HOST_DEVICE_INLINE constexpr SizeT collUnitOf() {
  return sizeof(T) >= 16 ? 1 : 16 / sizeof(T);
}

// The member a PE serves i-th (i in [1, n)) when it sends to every other member one after another:
// each starts with its successor, so at every step the members send to n different receivers
// rather than all to member 0 (whose NVLink ingress would carry everything at once).
AXON_DEVICE_INLINE int collPeer(int me, int i, int n) { return (me + i) % n; }

// ── Workspace addressing ────────────────────────────────────────────────────────────────────────

AXON_DEVICE_INLINE char* collMember(const CollHandle& h, int m) {
  return h.base + static_cast<long long>(m) * h.stride;
}
AXON_DEVICE_INLINE unsigned long long* collRounds(const CollHandle& h, int c) {
  return reinterpret_cast<unsigned long long*>(collMember(h, h.myIndex) + h.roundsOffset +
                                               static_cast<SizeT>(c) * kCollLine);
}
// The rounds this PE completed on channel c, read by every thread at a call's start; stored back
// by thread 0 once the whole block is done with the call (every protocol counts on one counter).
// The barrier after the store orders it before every thread's load in the block's next call on
// the channel: without it, a warp could start that call with the old count, so with the wrong
// half of the slots and a stale flag.
AXON_DEVICE_INLINE unsigned long long collLoadRounds(const CollHandle& h, int c) {
  return *reinterpret_cast<volatile unsigned long long*>(collRounds(h, c));
}
AXON_DEVICE_INLINE void collStoreRounds(const CollHandle& h, int c, unsigned long long r) {
  __syncthreads();
  if (linearThreadIndex() == 0) *reinterpret_cast<volatile unsigned long long*>(collRounds(h, c)) = r;
  __syncthreads();
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
  return h.members ? h.members[m] : h.teamStart + m * h.teamStride;
}

// ── LL units ──────────────────────────────────────────────────────────────────────────────────

// 16 bytes: two 8-byte words, each 4 data bytes and the round's flag. An 8-byte store reaches the
// peer whole, so a reader that sees the flag also sees the data beside it: no fence is needed.
// The flag of round r is its low 32 bits; a round whose flag would be 0 is never an LL round, and
// it clears the LL area (see collExchange), so flags of earlier rounds cannot look current.
struct alignas(16) LlUnit {
  unsigned d0, f0, d1, f1;
};

AXON_DEVICE_INLINE unsigned llFlag(unsigned long long round) {
  return static_cast<unsigned>(round);
}

AXON_DEVICE_INLINE LlUnit* collLlUnit(const CollHandle& h, int m, int c, int half, int from,
                                      SizeT unit) {
  const SizeT slot = (static_cast<SizeT>(c) * 2 + half) * h.size + from;
  return reinterpret_cast<LlUnit*>(collMember(h, m) + h.llOffset + slot * h.llSlotBytes) + unit;
}

AXON_DEVICE_INLINE void llStore(LlUnit* p, unsigned long long v, unsigned flag) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(globalAddress(p)),
               "r"(static_cast<unsigned>(v)), "r"(flag), "r"(static_cast<unsigned>(v >> 32)),
               "r"(flag)
               : "memory");
}

AXON_DEVICE_INLINE LlUnit llLoad(const LlUnit* p) {
  LlUnit u;
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(u.d0), "=r"(u.f0), "=r"(u.d1), "=r"(u.f1)
               : "l"(globalAddress(p))
               : "memory");
  return u;
}

AXON_DEVICE_INLINE unsigned long long llData(const LlUnit& u) {
  return static_cast<unsigned long long>(u.d1) << 32 | u.d0;
}

// A 64-bit digest of a call record. LL receivers wait for one unit carrying the sender's digest
// and compare it with their own; the record itself is read only when the digests differ.
AXON_DEVICE_INLINE unsigned long long collDigest(const CollRecord& r) {
  const unsigned long long* w = reinterpret_cast<const unsigned long long*>(&r);
  unsigned long long d = 0x9e3779b97f4a7c15ull;
  for (unsigned i = 0; i < kCollLlRecordUnits; ++i) {
    d = (d ^ w[i]) * 0xff51afd7ed558ccdull;
    d ^= d >> 33;
  }
  return d;
}

// The call record member `from` sent this PE in LL round `flag` on channel c (header units 1 on),
// if all of it is there: how a Simple round recognizes a member that took the LL protocol.
AXON_DEVICE_INLINE bool llPeekRecord(const CollHandle& h, int c, int half, int from, unsigned flag,
                                     CollRecord* out) {
  unsigned long long words[kCollLlRecordUnits];
  for (unsigned i = 0; i < kCollLlRecordUnits; ++i) {
    const LlUnit u = llLoad(collLlUnit(h, h.myIndex, c, half, from, 1 + i));
    if (u.f0 != flag || u.f1 != flag) return false;
    words[i] = llData(u);
  }
  unsigned long long* to = reinterpret_cast<unsigned long long*>(out);
  for (unsigned i = 0; i < kCollLlRecordUnits; ++i) to[i] = words[i];
  return true;
}

// ── Errors ────────────────────────────────────────────────────────────────────────────────────

// Writes `v` into the report at `e` unless one is there already (the first error wins). True when
// this call wrote it.
inline AXON_DEVICE_NOINLINE bool collPublish(CollError* e, const CollError& v) {
  if (::atomicCAS_system(&e->state, 0ull, 1ull) != 0ull) return false;
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
  return true;
}

// Reports an error met by this PE: into its host report, then into every member's abort area
// (its own included, so that its other channels and threads stop too). The thread whose report
// was the first also prints one line on stdout.
inline AXON_DEVICE_NOINLINE void collRaise(const CollHandle& h, const CollError& v) {
  const bool first = collPublish(h.error, v);
  for (int m = 0; m < h.size; ++m) collPublish(collAbortArea(h, m), v);
  if (!first) return;
  if (v.code == static_cast<int>(CollErrorCode::Timeout)) {
    const bool ll = v.mine.proto == kProtoLl;
    printf("axon: PE %d: device collective timed out after %.1f s on channel %d waiting for PE %d: "
           "%s at %p expected %s%llu, seen %llu\n",
           v.pe, static_cast<double>(h.timeoutNs) * 1e-9, v.channel, v.peer,
           ll ? "LL flag" : "ready word", reinterpret_cast<void*>(v.address), ll ? "" : ">= ",
           v.expected, v.seen);
  } else {
    printf("axon: PE %d: device collective mismatch on channel %d: this PE called collective %u "
           "(count %llu, type %u, op %u, root %d, algo %u, proto %u, channels %u), PE %d called "
           "collective %u (count %llu, type %u, op %u, root %d, algo %u, proto %u, channels %u)\n",
           v.pe, v.channel, v.mine.collective, v.mine.count, v.mine.dtype, v.mine.op, v.mine.root,
           v.mine.algo, v.mine.proto, v.mine.channels, v.peer, v.theirs.collective,
           v.theirs.count, v.theirs.dtype, v.theirs.op, v.theirs.root, v.theirs.algo,
           v.theirs.proto, v.theirs.channels);
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

// The start of every call on a channel, by the whole block: false in every thread when a member
// stopped the team's collectives earlier (its report is then copied into this PE's, by thread 0).
// One verdict for the block: a report landing while its threads read the abort area must not
// send some of them into the rounds, whose barriers the others would then never reach.
AXON_DEVICE_INLINE bool collStart(const CollHandle& h) {
  const bool ok = __syncthreads_or(collAborted(h) ? 1 : 0) == 0;
  if (!ok && linearThreadIndex() == 0) collAdopt(h);
  return ok;
}

AXON_DEVICE_INLINE bool collSameCall(const CollRecord& a, const CollRecord& b) {
  return a.collective == b.collective && a.dtype == b.dtype && a.op == b.op && a.algo == b.algo &&
         a.root == b.root && a.channels == b.channels && a.proto == b.proto && a.count == b.count;
}

// Member `from` made call `theirs` in round r (seen in its signal of round `seen`), not this PE's.
inline AXON_DEVICE_NOINLINE void collMismatch(const CollHandle& h, const CollJob& job, int from,
                                              const CollRecord& theirs, unsigned long long r,
                                              unsigned long long seen) {
  CollError e{};
  e.code = static_cast<int>(CollErrorCode::Mismatch);
  e.pe = h.myPe;
  e.peer = collWorldPe(h, from);
  e.channel = job.channel;
  e.expected = r;
  e.seen = seen;
  e.mine = job.record;
  e.theirs = theirs;
  collRaise(h, e);
}

inline AXON_DEVICE_NOINLINE void collTimeout(const CollHandle& h, const CollJob& job, int from,
                                             const void* word, unsigned long long expected,
                                             unsigned long long seen) {
  CollError e{};
  e.code = static_cast<int>(CollErrorCode::Timeout);
  e.pe = h.myPe;
  e.peer = collWorldPe(h, from);
  e.channel = job.channel;
  e.address = reinterpret_cast<unsigned long long>(word);
  e.expected = expected;
  e.seen = seen;
  e.mine = job.record;
  collRaise(h, e);
}

}  // namespace detail
}  // namespace device
}  // namespace axon
