// What a staging-space client did (ClientStats in axon/space.hpp): counted by its puts and gets
// on the callers' threads, read by Client::stats(). A lock of its own, since counting is all
// that the parts of the client share here.
#pragma once

#include <cstdint>
#include <mutex>

#include "axon/space.hpp"

namespace axon::space {

class StatsBook {
 public:
  void bump(std::uint64_t ClientStats::*field) {
    std::lock_guard lock(mu_);
    ++(stats_.*field);
  }
  // The path of the last put or get, in words.
  void setPath(const char* p) {
    std::lock_guard lock(mu_);
    stats_.lastPath = p;
  }
  // Several counters at once: f(ClientStats&) under the lock.
  template <class F>
  void update(F&& f) {
    std::lock_guard lock(mu_);
    f(stats_);
  }
  ClientStats snapshot() const {
    std::lock_guard lock(mu_);
    return stats_;
  }

 private:
  mutable std::mutex mu_;
  ClientStats stats_;
};

}  // namespace axon::space
