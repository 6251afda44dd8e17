// How a team's synchronizations (onesided/team_barrier.hpp: barrier_all, sync_all, Team::barrier,
// Team::sync, finalize, a team's destroy) take their place among the team's collective calls. The
// team's collectives (coll/, a floor above) implement it: each synchronization publishes a record
// in the same sequence as the collectives, so that a barrier on some members and a collective, or
// finalize, on others is reported on every member as CollectiveMismatch naming both calls,
// instead of a hang until AXON_TIMEOUT.
#pragma once

namespace axon::detail {

class SyncOrder {
 public:
  virtual ~SyncOrder() = default;
  // Before the barrier signals anything: publishes this PE's record of the synchronization `what`
  // ("barrier_all", "finalize", ...) and returns once every member published the same kind of
  // synchronization as its call of that number; throws CollectiveMismatch naming both otherwise
  // (no member then signals, so the team's barrier counters stay in step for its destroy).
  virtual void enterSync(const char* what) = 0;
};

}  // namespace axon::detail
