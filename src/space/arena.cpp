#include "space/arena.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "axon/error.hpp"

namespace axon::space {
namespace {

// Arenas guarded by a lock; names of older builds ("-space") are left alone, their liveness
// being unknowable here.
constexpr const char* kSuffix = "-space-arena";
// An arena younger than this may belong to a server that has not locked it yet.
constexpr int kStaleAfterSec = 2;

// In the forked watchdog: only async-signal-safe calls from here on.
[[noreturn]] void watch(int pipeFd, const char* path, int maxFd) {
  bool closed = false;
#ifdef SYS_close_range
  const auto keep = static_cast<unsigned>(pipeFd);
  closed = (keep == 0 || ::syscall(SYS_close_range, 0u, keep - 1, 0u) == 0) &&
           ::syscall(SYS_close_range, keep + 1, ~0u, 0u) == 0;
#endif
  for (int fd = 0; !closed && fd < maxFd; ++fd) {
    if (fd != pipeFd) ::close(fd);
  }
  ::setsid();  // no terminal's Ctrl-C: it outlives the server only as long as it takes to clean up
  struct sigaction ignore{};
  ignore.sa_handler = SIG_IGN;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE}) ::sigaction(sig, &ignore, nullptr);
  char byte;
  for (;;) {
    const ssize_t got = ::read(pipeFd, &byte, 1);
    if (got == 0 || (got < 0 && errno != EINTR)) break;  // the server's end closed: it is gone
  }
  ::unlink(path);
  ::_exit(0);
}

}  // namespace

ServerArena::ServerArena(std::uint64_t capacity)
    : segment_(ShmSegment::create(freshShmName(0, kSuffix), capacity)), capacity_(capacity) {
  try {
    lockName();
    startWatchdog();
  } catch (...) {
    segment_.unlinkName();
    if (lockFd_ >= 0) ::close(lockFd_);
    throw;
  }
}

ServerArena::~ServerArena() {
  segment_.unlinkName();
  if (lockFd_ >= 0) ::close(lockFd_);
  if (watchdogFd_ >= 0) ::close(watchdogFd_);  // the watchdog finds the name gone and ends
  if (watchdogPid_ > 0) {
    while (::waitpid(watchdogPid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
}

void ServerArena::lockName() {
  lockFd_ = ::shm_open(segment_.name().c_str(), O_RDWR | O_CLOEXEC, 0600);
  if (lockFd_ < 0) throw SystemError("cannot open the staging arena " + segment_.name() + " to lock it", errno);
  if (::flock(lockFd_, LOCK_EX | LOCK_NB) != 0) {
    throw SystemError("cannot lock the staging arena " + segment_.name(), errno);
  }
}

void ServerArena::startWatchdog() {
  // Everything the child needs is made before fork: after it, no allocation.
  const std::string path = "/dev/shm" + segment_.name();
  rlimit files{};
  const int maxFd = ::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur != RLIM_INFINITY
                        ? static_cast<int>(std::min<rlim_t>(files.rlim_cur, 1 << 20))
                        : 1 << 16;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw SystemError("cannot make the staging arena's watchdog pipe", errno);
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw SystemError("cannot start the staging arena's watchdog", err);
  }
  if (pid == 0) watch(fds[0], path.c_str(), maxFd);
  ::close(fds[0]);
  watchdogFd_ = fds[1];
  watchdogPid_ = pid;
}

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
  const std::string suffix = kSuffix;
  while (dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    // "axon-<pid>-<random>-pe0-space-arena"
    if (name.rfind("axon-", 0) != 0 || name.size() <= suffix.size() ||
        name.compare(name.size() - suffix.size(), std::string::npos, suffix) != 0) {
      continue;
    }
    const int fd = ::shm_open(("/" + name).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0);
    if (fd < 0) continue;
    struct stat st{};
    timespec now{};
    ::clock_gettime(CLOCK_REALTIME, &now);
    const bool old = ::fstat(fd, &st) == 0 && now.tv_sec - st.st_ctim.tv_sec >= kStaleAfterSec;
    // Free lock: its server is dead, whatever its PID namespace.
    if (old && ::flock(fd, LOCK_EX | LOCK_NB) == 0) ::shm_unlink(("/" + name).c_str());
    ::close(fd);
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
