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
#include <functional>
#include <string_view>
#include <thread>

#include "axon/error.hpp"
#include "bootstrap/wire.hpp"
#include "core/build_version.hpp"
#include "core/log.hpp"
#include "bootstrap/store_handshake.hpp"

namespace axon {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point after(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

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

// One connection attempt; returns a non-blocking socket or -1 with `err` set.
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
    if (err == 0) break;
    errText = std::strerror(err);
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(res);
  return fd;
}

// Reads from the non-blocking `fd` into `buffer` until it holds a whole frame of at most `maxLen`
// bytes or `deadline` passes. Returns the frame's size (length word included); 0 when the peer
// closed first. Throws Malformed for a length no frame of the handshake may have, Timeout-like
// conditions as -1.
long readFrameBefore(int fd, std::string& buffer, std::uint32_t maxLen, Clock::time_point deadline) {
  while (true) {
    if (const std::size_t n = wire::completeFrameBytes(buffer, maxLen)) return static_cast<long>(n);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return -1;
    pollfd pfd{fd, POLLIN, 0};
    const int ready = ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 100)));
    if (ready <= 0) continue;
    char buf[4096];
    const ssize_t r = ::recv(fd, buf, sizeof(buf), 0);
    if (r > 0) {
      buffer.append(buf, static_cast<std::size_t>(r));
    } else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      return 0;
    }
  }
}

}  // namespace

StoreClient::StoreClient(const net::HostPort& addr, const std::string& origin, int rank, double timeoutSec,
                         const Secret& key, const std::string& keySource, std::string version)
    : addr_(addr), origin_(origin), rank_(rank), timeoutSec_(timeoutSec) {
  if (key.empty()) throw Error(ErrorCode::Internal, "PE " + std::to_string(rank) + ": a store client without the job key");
  if (version.empty()) version = buildVersion();
  const auto deadline = after(timeoutSec);
  int err = 0;
  std::string errText;
  int attempts = 0;
  while (true) {
    ++attempts;
    fd_ = connectOnce(addr_, deadline, err, errText);
    if (fd_ >= 0) {
      int one = 1;
      ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      bool done = false;
      try {
        done = handshake(key, keySource, version, deadline);
      } catch (...) {
        ::close(fd_);
        fd_ = -1;
        throw;
      }
      if (done) return;
      // Closed before the handshake ended: the store had too many connections waiting (it drops
      // the oldest) or ran out of descriptors. Try again, as while rank 0 starts.
      ::close(fd_);
      fd_ = -1;
      errText = "the store closed the connection during the handshake: it drops the oldest connection when more than "
                "64 + (PEs) have not proven the job key, or when it runs out of file descriptors (many connections to "
                "its port from elsewhere?)";
    }
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
}

bool StoreClient::handshake(const Secret& key, const std::string& keySource, const std::string& version,
                            Clock::time_point deadline) {
  const std::string at = "PE " + std::to_string(rank_) + ": the axon store at " + addr_.str() + " (from " + origin_ + ")";
  std::string buffer;
  long n = 0;
  try {
    n = readFrameBefore(fd_, buffer, wire::kMaxHelloFrame, deadline);
  } catch (const wire::Malformed& e) {
    throw Error(ErrorCode::Bootstrap, at + " did not greet as an axon store of this build (" + e.what() +
                                          "): another program holds the port, or rank 0 runs another axon build");
  }
  if (n == 0) return false;
  if (n < 0) {
    throw Error(ErrorCode::Timeout, at + " accepted the connection but sent no greeting within " + secondsText(timeoutSec_) +
                                        " (AXON_TIMEOUT): rank 0 runs an axon build from before the job key, or another "
                                        "program holds the port");
  }
  Nonce storeNonce{};
  std::uint16_t theirVersion = 0;
  try {
    storeNonce = wire::decodeGreeting(std::string_view(buffer).substr(4, static_cast<std::size_t>(n) - 4), theirVersion);
  } catch (const wire::Malformed& e) {
    if (theirVersion != 0 && theirVersion != wire::kWireVersion) {
      throw Error(ErrorCode::Bootstrap, at + " speaks store protocol version " + std::to_string(theirVersion) +
                                            " and this PE (axon " + version + ") version " +
                                            std::to_string(wire::kWireVersion) + ": every PE must run the same axon build");
    }
    throw Error(ErrorCode::Bootstrap, at + " did not greet as an axon store (" + e.what() + ")");
  }
  buffer.erase(0, static_cast<std::size_t>(n));
  wire::HelloClaims claims;
  claims.clientNonce = makeNonce();
  claims.rank = static_cast<std::uint32_t>(rank_);
  claims.version = version.substr(0, wire::kMaxVersionText);
  const std::uint32_t id = nextId();
  const std::string hello = wire::encodeHello(id, key, storeNonce, claims);
  switch (net::sendAll(fd_, hello.data(), hello.size(), deadline)) {
    case net::SendResult::Sent: break;
    case net::SendResult::Gone: return false;
    case net::SendResult::TimedOut:
      throw Error(ErrorCode::Timeout, at + " did not take this PE's hello within " + secondsText(timeoutSec_) + " (AXON_TIMEOUT)");
  }
  try {
    n = readFrameBefore(fd_, buffer, wire::kMaxFrame, deadline);
  } catch (const wire::Malformed& e) {
    throw Error(ErrorCode::Bootstrap, at + " answered the hello with a corrupt frame (" + e.what() + ")");
  }
  if (n == 0) return false;
  if (n < 0) {
    throw Error(ErrorCode::Timeout, at + " did not answer this PE's hello within " + secondsText(timeoutSec_) + " (AXON_TIMEOUT)");
  }
  wire::ByteReader r(std::string_view(buffer).substr(4, static_cast<std::size_t>(n) - 4));
  std::string why;
  wire::FrameHead head;
  try {
    head = wire::readHead(r);
    if (head.code != 0) why = r.str();
  } catch (const wire::Malformed& e) {
    throw Error(ErrorCode::Bootstrap, at + " answered the hello with a corrupt frame (" + e.what() + ")");
  }
  switch (static_cast<wire::Status>(head.code)) {
    case wire::Status::Ok:
      if (!wire::storeProvedKey(key, storeNonce, claims, r.rest())) {
        throw Error(ErrorCode::PermissionDenied,
                    at + " did not prove the job key (from " + keySource +
                        "): it is not this job's store (another job's, on a port used again, or an impostor); "
                        "this PE sent it nothing but a proof of its key");
      }
      break;
    case wire::Status::Refused:
      throw Error(ErrorCode::PermissionDenied, at + " refused this PE: " + why + " (this PE's key is from " + keySource +
                                                   "; every PE of a job needs rank 0's key)");
    case wire::Status::VersionMismatch:
      throw Error(ErrorCode::Bootstrap, "PE " + std::to_string(rank_) + ": " + why);
    default:
      throw Error(ErrorCode::Bootstrap, at + " refused this PE: " + why);
  }
  // What came after the answer (news of ranks already gone) is read as usual.
  buffer.erase(0, static_cast<std::size_t>(n));
  in_ = std::move(buffer);
  return true;
}

StoreClient::~StoreClient() {
  if (fd_ >= 0) ::close(fd_);
}

std::uint32_t StoreClient::nextId() {
  std::uint32_t id = ++lastId_;
  return id == wire::kEventId ? ++lastId_ : id;  // 0 marks the server's events
}

void StoreClient::breakConnection(ErrorCode code, const std::string& why) {
  if (broken_) return;
  broken_ = true;
  brokenCode_ = code;
  brokenWhy_ = why;
  // Wakes a reader blocked on the socket; the descriptor itself is closed only by the destructor,
  // so no thread ever polls a number the system has handed to someone else.
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
  arrived_.notify_all();
}

void StoreClient::storeClosed() {
  breakConnection(ErrorCode::PeerDead, "it closed the connection: PE 0, which serves it, exited or crashed");
  if (gone_.load() < 0) {
    goneWhy_ = "the axon store at " + addr_.str() + " closed the connection";
    gone_.store(0);
  }
}

void StoreClient::throwBroken(const std::string& what) const {
  throw Error(brokenCode_, "PE " + std::to_string(rank_) + ": " + what + " at the axon store " + addr_.str() +
                               " failed: " + brokenWhy_);
}

void StoreClient::send(const std::string& frame, const std::string& what) {
  std::lock_guard sending(sendMu_);
  {
    std::lock_guard lock(mu_);
    if (broken_) throwBroken(what);
  }
  switch (net::sendAll(fd_, frame.data(), frame.size(), after(timeoutSec_))) {
    case net::SendResult::Sent:
      return;
    case net::SendResult::Gone: {
      std::lock_guard lock(mu_);
      // Broken by this process (a goodbye, a corrupt reply) while the frame went out: not PE 0's death.
      if (!broken_) storeClosed();
      throwBroken(what);
    }
    case net::SendResult::TimedOut: {
      // Part of the frame may be out: the stream is torn, so the connection goes.
      std::lock_guard lock(mu_);
      breakConnection(ErrorCode::Bootstrap, "an earlier send timed out and left the stream torn; the connection is closed");
      throw Error(ErrorCode::Timeout, "PE " + std::to_string(rank_) + ": sending " + what + " to the axon store at " +
                                          addr_.str() + " timed out after " + secondsText(timeoutSec_) +
                                          " (AXON_TIMEOUT): rank 0 stopped reading; the connection is closed");
    }
  }
}

void StoreClient::readAsTheReader(std::unique_lock<std::mutex>& lock, int waitMs) {
  reading_ = true;
  const int fd = fd_;
  lock.unlock();
  std::string got;
  bool open = true;
  pollfd pfd{fd, POLLIN, 0};
  int n = ::poll(&pfd, 1, waitMs);
  if (n > 0) {
    char buf[65536];
    while (true) {
      ssize_t r = ::recv(fd, buf, sizeof(buf), 0);
      if (r > 0) {
        got.append(buf, static_cast<std::size_t>(r));
        continue;
      }
      if (r < 0 && errno == EINTR) continue;
      open = r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
      break;
    }
  }
  lock.lock();
  reading_ = false;
  in_ += got;
  fileFrames();  // what arrived before a close still counts
  if (!open && !broken_) storeClosed();
  arrived_.notify_all();
}

void StoreClient::fileFrames() {
  std::size_t used = 0;
  try {
    while (const std::size_t n = wire::completeFrameBytes(std::string_view(in_).substr(used))) {
      wire::ByteReader r(std::string_view(in_).substr(used + 4, n - 4));
      used += n;
      const wire::FrameHead head = wire::readHead(r);
      if (head.version != wire::kWireVersion) {
        // Only a refusal is ever sent in another version, and its message keeps its place.
        std::string why = "it speaks store protocol version " + std::to_string(head.version) + " and this PE " +
                          std::to_string(wire::kWireVersion);
        if (head.code == static_cast<std::uint8_t>(wire::Status::VersionMismatch)) why = r.str();
        breakConnection(ErrorCode::Bootstrap, why);
        continue;
      }
      if (head.id == wire::kEventId) {
        if (head.code == static_cast<std::uint8_t>(wire::Status::PeerGone) && gone_.load() < 0) {
          const int rank = static_cast<int>(r.u32());
          goneWhy_ = r.str();
          gone_.store(rank);
        }
        continue;
      }
      // Replies to requests that gave up waiting are dropped.
      if (waiting_.count(head.id)) replies_[head.id] = Reply{head.code, std::string(r.rest())};
    }
  } catch (const wire::Malformed& e) {
    used = in_.size();
    breakConnection(ErrorCode::Bootstrap, std::string("it sent a corrupt reply (") + e.what() + "); the connection is closed");
  }
  in_.erase(0, used);
}

std::string StoreClient::roundTrip(const std::string& frame, std::uint32_t id, const std::string& what,
                                   std::uint8_t& status) {
  {
    std::lock_guard lock(mu_);
    waiting_.insert(id);
  }
  struct Forget {
    StoreClient& c;
    std::uint32_t id;
    ~Forget() {
      std::lock_guard lock(c.mu_);
      c.waiting_.erase(id);
      c.replies_.erase(id);
    }
  } forget{*this, id};
  send(frame, what);
  const auto deadline = after(timeoutSec_);
  Reply reply;
  {
    std::unique_lock lock(mu_);
    while (true) {
      auto it = replies_.find(id);
      if (it != replies_.end()) {
        reply = std::move(it->second);
        break;
      }
      if (broken_) throwBroken(what);
      const auto now = Clock::now();
      if (now >= deadline) {
        throw Error(ErrorCode::Timeout, "PE " + std::to_string(rank_) + ": " + what + " at the axon store " +
                                            addr_.str() + " timed out after " + secondsText(timeoutSec_) +
                                            " (AXON_TIMEOUT)");
      }
      const auto slice = std::min<Clock::duration>(deadline - now, std::chrono::milliseconds(100));
      if (!reading_) {
        readAsTheReader(lock, static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(slice).count()));
      } else {
        arrived_.wait_for(lock, slice);
      }
    }
  }
  status = reply.status;
  if (status == static_cast<std::uint8_t>(wire::Status::VersionMismatch)) {
    const std::string why = decodeAnswer(reply.body, what, [](wire::ByteReader& r) { return r.str(); });
    throw Error(ErrorCode::Bootstrap, "PE " + std::to_string(rank_) + ": " + why);
  }
  if (status == static_cast<std::uint8_t>(wire::Status::BadRequest)) {
    const std::string why = decodeAnswer(reply.body, what, [](wire::ByteReader& r) { return r.str(); });
    throw Error(ErrorCode::Bootstrap, "PE " + std::to_string(rank_) + ": the axon store at " + addr_.str() +
                                          " refused " + what + ": " + why);
  }
  return std::move(reply.body);
}

void StoreClient::set(const std::string& key, const std::string& value) {
  std::uint32_t id = nextId();
  std::uint8_t status = 0;
  roundTrip(wire::Writer(id, static_cast<std::uint8_t>(wire::Op::Set)).str(key).str(value).frame(),
            id, "set '" + key + "'", status);
}

void StoreClient::throwTimeoutNaming(const Error& timeout, const std::function<std::vector<std::string>()>& missing) {
  std::string who;
  try {
    for (const auto& m : missing()) who += (who.empty() ? "" : ", ") + m;
  } catch (const Error&) {
    throw timeout;  // the connection is gone too: the timeout is the news
  }
  throw Error(ErrorCode::Timeout, std::string(timeout.what()) + "; still missing: " +
                                      (who.empty() ? "none (they came just now)" : who));
}

std::vector<std::string> StoreClient::valuesOf(const std::string& body, std::uint8_t status, const std::string& what) {
  if (status == static_cast<std::uint8_t>(wire::Status::PeerGone)) {
    const std::string why = decodeAnswer(body, what, [](wire::ByteReader& r) { return r.str(); });
    throw Error(ErrorCode::PeerDead, "PE " + std::to_string(rank_) + ": " + what + " failed: " + why);
  }
  return decodeAnswer(body, what, [](wire::ByteReader& r) {
    std::vector<std::string> values(r.count(4));
    for (auto& v : values) v = r.str();
    return values;
  });
}

std::vector<std::string> StoreClient::get(const std::vector<std::string>& keys,
                                          const std::string& what,
                                          const std::vector<std::string>& labels) {
  std::uint32_t id = nextId();
  wire::Writer w(id, static_cast<std::uint8_t>(wire::Op::Get));
  w.u32(static_cast<std::uint32_t>(keys.size()));
  for (const auto& k : keys) w.str(k);
  std::uint8_t status = 0;
  try {
    const std::string body = roundTrip(w.frame(), id, what, status);
    return valuesOf(body, status, what);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::Timeout) throw;
    // Say which keys never arrived: for rendezvous keys that names the missing ranks.
    throwTimeoutNaming(e, [&] {
      auto present = check(keys);
      std::vector<std::string> missing;
      for (std::size_t i = 0; i < keys.size(); ++i) {
        if (!present[i]) missing.push_back(labels.empty() ? "'" + keys[i] + "'" : labels[i]);
      }
      return missing;
    });
  }
}

std::vector<std::string> StoreClient::gather(const std::string& group, std::uint32_t members, std::uint32_t index,
                                             const std::string& value, const std::string& what,
                                             const MemberLabel& label) {
  std::uint32_t id = nextId();
  wire::Writer w(id, static_cast<std::uint8_t>(wire::Op::Gather));
  w.str(group).u32(members).u32(index).str(value);
  std::uint8_t status = 0;
  std::vector<std::string> values;
  try {
    const std::string body = roundTrip(w.frame(), id, what, status);
    values = valuesOf(body, status, what);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::Timeout) throw;
    throwTimeoutNaming(e, [&] {
      std::vector<std::string> missing;
      for (std::uint32_t m : missingMembers(group)) {
        missing.push_back(label ? label(m) : "member " + std::to_string(m));
      }
      return missing;
    });
  }
  if (values.size() != members) {
    throw Error(ErrorCode::Bootstrap, "PE " + std::to_string(rank_) + ": a corrupt answer to " + what + ": " +
                                          std::to_string(values.size()) + " values for " + std::to_string(members) +
                                          " members");
  }
  return values;
}

std::vector<std::uint32_t> StoreClient::missingMembers(const std::string& group) {
  std::uint32_t id = nextId();
  std::uint8_t status = 0;
  std::string body = roundTrip(wire::Writer(id, static_cast<std::uint8_t>(wire::Op::GatherMissing)).str(group).frame(),
                               id, "a question about '" + group + "'", status);
  return decodeAnswer(body, "a question about '" + group + "'", [](wire::ByteReader& r) {
    std::vector<std::uint32_t> missing(r.count(4));
    for (auto& m : missing) m = r.u32();
    return missing;
  });
}

std::vector<bool> StoreClient::check(const std::vector<std::string>& keys) {
  std::uint32_t id = nextId();
  wire::Writer w(id, static_cast<std::uint8_t>(wire::Op::Check));
  w.u32(static_cast<std::uint32_t>(keys.size()));
  for (const auto& k : keys) w.str(k);
  std::uint8_t status = 0;
  std::string body = roundTrip(w.frame(), id, "check", status);
  return decodeAnswer(body, "check", [](wire::ByteReader& r) {
    std::vector<bool> present(r.count(1));
    for (std::size_t i = 0; i < present.size(); ++i) present[i] = r.u8() != 0;
    return present;
  });
}

std::int64_t StoreClient::add(const std::string& key, std::int64_t delta) {
  std::uint32_t id = nextId();
  std::uint8_t status = 0;
  std::string body = roundTrip(
      wire::Writer(id, static_cast<std::uint8_t>(wire::Op::Add)).str(key).i64(delta).frame(), id,
      "add '" + key + "'", status);
  return decodeAnswer(body, "add '" + key + "'", [](wire::ByteReader& r) { return r.i64(); });
}

void StoreClient::del(const std::string& key) {
  std::uint32_t id = nextId();
  std::uint8_t status = 0;
  roundTrip(wire::Writer(id, static_cast<std::uint8_t>(wire::Op::Del)).str(key).frame(), id,
            "del '" + key + "'", status);
}

void StoreClient::bye() {
  {
    std::lock_guard lock(mu_);
    if (broken_) return;
  }
  std::uint32_t id = nextId();
  std::uint8_t status = 0;
  try {
    roundTrip(wire::Writer(id, static_cast<std::uint8_t>(wire::Op::Bye)).frame(), id, "goodbye", status);
  } catch (const Error&) {
    // Leaving anyway: a store that is already gone needs no goodbye.
  }
  std::lock_guard lock(mu_);
  breakConnection(ErrorCode::Bootstrap, "this PE has left (finalize)");
}

int StoreClient::goneRank() {
  if (gone_.load() >= 0) return gone_.load();
  // Another thread reading the socket files the events as they come: do not wait for it.
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock.owns_lock() || reading_ || broken_) return gone_.load();
  readAsTheReader(lock, 0);
  return gone_.load();
}

std::string StoreClient::goneReason() const {
  std::lock_guard lock(mu_);
  return goneWhy_;
}

}  // namespace axon
