#include "bootstrap/store_server.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "axon/error.hpp"
#include "bootstrap/wire.hpp"

namespace axon {
namespace {

// Binds to the address `host` resolves to when it is one of ours, else to every interface
// (a host name that resolves to another interface than the one we see still works).
int bindListener(const net::HostPort& addr, int& boundPort) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  std::string port = std::to_string(addr.port);
  int rc = ::getaddrinfo(addr.host.c_str(), port.c_str(), &hints, &res);
  int lastErr = 0;
  int fd = -1;
  auto tryBind = [&](const sockaddr* sa, socklen_t len, int family) {
    int s = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) { lastErr = errno; return -1; }
    int one = 1;
    ::setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(s, sa, len) == 0 && ::listen(s, 1024) == 0) return s;
    lastErr = errno;
    ::close(s);
    return -1;
  };
  if (rc == 0) {
    for (addrinfo* ai = res; ai && fd < 0; ai = ai->ai_next) fd = tryBind(ai->ai_addr, ai->ai_addrlen, ai->ai_family);
    ::freeaddrinfo(res);
  }
  if (fd < 0 && lastErr != EADDRINUSE) {
    sockaddr_in any{};
    any.sin_family = AF_INET;
    any.sin_port = htons(static_cast<uint16_t>(addr.port));
    any.sin_addr.s_addr = htonl(INADDR_ANY);
    fd = tryBind(reinterpret_cast<sockaddr*>(&any), sizeof(any), AF_INET);
  }
  if (fd < 0) {
    throw Error(ErrorCode::Bootstrap,
                "rank 0 cannot serve the axon store at " + addr.str() + ": " +
                    std::strerror(lastErr ? lastErr : EINVAL) +
                    (lastErr == EADDRINUSE ? " (another program or an earlier job holds the port; "
                                             "choose another with AXON_STORE_ADDR)"
                                           : ""));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  boundPort = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                          : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  return fd;
}

}  // namespace

StoreServer::StoreServer(const net::HostPort& addr) {
  listenFd_ = bindListener(addr, port_);
  net::setNonBlocking(listenFd_, true);
  if (::pipe2(wakePipe_, O_CLOEXEC) != 0) {
    ::close(listenFd_);
    throw SystemError("store server: pipe", errno);
  }
  thread_ = std::thread([this] { loop(); });
}

StoreServer::~StoreServer() {
  stop_ = true;
  if (wakePipe_[1] >= 0) {
    char c = 0;
    (void)!::write(wakePipe_[1], &c, 1);
  }
  if (thread_.joinable()) thread_.join();
  for (auto& [fd, c] : conns_) ::close(fd);
  if (listenFd_ >= 0) ::close(listenFd_);
  for (int fd : wakePipe_) if (fd >= 0) ::close(fd);
}

void StoreServer::shutdownAfterGoodbyes(int ranks, double timeoutSec) {
  // Other ranks may still be reading the reply to their last request: give them until they say
  // goodbye (or their connection drops) before closing the sockets under them.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSec);
  while (goodbyes_.load() < ranks && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  stop_ = true;
  char c = 0;
  (void)!::write(wakePipe_[1], &c, 1);
  if (thread_.joinable()) thread_.join();
}

void StoreServer::loop() {
  std::vector<pollfd> fds;
  while (!stop_) {
    fds.clear();
    fds.push_back({listenFd_, POLLIN, 0});
    fds.push_back({wakePipe_[0], POLLIN, 0});
    for (auto& [fd, c] : conns_) fds.push_back({fd, POLLIN, 0});
    int n = ::poll(fds.data(), fds.size(), 1000);
    if (n < 0 && errno != EINTR) break;
    if (n <= 0) continue;
    if (fds[0].revents & POLLIN) acceptOne();
    for (std::size_t i = 2; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      auto it = conns_.find(fds[i].fd);
      if (it == conns_.end()) continue;
      if (!readFrom(it->second)) closeConn(fds[i].fd);
    }
  }
}

void StoreServer::acceptOne() {
  while (true) {
    int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    conns_[fd].fd = fd;
  }
}

bool StoreServer::readFrom(Conn& c) {
  char buf[65536];
  while (true) {
    ssize_t r = ::recv(c.fd, buf, sizeof(buf), 0);
    if (r == 0) return false;
    if (r < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      return false;
    }
    c.in.append(buf, static_cast<std::size_t>(r));
  }
  while (c.in.size() >= 4) {
    std::uint32_t len;
    std::memcpy(&len, c.in.data(), 4);
    if (len > wire::kMaxFrame) return false;
    if (c.in.size() < 4 + len) break;
    std::string body = c.in.substr(4, len);
    c.in.erase(0, 4 + len);
    handleFrame(c, body);
  }
  return true;
}

void StoreServer::reply(int fd, const std::string& frame) {
  if (!net::sendAll(fd, frame.data(), frame.size())) {
    // The reader is gone; its connection is closed by the poll loop on the next round.
  }
}

void StoreServer::handleFrame(Conn& c, std::string_view body) {
  wire::Reader in(body);
  std::uint32_t id = 0;
  try {
    id = in.u32();
    auto op = static_cast<wire::Op>(in.u8());
    switch (op) {
      case wire::Op::Hello:
        c.rank = static_cast<int>(in.u32());
        reply(c.fd, wire::Writer(id, 0).frame());
        return;
      case wire::Op::Set: {
        std::string key = in.str();
        kv_[key] = in.str();
        reply(c.fd, wire::Writer(id, 0).frame());
        answerPending();
        return;
      }
      case wire::Op::Get: {
        PendingGet g{c.fd, id, {}};
        std::uint32_t n = in.u32();
        for (std::uint32_t i = 0; i < n; ++i) g.keys.push_back(in.str());
        if (!tryAnswer(g)) pending_.push_back(std::move(g));
        return;
      }
      case wire::Op::Check: {
        std::uint32_t n = in.u32();
        wire::Writer out(id, 0);
        out.u32(n);
        for (std::uint32_t i = 0; i < n; ++i) out.u8(kv_.count(in.str()) ? 1 : 0);
        reply(c.fd, out.frame());
        return;
      }
      case wire::Op::Add: {
        std::string key = in.str();
        std::int64_t delta = in.i64();
        std::int64_t value = 0;
        auto it = kv_.find(key);
        if (it != kv_.end() && it->second.size() == 8) std::memcpy(&value, it->second.data(), 8);
        value += delta;
        kv_[key] = std::string(reinterpret_cast<const char*>(&value), 8);
        reply(c.fd, wire::Writer(id, 0).i64(value).frame());
        answerPending();
        return;
      }
      case wire::Op::Del:
        kv_.erase(in.str());
        reply(c.fd, wire::Writer(id, 0).frame());
        return;
      case wire::Op::Bye:
        c.saidBye = true;
        ++goodbyes_;
        reply(c.fd, wire::Writer(id, 0).frame());
        return;
    }
    reply(c.fd, wire::Writer(id, static_cast<std::uint8_t>(wire::Status::BadRequest)).frame());
  } catch (const std::out_of_range&) {
    reply(c.fd, wire::Writer(id, static_cast<std::uint8_t>(wire::Status::BadRequest)).frame());
  }
}

bool StoreServer::tryAnswer(const PendingGet& g) {
  // Keys that are all there answer the get even after a PE left: a rendezvous whose last key the
  // departed PE set before it exited is complete, and its slower members must still see it.
  bool complete = true;
  for (const auto& k : g.keys) complete = complete && kv_.count(k) != 0;
  if (!complete && goneRanks_.empty()) return false;
  if (!complete) {
    std::string who;
    for (int r : goneRanks_) who += (who.empty() ? "" : ", ") + std::to_string(r);
    wire::Writer out(g.id, static_cast<std::uint8_t>(wire::Status::PeerGone));
    out.str("PE " + who + " disconnected from the store without finalize (exited or crashed)");
    reply(g.fd, out.frame());
    return true;
  }
  wire::Writer out(g.id, 0);
  out.u32(static_cast<std::uint32_t>(g.keys.size()));
  for (const auto& k : g.keys) out.str(kv_[k]);
  reply(g.fd, out.frame());
  return true;
}

void StoreServer::answerPending() {
  std::vector<PendingGet> still;
  for (auto& g : pending_) {
    if (!tryAnswer(g)) still.push_back(std::move(g));
  }
  pending_.swap(still);
}

void StoreServer::closeConn(int fd) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  if (!it->second.saidBye) {
    if (it->second.rank >= 0) {
      goneRanks_.insert(it->second.rank);
      ++goodbyes_;  // it will not say goodbye now; do not wait for it at shutdown
    }
  }
  ::close(fd);
  conns_.erase(it);
  std::erase_if(pending_, [fd](const PendingGet& g) { return g.fd == fd; });
  if (!goneRanks_.empty()) answerPending();
}

}  // namespace axon
