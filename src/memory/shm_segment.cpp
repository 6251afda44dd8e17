#include "memory/shm_segment.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <utility>

#include "axon/error.hpp"

namespace axon {

std::string freshShmName(int pe, const char* suffix) {
  std::random_device rd;
  char buf[96];
  std::snprintf(buf, sizeof(buf), "/axon-%d-%08x-pe%d%s", static_cast<int>(::getpid()), rd(), pe, suffix);
  return buf;
}

namespace {

std::size_t pageSize() {
  static const std::size_t ps = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return ps;
}

std::size_t roundToPage(std::size_t v) { return (v + pageSize() - 1) / pageSize() * pageSize(); }

std::string shmFreeText() {
  struct statvfs st {};
  if (::statvfs("/dev/shm", &st) != 0) return "";
  double freeMiB = static_cast<double>(st.f_bavail) * st.f_frsize / (1024.0 * 1024.0);
  double totalMiB = static_cast<double>(st.f_blocks) * st.f_frsize / (1024.0 * 1024.0);
  return " (/dev/shm: " + std::to_string(static_cast<long long>(freeMiB)) + " MiB free of " +
         std::to_string(static_cast<long long>(totalMiB)) + " MiB)";
}

}  // namespace

ShmSegment::ShmSegment(std::string name, int fd, std::size_t reserve, bool owner)
    : name_(std::move(name)), fd_(fd), reserve_(roundToPage(reserve)), owner_(owner), linked_(owner) {
  // Address space only: PROT_NONE + MAP_NORESERVE commits no memory.
  void* p = ::mmap(nullptr, reserve_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    int err = errno;
    release();
    throw SystemError("cannot reserve " + std::to_string(reserve_ >> 20) +
                          " MiB of address space for the symmetric heap (lower AXON_HEAP_MAX)",
                      err);
  }
  base_ = static_cast<char*>(p);
}

ShmSegment ShmSegment::create(const std::string& name, std::size_t reserve) {
  int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw SystemError("cannot create shared memory object '" + name + "'", errno);
  return ShmSegment(name, fd, reserve, true);
}

ShmSegment ShmSegment::open(const std::string& name, std::size_t reserve) {
  int fd = ::shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) {
    throw SystemError("cannot open shared memory object '" + name + "' of a peer PE "
                      "(do the PEs share /dev/shm? set AXON_LOG=debug for details)", errno);
  }
  return ShmSegment(name, fd, reserve, false);
}

ShmSegment::ShmSegment(ShmSegment&& o) noexcept { *this = std::move(o); }

ShmSegment& ShmSegment::operator=(ShmSegment&& o) noexcept {
  if (this != &o) {
    release();
    name_ = std::move(o.name_);
    fd_ = std::exchange(o.fd_, -1);
    base_ = std::exchange(o.base_, nullptr);
    reserve_ = std::exchange(o.reserve_, 0);
    mapped_ = std::exchange(o.mapped_, 0);
    owner_ = o.owner_;
    linked_ = std::exchange(o.linked_, false);
  }
  return *this;
}

ShmSegment::~ShmSegment() { release(); }

void ShmSegment::release() noexcept {
  if (base_) ::munmap(base_, reserve_);
  if (fd_ >= 0) ::close(fd_);
  if (linked_) ::shm_unlink(name_.c_str());
  base_ = nullptr;
  fd_ = -1;
  linked_ = false;
}

void ShmSegment::unlinkName() {
  if (linked_) ::shm_unlink(name_.c_str());
  linked_ = false;
}

void ShmSegment::growTo(std::size_t bytes) {
  bytes = roundToPage(bytes);
  if (bytes <= mapped_) return;
  if (bytes > reserve_) {
    throw Error(ErrorCode::OutOfMemory, "the symmetric heap would need " + std::to_string(bytes) +
                                            " bytes, more than its cap of " +
                                            std::to_string(reserve_) + " (raise AXON_HEAP_MAX)");
  }
  if (owner_) {
    if (::ftruncate(fd_, static_cast<off_t>(bytes)) != 0) {
      throw SystemError("cannot grow the symmetric heap to " + std::to_string(bytes) + " bytes" +
                            shmFreeText(),
                        errno);
    }
    // Take the pages now: on tmpfs an untouched page past the free space would SIGBUS on first use.
    int rc = ::posix_fallocate(fd_, static_cast<off_t>(mapped_), static_cast<off_t>(bytes - mapped_));
    if (rc != 0) {
      (void)!::ftruncate(fd_, static_cast<off_t>(mapped_));
      throw Error(ErrorCode::OutOfMemory,
                  "cannot grow the symmetric heap to " + std::to_string(bytes) +
                      " bytes: " + std::strerror(rc) + shmFreeText() +
                      "; free memory, enlarge /dev/shm, or allocate less");
    }
  }
  void* p = ::mmap(base_ + mapped_, bytes - mapped_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
                   fd_, static_cast<off_t>(mapped_));
  if (p == MAP_FAILED) {
    throw SystemError("cannot map " + std::to_string(bytes - mapped_) + " bytes of heap '" + name_ + "'",
                      errno);
  }
  mapped_ = bytes;
}

}  // namespace axon
