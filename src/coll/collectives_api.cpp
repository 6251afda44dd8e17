// The public collective calls: the arguments are checked here, then the team's path
// (coll/team_collectives.hpp) runs, enqueues or explains the call.
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "axon/collectives.hpp"
#include "axon/error.hpp"
#include "coll/host_path.hpp"
#include "coll/request.hpp"
#include "coll/team_collectives.hpp"
#include "core/pe_context.hpp"
#include "core/team_state.hpp"

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
using coll::Request;

void run(Request q, const Team& team, const char* api) {
  PeContext& rt = peContext(api);
  const detail::TeamState& state = detail::requireValidTeam(team, api);
  checkRequest(rt, q, static_cast<int>(state.members.size()), state.myIndex, api);
  // A copy of a handle whose team was destroyed has no path left.
  if (!state.collectives) {
    throw Error(ErrorCode::Internal, "PE " + std::to_string(rt.myPe()) + ": " + api + " on team " + state.name +
                                         ": the team has no collective workspace");
  }
  state.collectives->run(q, api);
}

void runOnStream(Request q, const Team& team, Stream stream, const char* api) {
  PeContext& rt = peContext(api);
  const detail::TeamState& state = detail::requireValidTeam(team, api);
  checkRequest(rt, q, static_cast<int>(state.members.size()), state.myIndex, api);
  if (!rt.gpu()) {
    throw Error(ErrorCode::Unsupported, "PE " + std::to_string(rt.myPe()) + ": " + api +
                                            ": stream-ordered collectives need the GPU backend, which is off (" +
                                            rt.gpuUnavailableReason() + ")");
  }
  if (!state.collectives) coll::noGpuWorkspace(rt, state, api);
  state.collectives->enqueue(team, q, stream, api);
}

}  // namespace

namespace coll {
void runOnTeam(const Team& team, Request q, const char* api) { run(q, team, api); }
}  // namespace coll

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
  if (!state.collectives) coll::noDeviceHandle(rt, state);
  return state.collectives->deviceHandle(team);
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
  // The host path's plan; the team's path names itself and may put its own plan in its place.
  const coll::Plan plan = coll::hostPlan(rt, c, count, type, static_cast<int>(state.members.size()));
  Explanation e{};
  e.collective = c;
  e.algorithm = coll::algoName(plan.algo);
  e.reason = plan.reason;
  e.chunkBytes = plan.chunkElems * dataTypeSize(type);
  e.rounds = plan.rounds;
  if (state.collectives) state.collectives->explain(e, count, type);
  else coll::explainHostShm(rt, state, e);  // a copy of a destroyed team's handle
  return e;
}

std::string toString(const Explanation& e) {
  std::string s = std::string(collectiveName(e.collective)) + ": " + e.algorithm + " over " + e.path + ", " +
                  std::to_string(e.rounds) + " rounds of up to " + std::to_string(e.chunkBytes) + " B; " + e.reason;
  if (e.blocks > 0) s += "; " + smUseText(e);
  return s;
}

std::string smUseText(const Explanation& e) {
  if (e.blocks <= 0) return "no kernel";
  char sms[32];
  std::snprintf(sms, sizeof sms, "%.3g", e.sms);
  std::string s = std::to_string(e.blocks) + " block(s) of " + std::to_string(e.threadsPerBlock) + " threads";
  if (e.blocksPerSm > 0) s += ", " + std::to_string(e.blocksPerSm) + " to an SM: " + sms + " SM(s)";
  if (e.deviceSms > 0) s += " of the GPU's " + std::to_string(e.deviceSms);
  return s;
}

}  // namespace axon
