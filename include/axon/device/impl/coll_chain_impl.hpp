// The chained reduce of the device collectives (the engine's rules in coll_impl.hpp): large reduce
// calls on more than 2 GPUs (coll/plan.cpp says from which block), on the Simple protocol's slots,
// so for any buffers.
//
// The members form a chain that ends at the root: root + 1 (the head), root + 2, ..., root - 1,
// root. Piece by piece (collChainPiece), the head pushes its src into its successor's slot; every
// later member reduces that slot with its own src and pushes the sum on into its successor's slot,
// the root into its dst. Every link then carries each byte once, as stores (loads of a peer's
// memory move fewer bytes per second), and the members work on successive pieces at once. The
// Direct reduce moves as many bytes, but every member loads them from the others.
//
// A member signals its two neighbours only, so the engine's rule that keeps the halves of the
// slots safe (every member signals every other in every round) does not hold here. Instead:
// - Round r0 + 1 opens the call, back along the chain from the root: every member but the head
//   sends its predecessor its call record and the round, the root at once, every other member once
//   its successor's opening arrived (and matched its record). A member's opening means that it and
//   every member after it are done with their earlier calls on the channel (their slots, records
//   and LL slots); a member pushes nothing before its successor's, and the head learns from it that
//   every member has entered the call.
// - Members that disagree on the call can wait on each other in a ring (say, each half of the
//   members names another root, so some member's successor thinks itself the head and never
//   opens to it). So every member first posts its record in its own record line of the opening
//   round's half (collChainPost; no signal writes a member's line for itself), and every wait of
//   the call also compares the successor's posted record (collPostedDiffers): a difference is
//   reported as a mismatch instead of ending in a timeout.
// - Round r0 + 2 + i carries piece i (from 0): the predecessor pushes it into buffer i % 4 (below),
//   then writes its record and releases the round; the member acquires it, compares the record,
//   reduces, and acknowledges: the round into the predecessor's ready word for it. A member writes
//   piece i into a buffer after its successor acknowledged piece i - 4 (for the first four pieces,
//   opened the call).
// - The four buffers: both halves of the slot that the predecessor fills in the other algorithms,
//   and both halves of the member's own slot, which no algorithm else writes (a member never
//   pushes to itself). Four pieces in flight, not two: a member's round then waits for its
//   successor's acknowledgement of a piece three rounds back, not one, so the signals' latency
//   overlaps the work of the rounds between.
// - A member's call ends once its successor acknowledged the last piece (the root's, once it
//   reduced it). By then every member has entered the call (the openings passed back to the head,
//   and every piece came from it), and none is still reading a slot, record line or LL slot that
//   this member's next call writes: a member it pushed to acknowledged every piece, and the others
//   read nothing of this member's. So the next call on the channel, of any algorithm, may begin.
// - LL flags are a round's low 32 bits, and a round whose flag is 0 clears the member's LL slots
//   first (collExchange). Here that is done at the opening, before the member tells its
//   predecessor, for any round of the call whose flag is 0: no member's next call (whose LL
//   messages a later clear could erase) can begin before then.
// Ready words only grow and every member counts the same rounds, so the words of pairs that do not
// signal each other in this call are passed by the next call's signals.
#pragma once

#include "axon/device/impl/coll_common_impl.hpp"
#include "axon/device/impl/coll_simple_impl.hpp"
#include "axon/device/impl/reduce_impl.hpp"

namespace axon {
namespace device {
namespace detail {

// Tells member `to` that this PE reached round r of the call: the record first (only where `to`
// compares it), then a release store of the round, which also publishes what the block did before
// the barrier that precedes this (by one thread).
AXON_DEVICE_INLINE void collChainSignal(const CollHandle& h, const CollJob& job, int to,
                                        unsigned long long r, bool withRecord) {
  if (withRecord) {
    CollSlotRecord* rec = collRecordAt(h, to, job.channel, static_cast<int>(r & 1ull), h.myIndex);
    rec->call = job.record;
    rec->round = r;
    rec->srcOffset = kCollNoOffset;
    rec->dstOffset = kCollNoOffset;
  }
  storeReleaseSys(collReady(h, to, job.channel, h.myIndex), r);
}

// Pieces in flight between two members (the buffers, rules at the top).
constexpr unsigned long long kChainBuffers = 4;

// Posts this PE's call record for its predecessor to compare while it waits (collPostedDiffers),
// first thing at the opening (nothing waits for it, so another thread may already wait): the
// record in its own line of the opening round's half, the round written 0 first and last with
// release (a sequence lock; rules at the top).
AXON_DEVICE_INLINE void collChainPost(const CollHandle& h, const CollJob& job, unsigned long long opened) {
  CollSlotRecord* rec = collRecordAt(h, h.myIndex, job.channel, static_cast<int>(opened & 1ull), h.myIndex);
  *reinterpret_cast<volatile unsigned long long*>(&rec->round) = 0;
  fenceSys();
  const unsigned* from = reinterpret_cast<const unsigned*>(&job.record);
  volatile unsigned* to = reinterpret_cast<volatile unsigned*>(&rec->call);
  for (unsigned i = 0; i < sizeof(CollRecord) / sizeof(unsigned); ++i) to[i] = from[i];
  storeReleaseSys(&rec->round, opened);
}

// Waits (one thread) for member `from`'s round r and, where it sent its record with it, compares
// that with this PE's call; while it waits, it compares the successor's posted record (`posted`).
// False when the wait failed or the calls differ (reported). The record line of round r may hold
// that of round r + 2 already (a predecessor runs up to four pieces ahead), but only ever one of
// this call: a member starts its next call after its successor acknowledged the last piece.
AXON_DEVICE_INLINE bool collChainAwait(const CollHandle& h, const CollJob& job, int from,
                                       unsigned long long r, bool withRecord, const CollPosted& posted) {
  if (!collWait(h, job, from, r, &posted)) return false;
  if (!withRecord) return true;
  const CollSlotRecord* rec = collRecordAt(h, h.myIndex, job.channel, static_cast<int>(r & 1ull), from);
  const CollRecord theirs = rec->call;
  if (!collSameCall(job.record, theirs) || rec->round < r) {
    collMismatch(h, job, from, theirs, r, rec->round);
    return false;
  }
  return true;
}

template <class T, ReduceOp Op>
AXON_DEVICE_INLINE bool collRunReduceChain(const CollHandle& h, const CollJob& job) {
  const int n = h.size, me = h.myIndex, c = job.channel, root = job.record.root;
  const int next = (me + 1) % n, prev = (me + n - 1) % n;
  const bool produces = me != root, consumes = me != (root + 1) % n;  // the head has no predecessor
  const unsigned rank = linearThreadIndex();
  // Two threads of different warps wait at once: one for the predecessor's piece, one for the
  // successor's room.
  const unsigned roomWaiter = blockThreadCount() > 32 ? 32 : 0;
  const SizeT e = sizeof(T), len = job.hi - job.lo;
  const SizeT piece = collChainPiece(len, e, h.chunkBytes, collUnitOf<T>());
  // Piece i's buffer in member m's workspace: half i % 2 of its predecessor's slot, then of its own.
  auto buffer = [&](int m, unsigned long long i) {
    return collSlot(h, m, c, static_cast<int>(i & 1ull), (i & 2ull) ? m : (m + n - 1) % n);
  };
  const unsigned long long r0 = collLoadRounds(h, c), opened = r0 + 1;
  const unsigned long long last = r0 + collChainRounds(len, piece);
  const CollPosted successor{next, opened};
  const T* src = reinterpret_cast<const T*>(job.src);
  T* dst = reinterpret_cast<T*>(job.dst);
  bool ok = collStart(h);
  unsigned long long r = r0;
  while (ok && r < last) {
    ++r;
    int failed = 0;
    if (r == opened) {
      if (rank == 0) collChainPost(h, job, opened);
      // As collExchange: LL flags of rounds 2^32 back must not look current (rules at the top).
      if (llFlag(opened) == 0 || llFlag(last) < llFlag(opened)) {
        collClearLl(h, c);
        __syncthreads();
      }
      if (produces && rank == roomWaiter && !collChainAwait(h, job, next, r, true, successor)) failed = 1;
      ok = __syncthreads_or(failed) == 0;
      if (ok && consumes && rank == 0) collChainSignal(h, job, prev, r, true);
      continue;
    }
    const unsigned long long i = r - opened - 1;  // the piece
    if (consumes && rank == 0 && !collChainAwait(h, job, prev, r, true, successor)) failed = 1;
    // Piece i reuses the buffer of piece i - 4; the successor's opening covers the first four.
    if (produces && rank == roomWaiter && i >= kChainBuffers && !collChainAwait(h, job, next, r - kChainBuffers, false, successor)) {
      failed = 1;
    }
    if (!(ok = __syncthreads_or(failed) == 0)) break;
    const SizeT off = static_cast<SizeT>(i) * piece;
    const SizeT m = collMin(piece, len - collMin(off, len)), at = job.lo + collMin(off, len);
    const char* in = buffer(me, i);
    if (!produces) {
      collReduceFrom<T, Op>(dst + at, src + at, in, 0, 2, 1, m);
    } else if (consumes) {
      collReduceFrom<T, Op>(reinterpret_cast<T*>(buffer(next, i)), src + at, in, 0, 2, 1, m);
    } else {
      collCopy(buffer(next, i), src + at, m * e);
    }
    __syncthreads();  // the block's reads of the slot and pushes are done before the signals
    if (rank == 0) {
      if (produces) collChainSignal(h, job, next, r, true);
      if (consumes) collChainSignal(h, job, prev, r, false);  // the acknowledgement
    }
  }
  // The successor has reduced the last piece: nothing of this call is left in its slots.
  if (ok && produces) {
    int failed = 0;
    if (rank == roomWaiter && !collChainAwait(h, job, next, last, false, successor)) failed = 1;
    ok = __syncthreads_or(failed) == 0;
  }
  collStoreRounds(h, c, r);
  return ok;
}

}  // namespace detail
}  // namespace device
}  // namespace axon
