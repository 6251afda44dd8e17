#include "core/liveness.hpp"

#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace axon {

bool Liveness::processAlive(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "r");
  if (!f) return false;
  char buf[512];
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  // The state follows the parenthesised command name, which may itself contain ')'.
  const char* close = std::strrchr(buf, ')');
  if (!close || close[1] == '\0') return true;
  char state = close[2];
  return state != 'Z' && state != 'X';
}

}  // namespace axon
