// How the examples split a domain over the PEs, and how they compare a result with a serial one.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <utility>
#include <vector>

namespace axon::examples {

// Part `index` of `total` items split into `parts` contiguous, balanced parts (the first
// total % parts take one more): {first item, item count}.
inline std::pair<long, long> balancedPart(long total, int parts, int index) {
  const long base = total / parts, extra = total % parts;
  return {index * base + std::min<long>(index, extra), base + (index < extra ? 1 : 0)};
}

// How many values of `got` differ from `ref` in any bit, and the largest difference.
template <class T>
long bitDifferences(const std::vector<T>& ref, const std::vector<T>& got, double* maxDiff) {
  long wrong = 0;
  *maxDiff = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    if (std::memcmp(&ref[i], &got[i], sizeof(T)) != 0) ++wrong;
    *maxDiff = std::max(*maxDiff, std::fabs(static_cast<double>(ref[i]) - static_cast<double>(got[i])));
  }
  return wrong;
}

}  // namespace axon::examples
