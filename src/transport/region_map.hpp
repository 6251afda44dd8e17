// The registered ranges of one PE's heap, for transports that reach memory only through a
// registration (UCX: one key per range). A heap grows in chunks and each growth is registered on
// its own, so ranges are disjoint and sorted, and one access may span several of them: it is cut
// into one piece per range. Pure arithmetic, tested on the host (tests/unit/region_map_test.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace axon {

class RegionMap {
 public:
  struct Range {
    std::uint64_t offset;
    std::uint64_t bytes;
    std::uint64_t end() const { return offset + bytes; }
  };
  static constexpr std::uint64_t kCovered = ~std::uint64_t{0};

  // Adds [offset, offset + bytes) as range number size(); returns false (and adds nothing) when
  // exactly that range is known already. A range that overlaps a known one otherwise, is empty or
  // wraps around throws std::invalid_argument: registrations never overlap.
  bool add(std::uint64_t offset, std::uint64_t bytes) {
    if (bytes == 0 || offset + bytes < offset) {
      throw std::invalid_argument("a registered range of " + std::to_string(bytes) + " bytes at offset " +
                                  std::to_string(offset));
    }
    auto at = std::lower_bound(sorted_.begin(), sorted_.end(), offset,
                               [&](std::size_t i, std::uint64_t off) { return ranges_[i].offset < off; });
    if (at != sorted_.end() && ranges_[*at].offset == offset && ranges_[*at].bytes == bytes) return false;
    const bool overlapsNext = at != sorted_.end() && ranges_[*at].offset < offset + bytes;
    const bool overlapsPrev = at != sorted_.begin() && ranges_[*(at - 1)].end() > offset;
    if (overlapsNext || overlapsPrev) {
      const Range& other = ranges_[overlapsNext ? *at : *(at - 1)];
      throw std::invalid_argument("registered range [" + std::to_string(offset) + ", " +
                                  std::to_string(offset + bytes) + ") overlaps [" + std::to_string(other.offset) +
                                  ", " + std::to_string(other.end()) + ")");
    }
    sorted_.insert(at, ranges_.size());
    ranges_.push_back(Range{offset, bytes});
    return true;
  }

  // Calls piece(rangeIndex, offset, bytes) for each piece of [offset, offset + bytes), in order.
  // Returns kCovered, or the first offset no range covers (pieces before it were already given).
  // An empty access has no pieces.
  template <class Piece>
  std::uint64_t forEachPiece(std::uint64_t offset, std::uint64_t bytes, Piece&& piece) const {
    const std::uint64_t end = offset + bytes;
    // The last range that starts at or before `offset`.
    auto at = std::upper_bound(sorted_.begin(), sorted_.end(), offset,
                               [&](std::uint64_t off, std::size_t i) { return off < ranges_[i].offset; });
    if (at != sorted_.begin()) --at;
    while (offset < end) {
      if (at == sorted_.end() || ranges_[*at].offset > offset || ranges_[*at].end() <= offset) return offset;
      const std::uint64_t stop = std::min(end, ranges_[*at].end());
      piece(*at, offset, stop - offset);
      offset = stop;
      ++at;
    }
    return kCovered;
  }

  const Range& operator[](std::size_t i) const { return ranges_[i]; }
  std::size_t size() const { return ranges_.size(); }

 private:
  std::vector<Range> ranges_;       // in the order added (a range's index never changes)
  std::vector<std::size_t> sorted_; // indices into ranges_, by offset
};

}  // namespace axon
