// A staging server's memory: one POSIX shared-memory object bounded by --mem, grown as pieces need
// it (never past --mem, its pages taken when grown so that a full /dev/shm is an error then, not a
// crash later), locked in memory where the system allows (pinned: never swapped out). Clients on
// the server's node map it too, and move data in and out with one copy of their own (a memcpy, or
// one DMA for GPU memory) instead of through the network.
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

  // Removes shared-memory objects of staging servers whose process is gone (killed before they
  // could remove their own).
  static void removeStale();

 private:
  ShmSegment segment_;
  std::uint64_t capacity_;
  bool locked_ = false;
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
