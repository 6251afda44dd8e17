// The GPU path ("gpu-p2p"): every member's GPU maps every other's workspace, and each call is a
// kernel on it (coll/gpu_path.hpp): the blocking calls with any buffers (host buffers staged
// through device memory), the stream-ordered ones with device buffers, and kernels through the
// workspace's device handle.
#include <cstdint>

#include "axon/error.hpp"
#include "coll/gpu_call_order.hpp"
#include "coll/gpu_path.hpp"
#include "coll/protocol.hpp"
#include "coll/team_collectives.hpp"
#include "core/pe_context.hpp"
#include "core/team_state.hpp"
#include "gpu/gpu_backend.hpp"

namespace axon::coll {
namespace {

class GpuCollectives final : public TeamCollectives {
 public:
  GpuCollectives(PeContext& rt, const detail::TeamState& team, std::shared_ptr<GpuTeamWorkspace> ws)
      : rt_(rt), team_(team), ws_(std::move(ws)) {
    team_.deviceMembers = ws_->handle().members;
  }

  void run(Request q, const char* api) override { runOnGpu(rt_, team_, *ws_, q, nullptr, api); }

  void enqueue(const Team&, Request q, void* stream, const char* api) override {
    // runOnGpu takes a null stream for the blocking form (the workspace's own stream, waited for);
    // here null is the caller's legacy default stream, so name that one (CU_STREAM_LEGACY, also
    // cudaStreamLegacy) and keep the call ordered on it without blocking.
    runOnGpu(rt_, team_, *ws_, q, stream ? stream : reinterpret_cast<void*>(std::uintptr_t{1}), api);
  }

  void explain(Explanation& e, std::size_t count, DataType type) const override {
    const GpuPlan gp = gpuPlanFor(rt_, e.collective, count, type, static_cast<int>(team_.members.size()), true);
    e.algorithm = algoName(gp.algo);
    e.path = "gpu-p2p";
    e.reason = gp.reason + "; " + std::to_string(gp.channels) + " channel(s); host buffers are staged through "
               "device memory";
    e.chunkBytes = gp.chunkBytes;
    e.rounds = gp.rounds;
    // The kernel the call would launch (a reduction's op does not change its occupancy: Sum).
    kernels::CollLaunch launch{};
    launch.record.collective = static_cast<unsigned>(e.collective);
    launch.record.dtype = static_cast<unsigned>(type);
    launch.record.op = static_cast<unsigned>(ReduceOp::Sum);
    launch.threads = gp.threads;
    e.blocks = gp.channels;
    e.threadsPerBlock = gp.threads;
    // A query: it answers even where CUDA cannot (a context broken by a failed kernel, when a user
    // most wants to know what the call did); the SMs stay 0 and the reason says why.
    try {
      const kernels::CollOccupancy o = ws_->occupancy(launch);
      e.blocksPerSm = o.blocksPerSm;
      e.sms = o.blocksPerSm > 0 ? static_cast<double>(gp.channels) / o.blocksPerSm : 0;
      e.deviceSms = o.deviceSms;
    } catch (const Error& err) {
      e.reason += std::string("; occupancy unknown: ") + err.what();
    }
  }

  // finalize and a team's destroy synchronize this PE's GPU first, so none of its stream work is
  // left on the workspace: they publish their record through it, as a barrier kernel tagged with
  // their kind, which every member's kernels (blocking, stream-ordered or device-callable) compare
  // with their own call, naming both. The team barriers (barrier_all, Team::barrier) do not:
  // stream-ordered calls of this PE on the team may still be pending, and a kernel of the
  // barrier's overtaking them would reorder the team's calls (docs/architecture.md). They compare
  // the GPU collectives each member's host issued before them instead (coll/gpu_call_order.hpp).
  void enterSync(const char* what) override {
    const std::uint32_t kind = syncRecord(what).collective;
    if (kind == static_cast<std::uint32_t>(SyncKind::TeamBarrier)) {
      if (ws_) enterGpuTeamBarrier(rt_, team_, *ws_, what);
      return;
    }
    if (!ws_ || ws_->error()) return;  // after a failed call: the barrier goes on without a record
    // A PE known dead never runs its part of the record's kernel, which would wait for it until
    // AXON_TIMEOUT: the synchronization goes on without a record, and its barrier names the PE.
    if (rt_.findDeadPe() >= 0) return;
    try {
      runOnGpu(rt_, team_, *ws_, Request{Collective::Barrier, nullptr, nullptr, 0, DataType::Uint8, ReduceOp::Sum, 0},
               nullptr, what, kind);
    } catch (const Error& err) {
      if (err.code() != ErrorCode::CollectiveMismatch && err.code() != ErrorCode::Timeout) throw;
      // The kernel may have adopted a failure another member reported earlier, which this PE had
      // not met yet: no news to this synchronization, which goes on without a record as after any
      // failed call. A report that names this synchronization's record is its mismatch.
      const device::CollError* e = ws_->error();
      auto ours = [&](const device::CollRecord& r) {
        return r.collective == static_cast<unsigned>(Collective::Barrier) && r.op == kind;
      };
      if (e && e->code == static_cast<int>(device::CollErrorCode::Mismatch) && (ours(e->mine) || ours(e->theirs))) throw;
      if (e && e->code == static_cast<int>(device::CollErrorCode::Timeout) && ours(e->mine)) throw;
    }
  }

  device::CollHandle deviceHandle(const Team&) override {
    throwIfGpuFailed(rt_, team_, *ws_, "device_coll_handle");
    ws_->setTimeoutNs(timeoutNsOf(rt_, team_));
    return ws_->handle();
  }

  // Synchronized by Team::destroy; the peers' mappings keep the memory alive until they let go too.
  void release() override {
    team_.deviceMembers = nullptr;
    ws_.reset();
  }

 private:
  PeContext& rt_;
  const detail::TeamState& team_;
  std::shared_ptr<GpuTeamWorkspace> ws_;
};

}  // namespace

std::shared_ptr<TeamCollectives> gpuCollectives(PeContext& rt, const detail::TeamState& team,
                                                std::shared_ptr<GpuTeamWorkspace> ws) {
  return std::make_shared<GpuCollectives>(rt, team, std::move(ws));
}

}  // namespace axon::coll
