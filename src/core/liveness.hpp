// Is a PE still running? Node-local PEs are checked through their process ids, so a PE that
// waits on a dead peer learns of it in milliseconds instead of running into its timeout.
#pragma once

#include <sys/types.h>

#include <vector>

namespace axon {

class Liveness {
 public:
  Liveness() = default;
  // pids[pe] is the PE's process id when it runs on this node, else 0 (not checked here).
  explicit Liveness(std::vector<pid_t> pids) : pids_(std::move(pids)) {}

  pid_t pidOf(int pe) const { return pids_[pe]; }

  // A process that exited but was not reaped yet (a zombie) counts as dead.
  static bool processAlive(pid_t pid);

 private:
  std::vector<pid_t> pids_;
};

}  // namespace axon
