// What the collective benchmarks of axon_bench and its comparison peers agree on (nccl-tests
// conventions): the element counts of one call for a size, the bus-bandwidth factors, and the
// exact small-integer inputs and expected results that validation checks (stored and loaded in
// every data type by include/axon/typed_value.hpp).
#pragma once

#include <axon/collectives.hpp>

#include <algorithm>
#include <string>

#include "bench_cli.hpp"
#include "axon/typed_value.hpp"

namespace axon::bench {

constexpr int kTypes = 10, kOps = 4, kCollectives = 7;

// The enum value whose library name (dataTypeName, reduceOpName, collectiveName) is `text`.
template <class Enum>
Enum pickByName(const std::string& text, const char* what, int count, const char* (*name)(Enum) noexcept) {
  std::string all;
  for (int i = 0; i < count; ++i) {
    const auto e = static_cast<Enum>(i);
    if (text == name(e)) return e;
    all += std::string(all.empty() ? "" : ", ") + name(e);
  }
  throw UsageError{std::string(what) + " '" + text + "' is not one of " + all};
}

inline double busFactor(Collective c, int n) {
  switch (c) {
    case Collective::Allreduce: return 2.0 * (n - 1) / n;
    case Collective::Allgather: case Collective::ReduceScatter: case Collective::Alltoall: return double(n - 1) / n;
    default: return 1.0;
  }
}

// Exact inputs and expected values for validation: small integers, exact in every type.
inline double inputAt(ReduceOp op, int pe, std::size_t i) {
  if (op == ReduceOp::Prod) return (pe + i) % 2 == 0 ? 2.0 : 1.0;
  return static_cast<double>((pe + 1) * static_cast<int>(i % 7 + 1));
}
inline double expectedAt(ReduceOp op, int n, std::size_t i) {
  double acc = inputAt(op, 0, i);
  for (int p = 1; p < n; ++p) {
    double v = inputAt(op, p, i);
    acc = op == ReduceOp::Sum ? acc + v : op == ReduceOp::Prod ? acc * v : op == ReduceOp::Min ? std::min(acc, v) : std::max(acc, v);
  }
  return acc;
}


// Element counts of one call for a size: {count argument, elements of src, elements of dst,
// elements of the largest buffer (what size and count print)}.
struct Shape {
  std::size_t arg, src, dst, printed;
};
inline Shape shapeOf(Collective c, std::size_t bytes, std::size_t e, int n) {
  const std::size_t total = bytes / e, block = total / static_cast<std::size_t>(n);
  switch (c) {
    case Collective::Allgather: return {block, block, block * n, block * n};
    case Collective::ReduceScatter: return {block, block * n, block, block * n};
    case Collective::Alltoall: return {block, block * n, block * n, block * n};
    default: return {total, total, total, total};
  }
}

// The value that element `i` of PE `me`'s destination must hold after the validated call (the
// source holds inputAt(op, me, i), broadcast's non-roots zeros); `arg` is Shape::arg.
inline double wantedAt(Collective c, ReduceOp op, int n, int me, int root, std::size_t arg, std::size_t i) {
  switch (c) {
    case Collective::Broadcast: return inputAt(op, root, i);
    case Collective::Allgather: return inputAt(op, static_cast<int>(i / arg), i % arg);
    case Collective::ReduceScatter: return expectedAt(op, n, me * arg + i);
    case Collective::Alltoall: return inputAt(op, static_cast<int>(i / arg), me * arg + i % arg);
    default: return expectedAt(op, n, i);
  }
}

}  // namespace axon::bench
