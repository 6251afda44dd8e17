// Is a PE still running? Two signs, whichever comes first (Runtime::findDeadPe):
// - its process is gone: for PEs on this node in our PID namespace, checked by pid in microseconds;
// - its store connection closed without finalize: for every PE, on any node or in any namespace
//   (the store tells every rank; bootstrap/store_client.hpp). A pid from another PID namespace
//   (a container, `unshare --pid`) names some other process here, so it is never used.
// Either way a PE waiting on a dead peer learns of it within a liveness check (50 ms) instead of
// running into its timeout.
#pragma once

#include <sys/types.h>

#include <vector>

namespace axon {

class Liveness {
 public:
  Liveness() = default;
  // pids[pe] is the PE's process id when it runs on this node in our PID namespace, else 0 (not
  // checked by pid).
  explicit Liveness(std::vector<pid_t> pids) : pids_(std::move(pids)) {}

  pid_t pidOf(int pe) const { return pids_[pe]; }

  // A process that exited but was not reaped yet (a zombie) counts as dead.
  static bool processAlive(pid_t pid);

 private:
  std::vector<pid_t> pids_;
};

}  // namespace axon
