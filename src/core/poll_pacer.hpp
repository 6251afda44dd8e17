// How the staged path's progress clients ask to be polled (ProgressClient::armForSleep). Their
// work arrives in pinned memory, which no file descriptor announces, and a peer or a stream waits
// on each answer: after work they are polled without pause for a while (latency), then after
// yielding the CPU, then every kPollSoonDelay, so an idle client costs little.
#pragma once

#include <atomic>
#include <chrono>

#include "core/progress_engine.hpp"

namespace axon {

class PollPacer {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr auto kSpin = std::chrono::microseconds(200);
  static constexpr auto kYield = std::chrono::milliseconds(20);

  void markWork() { last_.store(Clock::now().time_since_epoch().count(), std::memory_order_relaxed); }

  // What armForSleep returns when the client has nothing in hand.
  int sleepHint() const {
    const auto idle = Clock::now().time_since_epoch() - Clock::duration(last_.load(std::memory_order_relaxed));
    if (idle < kSpin) return ProgressClient::kBusy;
    if (idle < kYield) return ProgressClient::kYield;
    return ProgressClient::kPollSoon;
  }

 private:
  std::atomic<Clock::rep> last_{0};
};

}  // namespace axon
