// PE 0 gathers a row-split array: every PE holds one contiguous slab of the whole, and PE 0
// receives the others' slabs into place. The examples write and check results this way.
#pragma once

#include <axon/axon.hpp>

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace axon::examples {

// slabOf(pe) gives {first element, element count} of PE pe's slab of a `total`-element array.
// Returns the whole array on PE 0, an empty one elsewhere. Throws std::runtime_error naming a PE
// that sent a slab of the wrong size.
template <class T, class SlabOf>
std::vector<T> gatherSlabs(const std::vector<T>& mine, std::size_t total, SlabOf slabOf) {
  constexpr int kTag = 0x5AB;
  if (myPe() != 0) {
    send(mine.data(), mine.size() * sizeof(T), 0, kTag);
    return {};
  }
  std::vector<T> whole(total);
  std::copy(mine.begin(), mine.end(), whole.begin());
  for (int pe = 1; pe < nPes(); ++pe) {
    const std::pair<std::size_t, std::size_t> slab = slabOf(pe);
    const std::size_t bytes = slab.second * sizeof(T);
    const Status st = recv(whole.data() + slab.first, bytes, pe, kTag);
    if (st.bytes != bytes)
      throw std::runtime_error("PE " + std::to_string(pe) + " sent " + std::to_string(st.bytes) +
                               " bytes of its slab, expected " + std::to_string(bytes));
  }
  return whole;
}

}  // namespace axon::examples
