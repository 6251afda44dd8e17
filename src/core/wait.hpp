// Bounded waiting on a 64-bit word of this PE's heap. Spins briefly (the latency path), then
// yields, then sleeps, so that oversubscribed PEs (more PEs than cores) still progress. Every
// so often it checks the clock against AXON_TIMEOUT and the liveness of node-local PEs.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "axon/onesided.hpp"

namespace axon {

class PeContext;

inline bool compareValue(std::uint64_t seen, Cmp cmp, std::uint64_t value) {
  switch (cmp) {
    case Cmp::Eq: return seen == value;
    case Cmp::Ne: return seen != value;
    case Cmp::Gt: return seen > value;
    case Cmp::Ge: return seen >= value;
    case Cmp::Lt: return seen < value;
    case Cmp::Le: return seen <= value;
  }
  return false;
}

// Names the wait in its error message; composed only when the wait fails, so that the fast
// path allocates nothing.
struct WaitSite {
  const char* what;             // "signal_wait_until", "barrier"
  const char* team = nullptr;   // for barriers: the team's name
  int round = -1;               // for barriers: the dissemination round
  int waitingOn = -1;           // the PE expected to update the word, when known
  const char* word = nullptr;   // names the word when it is not in a heap ("ready[PE 2] of ...")
  // Run at every liveness check (every 50 ms once the wait backs off): may throw to end the
  // wait early, e.g. when a peer reported a collective mismatch.
  const std::function<void()>* onCheck = nullptr;
  // The team's own bound in seconds (Team::setTimeout) for a wait on a team's behalf; 0:
  // AXON_TIMEOUT.
  double timeoutSec = 0;
};

// How long a wait past its yield phase naps where the threads that wait outnumber the cores: a
// sixteenth of the time `quiet` since it last handled something, at most 1 ms (wait.cpp says why).
std::chrono::microseconds napAfter(std::chrono::steady_clock::duration quiet);

// The bound of a wait: `teamSec` when a team set its own (> 0), else AXON_TIMEOUT.
double waitBound(PeContext& rt, double teamSec);
// How an error names that bound: "AXON_TIMEOUT" or "the team's timeout".
const char* waitBoundName(double teamSec);
// The longest bound any team of this process was given (Team::setTimeout), 0 when none: the
// last-resort bound of kernels that wait for host work (gpu/stream_host_work.hpp) outlasts it.
void noteTeamBound(double seconds);
double longestTeamBound();

// Returns the value that satisfied the comparison. Throws Timeout or PeerDead with the PE, the
// address, the expected and the seen value.
std::uint64_t waitUntil(PeContext& rt, const std::uint64_t* word, Cmp cmp, std::uint64_t value,
                        const WaitSite& site);
// The same for a word the host cannot load directly (GPU memory): `read` fetches its value.
using WordReader = std::function<std::uint64_t(const std::uint64_t*)>;
std::uint64_t waitUntil(PeContext& rt, const std::uint64_t* word, Cmp cmp, std::uint64_t value,
                        const WaitSite& site, const WordReader& read);

}  // namespace axon
