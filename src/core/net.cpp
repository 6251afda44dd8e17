#include "core/net.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <charconv>

#include "axon/error.hpp"

namespace axon::net {

HostPort parseHostPort(const std::string& text, const std::string& origin) {
  auto bad = [&] {
    return Error(ErrorCode::InvalidArgument,
                 "store address '" + text + "' (" + origin + ") is not host:port");
  };
  auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) throw bad();
  HostPort hp;
  hp.host = text.substr(0, colon);
  if (hp.host.size() > 2 && hp.host.front() == '[' && hp.host.back() == ']') {
    hp.host = hp.host.substr(1, hp.host.size() - 2);
  }
  const char* first = text.data() + colon + 1;
  const char* last = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(first, last, hp.port);
  if (ec != std::errc() || ptr != last || hp.port < 0 || hp.port > 65535) throw bad();
  return hp;
}

bool sendAll(int fd, const void* data, std::size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        // A reader that stops reading for this long is stuck or gone: drop it rather than stall.
        pollfd pfd{fd, POLLOUT, 0};
        if (::poll(&pfd, 1, 10000) > 0) continue;
      }
      return false;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

void setNonBlocking(int fd, bool on) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  ::fcntl(fd, F_SETFL, on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK));
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
}

}  // namespace axon::net
