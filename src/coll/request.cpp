#include "coll/request.hpp"

#include <limits>

#include "axon/error.hpp"
#include "core/pe_context.hpp"
#include "gpu/gpu_backend.hpp"
#include "transport/transport.hpp"

namespace axon::coll {

void badArgument(PeContext& rt, const char* api, const std::string& what) {
  throw Error(ErrorCode::InvalidArgument, "PE " + std::to_string(rt.myPe()) + ": " + api + ": " + what);
}

namespace {
bool overlaps(const char* a, std::size_t na, const char* b, std::size_t nb) {
  return na && nb && a < b + nb && b < a + na;
}

// A buffer whose extent is known (in a symmetric heap, or a device allocation the driver knows)
// must hold what the call reads or writes there: the kernels or copies would otherwise run past
// it, into the neighbouring allocations or off the mapping. Other host memory cannot be checked.
void checkExtent(PeContext& rt, const void* p, std::size_t bytes, const char* api, const char* role) {
  if (!bytes) return;
  if (rt.heapContaining(p)) {
    rt.resolve(p, bytes, rt.myPe(), api, role);  // throws OutOfBounds past the allocation
    return;
  }
  GpuBackend* gpu = rt.gpu();
  const std::size_t room = gpu ? gpu->deviceBytesFrom(p) : 0;  // 0 for host memory too
  if (room && bytes > room) {
    throw Error(ErrorCode::OutOfBounds,
                "PE " + std::to_string(rt.myPe()) + ": " + api + ": " + role + " range of " +
                    std::to_string(bytes) + " bytes at " + rt.describe(p) + " runs " +
                    std::to_string(bytes - room) + " bytes past its device allocation (" +
                    std::to_string(room) + " bytes from it to the allocation's end)");
  }
}

}  // namespace

std::pair<std::size_t, std::size_t> extents(const Request& q, int n, std::size_t elem, int me) {
  const std::size_t block = q.count * elem;
  switch (q.collective) {
    case Collective::Barrier: return {0, 0};
    case Collective::Broadcast: return {me == q.root ? block : 0, block};
    case Collective::Reduce: return {block, me == q.root ? block : 0};
    case Collective::Allgather: return {block, block * n};
    case Collective::ReduceScatter: return {block * n, block};
    case Collective::Alltoall: return {block * n, block * n};
    default: return {block, block};
  }
}

void checkRequest(PeContext& rt, const Request& q, int n, int me, const char* api) {
  if (static_cast<unsigned>(q.type) > static_cast<unsigned>(DataType::Float64)) {
    badArgument(rt, api, "data type " + std::to_string(static_cast<int>(q.type)) + " is not an axon::DataType");
  }
  if (static_cast<unsigned>(q.op) > static_cast<unsigned>(ReduceOp::Max)) {
    badArgument(rt, api, "reduce op " + std::to_string(static_cast<int>(q.op)) + " is not an axon::ReduceOp");
  }
  if (rooted(q.collective) && (q.root < 0 || q.root >= n)) {
    throw Error(ErrorCode::InvalidPe, "PE " + std::to_string(rt.myPe()) + ": " + api + ": root " +
                                          std::to_string(q.root) + " is outside the team [0, " + std::to_string(n) + ")");
  }
  const std::size_t elem = dataTypeSize(q.type);
  if (q.count > std::numeric_limits<std::size_t>::max() / elem / static_cast<std::size_t>(n)) {
    badArgument(rt, api, "count " + std::to_string(q.count) + " of " + dataTypeName(q.type) + " on " + std::to_string(n) +
                     " PEs overflows the address space");
  }
  auto [srcBytes, dstBytes] = extents(q, n, elem, me);
  if (srcBytes && !q.src) badArgument(rt, api, "src is null with count " + std::to_string(q.count));
  if (dstBytes && !q.dst) badArgument(rt, api, "dst is null with count " + std::to_string(q.count));
  checkExtent(rt, q.src, srcBytes, api, "src");
  checkExtent(rt, q.dst, dstBytes, api, "dst");
  const char* s = static_cast<const char*>(q.src);
  const char* d = static_cast<const char*>(q.dst);
  const std::size_t block = q.count * elem;
  // The in-place forms of each collective; any other overlap would read data it already wrote.
  bool inPlace = s == d;
  if (q.collective == Collective::Allgather) inPlace = s == d + me * block;
  if (q.collective == Collective::ReduceScatter) inPlace = d == s + me * block;
  if (q.collective == Collective::Alltoall) inPlace = false;
  if (!inPlace && overlaps(s, srcBytes, d, dstBytes)) {
    badArgument(rt, api, "src and dst overlap; the in-place form is " +
                     std::string(q.collective == Collective::Allgather       ? "src == dst + myPe * count"
                                 : q.collective == Collective::ReduceScatter ? "dst == src + myPe * count"
                                 : q.collective == Collective::Alltoall      ? "not supported for alltoall"
                                                                             : "src == dst"));
  }
}

}  // namespace axon::coll
