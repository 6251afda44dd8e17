// The gets of a staging-space client (client_gets.hpp): queries, then the reassembly.
#include "space/client_gets.hpp"

#include <algorithm>
#include <map>

#include "axon/error.hpp"
#include "space/assembly.hpp"
#include "space/client_batches.hpp"
#include "space/client_catalog.hpp"
#include "space/client_connection.hpp"
#include "space/client_requests.hpp"
#include "space/client_stats.hpp"
#include "space/gpu_side.hpp"
#include "space/placement.hpp"

namespace axon::space {

using protocol::Op;

namespace {

std::string listBoxes(const std::vector<Box>& boxes) {
  std::string out;
  const std::size_t shown = std::min<std::size_t>(boxes.size(), 16);
  for (std::size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + describe(boxes[i]);
  if (boxes.size() > shown) out += " and " + std::to_string(boxes.size() - shown) + " more";
  return out;
}

}  // namespace

std::shared_ptr<Request::State> Gets::iget(const std::string& name, std::int64_t version, const Index& lo,
                                           const Index& hi, void* out, std::size_t outBytes, double timeoutSec,
                                           bool blocking) {
  checkVersion(version, "get of '" + name + "'");
  const Variable v = parts_.catalog.variable(name);
  const Box box = Box::of(lo, hi);
  const std::string what = "get of '" + name + "' version " + std::to_string(version) + " box " + describe(box);
  checkBoxInShape(box, v.shape, what);
  const std::size_t elem = dataTypeSize(v.dtype);
  const std::uint64_t need = static_cast<std::uint64_t>(byteSize(box, elem));
  if (!out) throw Error(ErrorCode::InvalidArgument, what + ": the output pointer is null");
  if (outBytes < need) {
    throw Error(ErrorCode::InvalidArgument, what + ": the output buffer holds " + std::to_string(outBytes) +
                                                " bytes; the box of " + dataTypeName(v.dtype) + " needs " +
                                                std::to_string(need));
  }
  parts_.batches.flush();  // a get after puts of this client sees them
  auto state = parts_.requests.begin(what, timeoutSec);
  const bool device = parts_.gpu && parts_.gpu->isDevice(out);
  // One query per server, for its parts of the box.
  const Placement placement(v.shape, parts_.conn.servers());
  std::map<int, std::vector<Box>> parts;
  for (const auto& [s, part] : placement.split(box)) parts[s].push_back(part);
  auto queries = std::make_shared<Queries>();
  for (auto& [s, boxes] : parts) {
    wire::ByteWriter w = protocol::begin(Op::Query, 0);
    w.str(name).i64(version).u32(static_cast<std::uint32_t>(boxes.size()));
    for (const Box& b : boxes) protocol::writeBox(w, b);
    w.u64(millisUntil(state->deadline));
    auto c = parts_.conn.issue(s, Op::Query, w);
    state->calls.push_back(c);
    queries->emplace_back(s, c);
  }
  if (device && (parts_.gpuPath == GpuPath::HostStaged || need < kSharedMemoryMin)) {
    // The baseline: the box assembled in host memory, then copied to the GPU in one piece.
    // Small boxes take this way on every path: one copy, no kernel.
    const bool baseline = parts_.gpuPath == GpuPath::HostStaged;
    state->finish = [this, state = state.get(), queries, box, elem, out, need, baseline] {
      state->ownedCopy.resize(need);
      assemble(*state, *queries, box, elem, reinterpret_cast<unsigned char*>(state->ownedCopy.data()), false);
      parts_.gpu->copy(out, state->ownedCopy.data(), need);
      if (baseline) parts_.stats.bump(&ClientStats::hostStagedCopies);
    };
  } else {
    state->finish = [this, state = state.get(), queries, box, elem, out, device] {
      assemble(*state, *queries, box, elem, static_cast<unsigned char*>(out), device);
    };
  }
  return parts_.requests.handOver(std::move(state), blocking);
}

void Gets::assemble(Request::State& st, const Queries& queries, const Box& box, std::size_t elem, unsigned char* out,
                    bool device) {
  // The answers: each server's fragments, or what it is missing, or its failure.
  std::vector<FragmentSource> sources;
  std::vector<Box> missing;
  const Call* failed = nullptr;
  for (const auto& [s, c] : queries) {
    wire::ByteReader r(c->reply);
    if (c->status == static_cast<int>(ErrorCode::Incomplete)) {
      const std::uint32_t n = r.count(17);
      for (std::uint32_t i = 0; i < n; ++i) missing.push_back(protocol::readBox(r));
      continue;
    }
    if (c->status != 0) {
      if (!failed) failed = c.get();
      continue;
    }
    FragmentSource src{s, r.u64(), parts_.conn.arena(s) != nullptr, {}};
    const std::uint32_t n = r.count(17);
    for (std::uint32_t i = 0; i < n; ++i) {
      Fragment f;
      f.piece = protocol::readBox(r);
      f.offset = r.u64();
      f.rangeStart = r.u64();
      f.rangeBytes = r.u64();
      src.fragments.push_back(f);
    }
    sources.push_back(std::move(src));
  }
  // Leases not yet handed to a Fetch are ended (Done) however this get ends, so that a failed
  // get (another server's part missing, a fetch failing) never leaves a version pinned.
  std::vector<std::pair<int, std::uint64_t>> openLeases;
  for (const FragmentSource& src : sources) {
    if (src.lease) openLeases.emplace_back(src.server, src.lease);
  }
  struct EndLeases {
    Connection& conn;
    std::vector<std::pair<int, std::uint64_t>>& leases;
    ~EndLeases() {
      for (auto [s, lease] : leases) conn.sendDone(s, lease);
    }
  } endLeases{parts_.conn, openLeases};
  if (failed) parts_.conn.check(*failed);
  if (!missing.empty()) {
    throw Error(ErrorCode::Incomplete, st.what + ": not fully written within the timeout; missing " +
                                           std::to_string(missing.size()) + " box(es): " + listBoxes(missing));
  }
  const AssemblyPlan plan = planAssembly(sources, box, elem, device);
  // Where fragments that are not read in place land: device staging for a GPU destination,
  // host staging for fragments that come over UCX to a host destination.
  // Owned through shared pointers that the fetch calls hold too: UCX may still be landing a
  // fragment when this get fails and unwinds.
  // Fragments from UCX for a GPU destination land in pinned host memory first (GpuPath::Direct),
  // then go up with the mapped ones: UCX's host path, and DMAs, beat UCX's own GPU staging.
  std::shared_ptr<void> stagingOwner;
  unsigned char* staging = nullptr;
  unsigned char* pinnedLanding = nullptr;
  if (plan.stagingBytes) {
    if (device) {
      std::shared_ptr<StagingBuffer> d = parts_.gpu->staging(plan.stagingBytes);
      staging = d->data();
      stagingOwner = d;
      const bool anyUcx =
          std::any_of(sources.begin(), sources.end(), [](const FragmentSource& src) { return !src.mapped; });
      if (anyUcx && parts_.gpuPath == GpuPath::Direct) {
        std::shared_ptr<StagingBuffer> h = parts_.gpu->pinnedStaging(plan.stagingBytes);
        pinnedLanding = h->data();
        stagingOwner = std::make_shared<std::pair<std::shared_ptr<StagingBuffer>, std::shared_ptr<StagingBuffer>>>(d, h);
      }
    } else {
      auto h = std::make_shared<std::vector<unsigned char>>(plan.stagingBytes);
      staging = h->data();
      stagingOwner = h;
    }
  }
  // The plan in pointers: the copies, the uploads to device staging, and a fetch per server that
  // UCX carries.
  std::vector<HostRegionCopy> hostCopies;
  std::vector<kernels::RegionCopy> deviceCopies;
  std::vector<GpuSide::Span> uploads;
  std::vector<std::pair<int, std::shared_ptr<Call>>> fetches;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const FragmentSource& src = sources[i];
    ArenaView* arena = parts_.conn.arena(src.server);
    auto fetch = std::make_shared<Call>();
    for (std::size_t j = 0; j < src.fragments.size(); ++j) {
      const Fragment& f = src.fragments[j];
      const FragmentPlan& p = plan.sources[i][j];
      if (!p.staged) {
        hostCopies.push_back({p.region, arena->at(f.offset, f.rangeStart + f.rangeBytes), out});
        continue;
      }
      unsigned char* landing = staging + p.at;
      // The piece's (virtual) start in staging: its needed bytes begin at rangeStart.
      const std::uint64_t pieceBase = reinterpret_cast<std::uint64_t>(landing) - f.rangeStart;
      if (src.mapped) {
        uploads.push_back({landing, arena->at(f.offset, f.rangeStart + f.rangeBytes) + f.rangeStart, f.rangeBytes});
      } else if (pinnedLanding) {
        fetch->landing.push_back(pinnedLanding + p.at);
        uploads.push_back({landing, pinnedLanding + p.at, f.rangeBytes});
      } else {
        fetch->landing.push_back(landing);
      }
      if (device) {
        kernels::RegionCopy rc;
        rc.region = p.region;
        rc.src = pieceBase;
        rc.dst = reinterpret_cast<std::uint64_t>(out);
        deviceCopies.push_back(rc);
      } else {
        hostCopies.push_back({p.region, reinterpret_cast<const void*>(pieceBase), out});
      }
    }
    if (!src.lease) continue;
    if (src.mapped) continue;  // Done after the copies
    wire::ByteWriter w = protocol::begin(Op::Fetch, 0);
    w.u64(src.lease);
    fetch->memory = device && !pinnedLanding ? rpc::Memory::Cuda : rpc::Memory::Host;
    fetch->landingOwner = stagingOwner;
    openLeases.erase(std::remove(openLeases.begin(), openLeases.end(), std::make_pair(src.server, src.lease)),
                     openLeases.end());  // the server ends it once sent
    fetches.emplace_back(src.server, parts_.conn.issueCall(src.server, Op::Fetch, w.bytes(), fetch));
  }
  for (auto& [s, c] : fetches) parts_.conn.await(c, st.deadline + Connection::grace(), st.what);
  if (!uploads.empty()) parts_.gpu->copyAll(uploads);
  int threads = 0;
  if (!hostCopies.empty()) threads = copyRegions(hostCopies, 0);
  if (!deviceCopies.empty()) parts_.gpu->reassemble(std::move(deviceCopies));
  bool anyShared = false, anyUcx = false;
  for (const FragmentSource& src : sources) (src.mapped ? anyShared : anyUcx) = true;
  parts_.stats.update([&](ClientStats& c) {
    c.gets += 1;
    c.bytesGot += static_cast<std::uint64_t>(byteSize(box, elem));
    c.fragments += plan.fragments;
    if (device) ++c.fusedKernels;
    if (threads) c.hostCopyThreads = static_cast<std::uint64_t>(threads);
    if (anyShared) ++c.sharedMemoryGets;
    if (anyUcx) ++c.ucxGets;
    c.lastPath = std::string(anyShared ? "from the server's mapped memory" : "by UCX") +
                 (pinnedLanding ? " into pinned host memory" : "") +
                 (device ? " into device staging, then one fused kernel" : ", then host copy threads");
  });
}

}  // namespace axon::space
