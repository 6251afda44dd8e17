// One collective call as the API received it, and the checks every form of it gets (blocking,
// stream-ordered): types, root, size overflow, null buffers and the allowed in-place overlaps.
#pragma once

#include <cstddef>
#include <string>
#include <utility>

#include "axon/collectives.hpp"

namespace axon {
class PeContext;
}

namespace axon::coll {

struct Request {
  Collective collective;
  const void* src;
  void* dst;
  std::size_t count;
  DataType type;
  ReduceOp op;
  int root;
};

// Which arguments a collective reads: the reduce op only where it reduces, the root only where
// one member is the source or the destination. Call records blank the others (op 0, root -1), so
// that members which differ only in an argument the call ignores still agree.
inline bool reduces(Collective c) {
  return c == Collective::Reduce || c == Collective::Allreduce || c == Collective::ReduceScatter;
}
inline bool rooted(Collective c) { return c == Collective::Broadcast || c == Collective::Reduce; }

// Bytes each side of the call touches on member `me` of `n`: {src, dst}.
std::pair<std::size_t, std::size_t> extents(const Request& q, int n, std::size_t elem, int me);
// Throws InvalidArgument / InvalidPe naming this PE and `api`, and OutOfBounds where src or dst
// is in a symmetric heap or device allocation too small for what the call touches there.
void checkRequest(PeContext& rt, const Request& q, int n, int me, const char* api);
[[noreturn]] void badArgument(PeContext& rt, const char* api, const std::string& what);

}  // namespace axon::coll
