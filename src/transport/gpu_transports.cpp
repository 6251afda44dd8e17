#include "transport/gpu_transports.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "axon/error.hpp"
#include "bootstrap/blob.hpp"
#include "bootstrap/bootstrap.hpp"
#include "bootstrap/setup_step.hpp"
#include "core/env.hpp"
#include "core/log.hpp"
#include "core/pe_context.hpp"
#include "gpu/cuda_resources.hpp"
#include "gpu/gpu_backend.hpp"
#include "memory/peer_growth.hpp"
#include "memory/symmetric_heap.hpp"
#include "transport/cuda_ipc/cuda_ipc_transport.hpp"
#include "transport/staged/stage_proxy.hpp"
#include "transport/staged/staged_transport.hpp"

namespace axon {
namespace {

// When any PE's GPU cannot map some node-local peer's GPU heap, every PE sets up the staged path:
// one channel per sender in its host heap (the same allocation on every PE) and a proxy serving
// it, which the PE's progress engine polls.
void startStagedPath(const GpuTransportSetup& setup, const gpu::CudaResources& r, GpuTransports& out) {
  PeContext& rt = setup.pe;
  Bootstrap& boot = rt.bootstrap();
  const int me = rt.myPe(), n = rt.nPes();
  bool missing = false;
  for (int p = 0; p < n; ++p) missing |= rt.nodeLocal()[p] && !r.heap->reachable(p);
  SetupStep vote(boot, "gpu-reach", boot.worldRanks(), "the choice of the staged path");
  auto votes = vote.finish(wire::wordBlob(missing ? 1 : 0));
  bool any = false;
  for (int p = 0; p < n; ++p) any |= wire::readWordBlob(votes[p], vote.originOf(p)) != 0;
  if (!any) return;
  const std::size_t chunk = std::max<std::size_t>(64u << 10, rt.env().stageChunk / 4096 * 4096);
  const std::size_t perSender = staged::channelBytes(chunk);
  SymmetricHeap& host = setup.hostHeap;
  SetupStep grow(boot, "stage-heap", boot.worldRanks(), "the staged path's channels");
  std::optional<std::size_t> offset;
  std::size_t total = 0;
  try {
    if (__builtin_mul_overflow(perSender, static_cast<std::size_t>(n), &total)) total = SIZE_MAX;
    offset = host.allocator().allocate(total, 4096);
    if (!offset) {
      throw Error(ErrorCode::OutOfMemory, "PE " + std::to_string(me) + ": the staged path needs " +
                                              std::to_string(total) + " bytes of host heap (AXON_STAGE_CHUNK x " +
                                              std::to_string(staged::kStageSlots) +
                                              " slots x PEs; raise AXON_HEAP_MAX)");
    }
    host.growLocal(*offset + total);
  } catch (const Error& e) {
    grow.fail(e);
  }
  auto sizes = grow.finish(wire::wordBlob(host.mapped()));
  mapPeerGrowth(boot, host, mappedSizesOf(sizes, grow), "stage-heap-map", "mapping the staged path's channels");
  setup.pinHostHeap();
  char* mine = static_cast<char*>(host.peerAddress(me, *offset));
  std::memset(mine, 0, total);
  const std::size_t at = *offset;
  out.stageProxy = std::make_unique<staged::StageProxy>(*r.cu, r.ctx, me, n, mine, chunk, r.heap->base(),
                                                        r.heap->capacity(), r.scratch + 128);
  out.staged = std::make_unique<staged::StagedTransport>(*r.cu, rt, chunk, [&host, at, me, perSender](int p) {
    return static_cast<char*>(host.peerAddress(p, at + static_cast<std::size_t>(me) * perSender));
  });
  log(LogLevel::Info, me, "staged path on: chunks of " + std::to_string(chunk) + " bytes through pinned host memory");
}

}  // namespace

GpuTransports makeGpuTransports(const GpuTransportSetup& setup) {
  setup.gpu.makeCurrent();
  const gpu::CudaResources r = gpu::cudaResourcesOf(setup.gpu);
  GpuTransports out;
  out.peer = std::make_unique<gpu::CudaIpcTransport>(*r.cu, *r.heap, r.stream, r.scratch);
  startStagedPath(setup, r, out);
  return out;
}

}  // namespace axon
