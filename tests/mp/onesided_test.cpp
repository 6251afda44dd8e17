// put/get/signal/atomics/ordering across PEs on the host backend.
#include <gtest/gtest.h>

#include <axon/axon.hpp>

#include <atomic>
#include <cstring>
#include <numeric>
#include <vector>

namespace {

int me() { return axon::myPe(); }
int np() { return axon::nPes(); }

template <class T>
T* symAlloc(std::size_t count) {
  return static_cast<T*>(axon::calloc(count, sizeof(T)));
}

TEST(OneSided, PutToEveryPe) {
  const std::size_t count = 1000;
  auto* inbox = symAlloc<int>(count * np());  // row r is written by PE r
  std::vector<int> mine(count);
  for (std::size_t i = 0; i < count; ++i) mine[i] = me() * 1000003 + static_cast<int>(i);
  for (int pe = 0; pe < np(); ++pe) axon::put(inbox + me() * count, mine.data(), count * sizeof(int), pe);
  axon::barrierAll();
  for (int r = 0; r < np(); ++r)
    for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(inbox[r * count + i], r * 1000003 + static_cast<int>(i)) << "row " << r;
  axon::barrierAll();
  axon::free(inbox);
}

TEST(OneSided, GetFromEveryPe) {
  auto* data = symAlloc<double>(257);
  for (int i = 0; i < 257; ++i) data[i] = me() + i * 0.5;
  axon::barrierAll();
  std::vector<double> got(257);
  for (int pe = 0; pe < np(); ++pe) {
    axon::get(got.data(), data, sizeof(double) * 257, pe);
    for (int i = 0; i < 257; ++i) ASSERT_DOUBLE_EQ(got[i], pe + i * 0.5);
    EXPECT_DOUBLE_EQ(axon::g(data + 100, pe), pe + 50.0);
  }
  axon::barrierAll();
  axon::free(data);
}

TEST(OneSided, NbiCompleteAtQuiet) {
  auto* dst = symAlloc<long>(64);
  std::vector<long> src(64);
  std::iota(src.begin(), src.end(), me() * 100);
  const int right = (me() + 1) % np(), left = (me() + np() - 1) % np();
  axon::putNbi(dst, src.data(), sizeof(long) * 64, right);
  axon::quiet();
  axon::barrierAll();
  for (int i = 0; i < 64; ++i) ASSERT_EQ(dst[i], left * 100 + i);
  std::vector<long> back(64);
  axon::getNbi(back.data(), dst, sizeof(long) * 64, right);
  axon::quiet();
  for (int i = 0; i < 64; ++i) ASSERT_EQ(back[i], me() * 100 + i);
  axon::barrierAll();
  axon::free(dst);
}

TEST(OneSided, PAndG) {
  auto* cell = symAlloc<std::int64_t>(np());
  for (int pe = 0; pe < np(); ++pe) axon::p<std::int64_t>(cell + me(), 7 * me() + pe, pe);
  axon::barrierAll();
  for (int r = 0; r < np(); ++r) EXPECT_EQ(cell[r], 7 * r + me());
  axon::barrierAll();
  axon::free(cell);
}

TEST(OneSided, PutSignalSetAndAdd) {
  const int right = (me() + 1) % np(), left = (me() + np() - 1) % np();
  auto* buf = symAlloc<int>(4096);
  auto* sig = symAlloc<std::uint64_t>(2);
  std::vector<int> src(4096, me() + 1);
  for (int round = 1; round <= 20; ++round) {
    src[0] = round;
    axon::putSignal(buf, src.data(), src.size() * sizeof(int), &sig[0], static_cast<std::uint64_t>(round),
                    axon::SignalOp::Set, right);
    EXPECT_EQ(axon::signalWaitUntil(&sig[0], axon::Cmp::Eq, static_cast<std::uint64_t>(round)), static_cast<std::uint64_t>(round));
    ASSERT_EQ(buf[0], round);
    ASSERT_EQ(buf[4095], left + 1);
    axon::syncAll();  // the sender must not overwrite buf before it is checked
  }
  // Every PE adds 1 to PE 0's counter: it sees exactly nPes.
  axon::signalOp(&sig[1], 1, axon::SignalOp::Add, 0);
  if (me() == 0) EXPECT_EQ(axon::signalWaitUntil(&sig[1], axon::Cmp::Ge, static_cast<std::uint64_t>(np())), static_cast<std::uint64_t>(np()));
  axon::barrierAll();
  if (me() == 0) EXPECT_EQ(axon::signalFetch(&sig[1]), static_cast<std::uint64_t>(np()));
  axon::barrierAll();
  axon::free(sig);
  axon::free(buf);
}

// What quiet completes is applied at the target, also where signals, atomics and small put_signals
// travel as active messages (over TCP): PE 1 learns of PE 0's quiet from another PE, never from PE 0
// itself, and must find every add and the put_signal's data already there.
TEST(OneSided, QuietCompletesSignalsAndAtomicsAtTheTarget) {
  if (np() < 3) GTEST_SKIP() << "needs a third PE to carry the news";
  auto* counter = symAlloc<std::uint64_t>(2);
  auto* data = symAlloc<int>(256);
  auto* news = symAlloc<std::uint64_t>(1);
  constexpr int kAdds = 500;
  if (me() == 0) {
    std::vector<int> src(256, 42);
    for (int i = 0; i < kAdds; ++i) axon::signalOp(&counter[0], 1, axon::SignalOp::Add, 1);
    for (int i = 0; i < kAdds; ++i) axon::atomicAdd<std::uint64_t>(&counter[1], 2, 1);
    axon::putSignal(data, src.data(), src.size() * sizeof(int), news, 0, axon::SignalOp::Add, 1);
    axon::quiet();
    axon::signalOp(news, 1, axon::SignalOp::Set, 2);  // PE 2 passes it on to PE 1
  } else if (me() == 2) {
    axon::signalWaitUntil(news, axon::Cmp::Eq, 1);
    axon::signalOp(news, 1, axon::SignalOp::Add, 1);
  } else if (me() == 1) {
    axon::signalWaitUntil(news, axon::Cmp::Ge, 1);
    EXPECT_EQ(std::atomic_ref<std::uint64_t>(counter[0]).load(), static_cast<std::uint64_t>(kAdds));
    EXPECT_EQ(std::atomic_ref<std::uint64_t>(counter[1]).load(), static_cast<std::uint64_t>(2 * kAdds));
    EXPECT_EQ(data[0], 42);
    EXPECT_EQ(data[255], 42);
  }
  axon::barrierAll();
  axon::free(news);
  axon::free(data);
  axon::free(counter);
}

TEST(OneSided, SignalWaitComparisons) {
  auto* sig = symAlloc<std::uint64_t>(1);
  axon::signalOp(sig, 10, axon::SignalOp::Set, me());
  EXPECT_EQ(axon::signalWaitUntil(sig, axon::Cmp::Eq, 10), 10u);
  EXPECT_EQ(axon::signalWaitUntil(sig, axon::Cmp::Ne, 3), 10u);
  EXPECT_EQ(axon::signalWaitUntil(sig, axon::Cmp::Gt, 9), 10u);
  EXPECT_EQ(axon::signalWaitUntil(sig, axon::Cmp::Ge, 10), 10u);
  EXPECT_EQ(axon::signalWaitUntil(sig, axon::Cmp::Lt, 11), 10u);
  EXPECT_EQ(axon::signalWaitUntil(sig, axon::Cmp::Le, 10), 10u);
  axon::barrierAll();
  axon::free(sig);
}

template <class T>
void atomicsOn() {
  auto* word = symAlloc<T>(4);
  const T n = static_cast<T>(np());
  // fetch_add from everyone to PE 0: the fetched values are a permutation of 0..n-1.
  T fetched = axon::atomicFetchAdd<T>(&word[0], T(1), 0);
  EXPECT_GE(fetched, T(0));
  EXPECT_LT(fetched, n);
  axon::atomicAdd<T>(&word[1], T(me() + 1), 0);
  axon::barrierAll();
  if (me() == 0) {
    EXPECT_EQ(word[0], n);
    EXPECT_EQ(word[1], static_cast<T>(np() * (np() + 1) / 2));
  }
  EXPECT_EQ(axon::atomicFetch<T>(&word[0], 0), n);
  axon::barrierAll();
  // compare_swap: exactly one PE wins the 0 -> me+1 swap on the last PE.
  const int last = np() - 1;
  T before = axon::atomicCompareSwap<T>(&word[2], T(0), static_cast<T>(me() + 1), last);
  auto* wins = symAlloc<std::int64_t>(1);
  if (before == T(0)) axon::atomicAdd<std::int64_t>(wins, 1, 0);
  axon::barrierAll();
  if (me() == 0) EXPECT_EQ(*wins, 1);
  T winner = axon::atomicFetch<T>(&word[2], last);
  EXPECT_GE(winner, T(1));
  EXPECT_LE(winner, n);
  axon::barrierAll();
  // swap, set, and the bitwise ops on my right neighbour's word[3].
  const int right = (me() + 1) % np();
  axon::atomicSet<T>(&word[3], T(0b1100), right);
  axon::barrierAll();
  EXPECT_EQ(axon::atomicSwap<T>(&word[3], T(0b1010), right), T(0b1100));
  EXPECT_EQ(axon::atomicFetchAnd<T>(&word[3], T(0b0110), right), T(0b1010));
  EXPECT_EQ(axon::atomicFetchOr<T>(&word[3], T(0b1001), right), T(0b0010));
  EXPECT_EQ(axon::atomicFetchXor<T>(&word[3], T(0b1111), right), T(0b1011));
  EXPECT_EQ(axon::atomicFetch<T>(&word[3], right), T(0b0100));
  axon::barrierAll();
  axon::free(wins);
  axon::free(word);
}

TEST(Atomics, Int32) { atomicsOn<std::int32_t>(); }
TEST(Atomics, Int64) { atomicsOn<std::int64_t>(); }
TEST(Atomics, UInt32) { atomicsOn<std::uint32_t>(); }
TEST(Atomics, UInt64) { atomicsOn<std::uint64_t>(); }

TEST(Atomics, SignedWrapAndNegative) {
  auto* w = symAlloc<std::int32_t>(1);
  axon::barrierAll();
  if (me() == 0) {
    axon::atomicSet<std::int32_t>(w, -5, np() - 1);
    EXPECT_EQ(axon::atomicFetchAdd<std::int32_t>(w, -10, np() - 1), -5);
    EXPECT_EQ(axon::atomicFetch<std::int32_t>(w, np() - 1), -15);
  }
  axon::barrierAll();
  axon::free(w);
}

TEST(Ordering, FenceKeepsPutsInOrderToOnePe) {
  // PE 0 writes data then a flag with a fence between; readers that see the flag see the data.
  auto* data = symAlloc<int>(1024);
  auto* flag = symAlloc<std::uint64_t>(1);
  if (me() == 0) {
    std::vector<int> v(1024, 42);
    for (int pe = 0; pe < np(); ++pe) {
      axon::put(data, v.data(), v.size() * sizeof(int), pe);
      axon::fence();
      axon::signalOp(flag, 1, axon::SignalOp::Set, pe);
    }
  }
  axon::signalWaitUntil(flag, axon::Cmp::Eq, 1);
  for (int i = 0; i < 1024; ++i) ASSERT_EQ(data[i], 42);
  axon::barrierAll();
  axon::free(flag);
  axon::free(data);
}

TEST(Pointers, LoadStoreThroughPtr) {
  auto* x = symAlloc<int>(16);
  const int right = (me() + 1) % np();
  int* remote = static_cast<int*>(axon::ptr(x, right));
  EXPECT_EQ(axon::ptr(x, me()), static_cast<void*>(x));
  // A PE on another node has no address here: ptr says so with nullptr, and a put does the job.
  const bool sameNode = axon::pathTo(right).rfind("ucx", 0) != 0;
  EXPECT_EQ(remote != nullptr, sameNode) << "path to PE " << right << ": " << axon::pathTo(right);
  const int mine = 1000 + me();
  if (remote) remote[3] = mine;
  else axon::put(&x[3], &mine, sizeof(mine), right);
  axon::barrierAll();
  EXPECT_EQ(x[3], 1000 + (me() + np() - 1) % np());
  EXPECT_TRUE(axon::isSymmetric(x));
  int local = 0;
  EXPECT_FALSE(axon::isSymmetric(&local));
  axon::barrierAll();
  axon::free(x);
}

}  // namespace
