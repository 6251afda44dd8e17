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

}  // namespace axon::examples
