// What the store's unit tests share: the job key every client in them proves (as every PE of a
// job proves the job's), a server's options with it, and raw sockets for playing a stranger.
#pragma once

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "bootstrap/store_server.hpp"
#include "bootstrap/wire.hpp"
#include "core/secret.hpp"

namespace axon::test {

inline const Secret& jobKey() {
  static const Secret key = Secret::fromHex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", "the test key");
  return key;
}

inline const char* kKeySource = "the test key";

// A store for a job of `worldSize` PEs proving jobKey().
inline StoreServerOptions storeOptions(double replyTimeoutSec = 60.0, std::string version = "", int worldSize = 16) {
  StoreServerOptions o;
  o.key = jobKey();
  o.worldSize = worldSize;
  o.replyTimeoutSec = replyTimeoutSec;
  o.version = std::move(version);
  return o;
}

inline double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A blocking TCP connection to the loopback port.
inline int connectRaw(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) ADD_FAILURE() << "connect: " << std::strerror(errno);
  return fd;
}

// A loopback listener on a free port (set in `port`), for a fake store.
inline int listenRaw(int& port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(sa);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), len) != 0 || ::listen(fd, 4) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    ADD_FAILURE() << "cannot listen on loopback: " << std::strerror(errno);
  }
  port = ntohs(sa.sin_port);
  return fd;
}

inline void sendRaw(int fd, const std::string& bytes) {
  ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
}

// One whole frame (length word included), or "" when the peer closes first (or nothing comes in
// 5 s). Reads no byte past the frame.
inline std::string readFrame(int fd) {
  std::string got;
  char buf[4096];
  while (true) {
    std::size_t want = 4;
    if (got.size() >= 4) want = 4 + std::size_t{wire::lengthWord(got)};
    if (got.size() >= want) return got.substr(0, want);
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, 5000) <= 0) return "";
    const ssize_t n = ::recv(fd, buf, std::min(sizeof buf, want - got.size()), 0);
    if (n <= 0) return "";
    got.append(buf, static_cast<std::size_t>(n));
  }
}

}  // namespace axon::test
