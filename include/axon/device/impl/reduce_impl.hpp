// Element-wise reduction on the device, with the host path's semantics (src/coll/reduce_host.cpp):
// integer sum and product wrap around; float16 and bfloat16 compute in float and round to nearest
// even after every step; min and max of floating point let a NaN win (as numpy.minimum/maximum).
#pragma once

#include "axon/device/coll_types.hpp"

namespace axon {
namespace device {
namespace detail {

AXON_DEVICE_INLINE float toFloat(Half h) {
  float f;
  asm("{ .reg .b16 t; mov.b16 t, %1; cvt.f32.f16 %0, t; }" : "=f"(f) : "h"(h.bits));
  return f;
}
AXON_DEVICE_INLINE float toFloat(BFloat16 b) {
  return __uint_as_float(static_cast<unsigned int>(b.bits) << 16);
}
AXON_DEVICE_INLINE Half toHalf(float f) {
  Half h;
  asm("{ .reg .b16 t; cvt.rn.f16.f32 t, %1; mov.b16 %0, t; }" : "=h"(h.bits) : "f"(f));
  return h;
}
AXON_DEVICE_INLINE BFloat16 toBFloat16(float f) {
  BFloat16 b;
  asm("{ .reg .b16 t; cvt.rn.bf16.f32 t, %1; mov.b16 %0, t; }" : "=h"(b.bits) : "f"(f));
  return b;
}

template <class T> struct Unsigned { using type = T; };
template <> struct Unsigned<signed char> { using type = unsigned char; };
template <> struct Unsigned<int> { using type = unsigned int; };
template <> struct Unsigned<long> { using type = unsigned long; };
template <> struct Unsigned<long long> { using type = unsigned long long; };

template <ReduceOp Op, class T>
AXON_DEVICE_INLINE T applyInteger(T x, T y) {
  using U = typename Unsigned<T>::type;
  if (Op == ReduceOp::Sum) return static_cast<T>(static_cast<U>(static_cast<U>(x) + static_cast<U>(y)));
  if (Op == ReduceOp::Prod) return static_cast<T>(static_cast<U>(static_cast<U>(x) * static_cast<U>(y)));
  if (Op == ReduceOp::Min) return y < x ? y : x;
  return x < y ? y : x;
}

template <ReduceOp Op, class T>
AXON_DEVICE_INLINE T applyFloat(T x, T y) {
  if (Op == ReduceOp::Sum) return x + y;
  if (Op == ReduceOp::Prod) return x * y;
  if (x != x || y != y) return x + y;  // NaN wins
  if (Op == ReduceOp::Min) return y < x ? y : x;
  return x < y ? y : x;
}

template <ReduceOp Op, class T>
struct Reducer {
  static AXON_DEVICE_INLINE T apply(T x, T y) { return applyInteger<Op>(x, y); }
};
// Plain char is recorded as Int8 (DataTypeOf<char>) but is unsigned on some targets (aarch64, so
// Grace Hopper): it reduces as signed char there too, as the host path and the library's kernels
// reduce Int8, so min and max agree across the three forms of a call.
template <ReduceOp Op>
struct Reducer<Op, char> {
  static AXON_DEVICE_INLINE char apply(char x, char y) {
    return static_cast<char>(
        applyInteger<Op>(static_cast<signed char>(x), static_cast<signed char>(y)));
  }
};
template <ReduceOp Op>
struct Reducer<Op, float> {
  static AXON_DEVICE_INLINE float apply(float x, float y) { return applyFloat<Op>(x, y); }
};
template <ReduceOp Op>
struct Reducer<Op, double> {
  static AXON_DEVICE_INLINE double apply(double x, double y) { return applyFloat<Op>(x, y); }
};
template <ReduceOp Op>
struct Reducer<Op, Half> {
  static AXON_DEVICE_INLINE Half apply(Half x, Half y) {
    return toHalf(applyFloat<Op>(toFloat(x), toFloat(y)));
  }
};
template <ReduceOp Op>
struct Reducer<Op, BFloat16> {
  static AXON_DEVICE_INLINE BFloat16 apply(BFloat16 x, BFloat16 y) {
    return toBFloat16(applyFloat<Op>(toFloat(x), toFloat(y)));
  }
};

// The DataType of each element type the device collectives take. Copies (broadcast, allgather,
// alltoall) take any T: one without a DataType is described as that many bytes.
template <class T> struct DataTypeOf {
  static constexpr DataType value = DataType::Uint8;
  static constexpr bool known = false;
};
template <> struct DataTypeOf<char> { static constexpr DataType value = DataType::Int8; static constexpr bool known = true; };
template <> struct DataTypeOf<signed char> { static constexpr DataType value = DataType::Int8; static constexpr bool known = true; };
template <> struct DataTypeOf<unsigned char> { static constexpr DataType value = DataType::Uint8; static constexpr bool known = true; };
template <> struct DataTypeOf<int> { static constexpr DataType value = DataType::Int32; static constexpr bool known = true; };
template <> struct DataTypeOf<unsigned int> { static constexpr DataType value = DataType::Uint32; static constexpr bool known = true; };
template <> struct DataTypeOf<long> { static constexpr DataType value = DataType::Int64; static constexpr bool known = true; };
template <> struct DataTypeOf<unsigned long> { static constexpr DataType value = DataType::Uint64; static constexpr bool known = true; };
template <> struct DataTypeOf<long long> { static constexpr DataType value = DataType::Int64; static constexpr bool known = true; };
template <> struct DataTypeOf<unsigned long long> { static constexpr DataType value = DataType::Uint64; static constexpr bool known = true; };
template <> struct DataTypeOf<Half> { static constexpr DataType value = DataType::Float16; static constexpr bool known = true; };
template <> struct DataTypeOf<BFloat16> { static constexpr DataType value = DataType::BFloat16; static constexpr bool known = true; };
template <> struct DataTypeOf<float> { static constexpr DataType value = DataType::Float32; static constexpr bool known = true; };
template <> struct DataTypeOf<double> { static constexpr DataType value = DataType::Float64; static constexpr bool known = true; };

}  // namespace detail
}  // namespace device
}  // namespace axon
