// The GPU path of the collectives ("gpu-p2p"): kernels on the team's GPU workspace. The blocking
// calls of a team that has one come here with any buffers (host buffers are staged through device
// memory); the stream-ordered calls come here with device buffers.
#pragma once

#include <string>

#include "axon/device/coll_types.hpp"
#include "coll/plan.hpp"
#include "coll/request.hpp"

namespace axon {
class GpuBackend;
class GpuTeamWorkspace;
class PeContext;
namespace detail {
struct TeamState;
}
}  // namespace axon

namespace axon::coll {

// withReason: build explain()'s sentence too (not on the call path).
GpuPlan gpuPlanFor(PeContext& rt, Collective c, std::size_t count, DataType type, int members,
                   bool withReason = false);

// `q` is checked; `ws` is the team's GPU workspace. stream == nullptr: blocking, on the workspace's
// own stream; otherwise enqueued on `stream` (a CUstream) with device buffers only. Throws the
// team's earlier failure, if any. `syncKind` (a coll::SyncKind, with a barrier request): the
// barrier stands for that team synchronization, whose kind its record carries (in `op`, which a
// barrier does not use otherwise), so that the kernels compare it with the members' calls.
void runOnGpu(PeContext& rt, const detail::TeamState& team, GpuTeamWorkspace& ws, Request q, void* stream,
              const char* api, unsigned syncKind = 0);
// Throws InvalidArgument unless src and dst (`bytes` of each, 0: unused) are GPU memory, as the
// stream forms require.
void requireDeviceBuffers(PeContext& rt, const GpuBackend& gpu, const Request& q,
                          std::pair<std::size_t, std::size_t> bytes, const char* api);

// How an error message names a GPU call record: "allreduce(count 8, float32, sum, oneshot LL, 1
// channel(s))", "barrier_all() (the team's barrier)".
std::string describeGpuCall(const device::CollRecord& r);
// "mismatched collective calls: PE 0 called ... but PE 2 called ..." for a mismatch report.
std::string describeGpuMismatch(const device::CollError& e);

// The bound of the team's kernels' waits, in ns: the team's timeout, else AXON_TIMEOUT.
unsigned long long timeoutNsOf(PeContext& rt, const detail::TeamState& team);

// Throws CollectiveMismatch / Timeout when a collective of the team's GPU workspace failed earlier.
void throwIfGpuFailed(PeContext& rt, const detail::TeamState& team, const GpuTeamWorkspace& ws, const char* api);

}  // namespace axon::coll
