#include "core/progress_engine.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

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

bool ProgressEngine::pollAll() {
  bool any = false;
  const int n = count_.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i) any |= clients_[i]->progress();
  return any;
}

void ProgressEngine::run() {
  std::vector<pollfd> fds;
  while (!stop_.load(std::memory_order_acquire)) {
    if (pollAll()) continue;
    fds.assign(1, pollfd{wakeFd_, POLLIN, 0});
    bool busy = false;
    const int n = count_.load(std::memory_order_acquire);
    for (int i = 0; i < n; ++i) {
      const int fd = clients_[i]->armForSleep();
      if (fd == ProgressClient::kBusy) busy = true;
      else if (fd >= 0) fds.push_back(pollfd{fd, POLLIN, 0});
    }
    if (busy) continue;
    ::poll(fds.data(), fds.size(), static_cast<int>(kMaxSleep.count()));
  }
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
