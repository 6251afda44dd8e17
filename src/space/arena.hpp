// A staging server's memory: one POSIX shared-memory object bounded by --mem, grown as pieces need
// it (never past --mem, its pages taken when grown so that a full /dev/shm is an error then, not a
// crash later), locked in memory where the system allows (pinned: never swapped out). Clients on
// the server's node map it too, and move data in and out with one copy of their own (a memcpy, or
// one DMA for GPU memory) instead of through the network.
//
// Nothing is left in /dev/shm when the server dies, however it dies: a watchdog process forked at
// creation (it keeps no file of the server's open, only a pipe) removes the name once the pipe
// says the server is gone, kill -9 included. Where even the watchdog was killed, the next server
// reclaims the arena: a live server holds an flock on its arena, and a lock that is free means
// its holder is dead, in any PID namespace (a process id would say nothing across namespaces that
// share /dev/shm, and could name some other live process).
#pragma once

#include <cstdint>
#include <string>

#include "memory/shm_segment.hpp"

namespace axon::space {

// The arena grows in these steps on the server and is mapped in them by clients, so that a chunk
// is whole wherever any byte of it is in use: clients pin it for the GPU one chunk at a time.
constexpr std::uint64_t kArenaChunk = 64ull << 20;

class ServerArena {
 public:
  explicit ServerArena(std::uint64_t capacity);
  ~ServerArena();
  ServerArena(const ServerArena&) = delete;
  ServerArena& operator=(const ServerArena&) = delete;

  // Makes [0, end) usable; throws SpaceFull when the system cannot give the memory.
  void ensure(std::uint64_t end);
  char* at(std::uint64_t offset) const { return segment_.base() + offset; }
  const std::string& name() const { return segment_.name(); }
  std::uint64_t capacity() const { return capacity_; }
  std::uint64_t mapped() const { return segment_.mapped(); }
  bool locked() const { return locked_; }

  // Removes the arenas of staging servers that are gone (their lock is free) and that were
  // created more than a moment ago (a server locks its arena right after creating it).
  static void removeStale();

 private:
  void lockName();
  void startWatchdog();

  ShmSegment segment_;
  std::uint64_t capacity_;
  bool locked_ = false;
  int lockFd_ = -1;      // holds the flock that says this server lives
  int watchdogFd_ = -1;  // the pipe's write end: closed (by our end, however it comes) wakes the watchdog
  int watchdogPid_ = -1;
};

// A client's mapping of a server's arena, grown as offsets need.
class ArenaView {
 public:
  ArenaView(const std::string& name, std::uint64_t capacity);
  // [offset, offset + bytes) mapped here; throws when it lies past the arena.
  char* at(std::uint64_t offset, std::uint64_t bytes);
  char* base() const { return segment_.base(); }

 private:
  ShmSegment segment_;
};

}  // namespace axon::space
