// SymmetricAllocator under a long random (fixed seed) sequence of allocate/release calls:
//  - two instances fed the same calls agree on every offset (what keeps the heap symmetric);
//  - every offset is the one a first-fit search over the gaps between live blocks gives, so free
//    ranges are coalesced exactly (no lost space, no double-handed-out space);
//  - live blocks never overlap, respect their alignment and stay inside the capacity.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <random>
#include <vector>

#include "memory/symmetric_allocator.hpp"

namespace axon {
namespace {

constexpr std::size_t kGranule = SymmetricAllocator::kGranule;

std::size_t alignUp(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }

struct Live {
  std::size_t asked;
  std::size_t reserved;  // asked, rounded up to the granule
  std::size_t alignment;
};

// The offset first fit must return, computed from the live blocks alone: the lowest gap between
// them (or before the first, or after the last) whose aligned start leaves room for the request.
std::optional<std::size_t> firstFit(const std::map<std::size_t, Live>& live, std::size_t capacity,
                                    std::size_t bytes, std::size_t alignment) {
  if (bytes == 0 || bytes > capacity) return std::nullopt;
  const std::size_t need = alignUp(bytes, kGranule);
  alignment = std::max(alignment, kGranule);
  std::size_t gapStart = 0;
  auto fits = [&](std::size_t gapEnd) -> std::optional<std::size_t> {
    std::size_t at = alignUp(gapStart, alignment);
    if (at < gapEnd && gapEnd - at >= need) return at;
    return std::nullopt;
  };
  for (const auto& [offset, block] : live) {
    if (auto at = fits(offset)) return at;
    gapStart = offset + block.reserved;
  }
  return fits(capacity);
}

void expectConsistent(const SymmetricAllocator& heap, const std::map<std::size_t, Live>& live,
                      std::size_t capacity) {
  std::size_t inUse = 0, top = 0, previousEnd = 0;
  for (const auto& [offset, block] : live) {
    ASSERT_GE(offset, previousEnd) << "block at " << offset << " overlaps the one before it";
    ASSERT_EQ(offset % std::max(block.alignment, kGranule), 0u) << offset;
    ASSERT_LE(offset + block.reserved, capacity);
    auto first = heap.find(offset);
    auto last = heap.find(offset + block.asked - 1);
    ASSERT_TRUE(first && last) << offset;
    EXPECT_EQ(first->offset, offset);
    EXPECT_EQ(first->size, block.asked);
    EXPECT_EQ(last->offset, offset);
    // Just past the asked size is padding, a gap, or the start of the next block: never this one.
    auto past = heap.find(offset + block.asked);
    if (past) {
      EXPECT_EQ(past->offset, offset + block.asked);
      EXPECT_TRUE(live.count(past->offset));
    }
    previousEnd = offset + block.reserved;
    inUse += block.reserved;
    top = previousEnd;
  }
  EXPECT_EQ(heap.liveAllocations(), live.size());
  EXPECT_EQ(heap.bytesInUse(), inUse);
  EXPECT_EQ(heap.top(), top);
}

TEST(SymmetricAllocatorRandom, SameCallsSameOffsetsAndFirstFitWithoutOverlap) {
  constexpr std::size_t kCapacity = 1 << 20;
  constexpr int kSteps = 20000;
  SymmetricAllocator pe0(kCapacity), pe1(kCapacity);
  std::map<std::size_t, Live> live;
  std::mt19937_64 rng(20240611);
  const std::size_t alignments[] = {1, 64, 64, 64, 256, 4096};
  // Mostly small blocks, some large enough to fill the heap and exercise failures.
  auto pickSize = [&]() -> std::size_t {
    switch (rng() % 8) {
      case 0: return 1 + rng() % 64;
      case 7: return 1 + rng() % (kCapacity / 4);
      default: return 1 + rng() % 8192;
    }
  };
  int failures = 0, releases = 0;
  for (int step = 0; step < kSteps; ++step) {
    const bool doAllocate = live.empty() || rng() % 100 < 55;
    if (doAllocate) {
      const std::size_t bytes = pickSize();
      const std::size_t alignment = alignments[rng() % std::size(alignments)];
      auto got0 = pe0.allocate(bytes, alignment);
      auto got1 = pe1.allocate(bytes, alignment);
      ASSERT_EQ(got0, got1) << "step " << step << ": the two PEs diverged";
      ASSERT_EQ(got0, firstFit(live, kCapacity, bytes, alignment))
          << "step " << step << ": allocate(" << bytes << ", " << alignment << ")";
      if (got0) {
        live[*got0] = Live{bytes, alignUp(bytes, kGranule), alignment};
      } else {
        ++failures;
      }
    } else {
      auto victim = std::next(live.begin(), static_cast<long>(rng() % live.size()));
      pe0.release(victim->first);
      pe1.release(victim->first);
      live.erase(victim);
      ++releases;
    }
    if (step % 97 == 0) {
      expectConsistent(pe0, live, kCapacity);
      if (HasFatalFailure()) return;
    }
  }
  expectConsistent(pe0, live, kCapacity);
  expectConsistent(pe1, live, kCapacity);
  // The sequence must have exercised both the full heap and reuse, or it proved little.
  EXPECT_GT(failures, 100);
  EXPECT_GT(releases, 1000);
}

}  // namespace
}  // namespace axon
