// Small socket helpers shared by the store server and client.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <string>

namespace axon::net {

struct HostPort {
  std::string host;
  int port = 0;
  std::string str() const { return host + ":" + std::to_string(port); }
};

// "host:port" or "[v6addr]:port". Throws InvalidArgument naming `origin` on a malformed value.
HostPort parseHostPort(const std::string& text, const std::string& origin);

enum class SendResult { Sent, Gone, TimedOut };
// Writes all bytes to a non-blocking socket (MSG_NOSIGNAL), waiting for room until `deadline`.
// Gone: the peer closed or reset. TimedOut: the peer stopped reading; part of the bytes may have
// been sent, so the stream is torn and the connection must be closed.
SendResult sendAll(int fd, const void* data, std::size_t n, std::chrono::steady_clock::time_point deadline);

// A loopback TCP port that is free now, for tests and benchmarks that start a store of their own
// at a known address (another program may take it in between: use it at once).
int freeLoopbackPort();

// The address other hosts reach this one at: the first up, non-loopback IPv4 interface's, else
// 127.0.0.1 (a machine with loopback only). For servers bound to every interface.
std::string primaryAddress();

// "10.0.0.7:41234": the host and port of a socket address (IPv4 or IPv6, without brackets), for messages.
std::string describeSockaddr(const sockaddr_storage& ss);

// Sets O_NONBLOCK / FD_CLOEXEC.
void setNonBlocking(int fd, bool on);

}  // namespace axon::net
