#include "coll/gpu_path.hpp"

#include <algorithm>
#include <cstdio>

#include "axon/error.hpp"
#include "coll/describe_call.hpp"
#include "coll/gpu_call_order.hpp"
#include "coll/protocol.hpp"
#include "core/log.hpp"
#include "core/pe_context.hpp"
#include "core/team_state.hpp"
#include "core/wait.hpp"
#include "gpu/gpu_backend.hpp"

namespace axon::coll {
std::string describeGpuCall(const device::CollRecord& r) {
  if (r.collective == static_cast<unsigned>(Collective::Barrier) && r.op >= static_cast<unsigned>(SyncKind::TeamBarrier)) {
    CallRecord sync{};
    sync.collective = r.op;  // a team synchronization (runOnGpu's syncKind)
    sync.op = r.dtype;       // which team barrier (gpu_call_order.cpp's records)
    return coll::describeCall(sync);
  }
  const auto c = static_cast<Collective>(r.collective);
  const char* proto = r.proto == static_cast<unsigned>(device::CollProto::LL)       ? " LL"
                      : r.proto == static_cast<unsigned>(device::CollProto::Direct) ? " direct"
                                                                                    : "";
  const std::string channels = r.channels == 0 ? "device-callable" : std::to_string(r.channels) + " channel(s)";
  return coll::describeCall(CallDescription{c, r.count, static_cast<DataType>(r.dtype), static_cast<ReduceOp>(r.op),
                                            r.root, algoName(static_cast<Algo>(r.algo)) + std::string(proto), channels});
}

namespace {

std::string hex(unsigned long long v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%llx", v);
  return buf;
}

// Staging of host buffers for a blocking call: the device kernels cannot read pageable memory.
// Overlapping src and dst (the in-place forms) share one staging buffer, keeping their offsets.
class DeviceBuffers {
 public:
  DeviceBuffers(GpuBackend& gpu, GpuTeamWorkspace& ws, Request& q, std::pair<std::size_t, std::size_t> bytes)
      : ws_(ws) {
    const bool srcHost = bytes.first && !gpu.isDeviceMemory(q.src);
    const bool dstHost = bytes.second && !gpu.isDeviceMemory(q.dst);
    const char* s = static_cast<const char*>(q.src);
    char* d = static_cast<char*>(q.dst);
    if (srcHost && dstHost && s < d + bytes.second && d < s + bytes.first) {
      const char* lo = std::min<const char*>(s, d);
      const char* hi = std::max(s + bytes.first, static_cast<const char*>(d) + bytes.second);
      char* dev = static_cast<char*>(ws.scratch(0, hi - lo));
      ws.copy(dev, lo, hi - lo);
      q.src = dev + (s - lo);
      q.dst = dev + (d - lo);
      back_ = {d, dev + (d - lo), bytes.second};
      return;
    }
    if (srcHost) {
      char* dev = static_cast<char*>(ws.scratch(0, bytes.first));
      ws.copy(dev, s, bytes.first);
      q.src = dev;
    }
    if (dstHost) {
      char* dev = static_cast<char*>(ws.scratch(1, bytes.second));
      ws.copy(dev, d, bytes.second);  // bytes the call leaves alone stay as they were
      q.dst = dev;
      back_ = {d, dev, bytes.second};
    }
  }
  void copyBack() {
    if (back_.user) ws_.copy(back_.user, back_.staged, back_.bytes);
  }

 private:
  GpuTeamWorkspace& ws_;
  struct {
    void* user = nullptr;
    const void* staged = nullptr;
    std::size_t bytes = 0;
  } back_;
};

// A Direct call's proposal: where src and dst are on the symmetric heap, if every member's heap
// has them mapped here. The kernels compare every member's proposal and go direct only when the
// offsets the collective needs agree (device::detail::collDirectAgrees); checkRequest already
// refused every overlap of src and dst but the in-place forms, which the Direct kernels handle.
// A team with a member table proposes nothing: its members' heap slots are not evenly spaced,
// which the Direct kernels assume, so its calls take the Simple protocol.
void proposeOffsets(const GpuBackend& gpu, const detail::TeamState& team, const GpuTeamWorkspace& ws,
                    const Request& q, std::pair<std::size_t, std::size_t> bytes, kernels::CollLaunch& launch) {
  if (ws.handle().members) return;
  if (bytes.first) launch.srcOffset = gpu.symmetricOffset(q.src, bytes.first, team.members);
  if (bytes.second) launch.dstOffset = gpu.symmetricOffset(q.dst, bytes.second, team.members);
}

}  // namespace

GpuPlan gpuPlanFor(PeContext& rt, Collective c, std::size_t count, DataType type, int members, bool withReason) {
  return makeGpuPlan({c, count, dataTypeSize(type), members, rt.env().collGpuChannels, rt.env().collGpuChunk,
                      rt.env().collGpuLlMax, rt.env().collGpuLlChunk, forcedAlgo(rt.env(), c), withReason,
                      rt.env().collGpuDirect, rt.env().collGpuPushMin, rt.env().collGpuChainMin});
}

std::string describeGpuMismatch(const device::CollError& e) {
  const auto teamBarrier = [](const device::CollRecord& r) {
    return r.collective == static_cast<unsigned>(Collective::Barrier) && r.op == static_cast<unsigned>(SyncKind::TeamBarrier);
  };
  const std::string pe = "PE " + std::to_string(e.pe), peer = "PE " + std::to_string(e.peer);
  if (!teamBarrier(e.mine)) {
    return "mismatched collective calls: " + pe + " called " + describeGpuCall(e.mine) + " but " + peer + " called " +
           describeGpuCall(e.theirs);
  }
  // A team barrier's check (gpu_call_order.cpp): expected and seen are the GPU collectives each
  // PE's host had issued on the team.
  const std::string at = pe + " called " + describeGpuCall(e.mine) + " after " + std::to_string(e.expected) +
                         " GPU collective call(s) on the team, but " + peer;
  if (teamBarrier(e.theirs)) {
    return "mismatched collective calls: " + at + " entered it after " + std::to_string(e.seen) +
           " (the members' calls before the barrier differ)";
  }
  return "mismatched collective calls: " + at + " called " + describeGpuCall(e.theirs) + " instead (its GPU collective call " +
         std::to_string(e.seen) + ")";
}

unsigned long long timeoutNsOf(PeContext& rt, const detail::TeamState& team) {
  // At least 1 ns: 0 would tell the kernels to wait forever.
  return std::max(1ull, static_cast<unsigned long long>(waitBound(rt, team.ownTimeout()) * 1e9));
}

void throwIfGpuFailed(PeContext& rt, const detail::TeamState& team, const GpuTeamWorkspace& ws, const char* api) {
  const device::CollError* e = ws.error();
  if (!e) return;
  const std::string me = "PE " + std::to_string(rt.myPe()) + ": " + api + " on team " + team.name + ": ";
  const std::string by = e->pe == rt.myPe() ? "" : "the team's GPU collectives were stopped by PE " + std::to_string(e->pe) + ", which reported: ";
  std::string what;
  ErrorCode code = ErrorCode::CollectiveMismatch;
  if (e->code == static_cast<int>(device::CollErrorCode::Timeout)) {
    code = ErrorCode::Timeout;
    what = "PE " + std::to_string(e->pe) + "'s " + describeGpuCall(e->mine) + " waited past " +
           waitBoundName(team.ownTimeout()) + " (" +
           secondsText(waitBound(rt, team.ownTimeout())) + ") for PE " + std::to_string(e->peer) + " on channel " +
           std::to_string(e->channel) + ": " +
           (e->mine.proto == static_cast<unsigned>(device::CollProto::LL)
                ? "LL flag at " + hex(e->address) + " expected " + std::to_string(e->expected)
                : "ready word at " + hex(e->address) + " expected >= " + std::to_string(e->expected)) +
           ", seen " + std::to_string(e->seen);
  } else {
    what = describeGpuMismatch(*e);
  }
  throw Error(code, me + by + what + ". The team's collectives are stopped: destroy the team and split a new one");
}

void requireDeviceBuffers(PeContext& rt, const GpuBackend& gpu, const Request& q,
                          std::pair<std::size_t, std::size_t> bytes, const char* api) {
  if (bytes.first && !gpu.isDeviceMemory(q.src)) {
    badArgument(rt, api, "src " + rt.describe(q.src) + " is not GPU memory; stream-ordered collectives take device buffers");
  }
  if (bytes.second && !gpu.isDeviceMemory(q.dst)) {
    badArgument(rt, api, "dst " + rt.describe(q.dst) + " is not GPU memory; stream-ordered collectives take device buffers");
  }
}

void runOnGpu(PeContext& rt, const detail::TeamState& team, GpuTeamWorkspace& ws, Request q, void* stream,
              const char* api, unsigned syncKind) {
  GpuBackend& gpu = *rt.gpu();
  throwIfGpuFailed(rt, team, ws, api);
  ws.setTimeoutNs(timeoutNsOf(rt, team));
  const int n = static_cast<int>(team.members.size());
  const std::size_t elem = dataTypeSize(q.type);
  const auto bytes = extents(q, n, elem, team.myIndex);
  if (stream) requireDeviceBuffers(rt, gpu, q, bytes, api);
  const GpuPlan plan = gpuPlanFor(rt, q.collective, q.count, q.type, n);
  kernels::CollLaunch launch{};
  launch.record.collective = static_cast<unsigned>(q.collective);
  launch.record.dtype = q.collective == Collective::Barrier ? 0 : static_cast<unsigned>(q.type);
  launch.record.op = reduces(q.collective) ? static_cast<unsigned>(q.op) : syncKind;
  launch.record.algo = static_cast<unsigned>(plan.algo);
  launch.record.root = rooted(q.collective) ? q.root : -1;
  launch.record.channels = static_cast<unsigned>(plan.channels);
  launch.record.proto = static_cast<unsigned>(plan.ll       ? device::CollProto::LL
                                              : plan.direct ? device::CollProto::Direct
                                                            : device::CollProto::Simple);
  launch.record.count = q.count;
  launch.block = reduces(q.collective) ? q.count : q.count * elem;
  launch.threads = plan.threads;
  launch.overlapLaunch = rt.env().collGpuPdl;
  // Logged before the launch, so that a member at a team barrier sees the call even while it
  // blocks this PE (gpu_call_order.hpp); a launch that fails was never issued.
  const auto issue = [&](auto&& launchIt) {
    logGpuCall(rt, team, launch.record);
    try {
      launchIt();
    } catch (const Error& e) {
      if (e.code() == ErrorCode::Cuda) unlogGpuCall(rt, team);
      throw;
    }
  };
  if (stream) {
    launch.src = q.src;
    launch.dst = q.dst;
    if (plan.direct) proposeOffsets(gpu, team, ws, q, bytes, launch);
    issue([&] { ws.enqueue(launch, stream); });
    return;
  }
  DeviceBuffers staged(gpu, ws, q, bytes);
  launch.src = q.src;
  launch.dst = q.dst;
  if (plan.direct) proposeOffsets(gpu, team, ws, q, bytes, launch);
  issue([&] { ws.run(launch); });
  throwIfGpuFailed(rt, team, ws, api);
  staged.copyBack();
}

}  // namespace axon::coll
