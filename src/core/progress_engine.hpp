// The one progress engine of a PE: work that advances only when someone polls it (a UCX worker,
// which over TCP and shared memory serves peers' gets and atomics in software, so the *target*
// must poll) is polled by every wait of this PE and, when no thread waits, by one thread here.
//
// The thread is bounded: it polls while there is work, then sleeps on the clients' wake-up file
// descriptors, never longer than kMaxSleep, so a wake-up that a client cannot signal (UCX's
// arm/wait misses some shared-memory transfers) costs at most that long.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

namespace axon {

class ProgressClient {
 public:
  virtual ~ProgressClient() = default;
  // Does whatever is ready; returns whether anything happened. Called from any thread.
  virtual bool progress() = 0;
  // Before the engine's thread sleeps: returns a file descriptor that becomes readable when new
  // work arrives, kBusy when work is pending now (do not sleep), or kNoFd to nap kMaxSleep.
  virtual int armForSleep() { return kNoFd; }
  static constexpr int kNoFd = -1;
  static constexpr int kBusy = -2;
};

class ProgressEngine {
 public:
  static constexpr auto kMaxSleep = std::chrono::milliseconds(1);

  ProgressEngine() = default;
  ~ProgressEngine();  // stops the thread
  ProgressEngine(const ProgressEngine&) = delete;
  ProgressEngine& operator=(const ProgressEngine&) = delete;

  static constexpr int kMaxClients = 8;

  // Adds a client and starts the thread with the first one. The client must outlive stop().
  void add(ProgressClient* client);
  // Polls every client once; returns whether any did something. Cheap when there are none.
  bool progress() {
    if (!active_.load(std::memory_order_acquire)) return false;
    return pollAll();
  }
  void stop();

 private:
  bool pollAll();
  void run();

  std::atomic<bool> active_{false};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;  // serializes add() and stop()
  // Published before count_ grows (release), so pollers on any thread read only set entries.
  std::array<ProgressClient*, kMaxClients> clients_{};
  std::atomic<int> count_{0};
  int wakeFd_ = -1;   // eventfd that stop() writes, so the thread's sleep ends at once
  std::thread thread_;
};

}  // namespace axon
