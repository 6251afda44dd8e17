// A staging server's arena is reclaimed by liveness that works across PID namespaces: a free lock
// says its server is dead, whatever process ids say (space/arena.hpp).
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "space/arena.hpp"

namespace axon::space {
namespace {

bool exists(const std::string& name) {
  struct stat st{};
  return ::stat(("/dev/shm" + name).c_str(), &st) == 0;
}

TEST(SpaceArena, AFreeLockIsStaleEvenUnderALivePidAndALockedArenaStays) {
  ServerArena live(4 << 20);
  // An arena whose server died without a trace: the pid in its name is this (live) process's,
  // which kill(pid, 0) would have taken for its owner.
  const std::string stale = "/axon-" + std::to_string(::getpid()) + "-0badf00d-pe0-space-arena";
  const int fd = ::shm_open(stale.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0);
  ::close(fd);
  ServerArena::removeStale();
  EXPECT_TRUE(exists(stale)) << "too young: its server may not have locked it yet";
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  ServerArena::removeStale();
  EXPECT_FALSE(exists(stale));
  EXPECT_TRUE(exists(live.name())) << "its lock is held: never removed";
  ::shm_unlink(stale.c_str());
}

TEST(SpaceArena, TheWatchdogRemovesTheArenaOfAServerKilledWithSigkill) {
  int names[2];
  ASSERT_EQ(::pipe(names), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ServerArena arena(4 << 20);
    const std::string name = arena.name();
    (void)!::write(names[1], name.c_str(), name.size() + 1);
    ::pause();  // until killed
    ::_exit(0);
  }
  ::close(names[1]);
  char buf[256] = {};
  std::size_t got = 0;
  while (got < sizeof(buf) - 1) {
    const ssize_t n = ::read(names[0], buf + got, sizeof(buf) - 1 - got);
    if (n <= 0 || buf[got + n - 1] == '\0') {
      got += n > 0 ? static_cast<std::size_t>(n) : 0;
      break;
    }
    got += static_cast<std::size_t>(n);
  }
  ::close(names[0]);
  const std::string name(buf);
  ASSERT_FALSE(name.empty());
  EXPECT_TRUE(exists(name));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (exists(name) && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(exists(name)) << name << " left in /dev/shm";
  ::shm_unlink(name.c_str());
}

TEST(SpaceArena, AnArenaGoneNormallyTakesItsWatchdogWithIt) {
  std::string name;
  {
    ServerArena arena(4 << 20);
    name = arena.name();
    EXPECT_TRUE(exists(name));
  }
  EXPECT_FALSE(exists(name));
}

}  // namespace
}  // namespace axon::space
