#include "coll/reduce_host.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "axon/half.hpp"

namespace axon::coll {
namespace {

template <class T>
T load(const void* p, std::size_t i) {
  T v;
  std::memcpy(&v, static_cast<const char*>(p) + i * sizeof(T), sizeof(T));
  return v;
}
template <class T>
void store(void* p, std::size_t i, T v) {
  std::memcpy(static_cast<char*>(p) + i * sizeof(T), &v, sizeof(T));
}

template <class T>
T apply(T x, T y, ReduceOp op) {
  if constexpr (std::is_integral_v<T>) {
    // Sum and product in the unsigned type: wrap-around, never signed-overflow UB.
    using U = std::make_unsigned_t<T>;
    switch (op) {
      case ReduceOp::Sum: return static_cast<T>(static_cast<U>(static_cast<U>(x) + static_cast<U>(y)));
      case ReduceOp::Prod: return static_cast<T>(static_cast<U>(static_cast<U>(x) * static_cast<U>(y)));
      case ReduceOp::Min: return std::min(x, y);
      case ReduceOp::Max: return std::max(x, y);
    }
  } else {
    switch (op) {
      case ReduceOp::Sum: return x + y;
      case ReduceOp::Prod: return x * y;
      // NaN wins, as in numpy.minimum / maximum.
      case ReduceOp::Min: return (x != x || y != y) ? x + y : std::min(x, y);
      case ReduceOp::Max: return (x != x || y != y) ? x + y : std::max(x, y);
    }
  }
  return x;
}

template <class T>
void loop(void* out, const void* a, const void* b, std::size_t n, ReduceOp op) {
  for (std::size_t i = 0; i < n; ++i) store<T>(out, i, apply<T>(load<T>(a, i), load<T>(b, i), op));
}

template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float)>
void loop16(void* out, const void* a, const void* b, std::size_t n, ReduceOp op) {
  for (std::size_t i = 0; i < n; ++i) {
    float x = ToFloat(load<std::uint16_t>(a, i));
    float y = ToFloat(load<std::uint16_t>(b, i));
    store<std::uint16_t>(out, i, FromFloat(apply<float>(x, y, op)));
  }
}

}  // namespace

void reduceHost(void* out, const void* a, const void* b, std::size_t count, DataType type, ReduceOp op) {
  switch (type) {
    case DataType::Int8: return loop<std::int8_t>(out, a, b, count, op);
    case DataType::Uint8: return loop<std::uint8_t>(out, a, b, count, op);
    case DataType::Int32: return loop<std::int32_t>(out, a, b, count, op);
    case DataType::Uint32: return loop<std::uint32_t>(out, a, b, count, op);
    case DataType::Int64: return loop<std::int64_t>(out, a, b, count, op);
    case DataType::Uint64: return loop<std::uint64_t>(out, a, b, count, op);
    case DataType::Float16: return loop16<halfToFloat, floatToHalf>(out, a, b, count, op);
    case DataType::BFloat16: return loop16<bf16ToFloat, floatToBf16>(out, a, b, count, op);
    case DataType::Float32: return loop<float>(out, a, b, count, op);
    case DataType::Float64: return loop<double>(out, a, b, count, op);
  }
}

}  // namespace axon::coll
