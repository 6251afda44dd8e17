#include "memory/symmetric_allocator.hpp"

#include <string>

#include "axon/error.hpp"

namespace axon {
namespace {

std::size_t alignUp(std::size_t v, std::size_t a) { return (v + a - 1) & ~(a - 1); }

}  // namespace

SymmetricAllocator::SymmetricAllocator(std::size_t capacity) : capacity_(capacity) {
  if (capacity_ > 0) free_[0] = capacity_;
}

std::optional<std::size_t> SymmetricAllocator::allocate(std::size_t bytes, std::size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
    throw Error(ErrorCode::InvalidArgument,
                "alignment " + std::to_string(alignment) + " is not a power of two");
  }
  if (alignment < kGranule) alignment = kGranule;
  if (bytes == 0 || bytes > capacity_) return std::nullopt;
  const std::size_t rounded = alignUp(bytes, kGranule);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    const std::size_t start = it->first, length = it->second;
    const std::size_t at = alignUp(start, alignment);
    if (at < start || at - start > length || length - (at - start) < rounded) continue;
    free_.erase(it);
    if (at > start) free_[start] = at - start;
    if (start + length > at + rounded) free_[at + rounded] = start + length - (at + rounded);
    used_[at] = {bytes, rounded};
    inUse_ += rounded;
    return at;
  }
  return std::nullopt;
}

void SymmetricAllocator::release(std::size_t offset) {
  auto it = used_.find(offset);
  if (it == used_.end()) {
    throw Error(ErrorCode::InvalidArgument, "heap offset " + std::to_string(offset) +
                                                " is not the start of a live allocation");
  }
  std::size_t start = offset, length = it->second.rounded;
  inUse_ -= length;
  used_.erase(it);
  // Merge with the free neighbours so the heap does not fragment into granules.
  auto next = free_.lower_bound(start);
  if (next != free_.end() && next->first == start + length) {
    length += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      length += prev->second;
      free_.erase(prev);
    }
  }
  free_[start] = length;
}

std::optional<SymmetricAllocator::Block> SymmetricAllocator::find(std::size_t offset) const {
  auto it = used_.upper_bound(offset);
  if (it == used_.begin()) return std::nullopt;
  --it;
  if (offset >= it->first + it->second.asked) return std::nullopt;
  return Block{it->first, it->second.asked};
}

std::size_t SymmetricAllocator::top() const {
  if (used_.empty()) return 0;
  auto last = std::prev(used_.end());
  return last->first + last->second.rounded;
}

}  // namespace axon
