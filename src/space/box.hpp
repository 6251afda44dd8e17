// Boxes of an n-dimensional array (up to kMaxDims), half-open: [lo, hi) in every dimension, in
// elements, 64-bit throughout. Pure arithmetic, tested on the host (tests/unit/space_box_test.cpp).
//
// Row-major everywhere: dimension 0 varies slowest, the last dimension is contiguous. A block of
// data "stored as box B" means a dense row-major array of B's extents.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace axon::space {

constexpr int kMaxDims = 8;

using Extents = std::array<std::int64_t, kMaxDims>;

struct Box {
  int ndim = 0;
  Extents lo{};  // entries at and past ndim are 0
  Extents hi{};

  // Builds a box from lo and hi of equal length (1..kMaxDims); throws InvalidArgument otherwise.
  static Box of(const std::vector<std::int64_t>& lo, const std::vector<std::int64_t>& hi);
  // [0, shape) in every dimension.
  static Box whole(const std::vector<std::int64_t>& shape);
  // The box at `offset` with extents `count`.
  static Box at(const std::vector<std::int64_t>& offset, const std::vector<std::int64_t>& count);

  std::int64_t extent(int d) const { return hi[d] - lo[d]; }
  bool empty() const;  // some extent <= 0
  bool operator==(const Box& o) const;
  bool operator!=(const Box& o) const { return !(*this == o); }
};

// The number of elements; throws InvalidArgument when the count overflows 63 bits. 0 for an
// empty box.
std::int64_t volume(const Box& b);
// volume(b) * elementBytes, overflow-checked the same way.
std::int64_t byteSize(const Box& b, std::size_t elementBytes);

bool overlaps(const Box& a, const Box& b);
std::optional<Box> intersect(const Box& a, const Box& b);  // nullopt when they do not overlap
bool contains(const Box& outer, const Box& inner);

// The parts of `from` that none of `covered` covers, as disjoint boxes (the covered boxes may
// overlap each other and reach outside `from`). Empty when `from` is fully covered.
std::vector<Box> subtract(const Box& from, const std::vector<Box>& covered);

// Checks a box given by a user against an array of `shape`: same number of dimensions, lo < hi in
// every dimension, inside the shape, volume without overflow. Throws InvalidArgument that names
// `what` (e.g. "get of 'temperature'") and the offending dimension and values.
void checkBoxInShape(const Box& b, const Box& shape, const std::string& what);

// "[0:4, 2:8)" (lo:hi per dimension).
std::string describe(const Box& b);

// Byte strides of a dense row-major array of `b`'s extents with `elementBytes` per element.
Extents rowMajorByteStrides(const Box& b, std::size_t elementBytes);

// One strided copy, in bytes: the elements of `region` taken from an array stored as box `src`
// and written into an array stored as box `dst` (both row-major, `elementBytes` each). Dimensions
// where both sides are contiguous are merged, so `ndim` is often 1 or 2. extent[ndim - 1] is the
// length of one contiguous run in bytes; srcStride/dstStride[d] are byte strides for d < ndim - 1
// (the innermost stride is implied: runs are contiguous).
struct CopyRegion {
  int ndim = 0;
  Extents extent{};
  Extents srcStride{};
  Extents dstStride{};
  std::int64_t srcOffset = 0;  // byte offset of the region's first element in src
  std::int64_t dstOffset = 0;  // ... and in dst
  std::int64_t runs() const;   // product of extent[0 .. ndim-2]: the number of contiguous runs
  std::int64_t bytes() const;  // runs() * extent[ndim - 1]
};

// The copy of `region` (inside both src and dst; throws InvalidArgument otherwise).
CopyRegion planCopy(const Box& src, const Box& dst, const Box& region, std::size_t elementBytes);

// Runs `c` on the host from srcBase to dstBase, one thread.
void copyRegion(const CopyRegion& c, const void* srcBase, void* dstBase);

// One copy of copyRegions: `region` from src (+ region.srcOffset) to dst (+ region.dstOffset).
struct HostRegionCopy {
  CopyRegion region;
  const void* src = nullptr;
  void* dst = nullptr;
};

// Runs every copy on the host over up to `threads` threads (0: the hardware's, at most 16; one
// thread when the copies total under 1 MiB). The bytes of all copies, taken in order, are split
// into equal ranges, one per thread, so a single large region or a single long run is shared
// too. Returns the number of threads used (the calling thread is one of them). Throws
// InvalidArgument when `threads` is negative.
int copyRegions(const std::vector<HostRegionCopy>& copies, int threads);

}  // namespace axon::space
