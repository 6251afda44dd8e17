// Command-line arithmetic the examples share.
#pragma once

#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace axon::examples {

// `text` as an integer >= 1; std::invalid_argument naming the flag otherwise.
inline long positiveArg(const std::string& flag, const char* text) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (errno || end == text || *end || v < 1)
    throw std::invalid_argument(flag + " takes a positive integer, not '" + text + "'");
  return v;
}

// `text` as a byte count >= 1, with an optional binary suffix: "4096", "64K", "1M", "16M", "1G".
inline long byteSizeArg(const std::string& flag, const char* text) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  long scale = 1;
  if (end != text && *end && !end[1]) {
    switch (*end) {
      case 'K': case 'k': scale = 1L << 10; ++end; break;
      case 'M': case 'm': scale = 1L << 20; ++end; break;
      case 'G': case 'g': scale = 1L << 30; ++end; break;
      default: break;
    }
  }
  if (errno || end == text || *end || v < 1 || v > (1L << 40) / scale)
    throw std::invalid_argument(flag + " takes a size in bytes such as 4096, 64K or 16M, not '" + text + "'");
  return v * scale;
}

}  // namespace axon::examples
