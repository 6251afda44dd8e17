// One PE's heap as a POSIX shared-memory object, mapped into a reserved address range.
// The owner grows the object (and reserves its pages, so a full /dev/shm is an error now rather
// than a SIGBUS later); peers map what the owner has grown. Nothing beyond the mapped size holds
// physical memory.
#pragma once

#include <cstddef>
#include <string>

namespace axon {

// A name no other process uses: "/axon-<pid>-<random>-pe<pe><suffix>".
std::string freshShmName(int pe, const char* suffix = "");

class ShmSegment {
 public:
  // The owner: creates `name` (must not exist).
  static ShmSegment create(const std::string& name, std::size_t reserve);
  // A peer: opens the object another PE created.
  static ShmSegment open(const std::string& name, std::size_t reserve);

  ShmSegment(ShmSegment&& other) noexcept;
  ShmSegment& operator=(ShmSegment&& other) noexcept;
  ~ShmSegment();

  // Maps [mapped(), bytes) (bytes is rounded up to the page size). The owner first extends the
  // object; throws OutOfMemory when the backing file system is full or `bytes` > reserve.
  void growTo(std::size_t bytes);
  // Removes the name; mappings and the open descriptor stay valid.
  void unlinkName();

  char* base() const { return base_; }
  std::size_t mapped() const { return mapped_; }
  std::size_t reserved() const { return reserve_; }
  const std::string& name() const { return name_; }

 private:
  ShmSegment(std::string name, int fd, std::size_t reserve, bool owner);
  void release() noexcept;

  std::string name_;
  int fd_ = -1;
  char* base_ = nullptr;
  std::size_t reserve_ = 0;
  std::size_t mapped_ = 0;
  bool owner_ = false;
  bool linked_ = false;
};

}  // namespace axon
