// The path across nodes ("hierarchical"): each call runs in steps, inside each node through its
// shared-memory workspace and among the node leaders over the network (coll/hierarchy.hpp). GPU
// buffers are copied through host memory around the call; the stream-ordered forms run the same
// call on the stream's host worker when the stream gets there, and kernels reach it through the
// device proxy.
#include <memory>

#include "axon/team.hpp"
#include "coll/gpu_path.hpp"
#include "coll/hierarchy.hpp"
#include "coll/host_path.hpp"
#include "coll/host_staging.hpp"
#include "coll/team_collectives.hpp"
#include "core/pe_context.hpp"
#include "core/team_state.hpp"
#include "gpu/gpu_backend.hpp"

namespace axon::coll {
namespace {

class HierarchyCollectives final : public TeamCollectives {
 public:
  HierarchyCollectives(PeContext& rt, const detail::TeamState& team, std::shared_ptr<Hierarchy> hierarchy)
      : rt_(rt), team_(team), hierarchy_(std::move(hierarchy)) {}

  void run(Request q, const char* api) override {
    const int n = static_cast<int>(team_.members.size());
    const int me = team_.myIndex;
    const Plan plan = hostPlan(rt_, q.collective, q.count, q.type, n);
    HostCopies copies(rt_, staging_, q, extents(q, n, dataTypeSize(q.type), me), me, team_.name, api);
    // Puts in flight over the network complete first, as a barrier on one node sees them done.
    if (q.collective == Collective::Barrier) rt_.quietAll();
    hierarchy_->run(rt_, q, callRecord(rt_, q, plan), api);
    copies.copyBack();
  }

  void enqueue(const Team& team, Request q, void* stream, const char* api) override {
    // The stream's host worker runs the blocking call when the stream gets here (device buffers go
    // through host copies, as in the blocking form). Calls on the team keep the order in which the
    // streams reach them. The work holds the team (its state outlives the program's handles) and
    // makes the call as the API does, so a team destroyed meanwhile, or freed buffers, fail it in
    // words.
    GpuBackend& gpu = *rt_.gpu();
    const int n = static_cast<int>(team_.members.size());
    requireDeviceBuffers(rt_, gpu, q, extents(q, n, dataTypeSize(q.type), team_.myIndex), api);
    gpu.enqueueHostWork(stream, [team, q, api] { runOnTeam(team, q, api); },
                        std::string(api) + " on team " + team_.name + " (across nodes)");
  }

  void enterSync(const char* what) override { hierarchy_->sync(rt_, what); }

  void explain(Explanation& e, std::size_t count, DataType type) const override {
    hierarchy_->explain(rt_, e, count, type);
  }

  device::CollHandle deviceHandle(const Team& team) override {
    // No workspace maps every member: the device proxy runs each call as the host's blocking
    // collective on the team, one at a time (so one channel).
    if (GpuBackend* gpu = rt_.gpu()) {
      device::CollHandle h{};
      h.size = static_cast<int>(team_.members.size());
      h.myIndex = team_.myIndex;
      h.myPe = rt_.myPe();
      h.channels = 1;
      h.timeoutNs = timeoutNsOf(rt_, team_);  // the team's bound when it set one (Team::setTimeout)
      if (gpu->serveTeamCollectives(team, team_.slot, h)) return h;
    }
    noDeviceHandle(rt_, team_);
  }

  // No member writes into this leader's network region after the team's last barrier.
  void release() override { hierarchy_->release(); }

 private:
  PeContext& rt_;
  const detail::TeamState& team_;
  std::shared_ptr<Hierarchy> hierarchy_;
  HostStaging staging_;
};

}  // namespace

std::shared_ptr<TeamCollectives> hierarchyCollectives(PeContext& rt, const detail::TeamState& team,
                                                      std::shared_ptr<Hierarchy> hierarchy) {
  return std::make_shared<HierarchyCollectives>(rt, team, std::move(hierarchy));
}

}  // namespace axon::coll
