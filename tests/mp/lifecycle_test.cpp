// Lifecycle and bounded waits. Its own main: it must call things before init and after finalize.
// Run with a short AXON_TIMEOUT (CMake sets 1 s) on 2 or more PEs.
#include <gtest/gtest.h>

#include <axon/axon.hpp>

#include <chrono>
#include <string>
#include <thread>

namespace {

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(Lifecycle, CallsBeforeInitFail) {
  try {
    axon::myPe();
    FAIL();
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::NotInitialized);
    EXPECT_TRUE(contains(e.what(), "before init()")) << e.what();
  }
  EXPECT_THROW(axon::malloc(8), axon::Error);
  EXPECT_THROW(axon::barrierAll(), axon::Error);
  EXPECT_THROW(axon::Team::world(), axon::Error);
  EXPECT_FALSE(axon::isInitialized());
}

TEST(Lifecycle, InitTwiceFailsThenWorks) {
  axon::init();
  EXPECT_TRUE(axon::isInitialized());
  try {
    axon::init();
    FAIL();
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::AlreadyInitialized);
    EXPECT_TRUE(contains(e.what(), "twice")) << e.what();
  }
  EXPECT_GE(axon::nPes(), 2);
  EXPECT_EQ(axon::launcherName(), "axon");
  axon::barrierAll();
}

TEST(Lifecycle, SignalWaitTimesOutWithDiagnostics) {
  auto* sig = static_cast<std::uint64_t*>(axon::calloc(1, sizeof(std::uint64_t)));
  axon::signalOp(sig, 3, axon::SignalOp::Set, axon::myPe());
  try {
    axon::signalWaitUntil(sig, axon::Cmp::Ge, 5);  // nobody ever raises it
    FAIL();
  } catch (const axon::Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.code(), axon::ErrorCode::Timeout);
    EXPECT_TRUE(contains(msg, "PE " + std::to_string(axon::myPe()) + ":")) << msg;
    EXPECT_TRUE(contains(msg, "heap offset")) << msg;
    EXPECT_TRUE(contains(msg, ">= 5")) << msg;
    EXPECT_TRUE(contains(msg, "seen 3")) << msg;
    EXPECT_TRUE(contains(msg, "AXON_TIMEOUT")) << msg;
  }
  axon::barrierAll();
  axon::free(sig);
}

TEST(Lifecycle, RecvTimesOutNamingWhatItWaitedForAndWhatWaits) {
  // PE 1 sends tag 8; PE 0 waits for tag 7, which never comes: its error names the receive and
  // the message waiting unmatched. Then it takes tag 8, and the pair goes on.
  std::uint64_t v = 42, got = 0;
  if (axon::myPe() == 1) axon::send(&v, sizeof v, 0, 8);
  if (axon::myPe() == 0) {
    try {
      axon::recv(&got, sizeof got, 1, 7);
      FAIL();
    } catch (const axon::Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(e.code(), axon::ErrorCode::Timeout) << msg;
      EXPECT_TRUE(contains(msg, "recv from source 1, tag 7, of up to 8 B on team world")) << msg;
      EXPECT_TRUE(contains(msg, "(source 1, tag 8, 8 B)")) << msg;
      EXPECT_TRUE(contains(msg, "AXON_TIMEOUT")) << msg;
    }
    EXPECT_EQ(axon::recv(&got, sizeof got, 1, 8).bytes, sizeof got);
    EXPECT_EQ(got, 42u);
  } else {
    // Outside axon's bounded waits while PE 0 waits out its timeout.
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  }
  axon::barrierAll();
}

TEST(Lifecycle, BarrierTimesOutNamingTheLatePe) {
  // PE 0 arrives late by more than the timeout; the others' barrier ends with an error naming a
  // PE they wait on. Then everyone meets again at a barrier that does complete.
  axon::Team world = axon::Team::world();
  if (axon::myPe() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  } else {
    try {
      world.sync();
      FAIL();
    } catch (const axon::Error& e) {
      EXPECT_EQ(e.code(), axon::ErrorCode::Timeout);
      EXPECT_TRUE(contains(e.what(), "sync of team world")) << e.what();
      EXPECT_TRUE(contains(e.what(), "on PE ")) << e.what();
    }
  }
}

TEST(Lifecycle, FinalizeThenCallsFail) {
  // The timed-out barrier above left the world's barrier counters out of step, so finalize may
  // itself report a timeout, or a peer that left before this PE's barrier finished, or (on PE 0,
  // which never called that sync) a mismatch: its finalize against the others' Team::sync, the
  // same call of the world's sequence; either way it must return (bounded) and leave.
  try {
    axon::finalize();
  } catch (const axon::Error& e) {
    EXPECT_TRUE(e.code() == axon::ErrorCode::Timeout || e.code() == axon::ErrorCode::PeerDead ||
                (e.code() == axon::ErrorCode::CollectiveMismatch && contains(e.what(), "Team::sync()")))
        << e.what();
  }
  EXPECT_FALSE(axon::isInitialized());
  try {
    axon::put(nullptr, nullptr, 0, 0);
    FAIL();
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::NotInitialized);
    EXPECT_TRUE(contains(e.what(), "after finalize()")) << e.what();
  }
  EXPECT_THROW(axon::finalize(), axon::Error);
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
