// The progress engine polls its clients from its own thread while nobody waits, and sleeps on
// their wake-up descriptors (bounded) when none has work.
#include "core/progress_engine.hpp"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace axon {
namespace {

using namespace std::chrono_literals;

// Has `work` units to do, one per poll; wakes the engine through an eventfd.
class Counter final : public ProgressClient {
 public:
  Counter() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
  ~Counter() override { ::close(fd_); }
  bool progress() override {
    int left = work.load();
    while (left > 0 && !work.compare_exchange_weak(left, left - 1)) {
    }
    polls.fetch_add(1);
    if (left <= 0) return false;
    done.fetch_add(1);
    return true;
  }
  int armForSleep() override {
    std::uint64_t v;
    while (::read(fd_, &v, sizeof(v)) > 0) {
    }
    armed.fetch_add(1);
    return work.load() > 0 ? kBusy : idleHint.load() != kNoFd ? idleHint.load() : fd_;
  }
  bool engineOnly() const override { return onlyEngine; }
  void give(int n) {
    work.fetch_add(n);
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t r = ::write(fd_, &one, sizeof(one));
  }
  std::atomic<int> work{0}, done{0}, polls{0}, armed{0};
  std::atomic<int> idleHint{kNoFd};  // kNoFd: sleep on the descriptor
  bool onlyEngine = false;

 private:
  int fd_;
};

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds within = 5s) {
  const auto end = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(1ms);
  }
  return pred();
}

TEST(ProgressEngine, ItsThreadDoesTheWorkNobodyWaitsFor) {
  ProgressEngine engine;
  EXPECT_FALSE(engine.progress());  // no clients: nothing to do, and cheap
  Counter c;
  engine.add(&c);
  c.give(1000);
  EXPECT_TRUE(eventually([&] { return c.done.load() == 1000; }));
  engine.stop();
}

TEST(ProgressEngine, AnIdleEngineSleepsOnTheClientsDescriptors) {
  ProgressEngine engine;
  Counter c;
  engine.add(&c);
  EXPECT_TRUE(eventually([&] { return c.armed.load() > 0; }));
  std::this_thread::sleep_for(50ms);
  const int polls = c.polls.load();
  std::this_thread::sleep_for(200ms);
  // Asleep: at most one poll per kMaxSleep (1 ms) while idle, not a spin (millions).
  EXPECT_LE(c.polls.load() - polls, 400);
  c.give(3);  // the eventfd wakes it
  EXPECT_TRUE(eventually([&] { return c.done.load() == 3; }, 1s));
  engine.stop();
}

TEST(ProgressEngine, WaitsOnOtherThreadsPollToo) {
  ProgressEngine engine;
  Counter c;
  engine.add(&c);
  c.give(100);
  std::thread waiter([&] {
    while (c.done.load() < 100) engine.progress();
  });
  waiter.join();
  EXPECT_EQ(c.done.load(), 100);
  engine.stop();
  EXPECT_FALSE(engine.progress());  // stopped: clients are no longer touched
}

TEST(ProgressEngine, ItsThreadStandsAsideWhileAWaitPolls) {
  ProgressEngine engine;
  Counter c;
  engine.add(&c);
  EXPECT_TRUE(eventually([&] { return c.armed.load() > 0; }));
  {
    ProgressEngine::Waiting waiting(engine);
    std::this_thread::sleep_for(5ms);  // the thread sees the wait and naps
    c.give(50);
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(c.done.load(), 0);  // nobody but the waiter may take it
    while (c.done.load() < 50) engine.progress();
  }
  // Once waits stop, the thread serves again within two naps.
  c.give(7);
  EXPECT_TRUE(eventually([&] { return c.done.load() == 57; }, 1s));
  engine.stop();
}

TEST(ProgressEngine, ItsThreadLeavesAClientPolledElsewhereAlone) {
  ProgressEngine engine;
  Counter c;
  engine.add(&c);
  {
    ProgressClient::PolledHere here(c);
    std::this_thread::sleep_for(5ms);
    c.give(20);
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(c.done.load(), 0);
  }
  EXPECT_TRUE(eventually([&] { return c.done.load() == 20; }, 1s));
  engine.stop();
}

TEST(ProgressEngine, IdleEndsWhenAClientGetsWork) {
  ProgressEngine engine;
  Counter c;
  engine.add(&c);
  ProgressEngine::Waiting waiting(engine);  // the engine's thread keeps out: only idle() sleeps
  std::this_thread::sleep_for(5ms);
  std::thread giver([&] {
    std::this_thread::sleep_for(50ms);
    c.give(1);
  });
  const auto t0 = std::chrono::steady_clock::now();
  engine.idle(std::chrono::seconds(10));
  const auto slept = std::chrono::steady_clock::now() - t0;
  giver.join();
  EXPECT_LT(slept, 5s);  // woken by the client's descriptor, not the limit
  EXPECT_TRUE(engine.progress());
  engine.stop();
}

TEST(ProgressEngine, IdleWithoutClientsSleepsTheLimit) {
  ProgressEngine engine;
  const auto t0 = std::chrono::steady_clock::now();
  engine.idle(std::chrono::milliseconds(20));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 20ms);
}

TEST(ProgressEngine, AnEngineOnlyClientIsServedByItsThreadAloneAlsoWhileWaitsPoll) {
  ProgressEngine engine;
  Counter waited, hostWork;
  hostWork.onlyEngine = true;
  engine.add(&waited);
  engine.add(&hostWork);
  {
    ProgressEngine::Waiting waiting(engine);
    std::this_thread::sleep_for(5ms);
    hostWork.give(30);
    waited.give(10);
    // A wait polls the others, never the engine-only client (its work may wait itself).
    while (waited.done.load() < 10) engine.progress();
    // The thread serves the engine-only client although a wait is under way.
    EXPECT_TRUE(eventually([&] { return hostWork.done.load() == 30; }, 1s));
  }
  engine.stop();
}

TEST(ProgressEngine, AClientThatCannotBeWokenIsPolledSoon) {
  ProgressEngine engine;
  Counter c;
  c.idleHint = ProgressClient::kPollSoon;
  engine.add(&c);
  EXPECT_TRUE(eventually([&] { return c.armed.load() > 0; }));
  std::this_thread::sleep_for(50ms);
  const int polls = c.polls.load();
  std::this_thread::sleep_for(200ms);
  // Every 50 us at most (some 4,000 polls in 200 ms), more often than kMaxSleep allows (200),
  // and still a sleep, not a spin.
  EXPECT_GT(c.polls.load() - polls, 400);
  EXPECT_LT(c.polls.load() - polls, 100000);
  // Work that no descriptor announces is found by the next poll.
  c.work.fetch_add(5);
  EXPECT_TRUE(eventually([&] { return c.done.load() == 5; }, 1s));
  engine.stop();
}

}  // namespace
}  // namespace axon
