#include "core/wait.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "axon/error.hpp"
#include "core/log.hpp"
#include "core/pe_context.hpp"
#include "core/env.hpp"
#include "core/progress_engine.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define AXON_CPU_RELAX() _mm_pause()
#elif defined(__aarch64__)
#define AXON_CPU_RELAX() asm volatile("yield")
#else
#define AXON_CPU_RELAX() ((void)0)
#endif

namespace axon {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kSpinIterations = 4096;                           // ~10-50 us of pure spinning
constexpr auto kWaitYieldPhase = std::chrono::milliseconds(2);  // then yield the core, then nap
// With more PEs on the node than cores to run them, a waiting PE gives its core away at once: the
// PE it waits for may need it. So no pure spin past the first few polls, and a yield after every
// 64 polls, however recent the last message. Each step down measured faster: 200 us of spinning
// after a message kept PEs that get one every few tens of microseconds (the rounds of a collective
// across nodes) spinning without end, each poll of the network an epoll_wait. 4 PEs on 2 cores
// (2 emulated nodes) ran an alltoall of 1 MiB in 2.2-2.7 ms with 200 us and a 50 us first spin,
// 1.4-1.5 ms with 20 us, 0.85-0.99 ms with 5 us and a 10 us first spin; an allreduce of 8 bytes on
// 4 PEs of one node took 306-328 us with 200 us, 83-127 us with 20 us, 21-22 us with 5 us. Then,
// 5 alternating runs each (2026-11-28, the same VM), 5 us and a 10 us first spin against none:
// that allreduce 25-43 against 10-16 us, an alltoall of 1 MiB on those 4 PEs 162-237 against
// 117-234 us, on 2 nodes of 2 PEs 908-1171 against 847-1135 us; on 2 nodes of 2 PEs an allreduce
// of 8 bytes 72-183 against 60-96 us, a broadcast of 8 bytes 99-199 against 84-141 us, an
// allreduce of 4 MiB alike (6.9-8.5 ms).
constexpr auto kSpinTimeShared = std::chrono::microseconds(0);
constexpr auto kBusySpinShared = std::chrono::microseconds(0);
// With a core for each PE spinning costs nobody, and a yield is a system call (microseconds in a
// sandbox) on the latency path: no time bound on the first spin, no yield within 200 us of a message.
constexpr auto kBusySpinOwnCore = std::chrono::microseconds(200);
constexpr auto kCheckEvery = std::chrono::milliseconds(50); // liveness and timeout checks
// Past the yield phase (kWaitYieldPhase) a wait naps between looks, woken early by a network
// message. With a core for each waiting thread it naps 20 us. Where the waiting threads outnumber
// the cores it naps a sixteenth of the time it has been quiet (125 us when the yield phase ends, at
// most 1 ms), so it sees its word at most about 6% later than it could, and a long wait leaves the
// cores to the threads it waits for: with 20 us naps, 4 threads of each of 2 PEs waiting on each
// other on 2 cores (make tsan-test's mp_threads_2pe) once in 5 to 20 runs saw one PE get no CPU for
// 30 s to 2 minutes while the other's threads held both cores (docs/performance.md has the counts).
// Each PE that `axon run` starts is in its own session, so its own scheduler group, where a yield
// hands the core only to the same PE's threads.
constexpr auto kOwnCoreNap = std::chrono::microseconds(20);
constexpr auto kMaxNap = std::chrono::microseconds(1000);

std::string expectedText(Cmp cmp, std::uint64_t value) {
  return std::string(cmpName(cmp)) + " " + std::to_string(value);
}

// Do the waiting threads of this machine outnumber the cores this process may run on? The cores
// are counted once (a job does not change its affinity). The PEs: AXON_HOST_PES, which `axon run`
// sets (its emulated nodes share one machine), else the PEs of this node; each is taken to have as
// many threads waiting as this one has now (the caller's wait among them: it holds a Waiting).
bool sharesCores(PeContext& rt) {
  static const int cores = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    return ::sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  }();
  const int pes = rt.env().hostPes > 0 ? rt.env().hostPes : rt.env().launch.localSize;
  return pes * rt.progressEngine().waiters() > cores;
}

template <class Read>
std::uint64_t waitLoop(PeContext& rt, const std::uint64_t* word, Cmp cmp, std::uint64_t value,
                       const WaitSite& site, const Read& read, int spinIterations) {
  // Over UCX's TCP and shared-memory transports data lands only when this PE polls its worker:
  // every check polls (a no-op on one node), and the engine's own thread stands aside meanwhile.
  ProgressEngine::Waiting waiting(rt.progressEngine());
  // With more PEs than cores, 32 polls at most (kSpinTimeShared): where each poll is a network
  // progress call (about a microsecond), 4096 of them held a core for milliseconds, and the PE
  // waited for could not run meanwhile (an alltoall of 1 KiB on 2 emulated nodes of 2 PEs: 5 ms,
  // 2 ms with a 50 us bound).
  // Asked only once a wait is not over at once: the fast path stays a few loads.
  int shared = -1;
  Clock::time_point spinUntil{};
  for (int i = 0; i < spinIterations; ++i) {
    std::uint64_t seen = read();
    if (compareValue(seen, cmp, value)) return seen;
    if (!rt.progress()) AXON_CPU_RELAX();
    if (i % 16 != 15) continue;
    if (shared < 0) {
      shared = sharesCores(rt) ? 1 : 0;
      spinUntil = Clock::now() + kSpinTimeShared;
    } else if (shared && Clock::now() >= spinUntil) {
      break;
    }
  }
  if (shared < 0) shared = sharesCores(rt) ? 1 : 0;
  const auto busySpin = shared ? std::chrono::duration_cast<Clock::duration>(kBusySpinShared)
                               : std::chrono::duration_cast<Clock::duration>(kBusySpinOwnCore);
  const auto start = Clock::now();
  const double bound = waitBound(rt, site.timeoutSec);
  const auto deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(bound));
  auto nextCheck = start + kCheckEvery;
  // The yield phase lasts kWaitYieldPhase past the last message this PE's polls handled, so a PE
  // that serves its peers' gets and atomics (which over TCP need its CPU) answers them at once.
  auto lastActivity = start;
  while (true) {
    bool active = false;
    for (int i = 0; i < 64; ++i) {
      std::uint64_t seen = read();
      if (compareValue(seen, cmp, value)) return seen;
      if (rt.progress()) active = true;
      else AXON_CPU_RELAX();
    }
    auto now = Clock::now();
    if (active) lastActivity = now;
    // Within busySpin of a handled message keep spinning: a peer working with this PE sends the
    // next one within microseconds, and a yield is a system call (microseconds in a sandbox).
    const auto quiet = now - lastActivity;
    if (quiet >= kWaitYieldPhase) rt.progressEngine().idle(shared ? napAfter(quiet) : kOwnCoreNap);
    else if (quiet >= busySpin) ::sched_yield();
    if (now < nextCheck) continue;
    nextCheck = now + kCheckEvery;
    std::uint64_t seen = read();
    if (compareValue(seen, cmp, value)) return seen;
    if (site.onCheck) (*site.onCheck)();
    const std::string where = "at " + (site.word ? std::string(site.word) + " " : std::string()) + rt.describe(word) + " for a value " + expectedText(cmp, value) +
                              " (seen " + std::to_string(seen) + ")";
    std::string what = site.what;
    if (site.team) what += std::string(" of team ") + site.team + (site.round >= 0 ? " (round " + std::to_string(site.round) + ")" : "");
    int dead = rt.findDeadPe();
    if (dead >= 0) {
      throw Error(ErrorCode::PeerDead,
                  "PE " + std::to_string(rt.myPe()) + ": " + what + " gave up: " + rt.deathOf(dead) +
                      " while this PE waited " + where);
    }
    if (now >= deadline) {
      std::string on = site.waitingOn >= 0 ? " on PE " + std::to_string(site.waitingOn) : "";
      // A peer on another node that neither answers nor died: name its node, which may be cut off.
      std::string across;
      if (site.waitingOn >= 0 && site.waitingOn < rt.nPes() && !rt.nodeLocal()[site.waitingOn]) {
        on += " (node " + rt.nodeName(site.waitingOn) + ")";
        across = "; PE " + std::to_string(site.waitingOn) + " runs on node " + rt.nodeName(site.waitingOn) +
                 ": is that node reachable from this one (link, firewall, UCX_NET_DEVICES)?";
      }
      throw Error(ErrorCode::Timeout,
                  "PE " + std::to_string(rt.myPe()) + ": " + what + on + " timed out after " +
                      secondsText(bound) + " (" + waitBoundName(site.timeoutSec) + ") waiting " + where + across);
    }
  }
}

}  // namespace

std::chrono::microseconds napAfter(std::chrono::steady_clock::duration quiet) {
  return std::min(std::chrono::duration_cast<std::chrono::microseconds>(quiet) / 16, kMaxNap);
}

double waitBound(PeContext& rt, double teamSec) { return teamSec > 0 ? teamSec : rt.env().timeoutSec; }

const char* waitBoundName(double teamSec) { return teamSec > 0 ? "the team's timeout" : "AXON_TIMEOUT"; }

namespace {
std::atomic<double> g_longestTeamBound{0};
}  // namespace

void noteTeamBound(double seconds) {
  double seen = g_longestTeamBound.load(std::memory_order_relaxed);
  while (seconds > seen && !g_longestTeamBound.compare_exchange_weak(seen, seconds, std::memory_order_relaxed)) {
  }
}

double longestTeamBound() { return g_longestTeamBound.load(std::memory_order_relaxed); }

std::uint64_t waitUntil(PeContext& rt, const std::uint64_t* word, Cmp cmp, std::uint64_t value,
                        const WaitSite& site) {
  std::atomic_ref<const std::uint64_t> ref(*word);
  return waitLoop(rt, word, cmp, value, site, [&] { return ref.load(std::memory_order_acquire); },
                  kSpinIterations);
}

std::uint64_t waitUntil(PeContext& rt, const std::uint64_t* word, Cmp cmp, std::uint64_t value,
                        const WaitSite& site, const WordReader& read) {
  // Each read is a copy from the GPU (microseconds), so spin far less before backing off.
  return waitLoop(rt, word, cmp, value, site, [&] { return read(word); }, 16);
}

}  // namespace axon
