// The puts of a staging-space client (client_puts.hpp): a block split by placement, and each part
// sent the cheapest way to its server.
#include "space/client_puts.hpp"

#include <algorithm>

#include "axon/error.hpp"
#include "space/client_batches.hpp"
#include "space/client_catalog.hpp"
#include "space/client_connection.hpp"
#include "space/client_requests.hpp"
#include "space/client_stats.hpp"
#include "space/gpu_side.hpp"
#include "space/placement.hpp"
#include "transport/pipeline_chunk.hpp"

namespace axon::space {

using protocol::Op;

namespace {

// A pipelined GPU put's chunk: an eighth of the part, between 256 KiB and 4 MiB, so that copies
// and sends overlap from the first chunks on; kPipelineSlots pinned buffers are in flight.
// (The staged transport cuts its transfers by the same rule, with numbers of its own.)
constexpr std::uint64_t kPipelineParts = 8;
constexpr std::uint64_t kPipelineChunkMin = 256 * 1024, kPipelineChunkMax = 4 * 1024 * 1024;
constexpr std::size_t kPipelineSlots = 4;
// Below this a GPU put's part is one copy into a pinned buffer and one message: a pipeline's
// reservation and commit would cost more round trips than its overlap saves.
constexpr std::uint64_t kPipelineMin = 4 * 1024 * 1024;

}  // namespace

std::shared_ptr<Request::State> Puts::iput(const std::string& name, std::int64_t version, const Index& offset,
                                           const Index& count, const void* data, double timeoutSec, bool blocking) {
  checkVersion(version, "put of '" + name + "'");
  const Variable v = parts_.catalog.variable(name);
  Index hi(offset.size());
  if (offset.size() != count.size()) {
    throw Error(ErrorCode::InvalidArgument, "put of '" + name + "': offset has " + std::to_string(offset.size()) +
                                                " entries but count has " + std::to_string(count.size()));
  }
  for (std::size_t d = 0; d < offset.size(); ++d) {
    if (__builtin_add_overflow(offset[d], count[d], &hi[d])) {
      throw Error(ErrorCode::InvalidArgument, "put of '" + name + "': offset + count overflows in dimension " +
                                                  std::to_string(d));
    }
  }
  const Box box = Box::of(offset, hi);
  const std::string what = "put of '" + name + "' version " + std::to_string(version) + " box " + describe(box);
  checkBoxInShape(box, v.shape, what);
  if (!data) throw Error(ErrorCode::InvalidArgument, what + ": the data pointer is null");
  const std::size_t elem = dataTypeSize(v.dtype);
  const std::uint64_t bytes = static_cast<std::uint64_t>(byteSize(box, elem));
  auto state = parts_.requests.begin(what, timeoutSec);
  bool device = parts_.gpu && parts_.gpu->isDevice(data);
  const char* src = static_cast<const char*>(data);
  if (device && (parts_.gpuPath == GpuPath::HostStaged || bytes < kSharedMemoryMin)) {
    // The baseline: the whole block to host memory first, then a host put. Small blocks take
    // this way on every path: one message after a short copy.
    state->ownedCopy.resize(bytes);
    parts_.gpu->copy(state->ownedCopy.data(), data, bytes);
    src = state->ownedCopy.data();
    device = false;
    if (parts_.gpuPath == GpuPath::HostStaged) parts_.stats.bump(&ClientStats::hostStagedCopies);
  }
  // One row range per part: contiguous in the block.
  std::int64_t rowBytes = static_cast<std::int64_t>(bytes) / std::max<std::int64_t>(1, box.extent(0));
  const Placement placement(v.shape, parts_.conn.servers());
  for (const auto& [s, part] : placement.split(box)) {
    const char* partData = src + (part.lo[0] - box.lo[0]) * rowBytes;
    const std::uint64_t partBytes = static_cast<std::uint64_t>(part.extent(0) * rowBytes);
    putPart(*state, s, name, version, part, partData, partBytes, device, !blocking && !device);
  }
  parts_.stats.update([&](ClientStats& c) {
    c.puts += 1;
    c.bytesPut += bytes;
  });
  return parts_.requests.handOver(std::move(state), blocking);
}

void Puts::putPart(Request::State& st, int s, const std::string& name, std::int64_t version, const Box& part,
                   const char* data, std::uint64_t bytes, bool device, bool mayBatch) {
  ArenaView* arena = parts_.conn.arena(s);
  const std::uint64_t timeoutMs = millisUntil(st.deadline);
  if (arena && (bytes >= kSharedMemoryMin || device)) {
    // Reserve, copy into the mapped arena, commit: one copy, no network.
    const auto [reservation, offset] = reserve(st, s, name, version, part, timeoutMs);
    try {
      char* dst = arena->at(offset, bytes);
      if (device) {
        parts_.gpu->copy(dst, data, bytes);
      } else {
        CopyRegion whole;
        whole.ndim = 1;
        whole.extent[0] = static_cast<std::int64_t>(bytes);
        copyRegions({HostRegionCopy{whole, data, dst}}, 0);
      }
    } catch (...) {
      abort(s, reservation);
      throw;
    }
    commit(st, s, reservation);
    parts_.stats.bump(&ClientStats::sharedMemoryPuts);
    parts_.stats.setPath(device ? "GPU to the server's mapped memory (one DMA)" : "host copy into the server's mapped memory");
    return;
  }
  if (mayBatch && parts_.batches.takes(bytes)) {
    parts_.batches.add(st, s, name, version, part, data, bytes);
    return;
  }
  // The bytes stay where they are until UCX has sent them: the caller's buffer, or a pinned copy
  // of a GPU part too small to pipeline (kept alive by the send).
  std::shared_ptr<StagingBuffer> pinned;
  const char* path = device ? "GPU memory sent by UCX" : "host memory sent by UCX";
  if (device && parts_.gpuPath == GpuPath::Direct) {
    if (bytes >= kPipelineMin) {
      putPipelined(st, s, name, version, part, data, bytes);
      return;
    }
    pinned = parts_.gpu->pinnedStaging(bytes);
    parts_.gpu->copy(pinned->data(), data, bytes);
    data = reinterpret_cast<const char*>(pinned->data());
    device = false;
    path = "GPU memory through a pinned host buffer, sent by UCX";
  }
  wire::ByteWriter w = protocol::begin(Op::Put, 0);
  w.str(name).i64(version);
  protocol::writeBox(w, part);
  w.u64(timeoutMs);
  st.calls.push_back(parts_.conn.issue(s, Op::Put, w, data, bytes, device ? rpc::Memory::Cuda : rpc::Memory::Host, pinned));
  parts_.stats.bump(&ClientStats::ucxPuts);
  parts_.stats.setPath(path);
}

// GPU data to a server on another node: one reservation, filled by Writes of chunks that are
// copied into pinned host buffers while the previous chunks are on the wire (kPipelineSlots in
// flight), then committed. Nothing is visible before the commit; a failure aborts it.
void Puts::putPipelined(Request::State& st, int s, const std::string& name, std::int64_t version, const Box& part,
                        const char* data, std::uint64_t bytes) {
  const std::uint64_t reservation = reserve(st, s, name, version, part, millisUntil(st.deadline)).first;
  const std::uint64_t chunk = pipelineChunkBytes(bytes, kPipelineParts, kPipelineChunkMin, kPipelineChunkMax);
  std::uint64_t chunks = 0;
  try {
    std::shared_ptr<StagingBuffer> slots[kPipelineSlots];
    std::shared_ptr<Call> writes[kPipelineSlots];
    for (std::uint64_t at = 0; at < bytes; at += chunk, ++chunks) {
      const std::size_t k = chunks % kPipelineSlots;
      if (writes[k]) parts_.conn.await(writes[k], st.deadline + Connection::grace(), st.what);
      if (!slots[k]) slots[k] = parts_.gpu->pinnedStaging(chunk);
      const std::uint64_t n = std::min(chunk, bytes - at);
      parts_.gpu->copy(slots[k]->data(), data + at, n);
      wire::ByteWriter ww = protocol::begin(Op::Write, 0);
      ww.u64(reservation).u64(at);
      // The buffer stays alive until UCX has sent it, whatever becomes of this put.
      writes[k] = parts_.conn.issue(s, Op::Write, ww, slots[k]->data(), n, rpc::Memory::Host, slots[k]);
    }
    for (auto& wc : writes) {
      if (wc) parts_.conn.await(wc, st.deadline + Connection::grace(), st.what);
    }
  } catch (...) {
    abort(s, reservation);
    throw;
  }
  commit(st, s, reservation);
  parts_.stats.update([&](ClientStats& c) {
    c.pipelinedPuts += 1;
    c.pipelineChunks += chunks;
  });
  parts_.stats.setPath("GPU memory through pinned host buffers (pipelined), sent by UCX");
}

std::pair<std::uint64_t, std::uint64_t> Puts::reserve(Request::State& st, int s, const std::string& name,
                                                      std::int64_t version, const Box& part, std::uint64_t timeoutMs) {
  wire::ByteWriter w = protocol::begin(Op::Reserve, 0);
  w.str(name).i64(version);
  protocol::writeBox(w, part);
  w.u64(timeoutMs);
  auto c = parts_.conn.issue(s, Op::Reserve, w);
  parts_.conn.await(c, st.deadline + Connection::grace(), st.what);
  wire::ByteReader r(c->reply);
  const std::uint64_t reservation = r.u64(), offset = r.u64();
  return {reservation, offset};
}

void Puts::commit(Request::State& st, int s, std::uint64_t reservation) {
  wire::ByteWriter w = protocol::begin(Op::Commit, 0);
  w.u64(reservation);
  st.calls.push_back(parts_.conn.issue(s, Op::Commit, w));
}

void Puts::abort(int s, std::uint64_t reservation) {
  // Its memory goes back at once, or once the data of Writes under way has landed.
  wire::ByteWriter w = protocol::begin(Op::Abort, 0);
  w.u64(reservation);
  parts_.conn.notify(s, w);
}

}  // namespace axon::space
