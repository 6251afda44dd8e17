#include "bootstrap/store_server.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "axon/error.hpp"
#include "bootstrap/store_request.hpp"
#include "bootstrap/wire.hpp"
#include "core/build_version.hpp"
#include "core/log.hpp"

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
    if (::bind(s, sa, len) == 0 && ::listen(s, 4096) == 0) return s;
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

// Larger groups are refused: a corrupt or hostile member count must not make the server reserve
// gigabytes (far more ranks than any machine runs).
constexpr std::uint32_t kMaxGroup = 1u << 22;

std::uint64_t getKey(int fd, std::uint32_t id) { return (static_cast<std::uint64_t>(fd) << 32) | id; }

// A reply's own part: the frame header (its length counts the shared body too) and its fields.
std::string replyHead(std::uint32_t id, std::uint8_t status, const std::string& fields, std::size_t sharedBytes) {
  wire::Writer w(id, status);
  std::string frame = w.frame();
  frame += fields;
  const auto len = static_cast<std::uint32_t>(frame.size() - 4 + sharedBytes);
  std::memcpy(frame.data(), &len, 4);
  return frame;
}

std::string field(std::string_view s) {
  wire::ByteWriter w;
  w.str(s);
  return w.bytes();
}

}  // namespace

StoreServer::StoreServer(const net::HostPort& addr, StoreServerOptions options)
    : opt_(std::move(options)),
      replyTimeoutSec_(opt_.replyTimeoutSec),
      version_(opt_.version.empty() ? buildVersion() : opt_.version),
      maxPending_(opt_.maxPending ? opt_.maxPending : 64 + static_cast<std::size_t>(std::max(opt_.worldSize, 0))) {
  if (opt_.key.empty()) throw Error(ErrorCode::InvalidArgument, "the axon store needs the job key");
  if (opt_.worldSize < 1) throw Error(ErrorCode::InvalidArgument, "the axon store needs the job's world size");
  opt_.handshakeSec = std::min(opt_.handshakeSec, replyTimeoutSec_);
  listenFd_ = bindListener(addr, port_);
  net::setNonBlocking(listenFd_, true);
  epollFd_ = ::epoll_create1(EPOLL_CLOEXEC);
  spareFd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (epollFd_ < 0 || ::pipe2(wakePipe_, O_CLOEXEC) != 0) {
    int err = errno;
    ::close(listenFd_);
    if (epollFd_ >= 0) ::close(epollFd_);
    if (spareFd_ >= 0) ::close(spareFd_);
    throw SystemError("store server: epoll/pipe", err);
  }
  for (int fd : {listenFd_, wakePipe_[0]}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    ::epoll_ctl(epollFd_, EPOLL_CTL_ADD, fd, &ev);
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
  if (epollFd_ >= 0) ::close(epollFd_);
  for (int fd : wakePipe_) if (fd >= 0) ::close(fd);
  if (spareFd_ >= 0) ::close(spareFd_);
}

void StoreServer::shutdownAfterGoodbyes(int ranks, double timeoutSec) {
  // Other ranks may still be reading the reply to their last request: give them until they say
  // goodbye (or their connection drops) before closing the sockets under them.
  auto deadline = Clock::now() + std::chrono::duration<double>(timeoutSec);
  while (goodbyes_.load() < ranks && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  stop_ = true;
  char c = 0;
  (void)!::write(wakePipe_[1], &c, 1);
  if (thread_.joinable()) thread_.join();
}

void StoreServer::loop() {
  std::vector<epoll_event> events(256);
  while (!stop_) {
    // Wake up in time to drop a reader that stalls past the reply timeout, a handshake past its
    // deadline, and to accept again after running out of descriptors.
    int waitMs = stalled_.empty() && handshakes_.empty() && !acceptPaused_ ? 1000 : 100;
    int n = ::epoll_wait(epollFd_, events.data(), static_cast<int>(events.size()), waitMs);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == listenFd_) {
        acceptAll();
        continue;
      }
      if (fd == wakePipe_[0]) continue;
      auto it = conns_.find(fd);
      if (it == conns_.end()) continue;
      if (events[i].events & EPOLLOUT) flush(it->second);
      if (it->second.paused && (events[i].events & (EPOLLHUP | EPOLLERR))) {
        markDead(fd);  // not read while it waits for room, but gone all the same
      } else if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
        readFrom(it->second);
      }
    }
    dropStalled();
    dropExpiredHandshakes();
    if (acceptPaused_ && Clock::now() >= acceptPausedUntil_) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = listenFd_;
      ::epoll_ctl(epollFd_, EPOLL_CTL_MOD, listenFd_, &ev);
      acceptPaused_ = false;
    }
    // Closing a connection can fail waits and queue replies elsewhere, whose flush can find more
    // dead connections: repeat until the round is settled.
    do {
      std::vector<int> flushNow;
      flushNow.swap(toFlush_);
      for (int fd : flushNow) {
        auto it = conns_.find(fd);
        if (it != conns_.end()) flush(it->second);
      }
      closeDead();
    } while (!toFlush_.empty() || !dead_.empty());
  }
}

void StoreServer::acceptAll() {
  while (!acceptPaused_) {
    sockaddr_storage peer{};
    socklen_t peerLen = sizeof(peer);
    int fd = ::accept4(listenFd_, reinterpret_cast<sockaddr*>(&peer), &peerLen, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) outOfDescriptors(errno);
      return;
    }
    // Full: the oldest pending connection makes room (a stranger cannot hold the slots of PEs
    // that connect later, which prove the key within a round trip).
    while (pending_ >= maxPending_ && !handshakes_.empty()) {
      auto [serial, deadline] = handshakes_.front();
      handshakes_.pop_front();
      auto it = fdOfSerial_.find(serial);
      if (it == fdOfSerial_.end()) continue;
      note("more than " + std::to_string(maxPending_) + " connections to the store have not proven the job key: "
           "dropping the oldest (" + conns_[it->second].peer + ")");
      closeConn(it->second);
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (::epoll_ctl(epollFd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      ::close(fd);
      continue;
    }
    Conn& c = conns_[fd];
    c.fd = fd;
    c.serial = ++serials_;
    c.peer = net::describeSockaddr(peer);
    c.nonce = makeNonce();
    ++pending_;
    fdOfSerial_[c.serial] = fd;
    handshakes_.emplace_back(c.serial, Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                                          std::chrono::duration<double>(opt_.handshakeSec)));
    queue(fd, 0, 0, "", std::make_shared<const std::string>(wire::encodeGreeting(c.nonce)), /*raw=*/true);
  }
}

void StoreServer::outOfDescriptors(int err) {
  // Pending connections are the ones to give up: they are not (yet) ranks of the job.
  std::vector<int> pending;
  for (const auto& [fd, c] : conns_) {
    if (!c.proven) pending.push_back(fd);
  }
  for (int fd : pending) closeConn(fd);
  if (pending.empty() && spareFd_ >= 0) {
    // Nothing to drop: take the connection at the head of the queue with the spare descriptor and
    // close it, so that it is refused rather than left to wake this loop forever.
    ::close(spareFd_);
    const int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) ::close(fd);
    spareFd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
  if (!saidOutOfDescriptors_) {
    saidOutOfDescriptors_ = true;
    log(LogLevel::Warn, 0,
        std::string("the axon store ran out of file descriptors accepting a connection (") + std::strerror(err) +
            "): dropped " + std::to_string(pending.size()) +
            " connections that had not proven the job key and accepts again in 100 ms (said once; raise ulimit -n "
            "if the program itself needs that many)");
  }
  // Not accepting for a while keeps a full queue from spinning this loop.
  epoll_event ev{};
  ev.events = 0;
  ev.data.fd = listenFd_;
  ::epoll_ctl(epollFd_, EPOLL_CTL_MOD, listenFd_, &ev);
  acceptPaused_ = true;
  acceptPausedUntil_ = Clock::now() + std::chrono::milliseconds(100);
}

void StoreServer::dropExpiredHandshakes() {
  const auto now = Clock::now();
  while (!handshakes_.empty() && handshakes_.front().second <= now) {
    const std::uint64_t serial = handshakes_.front().first;
    handshakes_.pop_front();
    auto it = fdOfSerial_.find(serial);
    if (it == fdOfSerial_.end()) continue;  // proven or gone since
    Conn& c = conns_[it->second];
    if (!c.refused) note("a connection from " + c.peer + " did not prove the job key within " + secondsText(opt_.handshakeSec) + ": dropped");
    markDead(c.fd);
    fdOfSerial_.erase(it);  // once: it may linger in dead_ until the end of the round
  }
}

void StoreServer::note(const std::string& line) {
  const auto now = Clock::now();
  if (lastNote_ != Clock::time_point{} && now - lastNote_ < std::chrono::seconds(1)) {
    ++notesDropped_;
    return;
  }
  std::string text = "axon store: " + line;
  if (notesDropped_) text += " (and " + std::to_string(notesDropped_) + " more such events since the last line)";
  notesDropped_ = 0;
  lastNote_ = now;
  log(LogLevel::Warn, 0, text);
}

void StoreServer::readFrom(Conn& c) {
  char buf[65536];
  bool closed = false;
  // Frames are handled after each read, so that what is buffered is at most one frame arriving
  // plus one read, however fast the client sends.
  while (!closed && !c.paused) {
    ssize_t r = ::recv(c.fd, buf, sizeof(buf), 0);
    if (r > 0) {
      if (c.refused) continue;  // a refused stranger: its bytes go nowhere
      c.in.append(buf, static_cast<std::size_t>(r));
      if (!consume(c)) closed = true;
    } else if (r == 0) {
      closed = true;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      break;
    } else if (errno != EINTR) {
      closed = true;
    }
  }
  if (closed) markDead(c.fd);
}

bool StoreServer::consume(Conn& c) {
  // Frames that arrived before the connection closed still count: a goodbye followed at once by
  // the close is a goodbye.
  std::size_t used = 0;
  bool ok = true;
  try {
    while (!c.refused) {
      const std::uint32_t limit = c.proven ? wire::kMaxFrame : wire::kMaxHelloFrame;
      const std::size_t n = wire::completeFrameBytes(std::string_view(c.in).substr(used), limit);
      if (n == 0) break;
      const std::string_view body = std::string_view(c.in).substr(used + 4, n - 4);
      used += n;
      if (c.proven) {
        handleFrame(c, body);
      } else {
        handleFirstFrame(c, body);
      }
    }
  } catch (const std::exception& e) {
    // A length or magic no axon client sends (the stream cannot be trusted past it), or a request
    // that cost too much: it ends that connection, never rank 0's process.
    if (!c.proven) note("a connection from " + c.peer + " sent " + e.what() + " before proving the job key: dropped");
    ok = false;
  }
  if (c.refused) used = c.in.size();
  c.in.erase(0, used);
  if (c.proven) reserveArriving(c);
  return ok;
}

// Frames up to this size are not counted against maxPartialBytes: a read holds them anyway.
constexpr std::size_t kSmallFrame = std::size_t{1} << 20;

void StoreServer::reserveArriving(Conn& c) {
  const std::size_t want = c.in.size() >= 4 ? 4 + std::size_t{wire::lengthWord(c.in)} : 0;
  if (want <= kSmallFrame) return release(c);
  if (c.reserved == want) return;
  release(c);
  // One frame always goes through, so that any frame completes however small the budget.
  if (partialBytes_ != 0 && partialBytes_ + want > opt_.maxPartialBytes) {
    c.paused = true;
    pausedFds_.push_back(c.fd);
    epoll_event ev{};
    ev.events = stalled_.count(c.fd) ? EPOLLOUT : 0u;
    ev.data.fd = c.fd;
    ::epoll_ctl(epollFd_, EPOLL_CTL_MOD, c.fd, &ev);
    return;
  }
  c.reserved = want;
  partialBytes_ += want;
}

void StoreServer::release(Conn& c) {
  if (c.reserved == 0) return;
  partialBytes_ -= c.reserved;
  c.reserved = 0;
  resumePaused();
}

void StoreServer::resumePaused() {
  while (!pausedFds_.empty()) {
    auto it = conns_.find(pausedFds_.front());
    if (it == conns_.end() || !it->second.paused) {
      pausedFds_.pop_front();
      continue;
    }
    Conn& c = it->second;
    const std::size_t want = 4 + std::size_t{wire::lengthWord(c.in)};
    if (partialBytes_ != 0 && partialBytes_ + want > opt_.maxPartialBytes) return;
    pausedFds_.pop_front();
    c.paused = false;
    c.reserved = want;
    partialBytes_ += want;
    epoll_event ev{};
    ev.events = EPOLLIN | (stalled_.count(c.fd) ? EPOLLOUT : 0u);
    ev.data.fd = c.fd;
    ::epoll_ctl(epollFd_, EPOLL_CTL_MOD, c.fd, &ev);
  }
}

void StoreServer::handleFirstFrame(Conn& c, std::string_view body) {
  const wire::HelloVerdict v = wire::checkHello(opt_.key, c.nonce, body);
  if (!v.proven) return refusePending(c, v.id, v.why, "the job key was not proven");
  fdOfSerial_.erase(c.serial);
  c.proven = true;
  --pending_;
  handleHello(c, v.id, v.claims, v.answer);
}

void StoreServer::refusePending(Conn& c, std::uint32_t id, const std::string& why, const std::string& told) {
  note("refused a connection from " + c.peer + ": " + why);
  queue(c.fd, id, static_cast<std::uint8_t>(wire::Status::Refused), field(told));
  c.refused = true;
  c.closeWhenSent = true;
}

void StoreServer::handleFrame(Conn& c, std::string_view body) {
  wire::ByteReader in(body);
  const wire::FrameHead head = wire::readHead(in);  // Malformed: the caller closes the connection
  wire::StoreRequest q;
  try {
    q = wire::decodeStoreRequest(head, in.rest());
  } catch (const wire::Malformed& e) {
    queue(c.fd, head.id, static_cast<std::uint8_t>(wire::Status::BadRequest), field(e.what()));
    return;
  }
  if (q.foreign) {
    // Only a Hello may differ in version, and that was the first frame: this is corrupt.
    return queue(c.fd, head.id, static_cast<std::uint8_t>(wire::Status::BadRequest),
                 field("a request of store protocol version " + std::to_string(head.version) + " after the Hello"));
  }
  switch (q.op) {
    case wire::Op::Hello:
      return queue(c.fd, head.id, static_cast<std::uint8_t>(wire::Status::BadRequest), field("a second Hello"));
    case wire::Op::Set: {
      auto [it, fresh] = kv_.insert_or_assign(std::move(q.keys[0]), std::move(q.value));
      queue(c.fd, head.id, 0);
      if (fresh) keySet(it->first);
      return;
    }
    case wire::Op::Get:
      return handleGet(c, head.id, std::move(q.keys));
    case wire::Op::Check: {
      wire::ByteWriter out;
      out.u32(static_cast<std::uint32_t>(q.keys.size()));
      for (const auto& k : q.keys) out.u8(kv_.count(k) ? 1 : 0);
      queue(c.fd, head.id, 0, out.bytes());
      return;
    }
    case wire::Op::Add: {
      std::int64_t value = 0;
      auto it = kv_.find(q.keys[0]);
      const bool fresh = it == kv_.end();
      if (!fresh && it->second.size() == 8) std::memcpy(&value, it->second.data(), 8);
      value += q.delta;
      auto [at, inserted] = kv_.insert_or_assign(std::move(q.keys[0]), std::string(reinterpret_cast<const char*>(&value), 8));
      wire::ByteWriter out;
      out.i64(value);
      queue(c.fd, head.id, 0, out.bytes());
      if (fresh) keySet(at->first);
      return;
    }
    case wire::Op::Del:
      kv_.erase(q.keys[0]);
      queue(c.fd, head.id, 0);
      return;
    case wire::Op::Bye:
      if (!c.saidBye) ++goodbyes_;
      c.saidBye = true;
      queue(c.fd, head.id, 0);
      return;
    case wire::Op::Gather:
      return handleGather(c, head.id, q.keys[0], q.members, q.index, std::move(q.value));
    case wire::Op::GatherMissing: {
      auto it = groups_.find(q.keys[0]);
      wire::ByteWriter out;
      if (it == groups_.end()) {
        out.u32(0);
      } else {
        const Group& g = it->second;
        out.u32(g.members - g.arrived);
        for (std::uint32_t i = 0; i < g.members; ++i) {
          if (!g.have[i]) out.u32(i);
        }
      }
      queue(c.fd, head.id, 0, out.bytes());
      return;
    }
  }
}

void StoreServer::handleHello(Conn& c, std::uint32_t id, const wire::HelloClaims& claims, const Digest& answer) {
  // A holder of the job key: its claims are the job's business from here on.
  if (claims.version != version_) {
    const std::string why = "axon " + (claims.version.empty() ? std::string("of an unknown build") : claims.version) +
                            " on PE " + std::to_string(claims.rank) + ", axon " + version_ +
                            " on PE 0 (which serves the store): every PE must run the same axon build";
    if (refusal_.empty()) refusal_ = why;
    queue(c.fd, id, static_cast<std::uint8_t>(wire::Status::VersionMismatch), field(why));
    // It cannot take part; flush its answer, then let it go without counting it as a crash.
    c.closeWhenSent = true;
    if (!c.saidBye) ++goodbyes_;
    c.saidBye = true;
    failWaiting();
    return;
  }
  const int rank = static_cast<int>(std::min<std::uint32_t>(claims.rank, 1u << 30));
  std::string wrong;
  if (rank >= opt_.worldSize) {
    wrong = "rank " + std::to_string(claims.rank) + " is outside this job of " + std::to_string(opt_.worldSize) + " PEs";
  } else if (fdOfRank_.count(rank)) {
    wrong = "PE " + std::to_string(rank) + " is already connected to this store (" + conns_[fdOfRank_[rank]].peer +
            "): two processes were started as the same rank";
  }
  if (!wrong.empty()) {
    // Refused without a trace in the job: it is not bound to a rank, so its going is no PE's death.
    note("refused a connection from " + c.peer + ": " + wrong);
    queue(c.fd, id, static_cast<std::uint8_t>(wire::Status::BadRequest), field(wrong));
    c.closeWhenSent = true;
    c.refused = true;
    return;
  }
  c.rank = rank;
  fdOfRank_[rank] = c.fd;
  wire::ByteWriter proof;
  proof.fixed(answer);
  queue(c.fd, id, 0, proof.bytes());
  // A late joiner learns of ranks already gone, as the others did.
  for (int gone : goneRanks_) queueGoneEvent(c.fd, gone);
}

void StoreServer::handleGet(Conn& c, std::uint32_t id, std::vector<std::string> keys) {
  if (!refusal_.empty()) return queueFailure(c.fd, id);
  PendingGet g{c.fd, id, std::move(keys), 0};
  for (const auto& k : g.keys) g.missing += kv_.count(k) ? 0 : 1;
  // Keys that are all there answer the get even after a PE left: a rendezvous whose last key the
  // departed PE set before it exited is complete, and its slower members must still see it.
  if (g.missing == 0) return answerGet(g);
  const std::uint64_t key = getKey(c.fd, id);
  for (const auto& k : g.keys) {
    if (!kv_.count(k)) getsByKey_[k].push_back(key);
  }
  c.pendingGets.push_back(id);
  gets_.emplace(key, std::move(g));
  failWaiting();
}

void StoreServer::keySet(const std::string& key) {
  auto it = getsByKey_.find(key);
  if (it == getsByKey_.end()) return;
  std::vector<std::uint64_t> waiting = std::move(it->second);
  getsByKey_.erase(it);
  for (std::uint64_t k : waiting) {
    auto g = gets_.find(k);
    if (g == gets_.end() || --g->second.missing != 0) continue;
    // A key counted earlier may have been deleted since: wait for it again.
    for (const auto& other : g->second.keys) {
      if (!kv_.count(other)) {
        ++g->second.missing;
        getsByKey_[other].push_back(k);
      }
    }
    if (g->second.missing != 0) continue;
    answerGet(g->second);
    auto c = conns_.find(g->second.fd);
    if (c != conns_.end()) std::erase(c->second.pendingGets, g->second.id);
    gets_.erase(g);
  }
}

void StoreServer::answerGet(const PendingGet& g) {
  wire::ByteWriter out;
  out.u32(static_cast<std::uint32_t>(g.keys.size()));
  for (const auto& k : g.keys) out.str(kv_.at(k));  // every key is there: counted just now
  queue(g.fd, g.id, 0, out.bytes());
}

void StoreServer::handleGather(Conn& c, std::uint32_t id, const std::string& name, std::uint32_t members,
                               std::uint32_t index, std::string value) {
  auto bad = [&](const std::string& why) {
    queue(c.fd, id, static_cast<std::uint8_t>(wire::Status::BadRequest), field(why));
  };
  if (!refusal_.empty()) return queueFailure(c.fd, id);
  // A group has at most one member per PE of the job: a count beyond that is refused before
  // anything is reserved for it.
  const std::uint32_t most = std::min<std::uint32_t>(kMaxGroup, static_cast<std::uint32_t>(opt_.worldSize));
  if (members == 0 || members > most || index >= members) {
    return bad("member " + std::to_string(index) + " of a group of " + std::to_string(members) + " (at most " +
               std::to_string(most) + " members: the PEs of the job)");
  }
  auto [it, fresh] = groups_.try_emplace(name);
  Group& g = it->second;
  // Its members were told it failed: a late one must hear the same, not complete it.
  if (g.failed) return queueFailure(c.fd, id);
  if (fresh) {
    g.members = members;
    g.values.resize(members);
    g.have.assign(members, false);
  }
  if (g.members != members) {
    return bad("'" + name + "' has " + std::to_string(g.members) + " members for the ranks that came first but " +
               std::to_string(members) + " for PE " + std::to_string(c.rank) + " (every member must name the same ranks)");
  }
  if (g.have[index]) {
    return bad("member " + std::to_string(index) + " of '" + name + "' contributed twice (PE " +
               std::to_string(c.rank) + ")");
  }
  g.have[index] = true;
  g.values[index] = std::move(value);
  g.waiters.push_back({c.fd, id});
  c.gathers.insert(name);
  if (++g.arrived == g.members) return completeGroup(name, g);
  failWaiting();
}

void StoreServer::completeGroup(const std::string& name, Group& g) {
  // The answer is built once and shared by every waiter's reply.
  wire::ByteWriter body;
  body.u32(g.members);
  for (const auto& v : g.values) body.str(v);
  auto shared = std::make_shared<const std::string>(body.bytes());
  for (const Waiter& w : g.waiters) {
    queue(w.fd, w.id, 0, "", shared);
    auto c = conns_.find(w.fd);
    if (c != conns_.end()) c->second.gathers.erase(name);
  }
  groups_.erase(name);
}

std::string StoreServer::goneText() const {
  std::string who;
  for (int r : goneRanks_) who += (who.empty() ? "" : ", ") + std::to_string(r);
  return "PE " + who + " disconnected from the store without finalize (exited, crashed or stopped reading)";
}

void StoreServer::queueGoneEvent(int fd, int rank) {
  wire::ByteWriter event;
  event.u32(static_cast<std::uint32_t>(rank));
  event.str("PE " + std::to_string(rank) + " disconnected from the store without finalize");
  queue(fd, wire::kEventId, static_cast<std::uint8_t>(wire::Status::PeerGone), event.bytes());
}

void StoreServer::queueFailure(int fd, std::uint32_t id) {
  if (refusal_.empty()) {
    queue(fd, id, static_cast<std::uint8_t>(wire::Status::PeerGone), field(goneText()));
  } else {
    queue(fd, id, static_cast<std::uint8_t>(wire::Status::VersionMismatch), field(refusal_));
  }
}

void StoreServer::failWaiting() {
  if (goneRanks_.empty() && refusal_.empty()) return;
  for (auto& [key, g] : gets_) queueFailure(g.fd, g.id);
  for (auto& [fd, c] : conns_) c.pendingGets.clear();
  gets_.clear();
  getsByKey_.clear();
  // Incomplete groups keep what arrived (a slow member still finds it) but lose their waiters.
  for (auto& [name, g] : groups_) {
    for (const Waiter& w : g.waiters) queueFailure(w.fd, w.id);
    g.waiters.clear();
    g.failed = true;
  }
  for (auto& [fd, c] : conns_) c.gathers.clear();
}

void StoreServer::queue(int fd, std::uint32_t id, std::uint8_t status, const std::string& fields, Bytes shared,
                        bool raw) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  Conn& c = it->second;
  const bool idle = c.out.empty();
  if (!raw) {
    c.out.push_back({std::make_shared<const std::string>(replyHead(id, status, fields, shared ? shared->size() : 0))});
    c.outBytes += c.out.back().data->size();
  }
  if (shared && !shared->empty()) {
    c.outBytes += shared->size();
    c.out.push_back({std::move(shared)});
  }
  // A client that asks and asks without reading would make the server hold its answers without
  // bound: past this it counts as stuck, like one that stalls for the reply timeout.
  if (c.outBytes > 2 * std::size_t{wire::kMaxFrame}) markDead(fd);
  if (idle) {
    c.stalledSince = Clock::now();
    toFlush_.push_back(fd);
  }
}

void StoreServer::flush(Conn& c) {
  while (!c.out.empty()) {
    iovec iov[64];
    int n = 0;
    for (auto it = c.out.begin(); it != c.out.end() && n < 64; ++it, ++n) {
      iov[n].iov_base = const_cast<char*>(it->data->data() + it->sent);
      iov[n].iov_len = it->data->size() - it->sent;
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<std::size_t>(n);
    ssize_t w = ::sendmsg(c.fd, &msg, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      return markDead(c.fd);
    }
    c.stalledSince = Clock::now();
    auto left = static_cast<std::size_t>(w);
    c.outBytes -= left;
    while (left > 0) {
      OutPiece& p = c.out.front();
      const std::size_t take = std::min(left, p.data->size() - p.sent);
      p.sent += take;
      left -= take;
      if (p.sent == p.data->size()) c.out.pop_front();
    }
  }
  watchOutput(c, !c.out.empty());
  if (c.out.empty() && c.closeWhenSent) markDead(c.fd);
}

void StoreServer::watchOutput(Conn& c, bool on) {
  if (on == (stalled_.count(c.fd) != 0)) return;
  epoll_event ev{};
  ev.events = (c.paused ? 0u : EPOLLIN) | (on ? EPOLLOUT : 0u);
  ev.data.fd = c.fd;
  ::epoll_ctl(epollFd_, EPOLL_CTL_MOD, c.fd, &ev);
  if (on) stalled_.insert(c.fd);
  else stalled_.erase(c.fd);
}

void StoreServer::dropStalled() {
  const auto limit = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(replyTimeoutSec_));
  const auto now = Clock::now();
  for (int fd : stalled_) {
    auto it = conns_.find(fd);
    if (it != conns_.end() && now - it->second.stalledSince > limit) markDead(fd);
  }
}

void StoreServer::markDead(int fd) {
  if (std::find(dead_.begin(), dead_.end(), fd) == dead_.end()) dead_.push_back(fd);
}

void StoreServer::closeDead() {
  while (!dead_.empty()) {
    std::vector<int> now;
    now.swap(dead_);
    for (int fd : now) closeConn(fd);
  }
}

void StoreServer::closeConn(int fd) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  Conn c = std::move(it->second);
  conns_.erase(it);
  stalled_.erase(fd);
  ::epoll_ctl(epollFd_, EPOLL_CTL_DEL, fd, nullptr);
  ::close(fd);
  // The number may come back with the next accept: nothing queued for this one may reach that one.
  std::erase(dead_, fd);
  if (!c.proven) {
    // Never a rank of the job: its going is nobody's news.
    fdOfSerial_.erase(c.serial);
    --pending_;
    return;
  }
  if (c.reserved) {
    partialBytes_ -= c.reserved;
    resumePaused();
  }
  auto bound = fdOfRank_.find(c.rank);
  if (bound != fdOfRank_.end() && bound->second == fd) fdOfRank_.erase(bound);
  // Forget its waits: nobody is left to answer, and a later connection may get the same fd and
  // request ids.
  for (std::uint32_t id : c.pendingGets) {
    const std::uint64_t key = getKey(fd, id);
    auto g = gets_.find(key);
    if (g == gets_.end()) continue;
    for (const auto& k : g->second.keys) {
      auto w = getsByKey_.find(k);
      if (w == getsByKey_.end()) continue;
      std::erase(w->second, key);
      if (w->second.empty()) getsByKey_.erase(w);
    }
    gets_.erase(g);
  }
  for (const auto& name : c.gathers) {
    auto g = groups_.find(name);
    if (g != groups_.end()) std::erase_if(g->second.waiters, [fd](const Waiter& w) { return w.fd == fd; });
  }
  if (c.saidBye || c.rank < 0 || c.refused) return;
  goneRanks_.insert(c.rank);
  ++goodbyes_;  // it will not say goodbye now; do not wait for it at shutdown
  // Tell every other rank at once: a PE waiting on the gone one's memory, not on the store, checks
  // for these events instead of running into its timeout.
  for (auto& [other, oc] : conns_) queueGoneEvent(other, c.rank);
  failWaiting();
}

}  // namespace axon
