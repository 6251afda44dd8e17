// Where the pieces of one version lie, for finding the ones a box meets without visiting the
// others (space/store.cpp: overlap checks at every put, lookups at every get). Host-tested
// (tests/unit/space_piece_index_test.cpp).
//
// A scan of every piece per put made n small puts cost n^2 box tests (24,000 pieces in one row:
// 56 s of the server's one thread). Pieces are kept in a tree with one level per dimension: level
// d groups the pieces by their extent [lo, hi) in dimension d, among those that share the extents
// of dimensions 0..d-1. So the pieces of one row, cut along dimension 1, sit under one entry of
// level 0 and are found at level 1 by their columns; a column of pieces cut along dimension 0 is
// found at level 0. At each level the extents are sorted by their start within classes of
// similar length (a power of two), so the entries a query meets are found in O(log n) plus those
// it walks past, which are at most the entries of its class that start within one class length
// before the query. A query costs O(levels * classes * log n + entries met).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "space/box.hpp"

namespace axon::space {

class PieceIndex {
 public:
  PieceIndex();
  ~PieceIndex();
  PieceIndex(PieceIndex&&) noexcept;
  PieceIndex& operator=(PieceIndex&&) noexcept;

  // Adds a piece (its box and a key that names it). Boxes may overlap; the same box twice too.
  void insert(const Box& box, std::uint64_t key);
  // Removes the piece added with this box and key; false when there is none.
  bool erase(const Box& box, std::uint64_t key);
  // The keys of every piece whose box overlaps `query` (exactly those), in no set order.
  std::vector<std::uint64_t> overlapping(const Box& query) const;
  // The key of one piece that overlaps `query`, if any (stops at the first found).
  std::optional<std::uint64_t> anyOverlapping(const Box& query) const;
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  struct Level;
  // Calls f(key) for every piece overlapping `query` until f returns false; false if stopped.
  template <class F>
  static bool visit(const Level& level, int d, const Box& query, F& f);
  std::unique_ptr<Level> root_;
  std::size_t size_ = 0;
};

}  // namespace axon::space
