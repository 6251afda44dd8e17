// The public collective calls: argument checks, the plan, device-buffer staging, dispatch.
#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <vector>

#include "axon/collectives.hpp"
#include "axon/error.hpp"
#include "coll/algorithms.hpp"
#include "coll/gpu_path.hpp"
#include "coll/hierarchy.hpp"
#include "coll/host_staging.hpp"
#include "coll/plan.hpp"
#include "coll/protocol.hpp"
#include "coll/request.hpp"
#include "coll/workspace.hpp"
#include "core/pe_context.hpp"
#include "core/team_state.hpp"
#include "gpu/gpu_backend.hpp"

namespace axon {

std::size_t dataTypeSize(DataType t) noexcept {
  switch (t) {
    case DataType::Int8: case DataType::Uint8: return 1;
    case DataType::Float16: case DataType::BFloat16: return 2;
    case DataType::Int32: case DataType::Uint32: case DataType::Float32: return 4;
    case DataType::Int64: case DataType::Uint64: case DataType::Float64: return 8;
  }
  return 0;
}

const char* dataTypeName(DataType t) noexcept {
  constexpr std::array<const char*, 10> names = {"int8",    "uint8",    "int32",   "uint32",  "int64",
                                                 "uint64",  "float16",  "bfloat16", "float32", "float64"};
  auto i = static_cast<std::size_t>(t);
  return i < names.size() ? names[i] : "?";
}

const char* reduceOpName(ReduceOp op) noexcept {
  constexpr std::array<const char*, 4> names = {"sum", "prod", "min", "max"};
  auto i = static_cast<std::size_t>(op);
  return i < names.size() ? names[i] : "?";
}

const char* collectiveName(Collective c) noexcept {
  constexpr std::array<const char*, 7> names = {"barrier",   "broadcast",      "reduce",  "allreduce",
                                                "allgather", "reduce_scatter", "alltoall"};
  auto i = static_cast<std::size_t>(c);
  return i < names.size() ? names[i] : "?";
}

namespace {

using coll::checkRequest;
using coll::extents;
using coll::Request;

coll::Plan planFor(PeContext& rt, Collective c, std::size_t count, DataType type, int members) {
  return coll::makePlan({c, count, dataTypeSize(type), members, rt.env().collBuffer, coll::forcedAlgo(rt.env(), c)});
}

// GPU memory cannot be read by the host algorithms: such a call runs on host copies of the
// buffers, in the team's staging memory (GPU collectives on the workspace are the GPU backend's
// own path).
class HostCopies {
 public:
  HostCopies(PeContext& rt, const detail::TeamState& team, Request& q, std::pair<std::size_t, std::size_t> bytes,
             int me, const char* api)
      : rt_(rt), q_(q) {
    GpuBackend* gpu = rt.gpu();
    if (!gpu) return;
    const bool deviceSrc = bytes.first && gpu->isDeviceMemory(q.src);
    const bool deviceDst = bytes.second && gpu->isDeviceMemory(q.dst);
    if (!deviceSrc && !deviceDst) return;
    coll::HostStaging& staging = *team.hostStaging;
    held_ = staging.lock();
    const std::string who = "PE " + std::to_string(rt.myPe()) + ": " + api + " on team " + team.name;
    void* const userDst = q.dst;
    const bool inPlace = q.src == q.dst;
    if (deviceSrc) {
      char* copy = staging.source(bytes.first, who);
      gpu->copyLocal(copy, q.src, bytes.first);
      q.src = copy;
    }
    if (!deviceDst) return;
    if (q.collective != Collective::Alltoall && deviceSrc && bytes.first == bytes.second) {
      q.dst = const_cast<void*>(q.src);  // the source's copy is private: the result may go there
      // An in-place broadcast leaves the root's buffer as it was: nothing to copy back.
      if (q.collective == Collective::Broadcast && q.root == me && inPlace) return;
    } else {
      q.dst = staging.destination(bytes.second, who);
      if (q.collective == Collective::Allgather || q.collective == Collective::ReduceScatter) {
        gpu->copyLocal(q.dst, userDst, bytes.second);  // keep bytes the call leaves alone
      }
    }
    userDst_ = userDst;
    dstBytes_ = bytes.second;
  }
  void copyBack() {
    if (userDst_) rt_.gpu()->copyLocal(userDst_, q_.dst, dstBytes_);
  }

 private:
  PeContext& rt_;
  Request& q_;
  void* userDst_ = nullptr;
  std::size_t dstBytes_ = 0;
  std::unique_lock<std::mutex> held_;  // the team's staging, until the call has copied back
};

void run(Request q, const Team& team, const char* api) {
  PeContext& rt = peContext(api);
  const detail::TeamState& state = detail::requireValidTeam(team, api);
  const int n = static_cast<int>(state.members.size());
  const int me = state.myIndex;
  checkRequest(rt, q, n, me, api);
  const std::size_t elem = dataTypeSize(q.type);
  const coll::Plan plan = planFor(rt, q.collective, q.count, q.type, n);
  if (n == 1) {
    auto [srcBytes, dstBytes] = extents(q, n, elem, me);
    if (dstBytes && srcBytes && q.dst != q.src) {
      if (rt.gpu()) rt.gpu()->copyLocal(q.dst, q.src, dstBytes);
      else std::memmove(q.dst, q.src, dstBytes);
    }
    return;
  }
  if (state.gpuWorkspace) {
    coll::runOnGpu(rt, state, q, nullptr, api);
    return;
  }
  if (!state.workspace && !state.hierarchy) {
    throw Error(ErrorCode::Internal, "PE " + std::to_string(rt.myPe()) + ": " + api + " on team " + state.name +
                                         ": the team has no collective workspace");
  }
  // In-place forms name the same bytes through src; normalize them so the host copies see it.
  HostCopies copies(rt, state, q, extents(q, n, elem, me), me, api);
  coll::CallRecord record{};
  record.collective = static_cast<std::uint32_t>(q.collective);
  record.dtype = static_cast<std::uint32_t>(q.type);
  record.op = coll::reduces(q.collective) ? static_cast<std::uint32_t>(q.op) : 0;
  record.algo = static_cast<std::uint32_t>(plan.algo);
  record.root = coll::rooted(q.collective) ? q.root : -1;
  record.count = q.count;
  record.chunkBytes = rt.env().collBuffer;
  if (state.hierarchy) {
    // Puts in flight over the network complete first, as a barrier on one node sees them done.
    if (q.collective == Collective::Barrier) rt.quietAll();
    state.hierarchy->run(rt, q, record, api);
    copies.copyBack();
    return;
  }
  coll::ShmCall call(rt, state, *state.workspace, record, api);
  const coll::Buffers b{static_cast<const char*>(q.src), static_cast<char*>(q.dst), q.count, q.type, q.op, q.root, elem};
  try {
    switch (q.collective) {
      case Collective::Barrier: coll::runBarrier(call); break;
      case Collective::Broadcast: coll::runBroadcast(call, plan, b); break;
      case Collective::Reduce: coll::runReduce(call, plan, b); break;
      case Collective::Allreduce: coll::runAllreduce(call, plan, b); break;
      case Collective::Allgather: coll::runAllgather(call, plan, b); break;
      case Collective::ReduceScatter: coll::runReduceScatter(call, plan, b); break;
      case Collective::Alltoall: coll::runAlltoall(call, plan, b); break;
    }
    call.finish();
  } catch (const Error& e) {
    call.fail(std::string(errorCodeName(e.code())) + " in " + api);
    throw;
  }
  copies.copyBack();
}

void runOnStream(Request q, const Team& team, Stream stream, const char* api) {
  PeContext& rt = peContext(api);
  const detail::TeamState& state = detail::requireValidTeam(team, api);
  const int n = static_cast<int>(state.members.size());
  const int me = state.myIndex;
  checkRequest(rt, q, n, me, api);
  GpuBackend* gpu = rt.gpu();
  if (!gpu) {
    throw Error(ErrorCode::Unsupported, "PE " + std::to_string(rt.myPe()) + ": " + api +
                                            ": stream-ordered collectives need the GPU backend, which is off (" +
                                            rt.gpuUnavailableReason() + ")");
  }
  if (n == 1) {
    auto [srcBytes, dstBytes] = extents(q, n, dataTypeSize(q.type), me);
    if (srcBytes && dstBytes && q.src != q.dst) gpu->copyLocalOnStream(q.dst, q.src, dstBytes, stream);
    return;
  }
  if (!state.gpuWorkspace && state.hierarchy) {
    // Across nodes: the hierarchical host path, run by the stream's host worker when the stream
    // gets there (device buffers go through host copies, as in the blocking form). Calls on the
    // team keep the order in which the streams reach them.
    coll::requireDeviceBuffers(rt, *gpu, q, extents(q, n, dataTypeSize(q.type), me), api);
    gpu->enqueueHostWork(stream, [q, team, api] { run(q, team, api); },
                         std::string(api) + " on team " + state.name + " (across nodes)");
    return;
  }
  if (!state.gpuWorkspace) {
    throw Error(ErrorCode::Unsupported, "PE " + std::to_string(rt.myPe()) + ": " + api + " on team " + state.name +
                                            ": no GPU collective workspace (" +
                                            (state.gpuWhyNot.empty() ? std::string("its members do not all share a node")
                                                                     : state.gpuWhyNot) +
                                            "); use the blocking call, which takes the host path");
  }
  // runOnGpu takes a null stream for the blocking form (the workspace's own stream, waited for);
  // here null is the caller's legacy default stream, so name that one (CU_STREAM_LEGACY, also
  // cudaStreamLegacy) and keep the call ordered on it without blocking.
  coll::runOnGpu(rt, state, q, stream ? stream : reinterpret_cast<Stream>(std::uintptr_t{1}), api);
}

}  // namespace

void broadcastOnStream(const Team& team, const void* src, void* dst, std::size_t count, DataType type, int root,
                       Stream stream) {
  runOnStream({Collective::Broadcast, src, dst, count, type, ReduceOp::Sum, root}, team, stream, "broadcast_on_stream");
}
void reduceOnStream(const Team& team, const void* src, void* dst, std::size_t count, DataType type, ReduceOp op,
                    int root, Stream stream) {
  runOnStream({Collective::Reduce, src, dst, count, type, op, root}, team, stream, "reduce_on_stream");
}
void allreduceOnStream(const Team& team, const void* src, void* dst, std::size_t count, DataType type, ReduceOp op,
                       Stream stream) {
  runOnStream({Collective::Allreduce, src, dst, count, type, op, 0}, team, stream, "allreduce_on_stream");
}
void allgatherOnStream(const Team& team, const void* src, void* dst, std::size_t count, DataType type,
                       Stream stream) {
  runOnStream({Collective::Allgather, src, dst, count, type, ReduceOp::Sum, 0}, team, stream, "allgather_on_stream");
}
void reduceScatterOnStream(const Team& team, const void* src, void* dst, std::size_t count, DataType type,
                           ReduceOp op, Stream stream) {
  runOnStream({Collective::ReduceScatter, src, dst, count, type, op, 0}, team, stream, "reduce_scatter_on_stream");
}
void alltoallOnStream(const Team& team, const void* src, void* dst, std::size_t count, DataType type,
                      Stream stream) {
  runOnStream({Collective::Alltoall, src, dst, count, type, ReduceOp::Sum, 0}, team, stream, "alltoall_on_stream");
}

device::CollHandle deviceCollHandle(const Team& team) {
  PeContext& rt = peContext("device_coll_handle");
  const detail::TeamState& state = detail::requireValidTeam(team, "device_coll_handle");
  if (!state.gpuWorkspace && state.hierarchy && rt.gpu()) {
    // Across nodes no workspace maps every member: the device proxy runs each call as the host's
    // blocking collective on the team, one at a time (so one channel).
    device::CollHandle h{};
    h.size = static_cast<int>(state.members.size());
    h.myIndex = state.myIndex;
    h.myPe = rt.myPe();
    h.channels = 1;
    h.timeoutNs = rt.gpu()->deviceContext().timeoutNs;
    if (rt.gpu()->serveTeamCollectives(team, state.slot, h)) return h;
  }
  if (!state.gpuWorkspace) {
    throw Error(ErrorCode::Unsupported, "PE " + std::to_string(rt.myPe()) + ": device_coll_handle: team " + state.name +
                                            " has no GPU collective workspace (" +
                                            (!rt.gpu() ? "the GPU backend is off"
                                             : state.members.size() == 1 ? "a team of one PE needs none"
                                             : state.gpuWhyNot.empty() ? "its members do not all share a node"
                                                                       : state.gpuWhyNot) +
                                            ")");
  }
  coll::throwIfGpuFailed(rt, state, "device_coll_handle");
  return state.gpuWorkspace->handle();
}

void barrier(const Team& team) {
  run({Collective::Barrier, nullptr, nullptr, 0, DataType::Uint8, ReduceOp::Sum, 0}, team, "barrier");
}
void broadcast(const Team& team, const void* src, void* dst, std::size_t count, DataType type, int root) {
  run({Collective::Broadcast, src, dst, count, type, ReduceOp::Sum, root}, team, "broadcast");
}
void reduce(const Team& team, const void* src, void* dst, std::size_t count, DataType type, ReduceOp op, int root) {
  run({Collective::Reduce, src, dst, count, type, op, root}, team, "reduce");
}
void allreduce(const Team& team, const void* src, void* dst, std::size_t count, DataType type, ReduceOp op) {
  run({Collective::Allreduce, src, dst, count, type, op, 0}, team, "allreduce");
}
void allgather(const Team& team, const void* src, void* dst, std::size_t count, DataType type) {
  run({Collective::Allgather, src, dst, count, type, ReduceOp::Sum, 0}, team, "allgather");
}
void reduceScatter(const Team& team, const void* src, void* dst, std::size_t count, DataType type, ReduceOp op) {
  run({Collective::ReduceScatter, src, dst, count, type, op, 0}, team, "reduce_scatter");
}
void alltoall(const Team& team, const void* src, void* dst, std::size_t count, DataType type) {
  run({Collective::Alltoall, src, dst, count, type, ReduceOp::Sum, 0}, team, "alltoall");
}

Explanation explain(Collective c, const Team& team, std::size_t count, DataType type) {
  PeContext& rt = peContext("explain");
  const detail::TeamState& state = detail::requireValidTeam(team, "explain");
  if (static_cast<unsigned>(c) > static_cast<unsigned>(Collective::Alltoall)) {
    coll::badArgument(rt, "explain", "collective " + std::to_string(static_cast<int>(c)) + " is not an axon::Collective");
  }
  if (static_cast<unsigned>(type) > static_cast<unsigned>(DataType::Float64)) {
    coll::badArgument(rt, "explain", "data type " + std::to_string(static_cast<int>(type)) + " is not an axon::DataType");
  }
  const int n = static_cast<int>(state.members.size());
  const coll::Plan plan = planFor(rt, c, count, type, n);
  Explanation e{c, coll::algoName(plan.algo), "", plan.reason, plan.chunkElems * dataTypeSize(type), plan.rounds};
  if (n == 1) {
    e.path = "local";
  } else if (state.gpuWorkspace) {
    const coll::GpuPlan gp = coll::gpuPlanFor(rt, c, count, type, n, true);
    e.algorithm = coll::algoName(gp.algo);
    e.path = "gpu-p2p";
    e.reason = gp.reason + "; " + std::to_string(gp.channels) + " channel(s); host buffers are staged through "
               "device memory";
    e.chunkBytes = gp.chunkBytes;
    e.rounds = gp.rounds;
  } else if (state.hierarchy) {
    state.hierarchy->explain(rt, e, count, type);
  } else {
    e.path = "host-shm";
    if (rt.gpu()) {
      e.reason += "; GPU buffers are copied through host memory around the call (no GPU workspace: " +
                  state.gpuWhyNot + ")";
    }
  }
  return e;
}

std::string toString(const Explanation& e) {
  return std::string(collectiveName(e.collective)) + ": " + e.algorithm + " over " + e.path + ", " +
         std::to_string(e.rounds) + " rounds of up to " + std::to_string(e.chunkBytes) + " B; " + e.reason;
}

}  // namespace axon
