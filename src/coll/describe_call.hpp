// How error messages name a collective call, alike on the host path (coll/protocol.cpp) and the
// GPU path (coll/gpu_path.cpp), so that a mismatch or timeout reads the same wherever it is met:
// "allreduce(count 1024, float32, sum, oneshot, buffer 65536)".
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "axon/collectives.hpp"

namespace axon::coll {

struct CallDescription {
  Collective collective;
  std::uint64_t count;
  std::optional<DataType> type;  // left out when empty (a host-path barrier moves no data)
  ReduceOp op;                   // named only where the collective reduces
  int root;                      // named only where the collective has a root
  std::string algorithm;         // "oneshot", "ring LL"
  std::string detail;            // what the path adds last: "buffer 65536", "4 channel(s)"
};

// "name(count N[, type][, op][, root R], algorithm, detail)"
std::string describeCall(const CallDescription& d);

}  // namespace axon::coll
