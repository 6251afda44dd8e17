// Bounded wait on a 64-bit word of this PE's GPU heap (a signal or a barrier counter).
//
// One relaxed load first, inline, for the case where the value is already there. Otherwise the
// loop, out of line: it polls with relaxed system-scope loads (cheaper than acquire loads) and,
// once the value is there, makes that load an acquire (acquireSatisfied). For the first
// kFreeSpinNs it polls without pause (the latency path: a signal from a peer GPU takes about half
// a microsecond); after that it sleeps between polls with a backoff growing to about a
// microsecond, so that waiting threads leave the memory system and the SM to the threads doing
// work. Every kTimerCheckPolls polls it reads the global timer; past ctx.timeoutNs (AXON_TIMEOUT;
// 0 waits forever) it prints what it waited for and traps.
#pragma once

#include "axon/device/impl/diagnostics.hpp"
#include "axon/device/impl/ptx.hpp"
#include "axon/device/types.hpp"

namespace axon {
namespace device {
namespace detail {

constexpr unsigned long long kFreeSpinNs = 20000;  // polling without pause before the backoff
constexpr unsigned kMaxSleepNs = 1024;             // backoff cap
constexpr unsigned kTimerCheckPolls = 64;          // polls between reads of the timer

// The pace of a poll loop that did not succeed at once: it polls without pause for kFreeSpinNs,
// then sleeps between polls with a backoff growing to kMaxSleepNs. Call next() after every poll
// that did not succeed; it returns true every kTimerCheckPolls polls, with elapsedNs fresh: the
// caller then checks its timeout and whatever else it checks rarely.
struct PollPacer {
  unsigned long long start = globalTimerNs();
  unsigned long long elapsedNs = 0;
  unsigned polls = 0;
  unsigned sleepNs = 32;
  bool backoff = false;

  AXON_DEVICE_INLINE bool next() {
    if (backoff) {
      __nanosleep(sleepNs);
      if (sleepNs < kMaxSleepNs) sleepNs *= 2;
    }
    if (++polls % kTimerCheckPolls != 0) return false;
    elapsedNs = globalTimerNs() - start;
    backoff = elapsedNs > kFreeSpinNs;
    return true;
  }
  // Past timeoutNs (AXON_TIMEOUT in nanoseconds; 0: never) as of the last checkpoint.
  AXON_DEVICE_INLINE bool expired(unsigned long long timeoutNs) const {
    return timeoutNs != 0 && elapsedNs > timeoutNs;
  }
};

AXON_DEVICE_INLINE bool compareValues(unsigned long long seen, Cmp cmp, unsigned long long value) {
  switch (cmp) {
    case Cmp::Eq:
      return seen == value;
    case Cmp::Ne:
      return seen != value;
    case Cmp::Gt:
      return seen > value;
    case Cmp::Ge:
      return seen >= value;
    case Cmp::Lt:
      return seen < value;
    case Cmp::Le:
      return seen <= value;
  }
  return false;
}

// Completes a wait whose relaxed load at system scope read `*seen`, which satisfies the comparison:
// true when what the writer of that value released is now visible to this thread. With an acquire
// fence (sm_90), the fence makes the load an acquire of the value it read: always true, no second
// load. This matters on the latency path: the second load cost about 0.15 us per wait on H200s
// (a device ping-pong of store, release flag and wait: 3.67-3.68 us per round trip with the load,
// 3.36-3.39 with the fence, measured side by side). Otherwise one acquire load of the word, whose
// value must satisfy the comparison again (an Eq/Ne word that moved on is waited for again);
// *seen becomes that value.
AXON_DEVICE_INLINE bool acquireSatisfied(const unsigned long long* word, Cmp cmp,
                                         unsigned long long value, unsigned long long* seen) {
#if AXON_DEVICE_HAS_ACQUIRE_FENCE
  (void)word;
  (void)cmp;
  (void)value;
  (void)seen;
  fenceAcquireSys();
  return true;
#else
  *seen = loadAcquireSys(word);
  return compareValues(*seen, cmp, value);
#endif
}

// What a wait was for, for the timeout message.
struct WaitSite {
  enum Kind : int { Signal = 0, Barrier = 1 };
  Kind kind;
  int slot;   // barrier: team slot
  int round;  // barrier: dissemination round
  int peer;   // barrier: the PE whose increment this PE waits for
};

[[noreturn]] inline AXON_DEVICE_NOINLINE void failWaitTimeout(
    int myPe, const char* heapBase, long long heapStride, const unsigned long long* word, Cmp cmp,
    unsigned long long value, unsigned long long seen, unsigned long long elapsedNs,
    WaitSite site) {
  const bool reporter = beginFatalReport();
  if (reporter) {
    const double seconds = static_cast<double>(elapsedNs) * 1e-9;
    const long long offset = reinterpret_cast<const char*>(word) - heapBase;
    const bool inHeap = offset >= 0 && (heapStride <= 0 || offset < heapStride);
    if (site.kind == WaitSite::Barrier) {
      printf(
          "axon: PE %d: device barrier timed out after %.1f s: team slot %d, round %d, waiting on "
          "PE "
          "%d: counter at %p (GPU heap offset %lld) expected >= %llu, seen %llu\n",
          myPe, seconds, site.slot, site.round, site.peer, word, offset, value, seen);
    } else if (inHeap) {
      printf(
          "axon: PE %d: device signal_wait_until timed out after %.1f s: signal at %p (GPU heap "
          "offset %lld) expected %s %llu, seen %llu\n",
          myPe, seconds, word, offset, cmpName(cmp), value, seen);
    } else {
      printf(
          "axon: PE %d: device signal_wait_until timed out after %.1f s: signal at %p (not in this "
          "PE's GPU heap) expected %s %llu, seen %llu\n",
          myPe, seconds, word, cmpName(cmp), value, seen);
    }
  }
  endFatalReport(reporter);
}

inline AXON_DEVICE_NOINLINE unsigned long long waitSlow(int myPe, const char* heapBase,
                                                        long long heapStride,
                                                        unsigned long long timeoutNs,
                                                        const unsigned long long* word, Cmp cmp,
                                                        unsigned long long value, WaitSite site) {
  for (PollPacer pace;;) {
    unsigned long long seen = loadRelaxedSys(word);
    if (compareValues(seen, cmp, value) && acquireSatisfied(word, cmp, value, &seen)) return seen;
    if (pace.next() && pace.expired(timeoutNs)) {
      failWaitTimeout(myPe, heapBase, heapStride, word, cmp, value, seen, pace.elapsedNs, site);
    }
  }
}

// Waits until *word (in this PE's heap) compares true against value; returns the value seen.
// Acquire: what the writer of that value released is visible to this thread afterwards.
AXON_DEVICE_INLINE unsigned long long waitUntil(const Context& ctx, const unsigned long long* word,
                                                Cmp cmp, unsigned long long value, WaitSite site) {
  unsigned long long seen = loadRelaxedSys(word);
  if (compareValues(seen, cmp, value) && acquireSatisfied(word, cmp, value, &seen)) return seen;
  return waitSlow(ctx.myPe, ctx.heapBase, ctx.heapStride, ctx.timeoutNs, word, cmp, value, site);
}

}  // namespace detail
}  // namespace device
}  // namespace axon
