// The client's link to its space's servers (client_connection.hpp): connecting, then the
// request/reply plumbing. Replies and data arrive on whichever thread runs progress (the engine's,
// or a caller waiting in wait()); both meet in calls_ under mu_.
#include "space/client_connection.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <thread>
#include <utility>

#include "axon/error.hpp"
#include "core/build_version.hpp"
#include "core/env.hpp"
#include "core/log.hpp"
#include "core/net.hpp"
#include "space/contact_file.hpp"
#include "space/gpu_side.hpp"
#include "space/handshake.hpp"
#include "space/space_key.hpp"

namespace axon::space {

using protocol::Op;

namespace {

constexpr double kReplyGraceSec = 5.0;

// A server this client never reached (refused, no such host, no greeting, no answer to the hello)
// is ServerUnreachable, not ServerLost (which says: reached, then lost), with what to check.
Error unreachable(const std::string& address, const std::string& origin, const std::string& cause) {
  return Error(ErrorCode::ServerUnreachable,
               "staging server " + address + " (from " + origin + ") could not be reached: " + cause +
                   ". Check that `axon space serve` runs there and listens on that address (its first line "
                   "names it), and that this is the space's address and key");
}

bool neverReached(ErrorCode code) {
  return code == ErrorCode::ServerLost || code == ErrorCode::Timeout || code == ErrorCode::ServerUnreachable;
}

}  // namespace

Clock::time_point deadlineAfter(double sec) {
  sec = std::min(sec, kMaxTimeoutSec);
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(sec));
}

double callTimeout(double given, double fallback, const std::string& what) {
  const double t = clampTimeout(given, "the timeout of " + what, true);
  return t > 0 ? t : fallback;
}

std::uint64_t millisUntil(Clock::time_point t) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return left > 0 ? static_cast<std::uint64_t>(left) : 0;
}

ServerContact findServer(const ConnectOptions& o, const Env& env) {
  ServerContact out;
  out.address = o.address.empty() ? env.spaceAddr : o.address;
  out.origin = o.address.empty() ? "AXON_SPACE_ADDR" : "the address given";
  std::string file, fileKey;
  if (out.address.empty()) {
    file = !o.contactFile.empty() ? o.contactFile : env.spaceFile;
    if (file.empty()) {
      throw Error(ErrorCode::InvalidArgument,
                  "no staging server to connect to: pass an address, or set AXON_SPACE_ADDR (host:port) or "
                  "AXON_SPACE_FILE (a server's --contact-file)");
    }
    const ContactInfo info = readContactFile(file);
    out.address = info.address;
    out.epoch = info.epoch;
    fileKey = info.key;
    out.origin = "contact file " + file;
  }
  SpaceKey key = clientKey(o, env, fileKey, file, out.address);
  out.key = std::move(key.key);
  out.keyOrigin = std::move(key.origin);
  return out;
}

Clock::duration Connection::grace() {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kReplyGraceSec));
}

// --- connecting ---------------------------------------------------------------------------------

Connection::Connection(const ConnectOptions& o, const std::string& identity, double timeoutSec,
                       const ServerContact& first, GpuSide* gpu)
    : sharedMemory_(o.sharedMemory),
      timeoutSec_(timeoutSec),
      identity_(identity),
      key_(first.key),
      keyOrigin_(first.keyOrigin),
      gpu_(gpu) {
  try {
    node_ = rpc::makeNode("space client");
    node_->setHandlers({[this](rpc::ConnId c, std::string h, rpc::Payload p) { onMessage(c, std::move(h), std::move(p)); },
                        [this](rpc::ConnId c, const std::string& w) { onLost(c, w); }, nullptr});
    engine_.add(node_.get());
    connectAll(first);
  } catch (...) {
    // The progress thread and UCX's callbacks must end before the members they use go.
    engine_.stop();
    node_.reset();
    throw;
  }
}

Connection::~Connection() { engine_.stop(); }

void Connection::connectAll(const ServerContact& first) {
  const auto deadline = deadlineAfter(timeoutSec_);
  const std::uint64_t epoch = connectServer(first.address, deadline, first.origin);
  if (first.epoch && epoch != first.epoch) {
    throw Error(ErrorCode::ServerUnreachable, "the " + first.origin + " is stale: it names server " + first.address +
                                           " of epoch " + std::to_string(first.epoch) +
                                           ", but the server there now has epoch " + std::to_string(epoch) +
                                           " (restarted?)");
  }
  // The rest of the space, then all of it in placement order (the handlers, which may run on
  // the progress thread meanwhile, read servers_ under mu_).
  // A member that cannot be reached (killed, its node gone) does not keep this client out of the
  // rest of the space: it is lost from the start, said once here, and every request that needs
  // its rows fails naming it.
  std::string gone;
  for (std::size_t i = 0; i < members_.size(); ++i) {
    if (static_cast<int>(i) == servers_[0].index) continue;
    try {
      connectServer(members_[i], deadline, "the space's member list", static_cast<int>(i));
    } catch (const Error& e) {
      if (!neverReached(e.code())) throw;
      gone += std::string(gone.empty() ? "" : "; ") + e.what();
    }
  }
  if (!gone.empty() && logThreshold() >= static_cast<int>(LogLevel::Warn)) {
    std::fprintf(stderr, "axon space: warning: connected to a space that lost servers: %s\n", gone.c_str());
  }
  std::lock_guard lock(mu_);
  std::vector<ServerConn> ordered(members_.size());
  for (ServerConn& sc : servers_) ordered[sc.index] = std::move(sc);
  servers_ = std::move(ordered);
}

std::uint64_t Connection::connectServer(const std::string& address, Clock::time_point deadline,
                                        const std::string& origin, int member) {
  try {
    return helloServer(address, deadline, origin);
  } catch (const Error& e) {
    if (member < 0 || !neverReached(e.code())) throw;
    // A member of the space: kept in its place, lost, with the rows it would serve.
    const std::string count = std::to_string(members_.size());
    rpc::ConnId conn = 0;
    std::unique_lock lock(mu_);
    if (servers_.empty() || servers_.back().address != address || servers_.back().index != -1) {
      servers_.push_back(ServerConn{});
    }
    ServerConn& sc = servers_.back();
    conn = std::exchange(sc.conn, 0);
    sc.address = address;
    sc.index = member;
    sc.arena.reset();
    sc.lostCode = ErrorCode::ServerUnreachable;
    sc.lost = "staging server " + address + " (server " + std::to_string(member) + " of the space's " + count +
              ") could not be reached when this client connected, so the rows it holds (slabs " +
              std::to_string(member) + ", " + std::to_string(member) + " + " + count + ", ... of every variable) " +
              "are unavailable: " + e.what();
    const std::string why = sc.lost;
    lock.unlock();
    if (conn) node_->close(conn);  // its completions take mu_
    throw Error(ErrorCode::ServerUnreachable, why);
  }
}

std::uint64_t Connection::helloServer(const std::string& address, Clock::time_point deadline,
                                      const std::string& origin) {
  ServerConn sc;
  sc.address = address;
  sc.index = -1;  // known from its answer
  const int s = static_cast<int>(servers_.size());  // its place while connecting
  const std::string what = "connecting to staging server " + address + " (from " + origin + ")";
  net::parseHostPort(address, origin);  // a malformed address: InvalidArgument, not an unreachable server
  // Hello may be refused while the space still waits for servers to join: try again.
  for (;;) {
    // The server speaks first: its greeting carries the nonce the Hello's proof covers.
    auto greeting = std::make_shared<Call>();
    greeting->server = s;
    greeting->op = Op::Greeting;
    {
      // Under the lock, so that a greeting delivered at once finds its server.
      std::lock_guard lock(mu_);
      try {
        sc.conn = node_->connect(address);  // a host that does not resolve fails here
      } catch (const Error& e) {
        throw unreachable(address, origin, e.what());
      }
      sc.greeting = greeting;
      servers_.push_back(std::move(sc));
    }
    if (!wait(greeting, deadline, what)) {
      throw unreachable(address, origin, "nothing greeted this client there within the timeout (connection "
                                         "refused, or nothing answering)");
    }
    if (greeting->status != 0) throw unreachable(address, origin, greeting->message);
    check(*greeting);
    Nonce serverNonce;
    std::memcpy(serverNonce.data(), greeting->reply.data(), serverNonce.size());
    wire::ByteWriter claims;
    claims.str(buildVersion()).str(identity_).u32(static_cast<std::uint32_t>(::getpid()));
    Digest expect;
    auto c = issueCall(s, Op::Hello, handshake::opening(Op::Hello, key_, serverNonce, claims.bytes(), expect),
                       std::make_shared<Call>());
    const bool answered = wait(c, deadline, what);
    // No answer to the hello (the connection broke, or nothing came in time): never reached.
    if (!c->answered && c->status != 0) throw unreachable(address, origin, c->message);
    // The server said its space is still forming (servers yet to join): ask again.
    if (answered && c->answered && c->status == static_cast<int>(ErrorCode::ServerLost) && Clock::now() < deadline) {
      {
        std::lock_guard lock(mu_);
        sc = std::move(servers_.back());
        servers_.pop_back();
      }
      node_->close(sc.conn);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    if (answered && c->answered && c->status == static_cast<int>(ErrorCode::PermissionDenied)) {
      throw Error(ErrorCode::PermissionDenied, c->message + "; this client's key came from " + keyOrigin_);
    }
    check(*c);
    wire::ByteReader r(c->reply);
    // The server proves the key in turn: else another program took its address.
    if (r.left() < handshake::kProofBytes || !handshake::sameProof(expect, handshake::readProof(r))) {
      throw Error(ErrorCode::PermissionDenied,
                  "staging server " + address + " (from " + origin + ") did not prove the space's key (this " +
                      "client's key came from " + keyOrigin_ + "): it is not a server of this space, or one " +
                      "with another key");
    }
    ServerConn& me = servers_.back();
    me.index = static_cast<int>(r.u32());
    const std::uint32_t count = r.u32();
    const std::uint64_t epoch = r.u64();
    const std::string node = r.str();
    const std::string arena = r.str();
    const std::uint64_t capacity = r.u64();
    const std::uint32_t n = r.count(4);
    std::vector<std::string> members;
    for (std::uint32_t i = 0; i < n; ++i) members.push_back(r.str());
    if (members.size() != count) {
      throw Error(ErrorCode::ServerLost, "staging server " + address + " lists " + std::to_string(members.size()) +
                                             " of its space's " + std::to_string(count) + " servers");
    }
    if (members_.empty()) members_ = members;
    if (node == identity_ && sharedMemory_) {
      try {
        me.arena = std::make_unique<ArenaView>(arena, capacity);
        if (gpu_) gpu_->addHostRange(me.arena->base(), capacity);
      } catch (const Error&) {
        me.arena.reset();  // same host name, other namespace: UCX carries it
      }
    }
    return epoch;
  }
}

std::vector<std::string> Connection::addresses() const {
  std::vector<std::string> out;
  for (const auto& s : servers_) out.push_back(s.address);
  return out;
}

void Connection::disconnect() {
  std::vector<rpc::ConnId> conns;
  {
    std::lock_guard lock(mu_);
    for (auto& s : servers_) {
      if (s.conn) conns.push_back(s.conn);
      s.conn = 0;
      if (s.lost.empty()) s.lost = "the client was closed";
    }
  }
  for (rpc::ConnId c : conns) node_->close(c);
}

// --- requests -----------------------------------------------------------------------------------

std::shared_ptr<Call> Connection::issue(int s, Op op, const wire::ByteWriter& w, const void* data, std::size_t bytes,
                                        rpc::Memory m, std::shared_ptr<void> keepAlive) {
  auto c = std::make_shared<Call>();
  c->memory = m;
  c->borrowsData = bytes > 0 && !keepAlive;
  return issueCall(s, op, w.bytes(), c, data, bytes, m, std::move(keepAlive));
}

// Numbers the call (patching the id into the header), registers it, and sends it.
std::shared_ptr<Call> Connection::issueCall(int s, Op op, std::string header, std::shared_ptr<Call> c,
                                            const void* data, std::size_t bytes, rpc::Memory m,
                                            std::shared_ptr<void> keepAlive) {
  c->server = s;
  c->op = op;
  std::uint64_t id;
  {
    std::lock_guard lock(mu_);
    id = ++lastId_;
    calls_[id] = c;
    if (!servers_[s].lost.empty()) {
      fail(*c, servers_[s].lostCode, servers_[s].lost);
      calls_.erase(id);
      return c;
    }
  }
  std::memcpy(header.data() + 8, &id, 8);  // after magic, version and op
  node_->send(servers_[s].conn, std::move(header), data, bytes, m, [this, id, s, c, keepAlive](const std::string& f) {
    std::lock_guard lock(mu_);
    c->sent = true;
    if (f.empty()) return;
    auto it = calls_.find(id);
    if (it == calls_.end()) return;
    fail(*it->second, ErrorCode::ServerLost, "staging server " + servers_[s].address + ": sending failed: " + f);
    calls_.erase(it);
  });
  return c;
}

void Connection::fail(Call& c, ErrorCode code, const std::string& why) {
  c.replied = true;
  c.status = static_cast<int>(code);
  c.message = why;
  c.landed = c.landing.size();
}

bool Connection::wait(const std::shared_ptr<Call>& c, Clock::time_point deadline, const std::string& what) {
  ProgressEngine::Waiting waiting(engine_);
  ProgressClient::PolledHere here(*node_);
  int spins = 0;
  for (std::uint64_t round = 1;; ++round) {
    {
      std::lock_guard lock(mu_);
      if (c->done()) return true;
    }
    // The clock is read every 256 rounds even while other traffic keeps UCX busy.
    if (round % 256 == 0 && Clock::now() >= deadline) break;
    if (node_->progress()) continue;
    if (++spins < 2000) continue;
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::microseconds(spins < 20000 ? 20 : 200));
  }
  rpc::ConnId conn = 0;
  {
    std::lock_guard lock(mu_);
    if (c->done()) return true;
    ServerConn& server = servers_[c->server];
    const std::string why = "staging server " + server.address + " did not answer " + what + " in time (" +
                            protocol::opName(c->op) + " request): the server is stopped, overloaded or unreachable";
    // A server that does not greet or answer the hello of a client connecting to it was never
    // reached: that is ServerLost, as a refused connection is.
    const bool connecting = c->op == Op::Greeting || c->op == Op::Hello;
    if (!connecting && (!c->borrowsData || c->sent)) {
      // One slow answer does not end the connection: the call fails now and stays registered,
      // so that its late reply is recognised by its id and discarded (takeReply).
      fail(*c, ErrorCode::Timeout, why + "; its late answer will be discarded");
      return false;
    }
    // UCX still reads the caller's memory for this call (or the connection never got going):
    // closing the connection cancels that before the caller unwinds, and the server is lost to
    // this client from now on.
    fail(*c, ErrorCode::ServerLost,
         why + (connecting ? "; this client could not connect" : "; its data was still being sent, so the connection was closed"));
    for (auto it = calls_.begin(); it != calls_.end(); ++it) {
      if (it->second == c) {
        calls_.erase(it);
        break;
      }
    }
    if (server.lost.empty()) server.lost = why;
    conn = server.conn;
    server.conn = 0;
  }
  if (conn) node_->close(conn);
  return false;
}

void Connection::check(const Call& c) const {
  if (c.status == 0 && c.dataFailure.empty()) return;
  if (!c.dataFailure.empty() && c.status == 0) {
    throw Error(ErrorCode::ServerLost, "staging server " + servers_[c.server].address + ": data failed: " + c.dataFailure);
  }
  throw Error(static_cast<ErrorCode>(c.status), c.message);
}

bool Connection::allDone(const std::vector<std::shared_ptr<Call>>& calls) {
  std::lock_guard lock(mu_);
  for (auto& c : calls) {
    if (!c->done()) return false;
  }
  return true;
}

void Connection::notify(int s, const wire::ByteWriter& w) {
  rpc::ConnId conn;
  {
    std::lock_guard lock(mu_);
    conn = servers_[s].conn;
  }
  if (conn) node_->send(conn, w.bytes(), nullptr, 0, rpc::Memory::Host, [](const std::string&) {});
}

void Connection::sendDone(int s, std::uint64_t lease) {
  wire::ByteWriter w = protocol::begin(Op::Done, 0);
  w.u64(lease);
  notify(s, w);
}

// --- replies and data ---------------------------------------------------------------------------

void Connection::onGreeting(rpc::ConnId conn, const std::string& header) {
  const std::optional<Nonce> nonce = handshake::readGreeting(header);
  std::lock_guard lock(mu_);
  for (ServerConn& sc : servers_) {
    if (sc.conn != conn || !sc.greeting) continue;
    Call& g = *sc.greeting;
    if (!g.replied) {
      if (nonce) {
        g.reply.assign(reinterpret_cast<const char*>(nonce->data()), nonce->size());
        g.replied = g.answered = true;
      } else {
        fail(g, ErrorCode::ServerLost, "staging server " + sc.address + " did not greet this client as a " +
                                           "staging server does (another program at that address?)");
      }
    }
    sc.greeting.reset();
  }
}

void Connection::onMessage(rpc::ConnId conn, std::string header, rpc::Payload payload) {
  try {
    wire::ByteReader r(header);
    const protocol::Head h = protocol::readHead(r);
    if (h.op == Op::Greeting) {
      node_->drop(payload);
      return onGreeting(conn, header);
    }
    std::shared_ptr<Call> c;
    {
      std::lock_guard lock(mu_);
      auto it = calls_.find(h.id);
      if (it != calls_.end()) c = it->second;
    }
    if (!c) {
      node_->drop(payload);
      return;
    }
    if (h.op == Op::Data) {
      const std::uint32_t i = r.u32();
      if (i >= c->landing.size()) {
        node_->drop(payload);
        return;
      }
      if (!payload.rendezvous() && c->memory == rpc::Memory::Cuda) {
        // Eager bytes for GPU memory: copied here (UCX delivered them to host memory).
        gpu_->copy(c->landing[i], payload.eager.data(), payload.bytes);
        std::lock_guard lock(mu_);
        ++c->landed;
        if (c->done()) calls_.erase(h.id);
        return;
      }
      const std::uint64_t id = h.id;
      // The lambda holds the call, and the call its staging: alive until UCX has landed it.
      node_->receive(payload, c->landing[i], c->memory, [this, c, id](const std::string& f) {
        std::lock_guard lock(mu_);
        if (c->replied && c->status != 0) return;  // failed meanwhile: nobody reads it
        if (!f.empty() && c->dataFailure.empty()) c->dataFailure = f;
        ++c->landed;
        if (c->done()) calls_.erase(id);
      });
      return;
    }
    if (r.left() == 0 && payload.bytes > 0) {
      // A reply too long for a message header travels as the message's data.
      auto body = std::make_shared<std::string>(payload.bytes, '\0');
      const std::uint64_t id = h.id;
      node_->receive(payload, body->data(), rpc::Memory::Host, [this, c, id, body](const std::string& f) {
        if (!f.empty()) {
          std::lock_guard lock(mu_);
          fail(*c, ErrorCode::ServerLost, "staging server " + servers_[c->server].address + ": a reply was lost: " + f);
          calls_.erase(id);
          return;
        }
        wire::ByteReader br(*body);
        takeReply(c, id, br);
      });
      return;
    }
    node_->drop(payload);
    takeReply(c, h.id, r);
  } catch (const wire::Malformed& e) {
    node_->drop(payload);
    // Another build's answer: its id sits at the same place in every version's head.
    if (header.size() >= protocol::kHeadBytes) {
      std::uint64_t id;
      std::memcpy(&id, header.data() + 8, 8);
      std::lock_guard lock(mu_);
      auto it = calls_.find(id);
      if (it != calls_.end()) {
        fail(*it->second, ErrorCode::InvalidArgument,
             "staging server " + servers_[it->second->server].address + " answered in words this client cannot "
             "read (" + e.what() + ")");
        calls_.erase(it);
      }
    }
  } catch (const std::exception&) {
    node_->drop(payload);
  }
  (void)conn;
}

void Connection::takeReply(const std::shared_ptr<Call>& c, std::uint64_t id, wire::ByteReader& r) {
  std::unique_lock lock(mu_);
  if (c->replied) {
    // Failed here already (timed out): the late answer is discarded, and what it grants is
    // given back at once (a get's lease, a put's reservation).
    calls_.erase(id);
    const int status = r.i32();
    r.str();
    if (status != 0 || r.left() < 8) return;
    const std::uint64_t granted = r.u64();
    const int s = c->server;
    lock.unlock();
    if (c->op == Op::Query && granted) sendDone(s, granted);
    if (c->op == Op::Reserve) {
      wire::ByteWriter w = protocol::begin(Op::Abort, 0);
      w.u64(granted);
      notify(s, w);
    }
    return;
  }
  c->status = r.i32();
  c->message = r.str();
  c->reply = std::string(r.rest());
  c->replied = true;
  c->answered = true;
  if (c->status != 0) c->landed = c->landing.size();
  if (c->done()) calls_.erase(id);
}

void Connection::onLost(rpc::ConnId conn, const std::string& why) {
  std::lock_guard lock(mu_);
  for (std::size_t s = 0; s < servers_.size(); ++s) {
    if (servers_[s].conn != conn) continue;
    servers_[s].lost = "staging server " + servers_[s].address + " was lost: " + why;
    for (auto it = calls_.begin(); it != calls_.end();) {
      if (it->second->server == static_cast<int>(s)) {
        fail(*it->second, ErrorCode::ServerLost, servers_[s].lost);
        it = calls_.erase(it);
      } else {
        ++it;
      }
    }
  }
}

}  // namespace axon::space
