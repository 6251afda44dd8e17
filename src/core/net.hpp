// Small socket helpers shared by the store server and client.
#pragma once

#include <string>

namespace axon::net {

struct HostPort {
  std::string host;
  int port = 0;
  std::string str() const { return host + ":" + std::to_string(port); }
};

// "host:port" or "[v6addr]:port". Throws InvalidArgument naming `origin` on a malformed value.
HostPort parseHostPort(const std::string& text, const std::string& origin);

// Writes all bytes (MSG_NOSIGNAL); returns false when the peer is gone.
bool sendAll(int fd, const void* data, std::size_t n);

// Sets O_NONBLOCK / FD_CLOEXEC.
void setNonBlocking(int fd, bool on);

}  // namespace axon::net
