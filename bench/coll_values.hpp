// What the collective benchmarks of axon_bench and its comparison peers agree on (nccl-tests
// conventions): the element counts of one call for a size, the bus-bandwidth factors, and the
// exact small-integer inputs and expected results that validation checks, in every data type.
#pragma once

#include <axon/collectives.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "bench_cli.hpp"
#include "coll/half.hpp"

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

inline void storeAt(DataType t, void* buf, std::size_t i, double v) {
  char* p = static_cast<char*>(buf) + i * dataTypeSize(t);
  auto put = [&](auto x) { std::memcpy(p, &x, sizeof x); };
  switch (t) {
    case DataType::Int8: put(static_cast<std::int8_t>(v)); break;
    case DataType::Uint8: put(static_cast<std::uint8_t>(v)); break;
    case DataType::Int32: put(static_cast<std::int32_t>(v)); break;
    case DataType::Uint32: put(static_cast<std::uint32_t>(v)); break;
    case DataType::Int64: put(static_cast<std::int64_t>(v)); break;
    case DataType::Uint64: put(static_cast<std::uint64_t>(v)); break;
    case DataType::Float16: put(coll::floatToHalf(static_cast<float>(v))); break;
    case DataType::BFloat16: put(coll::floatToBf16(static_cast<float>(v))); break;
    case DataType::Float32: put(static_cast<float>(v)); break;
    case DataType::Float64: put(v); break;
  }
}

inline double loadAt(DataType t, const void* buf, std::size_t i) {
  const char* p = static_cast<const char*>(buf) + i * dataTypeSize(t);
  auto get = [&](auto x) { std::memcpy(&x, p, sizeof x); return static_cast<double>(x); };
  switch (t) {
    case DataType::Int8: return get(std::int8_t{});
    case DataType::Uint8: return get(std::uint8_t{});
    case DataType::Int32: return get(std::int32_t{});
    case DataType::Uint32: return get(std::uint32_t{});
    case DataType::Int64: return get(std::int64_t{});
    case DataType::Uint64: return get(std::uint64_t{});
    case DataType::Float16: { std::uint16_t h; std::memcpy(&h, p, 2); return coll::halfToFloat(h); }
    case DataType::BFloat16: { std::uint16_t h; std::memcpy(&h, p, 2); return coll::bf16ToFloat(h); }
    case DataType::Float32: return get(float{});
    case DataType::Float64: return get(double{});
  }
  return 0;
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
