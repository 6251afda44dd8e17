#include "bootstrap/store_client.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "axon/error.hpp"
#include "bootstrap/wire.hpp"
#include "core/log.hpp"

namespace axon {
namespace {

using Clock = std::chrono::steady_clock;

// Connects `fd` without blocking past `deadline` (a host that drops packets would otherwise hold
// a blocking connect for minutes of kernel retries). Returns 0 or an errno.
int connectBefore(int fd, const sockaddr* sa, socklen_t len, Clock::time_point deadline) {
  net::setNonBlocking(fd, true);
  if (::connect(fd, sa, len) == 0) return 0;
  if (errno != EINPROGRESS) return errno;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return ETIMEDOUT;
    pollfd pfd{fd, POLLOUT, 0};
    int n = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno != EINTR) return errno;
    if (n <= 0) continue;
    int soErr = 0;
    socklen_t soLen = sizeof(soErr);
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &soErr, &soLen);
    return soErr;
  }
}

// One connection attempt; returns a blocking socket or -1 with `err` set.
int connectOnce(const net::HostPort& addr, Clock::time_point deadline, int& err, std::string& errText) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string port = std::to_string(addr.port);
  int rc = ::getaddrinfo(addr.host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) {
    err = EHOSTUNREACH;
    errText = std::string("cannot resolve host '") + addr.host + "': " + ::gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    err = connectBefore(fd, ai->ai_addr, ai->ai_addrlen, deadline);
    if (err == 0) {
      net::setNonBlocking(fd, false);
      break;
    }
    errText = std::strerror(err);
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(res);
  return fd;
}

}  // namespace

StoreClient::StoreClient(const net::HostPort& addr, const std::string& origin, int rank,
                         double timeoutSec)
    : addr_(addr), origin_(origin), rank_(rank), timeoutSec_(timeoutSec) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeoutSec));
  int err = 0;
  std::string errText;
  int attempts = 0;
  while (true) {
    ++attempts;
    fd_ = connectOnce(addr_, deadline, err, errText);
    if (fd_ >= 0) break;
    if (Clock::now() >= deadline) {
      throw Error(ErrorCode::Bootstrap,
                  "PE " + std::to_string(rank) + ": cannot reach the axon store at " + addr_.str() +
                      " (from " + origin_ + ") after " + secondsText(timeoutSec) + " and " +
                      std::to_string(attempts) + " attempts: " + errText +
                      ". Rank 0 serves the store: check that it started, that the address is "
                      "reachable from this host, and that no firewall blocks the port "
                      "(AXON_TIMEOUT bounds this wait)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(attempts < 20 ? 10 : 100));
  }
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  std::uint8_t status = 0;
  std::uint32_t id = nextId();
  roundTrip(wire::Writer(id, static_cast<std::uint8_t>(wire::Op::Hello))
                .u32(static_cast<std::uint32_t>(rank))
                .frame(),
            id, "hello", status);
}

StoreClient::~StoreClient() {
  if (fd_ >= 0) ::close(fd_);
}

std::string StoreClient::roundTrip(const std::string& frame, std::uint32_t id,
                                   const std::string& what, std::uint8_t& status) {
  if (fd_ < 0) {
    throw Error(ErrorCode::Bootstrap, "PE " + std::to_string(rank_) + ": the connection to the "
                                      "axon store at " + addr_.str() + " is closed");
  }
  if (!net::sendAll(fd_, frame.data(), frame.size())) {
    throw Error(ErrorCode::Bootstrap, "PE " + std::to_string(rank_) + ": lost the connection to "
                                      "the axon store at " + addr_.str() + " during " + what +
                                      " (rank 0 exited?)");
  }
  auto deadline = Clock::now() + std::chrono::duration<double>(timeoutSec_);
  while (true) {
    // A complete frame in the buffer: return it if it answers this request; drop stale replies
    // to requests that timed out earlier.
    while (in_.size() >= 4) {
      std::uint32_t len;
      std::memcpy(&len, in_.data(), 4);
      if (in_.size() < 4 + len) break;
      std::string body = in_.substr(4, len);
      in_.erase(0, 4 + len);
      wire::Reader r(body);
      std::uint32_t gotId = r.u32();
      if (gotId != id) continue;
      status = r.u8();
      return body.substr(5);
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      throw Error(ErrorCode::Timeout, "PE " + std::to_string(rank_) + ": " + what +
                                          " at the axon store " + addr_.str() + " timed out after " +
                                          secondsText(timeoutSec_) + " (AXON_TIMEOUT)");
    }
    pollfd pfd{fd_, POLLIN, 0};
    int n = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (n < 0 && errno != EINTR) throw SystemError("store client poll", errno);
    if (n <= 0) continue;
    char buf[65536];
    ssize_t got = ::recv(fd_, buf, sizeof(buf), 0);
    if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
      ::close(fd_);
      fd_ = -1;
      throw Error(ErrorCode::PeerDead, "PE " + std::to_string(rank_) + ": the axon store at " +
                                           addr_.str() + " closed the connection during " + what +
                                           ": PE 0, which serves it, exited or crashed");
    }
    if (got > 0) in_.append(buf, static_cast<std::size_t>(got));
  }
}

void StoreClient::set(const std::string& key, const std::string& value) {
  std::lock_guard lock(mu_);
  std::uint32_t id = nextId();
  std::uint8_t status = 0;
  roundTrip(wire::Writer(id, static_cast<std::uint8_t>(wire::Op::Set)).str(key).str(value).frame(),
            id, "set '" + key + "'", status);
}

std::vector<std::string> StoreClient::get(const std::vector<std::string>& keys,
                                          const std::string& what,
                                          const std::vector<std::string>& labels) {
  std::lock_guard lock(mu_);
  std::uint32_t id = nextId();
  wire::Writer w(id, static_cast<std::uint8_t>(wire::Op::Get));
  w.u32(static_cast<std::uint32_t>(keys.size()));
  for (const auto& k : keys) w.str(k);
  std::uint8_t status = 0;
  std::string body;
  try {
    body = roundTrip(w.frame(), id, what, status);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::Timeout) throw;
    // Say which keys never arrived: for rendezvous keys that names the missing ranks.
    auto present = check(keys);
    std::string missing;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (present[i]) continue;
      missing += missing.empty() ? "" : ", ";
      missing += labels.empty() ? "'" + keys[i] + "'" : labels[i];
    }
    throw Error(ErrorCode::Timeout, std::string(e.what()) + "; still missing: " + missing);
  }
  wire::Reader r(body);
  if (status == static_cast<std::uint8_t>(wire::Status::PeerGone)) {
    throw Error(ErrorCode::PeerDead, "PE " + std::to_string(rank_) + ": " + what + " failed: " + r.str());
  }
  std::vector<std::string> values(r.u32());
  for (auto& v : values) v = r.str();
  return values;
}

std::vector<bool> StoreClient::check(const std::vector<std::string>& keys) {
  std::lock_guard lock(mu_);
  std::uint32_t id = nextId();
  wire::Writer w(id, static_cast<std::uint8_t>(wire::Op::Check));
  w.u32(static_cast<std::uint32_t>(keys.size()));
  for (const auto& k : keys) w.str(k);
  std::uint8_t status = 0;
  std::string body = roundTrip(w.frame(), id, "check", status);
  wire::Reader r(body);
  std::vector<bool> present(r.u32());
  for (std::size_t i = 0; i < present.size(); ++i) present[i] = r.u8() != 0;
  return present;
}

std::int64_t StoreClient::add(const std::string& key, std::int64_t delta) {
  std::lock_guard lock(mu_);
  std::uint32_t id = nextId();
  std::uint8_t status = 0;
  std::string body = roundTrip(
      wire::Writer(id, static_cast<std::uint8_t>(wire::Op::Add)).str(key).i64(delta).frame(), id,
      "add '" + key + "'", status);
  return wire::Reader(body).i64();
}

void StoreClient::del(const std::string& key) {
  std::lock_guard lock(mu_);
  std::uint32_t id = nextId();
  std::uint8_t status = 0;
  roundTrip(wire::Writer(id, static_cast<std::uint8_t>(wire::Op::Del)).str(key).frame(), id,
            "del '" + key + "'", status);
}

void StoreClient::bye() {
  std::lock_guard lock(mu_);
  if (fd_ < 0) return;
  std::uint32_t id = nextId();
  std::uint8_t status = 0;
  try {
    roundTrip(wire::Writer(id, static_cast<std::uint8_t>(wire::Op::Bye)).frame(), id, "goodbye",
              status);
  } catch (const Error&) {
    // Leaving anyway: a store that is already gone needs no goodbye.
  }
  ::close(fd_);
  fd_ = -1;
}

}  // namespace axon

