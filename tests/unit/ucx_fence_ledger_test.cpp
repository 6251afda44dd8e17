// What a fence of the UCX transport must flush (transport/ucx/ucx_fence_ledger.hpp): per PE, RMA
// and active messages apart, and never an operation that a flush in progress did not cover.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "transport/ucx/ucx_fence_ledger.hpp"

namespace axon::ucx {
namespace {

using Kind = UcxFenceLedger::Kind;

TEST(UcxFenceLedger, NothingIssuedNeedsNoFlush) {
  UcxFenceLedger l(3);
  for (int pe = 0; pe < 3; ++pe) {
    EXPECT_TRUE(l.covered(pe, l.mark(pe), true));
    EXPECT_TRUE(l.covered(pe, l.mark(pe), false));
  }
}

TEST(UcxFenceLedger, APeOutOfRangeCountsNothing) {
  UcxFenceLedger l(2);
  l.issued(-1, Kind::Rma);
  l.issued(2, Kind::ActiveMessage);
  EXPECT_TRUE(l.covered(0, l.mark(0), true));
  EXPECT_TRUE(l.covered(1, l.mark(1), true));
}

TEST(UcxFenceLedger, RmaNeedsAFlushOfItsPeAlone) {
  UcxFenceLedger l(3);
  l.issued(1, Kind::Rma);
  EXPECT_FALSE(l.covered(1, l.mark(1), false));
  EXPECT_FALSE(l.covered(1, l.mark(1), true));
  EXPECT_TRUE(l.covered(0, l.mark(0), true));
  EXPECT_TRUE(l.covered(2, l.mark(2), true));
  l.flushed(1, l.mark(1));
  EXPECT_TRUE(l.covered(1, l.mark(1), true));
}

TEST(UcxFenceLedger, ActiveMessagesNeedAFlushOnlyBeforeOtherKinds) {
  UcxFenceLedger l(2);
  l.issued(0, Kind::ActiveMessage);
  EXPECT_TRUE(l.covered(0, l.mark(0), false));   // another active message: in order anyway
  EXPECT_FALSE(l.covered(0, l.mark(0), true));   // an RMA operation or a user's fence: flush
  l.flushed(0, l.mark(0));
  EXPECT_TRUE(l.covered(0, l.mark(0), true));
}

TEST(UcxFenceLedger, AFlushCoversOnlyWhatWasIssuedBeforeItsMark) {
  UcxFenceLedger l(1);
  l.issued(0, Kind::Rma);
  const UcxFenceLedger::Mark m = l.mark(0);  // a flush starts here
  l.issued(0, Kind::Rma);                    // another thread's put, meanwhile
  l.flushed(0, m);
  EXPECT_FALSE(l.covered(0, l.mark(0), false));  // the second put is not covered
  l.flushed(0, l.mark(0));
  EXPECT_TRUE(l.covered(0, l.mark(0), true));
}

TEST(UcxFenceLedger, AnOlderFlushFinishingLateLowersNothing) {
  UcxFenceLedger l(1);
  l.issued(0, Kind::Rma);
  const UcxFenceLedger::Mark older = l.mark(0);
  l.issued(0, Kind::Rma);
  l.issued(0, Kind::ActiveMessage);
  l.flushed(0, l.mark(0));  // the newer flush ends first
  l.flushed(0, older);
  EXPECT_TRUE(l.covered(0, l.mark(0), true));
}

TEST(UcxFenceLedger, ThreadsIssuingAndFlushingAtOnceLoseNoOperation) {
  // Each thread issues, then fences as the transport does; at the end every operation is covered
  // only by flushes whose marks counted it, and a last mark is covered once flushed.
  UcxFenceLedger l(2);
  constexpr int kThreads = 4, kOps = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&l, t] {
      for (int i = 0; i < kOps; ++i) {
        const int pe = (t + i) % 2;
        l.issued(pe, i % 3 == 0 ? Kind::ActiveMessage : Kind::Rma);
        const UcxFenceLedger::Mark m = l.mark(pe);
        // This thread's own operation is counted in its mark, so the fence cannot skip it.
        if (!l.covered(pe, m, true)) l.flushed(pe, m);
        EXPECT_TRUE(l.covered(pe, m, true));
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int pe = 0; pe < 2; ++pe) {
    const UcxFenceLedger::Mark m = l.mark(pe);
    EXPECT_EQ(m.rma + m.am, static_cast<std::uint64_t>(kThreads) * kOps / 2);
    EXPECT_TRUE(l.covered(pe, m, true));
  }
}

}  // namespace
}  // namespace axon::ucx
