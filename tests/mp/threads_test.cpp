// Several host threads of each PE issue one-sided calls at once: blocking and non-blocking puts
// and gets, p/g, atomics on shared counters, signals and quiet. Every call goes through the API
// only (no loads of heap memory), so the same test runs on the host backend (tests/mp, and under
// ThreadSanitizer in `make tsan-test`) and on the GPU backend (tests/gpu), where the transports
// share one stream and one pinned scratch word between the threads.
#include <gtest/gtest.h>

#include <axon/axon.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kThreads = 4;
constexpr int kIterations = 100;
constexpr std::size_t kSlice = 512;  // words per thread

std::uint64_t pattern(int pe, int thread, int iteration, std::size_t i) {
  return (static_cast<std::uint64_t>(pe) << 48) ^ (static_cast<std::uint64_t>(thread) << 40) ^
         (static_cast<std::uint64_t>(iteration) << 20) ^ i;
}

TEST(Threads, OneSidedCallsFromFourThreadsAtOnce) {
  const int me = axon::myPe(), n = axon::nPes();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  auto* data = static_cast<std::uint64_t*>(axon::calloc(kThreads * kSlice, sizeof(std::uint64_t)));
  auto* words = static_cast<std::uint64_t*>(axon::calloc(kThreads, sizeof(std::uint64_t)));
  auto* counter = static_cast<std::uint64_t*>(axon::calloc(1, sizeof(std::uint64_t)));
  auto* counter32 = static_cast<std::uint32_t*>(axon::calloc(1, sizeof(std::uint32_t)));
  auto* done = static_cast<std::uint64_t*>(axon::calloc(kThreads, sizeof(std::uint64_t)));
  axon::barrierAll();

  std::atomic<long> wrong{0};
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        std::vector<std::uint64_t> out(kSlice), back(kSlice);
        std::uint64_t* slice = data + t * kSlice;  // only thread t of the left PE writes it here
        for (int it = 0; it < kIterations; ++it) {
          for (std::size_t i = 0; i < kSlice; ++i) out[i] = pattern(me, t, it, i);
          if (it % 2 == 0) {
            axon::put(slice, out.data(), kSlice * sizeof(std::uint64_t), right);
          } else {
            axon::putNbi(slice, out.data(), kSlice * sizeof(std::uint64_t), right);
            axon::quiet();
          }
          axon::get(back.data(), slice, kSlice * sizeof(std::uint64_t), right);
          for (std::size_t i = 0; i < kSlice; ++i) wrong += back[i] != out[i];
          // Every thread of every PE adds to the right PE's counters at once; fetch results are
          // per call, however many threads wait on the same stream.
          const std::uint64_t before = axon::atomicFetchAdd(counter, std::uint64_t{1}, right);
          wrong += before >= static_cast<std::uint64_t>(kThreads * kIterations);
          axon::atomicAdd(counter32, std::uint32_t{2}, right);
          axon::p(words + t, static_cast<std::uint64_t>(it + 1), right);
          wrong += axon::g(words + t, right) != static_cast<std::uint64_t>(it + 1);
          wrong += axon::atomicFetch(words + t, right) != static_cast<std::uint64_t>(it + 1);
        }
        axon::signalOp(done + t, 1, axon::SignalOp::Add, right);
        // The left PE's thread t signals this PE's word t when it has finished.
        axon::signalWaitUntil(done + t, axon::Cmp::Ge, 1);
      } catch (const axon::Error& e) {
        errors[t] = e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
  EXPECT_EQ(wrong.load(), 0);
  axon::barrierAll();
  // Only the left PE's threads wrote here: their last iteration's patterns and every add.
  std::vector<std::uint64_t> mine(kThreads * kSlice);
  axon::get(mine.data(), data, mine.size() * sizeof(std::uint64_t), me);
  long stale = 0;
  for (int t = 0; t < kThreads; ++t) {
    for (std::size_t i = 0; i < kSlice; ++i) stale += mine[t * kSlice + i] != pattern(left, t, kIterations - 1, i);
  }
  EXPECT_EQ(stale, 0);
  EXPECT_EQ(axon::atomicFetch(counter, me), static_cast<std::uint64_t>(kThreads * kIterations));
  EXPECT_EQ(axon::atomicFetch(counter32, me), static_cast<std::uint32_t>(2 * kThreads * kIterations));
  axon::barrierAll();
  axon::free(done);
  axon::free(counter32);
  axon::free(counter);
  axon::free(words);
  axon::free(data);
}

// Two threads of each PE pass data to the right PE, each a put_nbi and then a signal (which must
// order the put before it), while two more fence and quiet in a loop: a fence or quiet on another
// thread must never let a signal overtake its own thread's put (across nodes, the UCX transport's
// fence ledger). The receiving thread checks each round through the API, then acks.
TEST(Threads, SignalsKeepTheirPutsFirstWhileOtherThreadsFence) {
  constexpr int kSenders = 2, kRounds = 200;
  const int me = axon::myPe(), n = axon::nPes();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  auto* data = static_cast<std::uint64_t*>(axon::calloc(kSenders * kSlice, sizeof(std::uint64_t)));
  auto* ready = static_cast<std::uint64_t*>(axon::calloc(kSenders, sizeof(std::uint64_t)));
  auto* acked = static_cast<std::uint64_t*>(axon::calloc(kSenders, sizeof(std::uint64_t)));
  axon::barrierAll();
  std::atomic<long> wrong{0};
  std::atomic<int> sendersLeft{2 * kSenders};
  std::vector<std::string> errors(2 * kSenders + 2);
  std::vector<std::thread> threads;
  for (int t = 0; t < kSenders; ++t) {
    threads.emplace_back([&, t] {  // sends to the right PE
      try {
        std::vector<std::uint64_t> out(kSlice);
        for (int r = 1; r <= kRounds; ++r) {
          for (std::size_t i = 0; i < kSlice; ++i) out[i] = pattern(me, t, r, i);
          axon::putNbi(data + t * kSlice, out.data(), kSlice * sizeof(std::uint64_t), right);
          axon::signalOp(ready + t, static_cast<std::uint64_t>(r), axon::SignalOp::Set, right);
          axon::signalWaitUntil(acked + t, axon::Cmp::Ge, static_cast<std::uint64_t>(r));  // `out` reusable
        }
      } catch (const axon::Error& e) {
        errors[t] = e.what();
      }
      --sendersLeft;
    });
    threads.emplace_back([&, t] {  // receives from the left PE
      try {
        std::vector<std::uint64_t> in(kSlice);
        for (int r = 1; r <= kRounds; ++r) {
          axon::signalWaitUntil(ready + t, axon::Cmp::Ge, static_cast<std::uint64_t>(r));
          axon::get(in.data(), data + t * kSlice, kSlice * sizeof(std::uint64_t), me);
          for (std::size_t i = 0; i < kSlice; ++i) wrong += in[i] != pattern(left, t, r, i);
          axon::signalOp(acked + t, static_cast<std::uint64_t>(r), axon::SignalOp::Set, left);
        }
      } catch (const axon::Error& e) {
        errors[kSenders + t] = e.what();
      }
      --sendersLeft;
    });
  }
  for (int f = 0; f < 2; ++f) {
    threads.emplace_back([&, f] {  // fences and quiets meanwhile
      try {
        while (sendersLeft.load() > 0) {
          if (f == 0) axon::fence();
          else axon::quiet();
          // A nap, not a yield: each PE runs in its own session, so its own scheduler group, and
          // two threads yielding in a loop there held both cores of a 2-core machine for tens of
          // seconds while the other PE's threads, ready to run, waited (make tsan-test).
          std::this_thread::sleep_for(std::chrono::microseconds(10));
        }
      } catch (const axon::Error& e) {
        errors[2 * kSenders + f] = e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (std::size_t i = 0; i < errors.size(); ++i) EXPECT_EQ(errors[i], "") << "thread " << i;
  EXPECT_EQ(wrong.load(), 0);
  axon::barrierAll();
  axon::free(acked);
  axon::free(ready);
  axon::free(data);
}

}  // namespace
