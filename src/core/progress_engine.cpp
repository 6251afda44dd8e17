#include "core/progress_engine.hpp"

#include <poll.h>
#include <sched.h>
#include <time.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "axon/error.hpp"

namespace axon {

ProgressEngine::~ProgressEngine() { stop(); }

void ProgressEngine::add(ProgressClient* client) {
  std::lock_guard lock(mutex_);
  if (wakeFd_ < 0) {
    wakeFd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wakeFd_ < 0) throw SystemError("progress engine: eventfd", errno);
  }
  const int n = count_.load(std::memory_order_relaxed);
  if (n == kMaxClients) throw Error(ErrorCode::Internal, "progress engine: more than 8 clients");
  clients_[n] = client;
  count_.store(n + 1, std::memory_order_release);
  active_.store(true, std::memory_order_release);
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
}

bool ProgressEngine::pollAll(bool byEngine) {
  bool any = false;
  const int n = count_.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    if (clients_[i]->engineOnly() ? !byEngine : byEngine && clients_[i]->polledElsewhere()) continue;
    any |= clients_[i]->progress();
  }
  return any;
}

bool ProgressEngine::pollEngineOnly() {
  bool any = false;
  const int n = count_.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) {
    if (clients_[i]->engineOnly()) any |= clients_[i]->progress();
  }
  return any;
}

void ProgressEngine::run() {
  std::vector<pollfd> fds;
  std::uint64_t waitsSeen = waitsBegun_.load(std::memory_order_relaxed);
  while (!stop_.load(std::memory_order_acquire)) {
    const std::uint64_t waits = waitsBegun_.load(std::memory_order_relaxed);
    if (waiters_.load(std::memory_order_relaxed) > 0 || waits != waitsSeen) {
      waitsSeen = waits;
      // The waits poll the others; the engine-only clients are this thread's alone.
      if (!pollEngineOnly()) sleepOnEngineOnly(fds);
      continue;
    }
    if (pollAll(true)) continue;
    sleepOnClients(kMaxSleep, true, fds);
  }
}

void ProgressEngine::sleepOnClients(std::chrono::microseconds limit, bool byEngine, std::vector<pollfd>& fds,
                                    bool engineOnlyClients) {
  fds.assign(1, pollfd{wakeFd_, POLLIN, 0});
  const int n = count_.load(std::memory_order_acquire);
  bool yield = false;
  for (int i = 0; i < n; ++i) {
    ProgressClient& c = *clients_[i];
    if (engineOnlyClients && !c.engineOnly()) continue;
    if (c.engineOnly() && !byEngine) continue;                  // nobody here polls it
    if (byEngine && !c.engineOnly() && c.polledElsewhere()) continue;  // its poller takes what arrives
    const int fd = c.armForSleep();
    if (fd == ProgressClient::kBusy) return;
    if (fd == ProgressClient::kYield) yield = true;
    if (fd == ProgressClient::kPollSoon) limit = std::min<std::chrono::microseconds>(limit, ProgressClient::kPollSoonDelay);
    if (fd >= 0) fds.push_back(pollfd{fd, POLLIN, 0});
  }
  if (yield) {
    sched_yield();
    return;
  }
  const timespec ts{static_cast<time_t>(limit.count() / 1000000), static_cast<long>(limit.count() % 1000000) * 1000};
  ::ppoll(fds.data(), fds.size(), &ts, nullptr);
}

void ProgressEngine::sleepOnEngineOnly(std::vector<pollfd>& fds) {
  sleepOnClients(kMaxSleep, true, fds, true);
}

void ProgressEngine::idle(std::chrono::microseconds limit) {
  if (!active_.load(std::memory_order_acquire)) {
    std::this_thread::sleep_for(limit);
    return;
  }
  thread_local std::vector<pollfd> fds;
  sleepOnClients(limit, false, fds);
}

void ProgressEngine::stop() {
  std::lock_guard lock(mutex_);
  if (thread_.joinable()) {
    stop_.store(true, std::memory_order_release);
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wakeFd_, &one, sizeof(one));
    thread_.join();
  }
  active_.store(false, std::memory_order_release);
  if (wakeFd_ >= 0) ::close(wakeFd_);
  wakeFd_ = -1;
}

}  // namespace axon
