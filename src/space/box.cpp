// Box arithmetic and host strided copies of the staging space (box.hpp).
#include "space/box.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <system_error>
#include <thread>

#include "axon/error.hpp"

namespace axon::space {
namespace {

using i64 = std::int64_t;

[[noreturn]] void invalid(const std::string& message) { throw Error(ErrorCode::InvalidArgument, message); }

// Element sizes come in as size_t; every byte count is an int64.
i64 checkedElementBytes(std::size_t elementBytes, const char* what) {
  if (elementBytes == 0 || elementBytes > static_cast<std::size_t>(std::numeric_limits<i64>::max())) {
    invalid(std::string(what) + ": element size " + std::to_string(elementBytes) + " is not a positive 64-bit value");
  }
  return static_cast<i64>(elementBytes);
}

i64 checkedMul(i64 a, i64 b, const std::string& what) {
  i64 r = 0;
  if (__builtin_mul_overflow(a, b, &r)) invalid(what + ": volume overflows 64 bits");
  return r;
}

}  // namespace

// ---- Box ------------------------------------------------------------------------------------

Box Box::of(const std::vector<i64>& lo, const std::vector<i64>& hi) {
  if (lo.size() != hi.size()) {
    invalid("box: lo has " + std::to_string(lo.size()) + " dimensions, hi has " + std::to_string(hi.size()));
  }
  if (lo.empty() || lo.size() > static_cast<std::size_t>(kMaxDims)) {
    invalid("box: " + std::to_string(lo.size()) + " dimensions, expected 1 to " + std::to_string(kMaxDims));
  }
  Box b;
  b.ndim = static_cast<int>(lo.size());
  for (int d = 0; d < b.ndim; ++d) {
    b.lo[d] = lo[d];
    b.hi[d] = hi[d];
  }
  return b;
}

Box Box::whole(const std::vector<i64>& shape) { return of(std::vector<i64>(shape.size(), 0), shape); }

Box Box::at(const std::vector<i64>& offset, const std::vector<i64>& count) {
  if (offset.size() != count.size()) {
    invalid("box: offset has " + std::to_string(offset.size()) + " dimensions, count has " +
            std::to_string(count.size()));
  }
  std::vector<i64> hi(offset.size());
  for (std::size_t d = 0; d < offset.size(); ++d) {
    if (__builtin_add_overflow(offset[d], count[d], &hi[d])) {
      invalid("box: dimension " + std::to_string(d) + ": offset " + std::to_string(offset[d]) + " + count " +
              std::to_string(count[d]) + " overflows 64 bits");
    }
  }
  return of(offset, hi);
}

// A box of no dimensions (the default) holds nothing: every box the API builds has 1 to 8.
bool Box::empty() const {
  if (ndim <= 0) return true;
  for (int d = 0; d < ndim; ++d) {
    if (hi[d] <= lo[d]) return true;
  }
  return false;
}

bool Box::operator==(const Box& o) const {
  if (ndim != o.ndim) return false;
  for (int d = 0; d < ndim; ++d) {
    if (lo[d] != o.lo[d] || hi[d] != o.hi[d]) return false;
  }
  return true;
}

i64 volume(const Box& b) {
  if (b.empty()) return 0;
  i64 v = 1;
  for (int d = 0; d < b.ndim; ++d) {
    i64 e = 0;
    // hi - lo itself can overflow (lo very negative): that is an overflowing volume too.
    if (__builtin_sub_overflow(b.hi[d], b.lo[d], &e)) invalid("box " + describe(b) + ": volume overflows 64 bits");
    v = checkedMul(v, e, "box " + describe(b));
  }
  return v;
}

i64 byteSize(const Box& b, std::size_t elementBytes) {
  return checkedMul(volume(b), checkedElementBytes(elementBytes, "byte size"), "box " + describe(b) + " in bytes");
}

bool overlaps(const Box& a, const Box& b) {
  if (a.ndim != b.ndim || a.empty() || b.empty()) return false;
  for (int d = 0; d < a.ndim; ++d) {
    if (a.hi[d] <= b.lo[d] || b.hi[d] <= a.lo[d]) return false;
  }
  return true;
}

std::optional<Box> intersect(const Box& a, const Box& b) {
  if (!overlaps(a, b)) return std::nullopt;
  Box r = a;
  for (int d = 0; d < a.ndim; ++d) {
    r.lo[d] = std::max(a.lo[d], b.lo[d]);
    r.hi[d] = std::min(a.hi[d], b.hi[d]);
  }
  return r;
}

// An empty inner box is inside any box of its dimensions (it holds no element outside).
bool contains(const Box& outer, const Box& inner) {
  if (outer.ndim != inner.ndim) return false;
  if (inner.empty()) return true;
  for (int d = 0; d < outer.ndim; ++d) {
    if (inner.lo[d] < outer.lo[d] || inner.hi[d] > outer.hi[d]) return false;
  }
  return true;
}

// Slab decomposition: each covered box cuts every remaining part that it overlaps into the slabs
// below and above it, dimension by dimension (each slab narrowed to the overlap in the dimensions
// already cut), dropping the overlap itself. The slabs are disjoint from each other and from the
// covered box, so the parts stay disjoint throughout.
std::vector<Box> subtract(const Box& from, const std::vector<Box>& covered) {
  std::vector<Box> parts;
  if (!from.empty()) parts.push_back(from);
  std::vector<Box> next;
  for (const Box& c : covered) {
    if (c.ndim != from.ndim) {
      invalid("subtract: covered box " + describe(c) + " has " + std::to_string(c.ndim) + " dimensions, " +
              describe(from) + " has " + std::to_string(from.ndim));
    }
    next.clear();
    for (const Box& p : parts) {
      if (!overlaps(p, c)) {
        next.push_back(p);
        continue;
      }
      Box rest = p;
      for (int d = 0; d < p.ndim; ++d) {
        if (c.lo[d] > rest.lo[d]) {
          Box below = rest;
          below.hi[d] = c.lo[d];
          next.push_back(below);
          rest.lo[d] = c.lo[d];
        }
        if (c.hi[d] < rest.hi[d]) {
          Box above = rest;
          above.lo[d] = c.hi[d];
          next.push_back(above);
          rest.hi[d] = c.hi[d];
        }
      }
      // `rest` is now the overlap with c: dropped.
    }
    parts.swap(next);
  }
  return parts;
}

void checkBoxInShape(const Box& b, const Box& shape, const std::string& what) {
  if (b.ndim < 1 || b.ndim > kMaxDims) {
    invalid(what + ": box has " + std::to_string(b.ndim) + " dimensions, expected 1 to " + std::to_string(kMaxDims));
  }
  if (b.ndim != shape.ndim) {
    invalid(what + ": box " + describe(b) + " has " + std::to_string(b.ndim) + " dimensions, the array has " +
            std::to_string(shape.ndim));
  }
  for (int d = 0; d < b.ndim; ++d) {
    const std::string dim = what + ": dimension " + std::to_string(d) + ": ";
    if (b.lo[d] >= b.hi[d]) invalid(dim + "lo " + std::to_string(b.lo[d]) + " >= hi " + std::to_string(b.hi[d]));
    if (b.lo[d] < shape.lo[d] || b.hi[d] > shape.hi[d]) {
      invalid(dim + "[" + std::to_string(b.lo[d]) + ":" + std::to_string(b.hi[d]) + ") is outside the array's [" +
              std::to_string(shape.lo[d]) + ":" + std::to_string(shape.hi[d]) + ")");
    }
  }
  try {
    (void)volume(b);
  } catch (const Error&) {
    invalid(what + ": box " + describe(b) + ": volume overflows 64 bits");
  }
}

std::string describe(const Box& b) {
  std::string s = "[";
  for (int d = 0; d < b.ndim; ++d) {
    if (d > 0) s += ", ";
    s += std::to_string(b.lo[d]) + ":" + std::to_string(b.hi[d]);
  }
  return s + ")";
}

Extents rowMajorByteStrides(const Box& b, std::size_t elementBytes) {
  Extents s{};
  if (b.ndim < 1) return s;
  i64 stride = checkedElementBytes(elementBytes, "strides");
  for (int d = b.ndim - 1; d >= 0; --d) {
    s[d] = stride;
    if (d > 0) stride = checkedMul(stride, std::max<i64>(b.extent(d), 0), "strides of box " + describe(b));
  }
  return s;
}

// ---- CopyRegion ------------------------------------------------------------------------------

i64 CopyRegion::runs() const {
  if (ndim < 1) return 0;
  i64 r = 1;
  for (int d = 0; d + 1 < ndim; ++d) r *= extent[d];
  return r;
}

i64 CopyRegion::bytes() const { return ndim < 1 ? 0 : runs() * extent[ndim - 1]; }

CopyRegion planCopy(const Box& src, const Box& dst, const Box& region, std::size_t elementBytes) {
  const i64 eb = checkedElementBytes(elementBytes, "copy");
  if (region.ndim < 1 || region.ndim > kMaxDims || src.ndim != region.ndim || dst.ndim != region.ndim) {
    invalid("copy of " + describe(region) + " (" + std::to_string(region.ndim) + " dimensions) from " +
            describe(src) + " (" + std::to_string(src.ndim) + ") to " + describe(dst) + " (" +
            std::to_string(dst.ndim) + "): the numbers of dimensions differ");
  }
  if (!contains(src, region)) invalid("copy of " + describe(region) + ": not inside the source " + describe(src));
  if (!contains(dst, region)) invalid("copy of " + describe(region) + ": not inside the destination " + describe(dst));
  // Both arrays must be addressable in 64-bit bytes; then so is every offset computed below.
  (void)byteSize(src, elementBytes);
  (void)byteSize(dst, elementBytes);

  CopyRegion c;
  c.ndim = 1;
  if (region.empty()) return c;  // one run of 0 bytes: nothing to copy

  const Extents ss = rowMajorByteStrides(src, elementBytes);
  const Extents ds = rowMajorByteStrides(dst, elementBytes);
  for (int d = 0; d < region.ndim; ++d) {
    c.srcOffset += (region.lo[d] - src.lo[d]) * ss[d];
    c.dstOffset += (region.lo[d] - dst.lo[d]) * ds[d];
  }

  // From the innermost dimension outwards: a dimension joins the contiguous run while stepping it
  // by one moves exactly one run length on both sides (the run covers the full extent of src and
  // dst in every dimension inside it). Past the run, an outer dimension folds into the one inside
  // it when both sides' strides nest (stride = inner stride * inner extent). Dimensions of extent
  // 1 are dropped: they add no run and need no stride.
  struct Outer {
    i64 extent, srcStride, dstStride;
  };
  Outer outer[kMaxDims];  // innermost first
  int nOuter = 0;
  i64 run = eb;
  bool inRun = true;
  for (int d = region.ndim - 1; d >= 0; --d) {
    const i64 e = region.extent(d);
    if (e == 1) continue;
    if (inRun && ss[d] == run && ds[d] == run) {
      run *= e;
      continue;
    }
    inRun = false;
    if (nOuter > 0) {
      Outer& in = outer[nOuter - 1];
      if (in.srcStride * in.extent == ss[d] && in.dstStride * in.extent == ds[d]) {
        in.extent *= e;
        continue;
      }
    }
    outer[nOuter++] = {e, ss[d], ds[d]};
  }
  c.ndim = nOuter + 1;
  for (int k = 0; k < nOuter; ++k) {
    const int d = nOuter - 1 - k;  // outermost first in the CopyRegion
    c.extent[d] = outer[k].extent;
    c.srcStride[d] = outer[k].srcStride;
    c.dstStride[d] = outer[k].dstStride;
  }
  c.extent[nOuter] = run;
  return c;
}

// ---- Host copies -----------------------------------------------------------------------------

namespace {

// Copies bytes [begin, begin + count) of region c, bytes numbered run by run in row-major order.
// Finds the first run's position once, then steps the run index like an odometer.
void copyByteRange(const CopyRegion& c, const char* src, char* dst, i64 begin, i64 count) {
  if (c.ndim < 1 || count <= 0) return;
  const int inner = c.ndim - 1;
  const i64 runBytes = c.extent[inner];
  i64 index[kMaxDims] = {};
  i64 run = begin / runBytes;
  i64 within = begin % runBytes;
  i64 s = c.srcOffset;  // offsets, not pointers: a carry may step past the array for a moment
  i64 t = c.dstOffset;
  for (int d = inner - 1; d >= 0; --d) {
    index[d] = run % c.extent[d];
    run /= c.extent[d];
    s += index[d] * c.srcStride[d];
    t += index[d] * c.dstStride[d];
  }
  while (count > 0) {
    const i64 n = std::min(runBytes - within, count);
    std::memcpy(dst + t + within, src + s + within, static_cast<std::size_t>(n));
    count -= n;
    within = 0;
    // Next run: bump the innermost outer dimension, carrying outwards.
    for (int d = inner - 1; d >= 0; --d) {
      s += c.srcStride[d];
      t += c.dstStride[d];
      if (++index[d] < c.extent[d]) break;
      s -= c.extent[d] * c.srcStride[d];
      t -= c.extent[d] * c.dstStride[d];
      index[d] = 0;
    }
  }
}

// Bytes [begin, end) of all the copies taken in order (prefix[i] = bytes before copy i).
void copyGlobalRange(const std::vector<HostRegionCopy>& copies, const std::vector<i64>& prefix, i64 begin, i64 end) {
  if (begin >= end) return;
  // The copy holding byte `begin`: the last one whose prefix is <= begin (empty copies skipped).
  std::size_t i = static_cast<std::size_t>(std::upper_bound(prefix.begin(), prefix.end(), begin) - prefix.begin()) - 1;
  for (; i < copies.size() && prefix[i] < end; ++i) {
    const i64 lo = std::max(begin, prefix[i]);
    const i64 hi = std::min(end, prefix[i + 1]);
    if (hi > lo) {
      copyByteRange(copies[i].region, static_cast<const char*>(copies[i].src), static_cast<char*>(copies[i].dst),
                    lo - prefix[i], hi - lo);
    }
  }
}

constexpr i64 kOneThreadBelow = i64{1} << 20;     // under this, threads cost more than they give
constexpr i64 kMinBytesPerThread = i64{256} << 10;  // no thread gets less than this
constexpr int kMaxDefaultThreads = 16;

}  // namespace

void copyRegion(const CopyRegion& c, const void* srcBase, void* dstBase) {
  copyByteRange(c, static_cast<const char*>(srcBase), static_cast<char*>(dstBase), 0, c.bytes());
}

int copyRegions(const std::vector<HostRegionCopy>& copies, int threads) {
  if (threads < 0) invalid("copyRegions: " + std::to_string(threads) + " threads");
  if (threads == 0) {
    threads = static_cast<int>(std::min<unsigned>(std::max(std::thread::hardware_concurrency(), 1u), kMaxDefaultThreads));
  }
  std::vector<i64> prefix(copies.size() + 1, 0);
  for (std::size_t i = 0; i < copies.size(); ++i) prefix[i + 1] = prefix[i] + copies[i].region.bytes();
  const i64 total = prefix.back();

  i64 n = 1;
  if (total >= kOneThreadBelow) n = std::clamp<i64>(total / kMinBytesPerThread, 1, threads);
  // Thread t copies bytes [total * t / n, total * (t + 1) / n) (computed without overflow):
  // equal shares whatever the shapes, cut inside regions and inside runs where they fall.
  auto bound = [&](i64 t) { return (total / n) * t + (total % n) * t / n; };
  if (n == 1) {
    copyGlobalRange(copies, prefix, 0, total);
    return 1;
  }
  std::vector<std::thread> workers;
  workers.reserve(static_cast<std::size_t>(n - 1));
  for (i64 t = 1; t < n; ++t) {
    try {
      workers.emplace_back(copyGlobalRange, std::cref(copies), std::cref(prefix), bound(t), bound(t + 1));
    } catch (const std::system_error&) {
      // No thread to be had: this one copies that share.
      copyGlobalRange(copies, prefix, bound(t), bound(t + 1));
    }
  }
  copyGlobalRange(copies, prefix, 0, bound(1));
  for (std::thread& w : workers) w.join();
  return static_cast<int>(workers.size()) + 1;
}

}  // namespace axon::space
