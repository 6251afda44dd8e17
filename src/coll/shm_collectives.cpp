// The host path on one node ("host-shm"): the members share memory, and each call runs the host
// algorithms (coll/algorithms.hpp) through the team's shared-memory workspace. GPU buffers are
// copied through host memory around the call (a team gets this path with GPUs only where they
// cannot map each other's memory).
#include "axon/error.hpp"
#include "coll/algorithms.hpp"
#include "coll/host_path.hpp"
#include "coll/host_staging.hpp"
#include "coll/protocol.hpp"
#include "coll/team_collectives.hpp"
#include "coll/workspace.hpp"
#include "core/pe_context.hpp"
#include "core/team_state.hpp"

namespace axon::coll {
namespace {

class ShmCollectives final : public TeamCollectives {
 public:
  ShmCollectives(PeContext& rt, const detail::TeamState& team, std::unique_ptr<Workspace> ws)
      : rt_(rt), team_(team), ws_(std::move(ws)) {}

  void run(Request q, const char* api) override {
    const int n = static_cast<int>(team_.members.size());
    const int me = team_.myIndex;
    const std::size_t elem = dataTypeSize(q.type);
    const Plan plan = hostPlan(rt_, q.collective, q.count, q.type, n);
    // In-place forms name the same bytes through src; normalize them so the host copies see it.
    HostCopies copies(rt_, staging_, q, extents(q, n, elem, me), me, team_.name, api);
    ShmCall call(rt_, team_, *ws_, callRecord(rt_, q, plan), api);
    const Buffers b{static_cast<const char*>(q.src), static_cast<char*>(q.dst), q.count, q.type, q.op, q.root, elem};
    try {
      switch (q.collective) {
        case Collective::Barrier: runBarrier(call); break;
        case Collective::Broadcast: runBroadcast(call, plan, b); break;
        case Collective::Reduce: runReduce(call, plan, b); break;
        case Collective::Allreduce: runAllreduce(call, plan, b); break;
        case Collective::Allgather: runAllgather(call, plan, b); break;
        case Collective::ReduceScatter: runReduceScatter(call, plan, b); break;
        case Collective::Alltoall: runAlltoall(call, plan, b); break;
      }
      call.finish();
    } catch (const Error& e) {
      call.fail(std::string(errorCodeName(e.code())) + " in " + api);
      throw;
    }
    copies.copyBack();
  }

  void enqueue(const Team&, Request, void*, const char* api) override { noGpuWorkspace(rt_, team_, api); }

  void enterSync(const char* what) override {
    // After a failed call the members no longer count alike: the barrier goes on without a record
    // (Team::destroy must still work).
    if (!ws_ || !ws_->failure.empty()) return;
    ShmCall call(rt_, team_, *ws_, syncRecord(what), what);
    try {
      call.finish();  // every member's record of this call, compared
    } catch (const Error& e) {
      call.fail(std::string(errorCodeName(e.code())) + " in " + what);
      throw;
    }
  }

  void explain(Explanation& e, std::size_t, DataType) const override { explainHostShm(rt_, team_, e); }

  device::CollHandle deviceHandle(const Team&) override { noDeviceHandle(rt_, team_); }

  // No member touches the workspace after the team's last barrier: it can go.
  void release() override { ws_.reset(); }

 private:
  PeContext& rt_;
  const detail::TeamState& team_;
  std::unique_ptr<Workspace> ws_;
  HostStaging staging_;
};

}  // namespace

std::shared_ptr<TeamCollectives> shmCollectives(PeContext& rt, const detail::TeamState& team,
                                                std::unique_ptr<Workspace> ws) {
  return std::make_shared<ShmCollectives>(rt, team, std::move(ws));
}

}  // namespace axon::coll
