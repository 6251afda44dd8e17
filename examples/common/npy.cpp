#include "npy.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace axon::examples {

std::string npyHeader(const std::string& descr, const std::vector<std::size_t>& shape) {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (";
  for (std::size_t d : shape) dict += std::to_string(d) + ", ";
  // Python's tuple syntax: "(3, 4)" but "(3,)".
  if (shape.size() > 1) dict.resize(dict.size() - 2);
  else if (!shape.empty()) dict.pop_back();
  dict += "), }";
  // magic (6) + version (2) + length (2) + dict + '\n' is a multiple of 64, as numpy writes it.
  const std::size_t unpadded = 10 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string header("\x93NUMPY\x01\x00", 8);
  header += static_cast<char>(dict.size() & 0xff);
  header += static_cast<char>(dict.size() >> 8);
  return header + dict;
}

namespace {

void writeRaw(const std::string& path, const std::string& header, const void* data, std::size_t bytes) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  if (std::fwrite(header.data(), 1, header.size(), f.get()) != header.size() ||
      std::fwrite(data, 1, bytes, f.get()) != bytes || std::fflush(f.get()) != 0)
    throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
}

std::size_t elements(const std::vector<std::size_t>& shape) {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  return n;
}

}  // namespace

void writeNpy(const std::string& path, const double* data, const std::vector<std::size_t>& shape) {
  writeRaw(path, npyHeader("<f8", shape), data, elements(shape) * sizeof(double));
}

void writeNpy(const std::string& path, const float* data, const std::vector<std::size_t>& shape) {
  writeRaw(path, npyHeader("<f4", shape), data, elements(shape) * sizeof(float));
}

}  // namespace axon::examples
