#include "core/fd_channel.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>
#include <cstring>

#include "axon/error.hpp"

namespace axon {
namespace {

// Abstract addresses start with a NUL byte; the rest is the name.
socklen_t abstractAddress(const std::string& name, sockaddr_un& addr) {
  std::memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  if (name.size() + 1 > sizeof(addr.sun_path)) {
    throw Error(ErrorCode::InvalidArgument, "fd channel address '" + name + "' is too long");
  }
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
}

int pollMs(double seconds) {
  if (seconds <= 0) return 0;
  double ms = seconds * 1000.0;
  return ms > 2e9 ? 2000000000 : static_cast<int>(ms) + 1;
}

}  // namespace

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

FdChannel::FdChannel() {
  sock_ = UniqueFd(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!sock_) throw SystemError("cannot create the Unix socket that passes GPU memory handles", errno);
  // Binding only the family asks the kernel for a unique abstract name.
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (::bind(sock_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(sa_family_t)) != 0) {
    throw SystemError("cannot bind the Unix socket that passes GPU memory handles", errno);
  }
  socklen_t len = sizeof(addr);
  if (::getsockname(sock_.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw SystemError("getsockname on the handle-passing socket", errno);
  }
  std::size_t nameLen = len - offsetof(sockaddr_un, sun_path);
  if (nameLen < 2 || addr.sun_path[0] != '\0') {
    throw Error(ErrorCode::System, "the kernel did not give the handle-passing socket an abstract address");
  }
  address_.assign(addr.sun_path + 1, nameLen - 1);
}

void FdChannel::send(const std::string& peerAddress, const std::string& header, int fd, double timeoutSec,
                     const std::function<void()>& whileFull) const {
  if (header.size() > kMaxHeader) {
    throw Error(ErrorCode::Internal, "fd channel header of " + std::to_string(header.size()) + " bytes");
  }
  sockaddr_un addr{};
  socklen_t addrLen = abstractAddress(peerAddress, addr);
  iovec iov{const_cast<char*>(header.data()), header.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_name = &addr;
  msg.msg_namelen = addrLen;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (fd >= 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  // A full queue on the receiving side gives EAGAIN (poll cannot wait for it on an unconnected
  // datagram socket), so retry with short sleeps until the deadline.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSec);
  while (true) {
    if (::sendmsg(sock_.get(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0) return;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      throw SystemError("cannot pass a GPU memory handle to the peer socket @" + peerAddress, errno);
    }
    if (std::chrono::steady_clock::now() > deadline) {
      throw Error(ErrorCode::Timeout, "passing a GPU memory handle to the peer socket @" + peerAddress +
                                          " timed out after " + std::to_string(timeoutSec) +
                                          " s: the peer is not receiving");
    }
    if (whileFull) whileFull();
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

std::optional<FdChannel::Message> FdChannel::receive(double timeoutSec) const {
  pollfd p{sock_.get(), POLLIN, 0};
  int r;
  do {
    r = ::poll(&p, 1, pollMs(timeoutSec));
  } while (r < 0 && errno == EINTR);
  if (r < 0) throw SystemError("poll on the handle-passing socket", errno);
  if (r == 0) return std::nullopt;
  char buf[kMaxHeader];
  iovec iov{buf, sizeof(buf)};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = ::recvmsg(sock_.get(), &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return std::nullopt;
    throw SystemError("recvmsg on the handle-passing socket", errno);
  }
  Message m;
  m.header.assign(buf, static_cast<std::size_t>(n));
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    int count = static_cast<int>((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    for (int i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (i == 0 && !m.fd) m.fd = UniqueFd(fd);
      else ::close(fd);  // we send one per message; never leak extras
    }
  }
  if (msg.msg_flags & MSG_TRUNC) {
    throw Error(ErrorCode::Internal, "a handle-passing message was truncated");
  }
  return m;
}

}  // namespace axon
