// The pieces of one version, indexed by their extents one dimension at a time (piece_index.hpp).
#include "space/piece_index.hpp"

#include <algorithm>
#include <bit>
#include <climits>

namespace axon::space {

namespace {

using Extent = std::pair<std::int64_t, std::int64_t>;  // [lo, hi) in one dimension

// Lengths [2^k, 2^(k+1)) share class k: within a class, an extent that reaches a point starts at
// most 2^(k+1) - 1 before it, so a walk from there meets few extents that end short of it.
int lengthClass(std::int64_t length) {
  return std::bit_width(static_cast<std::uint64_t>(std::max<std::int64_t>(length, 1))) - 1;
}

// The first start an extent of class k may have and still reach past `a` (saturating).
std::int64_t earliestStart(std::int64_t a, int k) {
  const std::int64_t span = k >= 62 ? INT64_MAX : (std::int64_t{2} << k) - 1;
  return a < INT64_MIN + span ? INT64_MIN : a - span;
}

}  // namespace

struct PieceIndex::Level {
  struct Entry {
    std::unique_ptr<Level> next;      // the pieces with this extent, by their next dimension
    std::vector<std::uint64_t> keys;  // at the last dimension: the pieces themselves
  };
  std::map<int, std::map<Extent, Entry>> classes;
};

PieceIndex::PieceIndex() : root_(std::make_unique<Level>()) {}
PieceIndex::~PieceIndex() = default;
PieceIndex::PieceIndex(PieceIndex&&) noexcept = default;
PieceIndex& PieceIndex::operator=(PieceIndex&&) noexcept = default;

void PieceIndex::insert(const Box& box, std::uint64_t key) {
  Level* level = root_.get();
  for (int d = 0; d < box.ndim; ++d) {
    Level::Entry& e = level->classes[lengthClass(box.extent(d))][Extent{box.lo[d], box.hi[d]}];
    if (d + 1 == box.ndim) {
      e.keys.push_back(key);
      break;
    }
    if (!e.next) e.next = std::make_unique<Level>();
    level = e.next.get();
  }
  ++size_;
}

bool PieceIndex::erase(const Box& box, std::uint64_t key) {
  if (box.ndim < 1) return false;
  // The path down, so that entries left empty are removed on the way back up.
  struct Step {
    Level* level;
    std::map<int, std::map<Extent, Level::Entry>>::iterator cls;
    std::map<Extent, Level::Entry>::iterator entry;
  };
  std::vector<Step> path;
  Level* level = root_.get();
  for (int d = 0; d < box.ndim; ++d) {
    auto cls = level->classes.find(lengthClass(box.extent(d)));
    if (cls == level->classes.end()) return false;
    auto entry = cls->second.find(Extent{box.lo[d], box.hi[d]});
    if (entry == cls->second.end()) return false;
    path.push_back({level, cls, entry});
    if (d + 1 < box.ndim) {
      if (!entry->second.next) return false;
      level = entry->second.next.get();
    }
  }
  auto& keys = path.back().entry->second.keys;
  auto it = std::find(keys.begin(), keys.end(), key);
  if (it == keys.end()) return false;
  keys.erase(it);
  for (auto s = path.rbegin(); s != path.rend(); ++s) {
    Level::Entry& e = s->entry->second;
    if (!e.keys.empty() || (e.next && !e.next->classes.empty())) break;
    s->cls->second.erase(s->entry);
    if (s->cls->second.empty()) s->level->classes.erase(s->cls);
  }
  --size_;
  return true;
}

template <class F>
bool PieceIndex::visit(const Level& level, int d, const Box& query, F& f) {
  const std::int64_t a = query.lo[d], b = query.hi[d];
  for (const auto& [k, extents] : level.classes) {
    auto end = extents.lower_bound(Extent{b, INT64_MIN});
    for (auto it = extents.lower_bound(Extent{earliestStart(a, k), INT64_MIN}); it != end; ++it) {
      if (it->first.second <= a) continue;  // ends before the query starts
      const Level::Entry& e = it->second;
      if (d + 1 == query.ndim) {
        for (std::uint64_t key : e.keys) {
          if (!f(key)) return false;
        }
      } else if (e.next && !visit(*e.next, d + 1, query, f)) {
        return false;
      }
    }
  }
  return true;
}

std::vector<std::uint64_t> PieceIndex::overlapping(const Box& query) const {
  std::vector<std::uint64_t> out;
  if (query.ndim < 1 || query.empty()) return out;
  auto f = [&](std::uint64_t key) {
    out.push_back(key);
    return true;
  };
  visit(*root_, 0, query, f);
  return out;
}

std::optional<std::uint64_t> PieceIndex::anyOverlapping(const Box& query) const {
  std::optional<std::uint64_t> found;
  if (query.ndim < 1 || query.empty()) return found;
  auto f = [&](std::uint64_t key) {
    found = key;
    return false;
  };
  visit(*root_, 0, query, f);
  return found;
}

}  // namespace axon::space
