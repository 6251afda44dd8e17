// Element-wise reductions on the host, for every axon data type and op. Integers wrap (two's
// complement, as NumPy does); float16/bfloat16 compute in float32 and round once per operation.
#pragma once

#include <cstddef>

#include "axon/collectives.hpp"

namespace axon::coll {

// out[i] = a[i] op b[i]. out may be a or b; the buffers need no alignment.
void reduceHost(void* out, const void* a, const void* b, std::size_t count, DataType type, ReduceOp op);

}  // namespace axon::coll
