#include "coll/host_path.hpp"

#include "coll/host_staging.hpp"
#include "core/env.hpp"
#include "core/pe_context.hpp"
#include "gpu/gpu_backend.hpp"

namespace axon::coll {

Plan hostPlan(PeContext& rt, Collective c, std::size_t count, DataType type, int members) {
  return makePlan({c, count, dataTypeSize(type), members, rt.env().collBuffer, forcedAlgo(rt.env(), c)});
}

CallRecord callRecord(PeContext& rt, const Request& q, const Plan& plan) {
  CallRecord record{};
  record.collective = static_cast<std::uint32_t>(q.collective);
  record.dtype = static_cast<std::uint32_t>(q.type);
  record.op = reduces(q.collective) ? static_cast<std::uint32_t>(q.op) : 0;
  record.algo = static_cast<std::uint32_t>(plan.algo);
  record.root = rooted(q.collective) ? q.root : -1;
  record.count = q.count;
  record.chunkBytes = rt.env().collBuffer;
  return record;
}

HostCopies::HostCopies(PeContext& rt, HostStaging& staging, Request& q, std::pair<std::size_t, std::size_t> bytes,
                       int me, const std::string& team, const char* api)
    : rt_(rt), q_(q) {
  GpuBackend* gpu = rt.gpu();
  if (!gpu) return;
  const bool deviceSrc = bytes.first && gpu->isDeviceMemory(q.src);
  const bool deviceDst = bytes.second && gpu->isDeviceMemory(q.dst);
  if (!deviceSrc && !deviceDst) return;
  held_ = staging.lock();
  const std::string who = "PE " + std::to_string(rt.myPe()) + ": " + api + " on team " + team;
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

void HostCopies::copyBack() {
  if (userDst_) rt_.gpu()->copyLocal(userDst_, q_.dst, dstBytes_);
}

}  // namespace axon::coll
