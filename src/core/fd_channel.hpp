// Passing file descriptors between the processes of a node (SCM_RIGHTS over a Unix datagram
// socket). The GPU heap exports each chunk of device memory as a file descriptor; peers receive
// it here and map the chunk.
//
// Each channel binds an abstract address that the kernel chooses (autobind), so concurrent jobs
// on one node never collide and nothing is left in the file system when a process dies. The
// address is published through the bootstrap store.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

namespace axon {

// Owns a file descriptor; closes it on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();
  int get() const { return fd_; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

class FdChannel {
 public:
  FdChannel();  // binds; throws SystemError
  FdChannel(FdChannel&&) = default;
  FdChannel& operator=(FdChannel&&) = default;

  // The address peers send to: printable (the kernel's autobind names are hex digits).
  const std::string& address() const { return address_; }

  // Sends `header` (at most kMaxHeader bytes) with a duplicate of `fd` (or none when fd < 0) to
  // the channel at `peerAddress`. A peer's queue holds only a few messages (the kernel's
  // max_dgram_qlen, often 10): while it is full, `whileFull` runs between retries, so that a
  // sender can drain its own queue and two PEs sending to each other cannot deadlock. Bounded by
  // `timeoutSec` (Timeout naming the address); other failures throw SystemError naming it (a
  // peer that has exited gives ECONNREFUSED).
  static constexpr std::size_t kMaxHeader = 256;
  void send(const std::string& peerAddress, const std::string& header, int fd, double timeoutSec,
            const std::function<void()>& whileFull = {}) const;

  struct Message {
    std::string header;
    UniqueFd fd;  // empty if the sender attached none
  };
  // The next message, or nullopt when none arrives within `timeoutSec`.
  std::optional<Message> receive(double timeoutSec) const;

 private:
  UniqueFd sock_;
  std::string address_;
};

}  // namespace axon
