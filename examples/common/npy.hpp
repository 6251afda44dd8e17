// Writes arrays as NumPy .npy files (format version 1.0), so that examples hand their results to
// numpy.load for checking. Little-endian, C order.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace axon::examples {

// Writes `data` (shape[0] x shape[1] x ..., C order) as float64 or float32 to `path`. Throws
// std::runtime_error naming the path when the file cannot be written.
void writeNpy(const std::string& path, const double* data, const std::vector<std::size_t>& shape);
void writeNpy(const std::string& path, const float* data, const std::vector<std::size_t>& shape);

// The .npy header (magic, version, length, dictionary padded to 64 bytes) for `descr` ("<f8").
std::string npyHeader(const std::string& descr, const std::vector<std::size_t>& shape);

}  // namespace axon::examples
