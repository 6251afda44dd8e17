// Diagnostics to stderr, filtered by AXON_LOG. The library never exits; it only reports.
#pragma once

#include <cstdio>
#include <string>

namespace axon {

enum class LogLevel { Error = 0, Warn = 1, Info = 2, Debug = 3 };

// Set by init() from AXON_LOG; messages above it are dropped.
inline int& logThreshold() {
  static int level = 1;
  return level;
}

inline void log(LogLevel level, int pe, const std::string& msg) {
  if (static_cast<int>(level) > logThreshold()) return;
  static const char* names[] = {"error", "warn", "info", "debug"};
  std::fprintf(stderr, "axon[PE %d] %s: %s\n", pe, names[static_cast<int>(level)], msg.c_str());
}

// "2.5 s", "300 s": seconds for messages.
inline std::string secondsText(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g s", s);
  return buf;
}

}  // namespace axon
