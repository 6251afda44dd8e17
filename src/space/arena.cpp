#include "space/arena.hpp"

#include <dirent.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstdlib>

#include "axon/error.hpp"
#include "core/liveness.hpp"

namespace axon::space {
namespace {

constexpr const char* kSuffix = "-space";

}  // namespace

ServerArena::ServerArena(std::uint64_t capacity)
    : segment_(ShmSegment::create(freshShmName(0, kSuffix), capacity)), capacity_(capacity) {}

ServerArena::~ServerArena() { segment_.unlinkName(); }

void ServerArena::ensure(std::uint64_t end) {
  if (end <= segment_.mapped()) return;
  const std::uint64_t before = segment_.mapped();
  const std::uint64_t target = std::min<std::uint64_t>(capacity_, (end + kArenaChunk - 1) / kArenaChunk * kArenaChunk);
  try {
    segment_.growTo(std::max(end, target));
  } catch (const Error& e) {
    throw Error(ErrorCode::SpaceFull, "the staging server cannot take " + std::to_string(end - before) +
                                          " more bytes of memory from the system: " + e.what());
  }
  // Pinned where RLIMIT_MEMLOCK allows it; the server works without (pages may then be swapped).
  locked_ = ::mlock(segment_.base() + before, segment_.mapped() - before) == 0;
}

void ServerArena::removeStale() {
  DIR* dir = ::opendir("/dev/shm");
  if (!dir) return;
  while (dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    // "axon-<pid>-<random>-pe0-space"
    if (name.rfind("axon-", 0) != 0 || name.size() < 6 ||
        name.compare(name.size() - std::string(kSuffix).size(), std::string::npos, kSuffix) != 0) {
      continue;
    }
    const pid_t pid = static_cast<pid_t>(std::strtol(name.c_str() + 5, nullptr, 10));
    if (pid > 0 && !Liveness::processAlive(pid)) ::shm_unlink(("/" + name).c_str());
  }
  ::closedir(dir);
}

ArenaView::ArenaView(const std::string& name, std::uint64_t capacity) : segment_(ShmSegment::open(name, capacity)) {}

char* ArenaView::at(std::uint64_t offset, std::uint64_t bytes) {
  if (offset + bytes > segment_.reserved()) {
    throw Error(ErrorCode::Internal, "staging arena offset " + std::to_string(offset) + " + " + std::to_string(bytes) +
                                         " lies past the arena's " + std::to_string(segment_.reserved()) + " bytes");
  }
  const std::uint64_t end = (offset + bytes + kArenaChunk - 1) / kArenaChunk * kArenaChunk;
  segment_.growTo(std::min<std::uint64_t>(end, segment_.reserved()));
  return segment_.base() + offset;
}

}  // namespace axon::space
