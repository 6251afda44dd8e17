// The public GPU API: device choice, the device context, and stream-ordered one-sided calls.
// Validation is the blocking calls'; the GPU backend enqueues.
#include <string>

#include "axon/error.hpp"
#include "axon/gpu.hpp"
#include "core/pe_context.hpp"
#include "core/team_state.hpp"
#include "onesided/arg_checks.hpp"
#include "gpu/gpu_backend.hpp"

namespace axon {
namespace {

GpuBackend& requireGpu(PeContext& rt, const char* api) {
  if (GpuBackend* g = rt.gpu()) return *g;
  throw Error(ErrorCode::Unsupported, std::string("axon: ") + api + " needs the GPU backend, which is off: " +
                                          rt.gpuUnavailableReason());
}

// A signal for stream-ordered use: in the GPU heap (kernels update it with GPU atomics, which
// are not atomic with the host's on host memory), 8-byte aligned.
RemoteRef resolveGpuSignal(PeContext& rt, const std::uint64_t* sig, int pe, const char* api) {
  RemoteRef ref = resolveSignal(rt, sig, pe, api);
  if (ref.heap != HeapKind::Gpu) {
    throw Error(ErrorCode::InvalidArgument, std::string("axon: ") + api + ": sig " + rt.describe(sig) +
                                                " is in the host heap; signals used on streams must be "
                                                "in the GPU heap (axon::malloc)");
  }
  return ref;
}

device::Team toDeviceTeam(const detail::TeamState& s, const char* api) {
  device::Team t{};
  t.start = s.members.empty() ? 0 : s.members[0];
  t.stride = s.members.size() > 1 ? s.members[1] - s.members[0] : 1;
  t.size = static_cast<int>(s.members.size());
  t.slot = s.slot;
  t.myIndex = s.myIndex;
  for (std::size_t i = 0; i < s.members.size(); ++i) {
    if (s.members[i] == t.start + static_cast<int>(i) * t.stride) continue;
    // Any grouping: kernels read the members from the table in the team's GPU workspace.
    if (s.deviceMembers) {
      t.members = s.deviceMembers;
      break;
    }
    throw Error(ErrorCode::Unsupported, std::string("axon: ") + api + ": team " + s.name +
                                            " is not a strided range of PEs and has no GPU workspace to hold its "
                                            "member table (" +
                                            (s.gpuWhyNot.empty() ? std::string("its members do not all share a node")
                                                                 : s.gpuWhyNot) +
                                            ")");
  }
  return t;
}

const detail::TeamState& teamState(const Team& team, const char* api) {
  if (!team.state()) {
    throw Error(ErrorCode::InvalidArgument, std::string("axon: ") + api + ": the team is invalid (destroyed?)");
  }
  return *team.state();
}

}  // namespace

bool gpuEnabled() { return peContext("gpu_enabled").gpu() != nullptr; }

int gpuDevice() {
  PeContext& rt = peContext("gpu_device");
  return requireGpu(rt, "gpu_device").deviceOrdinal();
}

const char* gpuUnavailableReason() { return peContext("gpu_unavailable_reason").gpuUnavailableReason().c_str(); }

device::Context deviceContext() {
  PeContext& rt = peContext("device_context");
  return requireGpu(rt, "device_context").deviceContext();
}

device::Team deviceTeam(const Team& team) {
  peContext("device_team");
  return toDeviceTeam(teamState(team, "device_team"), "device_team");
}

bool gpuPeerReachable(int pe) {
  PeContext& rt = peContext("gpu_peer_reachable");
  rt.checkPe(pe, "gpu_peer_reachable");
  return requireGpu(rt, "gpu_peer_reachable").peerReachable(pe);
}

void putOnStream(void* dest, const void* src, std::size_t bytes, int pe, Stream stream) {
  PeContext& rt = peContext("put_on_stream");
  GpuBackend& gpu = requireGpu(rt, "put_on_stream");
  RemoteRef ref = rt.resolve(dest, bytes, pe, "put_on_stream", "dest");
  checkLocal(src, bytes, "put_on_stream", "src");
  if (bytes > 0) rt.streamTransportFor(ref, "put_on_stream").putOnStream(ref, src, bytes, stream, gpu);
}

void getOnStream(void* dest, const void* src, std::size_t bytes, int pe, Stream stream) {
  PeContext& rt = peContext("get_on_stream");
  GpuBackend& gpu = requireGpu(rt, "get_on_stream");
  RemoteRef ref = rt.resolve(src, bytes, pe, "get_on_stream", "src");
  checkLocal(dest, bytes, "get_on_stream", "dest");
  if (bytes > 0) rt.streamTransportFor(ref, "get_on_stream").getOnStream(dest, ref, bytes, stream, gpu);
}

void putSignalOnStream(void* dest, const void* src, std::size_t bytes, std::uint64_t* sig, std::uint64_t value,
                       SignalOp op, int pe, Stream stream) {
  PeContext& rt = peContext("put_signal_on_stream");
  GpuBackend& gpu = requireGpu(rt, "put_signal_on_stream");
  checkSignalOp(op, "put_signal_on_stream");
  RemoteRef data = rt.resolve(dest, bytes, pe, "put_signal_on_stream", "dest");
  RemoteRef flag = resolveGpuSignal(rt, sig, pe, "put_signal_on_stream");
  checkLocal(src, bytes, "put_signal_on_stream", "src");
  if (bytes > 0) rt.streamTransportFor(data, "put_signal_on_stream").putOnStream(data, src, bytes, stream, gpu);
  rt.streamTransportFor(flag, "put_signal_on_stream").signalOnStream(flag, value, op, stream, gpu);
}

void signalOpOnStream(std::uint64_t* sig, std::uint64_t value, SignalOp op, int pe, Stream stream) {
  PeContext& rt = peContext("signal_op_on_stream");
  GpuBackend& gpu = requireGpu(rt, "signal_op_on_stream");
  checkSignalOp(op, "signal_op_on_stream");
  const RemoteRef ref = resolveGpuSignal(rt, sig, pe, "signal_op_on_stream");
  rt.streamTransportFor(ref, "signal_op_on_stream").signalOnStream(ref, value, op, stream, gpu);
}

void signalWaitUntilOnStream(std::uint64_t* sig, Cmp cmp, std::uint64_t value, Stream stream) {
  PeContext& rt = peContext("signal_wait_until_on_stream");
  GpuBackend& gpu = requireGpu(rt, "signal_wait_until_on_stream");
  checkCmp(cmp, "signal_wait_until_on_stream");
  resolveGpuSignal(rt, sig, rt.myPe(), "signal_wait_until_on_stream");
  gpu.waitOnStream(sig, cmp, value, stream);
}

void quietOnStream(Stream stream) {
  PeContext& rt = peContext("quiet_on_stream");
  requireGpu(rt, "quiet_on_stream");
  rt.quietOnStream(stream);
}

void barrierOnStream(const Team& team, Stream stream) {
  PeContext& rt = peContext("barrier_on_stream");
  GpuBackend& gpu = requireGpu(rt, "barrier_on_stream");
  const auto& s = teamState(team, "barrier_on_stream");
  device::Team t = toDeviceTeam(s, "barrier_on_stream");
  for (int member : s.members) {
    if (!gpu.deviceReaches(member)) {
      throw Error(ErrorCode::Unsupported, "axon: barrier_on_stream: PE " + std::to_string(member) + " of team " +
                                              s.name + " is not reachable from this GPU (" +
                                              gpu.unreachableReason(member) + ")");
    }
  }
  gpu.barrierOnStream(t, stream);
}

void barrierAllOnStream(Stream stream) {
  peContext("barrier_all_on_stream");  // before init or after finalize: the error names this call
  barrierOnStream(Team::world(), stream);
}

void streamSynchronize(Stream stream) {
  PeContext& rt = peContext("stream_synchronize");
  requireGpu(rt, "stream_synchronize").synchronizeStream(stream);
}

}  // namespace axon
