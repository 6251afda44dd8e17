// The one progress engine of a PE: work that advances only when someone polls it (a UCX worker,
// which over TCP and shared memory serves peers' gets and atomics in software, so the *target*
// must poll) is polled by every wait of this PE and, when no thread waits, by one thread here.
//
// The thread is bounded: it polls while there is work, then sleeps on the clients' wake-up file
// descriptors, never longer than kMaxSleep, so a wake-up that a client cannot signal (UCX's
// arm/wait misses some shared-memory transfers) costs at most that long.
//
// Clients that cannot be woken by a descriptor (the staged path's proxy, which watches pinned
// memory) ask to be polled again soon instead; clients that run work which may wait are polled by
// the thread alone (engineOnly), also while other threads wait.
//
// The thread keeps out of the way of a thread that polls by itself (a wait): two threads polling
// one UCX worker contend for its lock and, on few cores, for the CPU. Measured on 2 cores, a
// put_signal ping-pong across emulated nodes: 66 us one way with the thread polling beside the
// waiter, 32 us with the waiter alone. While waits come one after another (a wait is under way, or
// one began during the last nap) the thread naps (kMaxSleep) instead of polling, so a PE that
// stops waiting is served again within two naps.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include <poll.h>

namespace axon {

class ProgressClient {
 public:
  virtual ~ProgressClient() = default;
  // Does whatever is ready; returns whether anything happened. Called from any thread.
  virtual bool progress() = 0;
  // Before the engine's thread sleeps: returns a file descriptor that becomes readable when new
  // work arrives, kBusy when work is pending now (do not sleep), kYield to poll again after giving
  // up the CPU, kPollSoon to poll again within kPollSoonDelay (a client that cannot be woken and
  // whose peers expect it to answer quickly), or kNoFd to nap kMaxSleep.
  virtual int armForSleep() { return kNoFd; }
  static constexpr int kNoFd = -1;
  static constexpr int kBusy = -2;
  static constexpr int kYield = -3;
  static constexpr int kPollSoon = -4;
  static constexpr auto kPollSoonDelay = std::chrono::microseconds(50);
  // Polled by the engine's thread alone, never inside another thread's wait: a client that runs
  // work which may itself wait (the stream-ordered host work of the GPU backend), so that it
  // neither nests in a caller's call nor stalls while callers wait.
  virtual bool engineOnly() const { return false; }

  // Held by a thread that polls this client itself, outside the engine (a UCX request's wait):
  // the engine's thread leaves the client alone meanwhile.
  class PolledHere {
   public:
    explicit PolledHere(ProgressClient& c) : c_(c) { c_.pollers_.fetch_add(1, std::memory_order_relaxed); }
    ~PolledHere() { c_.pollers_.fetch_sub(1, std::memory_order_relaxed); }
    PolledHere(const PolledHere&) = delete;
    PolledHere& operator=(const PolledHere&) = delete;

   private:
    ProgressClient& c_;
  };
  bool polledElsewhere() const { return pollers_.load(std::memory_order_relaxed) > 0; }

 private:
  std::atomic<int> pollers_{0};
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
  // Polls every client once (but the engine-only ones); returns whether any did something. Cheap
  // when there are none.
  bool progress() {
    if (!active_.load(std::memory_order_acquire)) return false;
    return pollAll(false);
  }

  // Sleeps up to `limit`, or until a client has work (its wake-up descriptor fires): how a wait
  // that has spun long enough rests without missing a peer's message. A plain sleep when there
  // are no clients.
  void idle(std::chrono::microseconds limit);

  // Held by a thread that waits and calls progress() as it does: the engine's thread naps meanwhile.
  class Waiting {
   public:
    explicit Waiting(ProgressEngine& e) : e_(e) {
      e_.waiters_.fetch_add(1, std::memory_order_relaxed);
      e_.waitsBegun_.fetch_add(1, std::memory_order_relaxed);
    }
    ~Waiting() { e_.waiters_.fetch_sub(1, std::memory_order_relaxed); }
    Waiting(const Waiting&) = delete;
    Waiting& operator=(const Waiting&) = delete;

   private:
    ProgressEngine& e_;
  };
  // How many threads of this PE are in a waitUntil now (holding Waiting; a UCX request's wait,
  // PolledHere, is not counted).
  int waiters() const { return waiters_.load(std::memory_order_relaxed); }
  void stop();

 private:
  // byEngine: from the engine's thread, which skips clients that another thread polls; other
  // threads skip the engine-only clients.
  bool pollAll(bool byEngine);
  bool pollEngineOnly();
  void run();
  // Arms the clients (those another thread polls too, unless byEngine is false) and sleeps until
  // one has work, stop() is called, or `limit` passes; returns at once when a client is busy.
  // engineOnlyClients: arms those alone (while waits poll the others).
  void sleepOnClients(std::chrono::microseconds limit, bool byEngine, std::vector<pollfd>& fds,
                      bool engineOnlyClients = false);
  // While waits poll: sleeps on the engine-only clients (or naps kMaxSleep when there are none).
  void sleepOnEngineOnly(std::vector<pollfd>& fds);

  std::atomic<bool> active_{false};
  std::atomic<int> waiters_{0};
  std::atomic<std::uint64_t> waitsBegun_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;  // serializes add() and stop()
  // Published before count_ grows (release), so pollers on any thread read only set entries.
  std::array<ProgressClient*, kMaxClients> clients_{};
  std::atomic<int> count_{0};
  int wakeFd_ = -1;   // eventfd that stop() writes, so the thread's sleep ends at once
  std::thread thread_;
};

}  // namespace axon
