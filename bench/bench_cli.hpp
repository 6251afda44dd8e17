// Command-line and output helpers shared by the benchmark drivers (axon_bench and its collective
// tests, gpu_bench, host_put_bench): sizes and counts with one-line usage errors, and the
// JSON-lines protocol `axon bench` reads. C++17, so that nvcc compiles it into gpu_bench.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace axon::bench {

// A bad command line: reported as one line, exit status 2.
struct UsageError {
  std::string message;
};

inline bool isRankZero() {
  const char* rank = std::getenv("AXON_RANK");
  return rank == nullptr || std::strcmp(rank, "0") == 0;
}

inline std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

inline std::string jsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

inline void emitLine(const std::string& json) {
  std::fputs(json.c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

inline void emitError(const char* program, const std::string& message, bool usage) {
  emitLine(std::string("{\"type\": \"error\", \"usage\": ") + (usage ? "true" : "false") +
           ", \"message\": " + jsonString(message) + "}");
  std::fprintf(stderr, "%s: %s\n", program, message.c_str());
}

// What `parse(argc, argv)` makes of the command line; on a UsageError nothing, the error reported
// by rank 0 alone (every PE was given the same line): the caller exits with status 2.
template <class Parse>
auto parseCommandLine(const char* program, Parse parse, int argc, char** argv)
    -> std::optional<decltype(parse(argc, argv))> {
  try {
    return parse(argc, argv);
  } catch (const UsageError& e) {
    if (isRankZero()) emitError(program, e.message, true);
    return std::nullopt;
  }
}

// "8", "64K", "1M", "2G" (binary multiples).
inline std::size_t parseSize(const std::string& text, const char* what) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  std::string suffix = end ? end : "";
  std::size_t scale = suffix.empty() ? 1 : suffix == "K" || suffix == "k" ? 1024
                      : suffix == "M" || suffix == "m"                   ? std::size_t{1} << 20
                      : suffix == "G" || suffix == "g"                   ? std::size_t{1} << 30
                                                                         : 0;
  if (text.empty() || end == text.c_str() || scale == 0 || errno != 0 || text[0] == '-') {
    throw UsageError{std::string(what) + ": '" + text + "' is not a size (e.g. 8, 64K, 1M)"};
  }
  if (v == 0) throw UsageError{std::string(what) + ": sizes start at 1 byte, got '" + text + "'"};
  return static_cast<std::size_t>(v) * scale;
}

inline long parseCount(const std::string& text, const char* what, long minimum) {
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < minimum) {
    throw UsageError{std::string(what) + " must be an integer >= " + std::to_string(minimum) +
                     ", got '" + text + "'"};
  }
  return v;
}

// MIN, MIN*FACTOR, ... up to MAX.
inline std::vector<std::size_t> sizeSweep(std::size_t minBytes, std::size_t maxBytes, std::size_t factor) {
  std::vector<std::size_t> sizes;
  for (std::size_t s = minBytes; s <= maxBytes; s *= factor) {
    sizes.push_back(s);
    if (s > maxBytes / factor) break;  // the next step would overflow or pass the end
  }
  return sizes;
}

// The middle value (the upper one of an even count): what the benchmarks report per size.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace axon::bench
