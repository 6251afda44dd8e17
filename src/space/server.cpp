#include "space/server.hpp"

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <list>
#include <map>
#include <mutex>
#include <random>

#include "axon/error.hpp"
#include "core/build_version.hpp"
#include "core/env.hpp"
#include "core/host_identity.hpp"
#include "space/arena.hpp"
#include "space/protocol.hpp"
#include "transport/rpc.hpp"

namespace axon::space {

using Clock = std::chrono::steady_clock;
using protocol::Op;
using rpc::ConnId;

namespace {

Clock::time_point after(std::uint64_t ms) { return Clock::now() + std::chrono::milliseconds(ms); }

// Writes the contact file atomically: a reader sees the old file or the whole new one.
void writeContactFile(const std::string& path, const std::string& address, std::uint64_t epoch, int servers) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::trunc);
    f << "{\"address\": \"" << address << "\", \"epoch\": " << epoch << ", \"pid\": " << ::getpid()
      << ", \"servers\": " << servers << "}\n";
    if (!f.good()) throw SystemError("cannot write the contact file " + tmp, errno);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    throw SystemError("cannot move the contact file into place at " + path, err);
  }
}

}  // namespace

class Server::Impl {
 public:
  explicit Impl(const ServerOptions& o) : options_(o) {
    if (o.memBytes < (1u << 20)) {
      throw Error(ErrorCode::InvalidArgument, "--mem " + std::to_string(o.memBytes) + " bytes: at least 1M is needed");
    }
    if (o.servers < 1) throw Error(ErrorCode::InvalidArgument, "--servers must be at least 1");
    std::random_device rd;
    epoch_ = (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^
             static_cast<std::uint64_t>(Clock::now().time_since_epoch().count());
    identity_ = hostIdentity(Env::fromProcess().node);
    ServerArena::removeStale();
    arena_ = std::make_unique<ServerArena>(o.memBytes);
    node_ = rpc::makeNode("staging server");
    node_->setHandlers({[this](rpc::ConnId c, std::string h, rpc::Payload p) { handle(c, std::move(h), std::move(p)); },
                        [this](rpc::ConnId c, const std::string& why) { connectionLost(c, why); }, nullptr});
    address_ = node_->listen(o.listen);
    if (o.join.empty()) {
      index_ = 0;
      servers_ = o.servers;
      members_.push_back(address_);
    } else {
      joinSpace();
    }
    store_ = std::make_unique<Store>(o.memBytes, o.policy, index_, servers_);
    if (!o.contactFile.empty()) writeContactFile(o.contactFile, address_, epoch_, servers_);
    snapshot();
  }

  ~Impl() {
    stop(0);
    if (!options_.contactFile.empty()) std::remove(options_.contactFile.c_str());
  }

  void start() { thread_ = std::thread([this] { run(); }); }

  void run() {
    while (!stopRequested_.load(std::memory_order_acquire)) serveOnce(std::chrono::milliseconds(10));
    drain();
  }

  void requestStop() { stopRequested_.store(true, std::memory_order_release); }

  void stop(double drainSec) {
    std::lock_guard lock(stopMutex_);  // two stoppers: one joins
    drainSec_ = drainSec;
    requestStop();
    if (thread_.joinable()) thread_.join();
  }

  StoreStats stats() const {
    std::lock_guard lock(statsMutex_);
    return stats_;
  }

  std::string address_;
  std::uint64_t epoch_ = 0;
  int index_ = 0;
  int servers_ = 1;

 private:
  struct ClientState {
    int inflight = 0;  // transfers UCX still runs for it (their callbacks end them)
    bool gone = false;
  };
  struct Blocked {  // a put waiting for memory (policy block)
    ConnId conn;
    std::uint64_t id;
    Op op;
    std::string header;
    rpc::Payload payload;
    Clock::time_point deadline;
  };
  struct Waiting {  // a query or a version wait waiting for data
    ConnId conn;
    std::uint64_t id;
    Op op;
    std::string header;
    Clock::time_point deadline;
  };
  struct LeaseState {
    ConnId conn;
    std::vector<Fragment> fragments;
  };

  // --- the loop -------------------------------------------------------------------------------

  void serveOnce(std::chrono::milliseconds nap) {
    bool busy = node_->progress();
    if (store_->generation() != seenGeneration_) {
      seenGeneration_ = store_->generation();
      retryBlocked();
      recheckWaiting();
      busy = true;
    }
    expire();
    if (busy) return;
    const int fd = node_->armForSleep();
    if (fd == ProgressClient::kBusy) return;
    if (fd >= 0) {
      pollfd p{fd, POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(nap.count()));
    } else {
      ::usleep(1000);
    }
  }

  void drain() {
    stopping_ = true;
    const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(drainSec_));
    while (Clock::now() < end && anyInflight()) serveOnce(std::chrono::milliseconds(1));
    const std::string why = "staging server " + address_ + " is shutting down";
    for (auto& b : blocked_) {
      node_->drop(b.payload);
      replyError(b.conn, b.id, ErrorCode::ServerLost, why);
    }
    blocked_.clear();
    for (auto& w : waiting_) replyError(w.conn, w.id, ErrorCode::ServerLost, why);
    waiting_.clear();
    // Let the last replies go out before the connections close.
    const auto flushEnd = Clock::now() + std::chrono::milliseconds(200);
    while (Clock::now() < flushEnd && node_->progress()) {
    }
    std::vector<ConnId> open;
    for (auto& [c, s] : clients_) open.push_back(c);
    clients_.clear();
    for (ConnId c : open) node_->close(c);
  }

  bool anyInflight() const {
    for (const auto& [c, s] : clients_) {
      if (s.inflight > 0) return true;
    }
    return false;
  }

  void expire() {
    const auto now = Clock::now();
    if (now < nextExpiry_) return;
    nextExpiry_ = now + std::chrono::milliseconds(5);
    for (auto it = blocked_.begin(); it != blocked_.end();) {
      if (now < it->deadline) {
        ++it;
        continue;
      }
      node_->drop(it->payload);
      const StoreStats s = store_->stats();
      replyError(it->conn, it->id, ErrorCode::SpaceFull,
                 std::string(protocol::opName(it->op)) + " waited until its timeout (policy block): staging server " +
                     address_ + " holds " + std::to_string(s.bytesInUse) + " of " + std::to_string(s.capacity) +
                     " bytes (--mem), and a new version also waits while keep_versions older ones are incomplete; "
                     "readers must release versions, writers finish theirs, or --mem be raised");
      it = blocked_.erase(it);
    }
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (now < it->deadline) {
        ++it;
        continue;
      }
      Waiting w = std::move(*it);
      it = waiting_.erase(it);
      answerWaiting(w, true);
    }
    snapshot();
  }

  void snapshot() {
    std::lock_guard lock(statsMutex_);
    stats_ = store_->stats();
  }

  // --- requests -------------------------------------------------------------------------------

  void handle(ConnId c, std::string header, rpc::Payload payload) {
    std::uint64_t id = 0;
    Op op{};
    try {
      wire::ByteReader r(header);
      const protocol::Head h = protocol::readHead(r);
      id = h.id;
      op = h.op;
      if (stopping_) throw Error(ErrorCode::ServerLost, "staging server " + address_ + " is shutting down");
      dispatch(c, h, header, r, payload);
    } catch (const wire::Malformed& e) {
      node_->drop(payload);
      // Another build's request: its id sits at the same place in every version's head.
      if (id == 0 && header.size() >= protocol::kHeadBytes) std::memcpy(&id, header.data() + 8, 8);
      replyError(c, id, ErrorCode::InvalidArgument,
                 "staging server " + address_ + ": malformed " + protocol::opName(op) + " request: " + e.what());
    } catch (const Error& e) {
      node_->drop(payload);
      replyError(c, id, e.code(), e.what());
    } catch (const std::exception& e) {
      node_->drop(payload);
      replyError(c, id, ErrorCode::Internal, std::string("staging server ") + address_ + ": " + e.what());
    }
  }

  void dispatch(ConnId c, const protocol::Head& h, const std::string& header, wire::ByteReader& r,
                rpc::Payload& payload) {
    clients_[c];  // known from its first message on
    switch (h.op) {
      case Op::Hello: return hello(c, h.id, r);
      case Op::Join: return join(c, h.id, r);
      case Op::Members: return membersKnown(c, r);
      case Op::Define: {
        store_->define(protocol::readVariable(r));
        return replyOk(c, h.id);
      }
      case Op::Describe: {
        wire::ByteWriter w = protocol::beginReply(h.id);
        protocol::writeVariable(w, store_->variable(r.str()));
        return send(c, w);
      }
      case Op::Put:
      case Op::PutBatch:
      case Op::Reserve: {
        Blocked b{c, h.id, h.op, header, std::move(payload), {}};
        if (!admit(b)) {
          blocked_.push_back(std::move(b));
          snapshot();
        }
        return;
      }
      case Op::Write: return write(c, h.id, r, payload);
      case Op::Commit: {
        const std::uint64_t reservation = r.u64();
        if (store_->reservationOwner(reservation) != c) {
          throw Error(ErrorCode::InvalidArgument, "commit of reservation " + std::to_string(reservation) +
                                                      ", which this client does not hold");
        }
        if (auto l = landing_.find(reservation); l != landing_.end()) {
          throw Error(ErrorCode::InvalidArgument, "commit of reservation " + std::to_string(reservation) + " while " +
                                                      std::to_string(l->second.writes) +
                                                      " write(s) into it are still arriving");
        }
        store_->commit(reservation);
        return replyOk(c, h.id);
      }
      case Op::Abort: {
        const std::uint64_t reservation = r.u64();
        if (store_->reservationOwner(reservation) != c) return;
        // Memory UCX is still landing data in goes back only once the data has landed.
        if (auto l = landing_.find(reservation); l != landing_.end()) {
          l->second.abortWhenDone = true;
        } else {
          store_->abort(reservation);
        }
        return;
      }
      case Op::Query:
      case Op::WaitVersion: {
        Waiting w{c, h.id, h.op, header, {}};
        if (!answerWaiting(w, false)) waiting_.push_back(std::move(w));
        return;
      }
      case Op::Fetch: return fetch(c, h.id, r.u64());
      case Op::Done: {
        const std::uint64_t lease = r.u64();
        auto it = leases_.find(lease);
        if (it != leases_.end() && it->second.conn == c) {
          leases_.erase(it);
          store_->endLease(lease);
        }
        return;
      }
      case Op::Release: {
        const std::string name = r.str();
        const std::int64_t version = r.i64();
        store_->release(c, name, version);
        return replyOk(c, h.id);
      }
      case Op::Stats: {
        wire::ByteWriter w = protocol::beginReply(h.id);
        protocol::writeStats(w, store_->stats());
        w.str(policyName(store_->policy())).u8(arena_->locked() ? 1 : 0).u32(index_).u32(servers_);
        return send(c, w);
      }
      default:
        throw Error(ErrorCode::InvalidArgument, "staging server " + address_ + ": unknown request op " +
                                                    std::to_string(static_cast<int>(h.op)));
    }
  }

  void hello(ConnId c, std::uint64_t id, wire::ByteReader& r) {
    const std::string build = r.str();
    const std::string node = r.str();
    (void)r.u32();  // pid, for messages to come
    if (build != buildVersion()) {
      throw Error(ErrorCode::InvalidArgument, "staging server " + address_ + " runs axon " + buildVersion() +
                                                  " but the client runs " + build +
                                                  "; client and server must come from the same build");
    }
    if (static_cast<int>(members_.size()) < servers_) {
      throw Error(ErrorCode::ServerLost, "staging server " + address_ + ": the space has " +
                                             std::to_string(members_.size()) + " of its " + std::to_string(servers_) +
                                             " servers so far (start the others with --join " + address_ + ")");
    }
    wire::ByteWriter w = protocol::beginReply(id);
    w.u32(index_).u32(servers_).u64(epoch_).str(identity_).str(arena_->name()).u64(arena_->capacity());
    w.u32(static_cast<std::uint32_t>(members_.size()));
    for (const auto& m : members_) w.str(m);
    (void)node;
    send(c, w);
  }

  void join(ConnId c, std::uint64_t id, wire::ByteReader& r) {
    const std::string address = r.str();
    if (index_ != 0) throw Error(ErrorCode::InvalidArgument, "join " + address_ + ", the space's first server, instead");
    if (static_cast<int>(members_.size()) >= servers_) {
      throw Error(ErrorCode::InvalidArgument, "the space of " + address_ + " already has its " +
                                                  std::to_string(servers_) + " servers (--servers)");
    }
    members_.push_back(address);
    joined_.push_back(c);
    wire::ByteWriter w = protocol::beginReply(id);
    w.u32(static_cast<std::uint32_t>(members_.size() - 1)).u32(static_cast<std::uint32_t>(servers_));
    send(c, w);
    if (static_cast<int>(members_.size()) < servers_) return;
    // All in: every joined server learns the list (clients may ask any of them).
    wire::ByteWriter m = protocol::begin(Op::Members, 0);
    m.u32(static_cast<std::uint32_t>(members_.size()));
    for (const auto& a : members_) m.str(a);
    for (ConnId j : joined_) send(j, m);
  }

  void membersKnown(ConnId c, wire::ByteReader& r) {
    if (c != seed_) throw Error(ErrorCode::InvalidArgument, "a member list from a connection that is not the first server");
    const std::uint32_t n = r.count(4);
    std::vector<std::string> members;
    for (std::uint32_t i = 0; i < n; ++i) members.push_back(r.str());
    members_ = std::move(members);
  }

  // The members list is the first server's; a joining one learns its index and the count.
  void joinSpace() {
    // Shared with the handlers and the send's completion, which may outlive this call's frame.
    struct Join {
      bool done = false;
      std::string failure;
      int index = 0, servers = 0;
      std::vector<std::string> members;
      rpc::ConnId seed = 0;
    };
    auto st = std::make_shared<Join>();
    node_->setHandlers({[this, st](rpc::ConnId c, std::string h, rpc::Payload p) {
                          node_->drop(p);
                          if (c != st->seed) return;  // a client too early: it retries its hello
                          try {
                            wire::ByteReader r(h);
                            if (protocol::readHead(r).op == Op::Members) {  // may follow the reply at once
                              const std::uint32_t n = r.count(4);
                              st->members.clear();
                              for (std::uint32_t i = 0; i < n; ++i) st->members.push_back(r.str());
                              return;
                            }
                            const int status = r.i32();
                            const std::string message = r.str();
                            if (status != 0) throw Error(static_cast<ErrorCode>(status), message);
                            st->index = static_cast<int>(r.u32());
                            st->servers = static_cast<int>(r.u32());
                          } catch (const std::exception& e) {
                            st->failure = e.what();
                          }
                          st->done = true;
                        },
                        [st](rpc::ConnId c, const std::string& why) {
                          if (c != st->seed) return;
                          st->failure = "the connection failed: " + why;
                          st->done = true;
                        },
                        nullptr});
    st->seed = node_->connect(options_.join);
    wire::ByteWriter w = protocol::begin(Op::Join, 1);
    w.str(address_);
    node_->send(st->seed, w.bytes(), nullptr, 0, rpc::Memory::Host, [st](const std::string& f) {
      if (f.empty()) return;
      st->failure = "sending failed: " + f;
      st->done = true;
    });
    const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(options_.timeoutSec));
    while (!st->done && Clock::now() < end) {
      if (!node_->progress()) ::usleep(100);
    }
    if (!st->done) st->failure = "no answer within " + std::to_string(options_.timeoutSec) + " s";
    if (!st->failure.empty()) {
      node_->close(st->seed);
      throw Error(ErrorCode::ServerLost, "staging server " + address_ + ": joining the space of " + options_.join +
                                             " failed: " + st->failure);
    }
    index_ = st->index;
    servers_ = st->servers;
    members_ = st->members;
    seed_ = st->seed;  // kept: the first server sends the member list on it once the space is complete
    node_->setHandlers({[this](rpc::ConnId c, std::string h, rpc::Payload p) { handle(c, std::move(h), std::move(p)); },
                        [this](rpc::ConnId c, const std::string& why) { connectionLost(c, why); }, nullptr});
  }

  // Finds memory for a put, a batch or a reservation and starts it; false: wait (policy block).
  bool admit(Blocked& b) {
    wire::ByteReader r(b.header);
    protocol::readHead(r);
    if (b.op == Op::PutBatch) return admitBatch(b, r);
    const std::string name = r.str();
    const std::int64_t version = r.i64();
    const Box box = protocol::readBox(r);
    const std::uint64_t timeoutMs = r.u64();
    std::uint64_t bytes = b.payload.bytes;
    if (b.op == Op::Reserve) {
      const Variable& v = store_->variable(name);
      bytes = static_cast<std::uint64_t>(byteSize(box, dataTypeSize(v.dtype)));
    }
    auto res = store_->reserve(b.conn, name, version, box, bytes);
    if (!res) {
      if (b.deadline == Clock::time_point{}) b.deadline = after(timeoutMs);
      return false;
    }
    try {
      arena_->ensure(res->offset + res->bytes);
    } catch (...) {
      store_->abort(res->id);
      throw;
    }
    if (b.op == Op::Reserve) {
      wire::ByteWriter w = protocol::beginReply(b.id);
      w.u64(res->id).u64(res->offset);
      send(b.conn, w);
      return true;
    }
    const ConnId c = b.conn;
    const std::uint64_t id = b.id, reservation = res->id;
    ++clients_[c].inflight;
    node_->receive(b.payload, arena_->at(res->offset), rpc::Memory::Host, [this, c, id, reservation](const std::string& f) {
      if (f.empty()) {
        store_->commit(reservation);
        replyOk(c, id);
      } else {
        store_->abort(reservation);
        replyError(c, id, ErrorCode::ServerLost, "staging server " + address_ + ": receiving the piece failed: " + f);
      }
      transferEnded(c);
    });
    return true;
  }

  // A chunk of a reservation's data (a pipelined GPU put): it lands at its offset in the
  // reservation, which becomes visible only at Commit.
  void write(ConnId c, std::uint64_t id, wire::ByteReader& r, rpc::Payload& payload) {
    const std::uint64_t reservation = r.u64(), at = r.u64();
    const auto res = store_->reservationOf(c, reservation);
    if (!res) {
      throw Error(ErrorCode::InvalidArgument, "write into reservation " + std::to_string(reservation) +
                                                  ", which this client does not hold");
    }
    if (at > res->bytes || payload.bytes > res->bytes - at) {
      throw Error(ErrorCode::InvalidArgument, "write of " + std::to_string(payload.bytes) + " bytes at offset " +
                                                  std::to_string(at) + " overruns reservation " +
                                                  std::to_string(reservation) + " of " + std::to_string(res->bytes) +
                                                  " bytes");
    }
    ++landing_[reservation].writes;
    ++clients_[c].inflight;
    node_->receive(payload, arena_->at(res->offset + at), rpc::Memory::Host, [this, c, id, reservation](const std::string& f) {
      auto l = landing_.find(reservation);
      if (l != landing_.end() && --l->second.writes == 0) {
        const bool abortNow = l->second.abortWhenDone;
        landing_.erase(l);
        if (abortNow) store_->abort(reservation);
      }
      if (f.empty()) {
        replyOk(c, id);
      } else {
        replyError(c, id, ErrorCode::ServerLost, "staging server " + address_ + ": receiving a write failed: " + f);
      }
      transferEnded(c);
    });
  }

  bool admitBatch(Blocked& b, wire::ByteReader& r) {
    struct Item {
      std::string name;
      std::int64_t version;
      Box box;
      std::uint64_t bytes;
    };
    const std::uint32_t n = r.count(8);
    std::vector<Item> items;
    std::uint64_t total = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      Item it;
      it.name = r.str();
      it.version = r.i64();
      it.box = protocol::readBox(r);
      it.bytes = r.u64();
      total += it.bytes;
      items.push_back(std::move(it));
    }
    const std::uint64_t timeoutMs = r.u64();
    if (total != b.payload.bytes) {
      throw Error(ErrorCode::InvalidArgument, "a put batch announces " + std::to_string(total) + " bytes but carries " +
                                                  std::to_string(b.payload.bytes));
    }
    // All or none: a batch waits, or fails, as a whole.
    std::vector<Store::Reservation> held;
    auto abortHeld = [&] {
      for (const auto& h : held) store_->unreserve(h.id);
    };
    try {
      for (const Item& it : items) {
        auto res = store_->reserve(b.conn, it.name, it.version, it.box, it.bytes);
        if (!res) {
          abortHeld();
          if (b.deadline == Clock::time_point{}) b.deadline = after(timeoutMs);
          return false;
        }
        held.push_back(*res);
        arena_->ensure(res->offset + res->bytes);
      }
    } catch (...) {
      abortHeld();
      throw;
    }
    auto buffer = std::make_shared<std::vector<char>>(b.payload.bytes);
    const ConnId c = b.conn;
    const std::uint64_t id = b.id;
    ++clients_[c].inflight;
    node_->receive(b.payload, buffer->data(), rpc::Memory::Host, [this, c, id, held, buffer](const std::string& f) {
      if (f.empty()) {
        std::size_t at = 0;
        for (const auto& h : held) {
          std::memcpy(arena_->at(h.offset), buffer->data() + at, h.bytes);
          at += h.bytes;
          store_->commit(h.id);
        }
        wire::ByteWriter w = protocol::beginReply(id);
        w.u32(static_cast<std::uint32_t>(held.size()));
        send(c, w);
      } else {
        for (const auto& h : held) store_->abort(h.id);
        replyError(c, id, ErrorCode::ServerLost, "staging server " + address_ + ": receiving a put batch failed: " + f);
      }
      transferEnded(c);
    });
    return true;
  }

  void retryBlocked() {
    for (auto it = blocked_.begin(); it != blocked_.end();) {
      bool started = false;
      try {
        started = admit(*it);
      } catch (const Error& e) {
        node_->drop(it->payload);
        replyError(it->conn, it->id, e.code(), e.what());
        started = true;
      }
      it = started ? blocked_.erase(it) : std::next(it);
    }
  }

  void recheckWaiting() {
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      it = answerWaiting(*it, false) ? waiting_.erase(it) : std::next(it);
    }
  }

  // Answers a query or a version wait when it can be (or `final`ly, at its deadline); false: keep
  // waiting.
  bool answerWaiting(Waiting& w, bool final) {
    try {
      wire::ByteReader r(w.header);
      protocol::readHead(r);
      return w.op == Op::Query ? query(w, r, final) : waitVersion(w, r, final);
    } catch (const Error& e) {
      replyError(w.conn, w.id, e.code(), e.what());
    } catch (const wire::Malformed& e) {
      replyError(w.conn, w.id, ErrorCode::InvalidArgument, std::string("malformed request: ") + e.what());
    }
    return true;
  }

  bool query(Waiting& w, wire::ByteReader& r, bool final) {
    const std::string name = r.str();
    const std::int64_t version = r.i64();
    const std::uint32_t n = r.count(17);
    std::vector<Box> boxes;
    for (std::uint32_t i = 0; i < n; ++i) boxes.push_back(protocol::readBox(r));
    const std::uint64_t waitMs = r.u64();
    Store::Lookup found = store_->lookup(name, version, boxes);
    if (!found.missing.empty()) {
      if (!final && waitMs > 0) {
        if (w.deadline == Clock::time_point{}) w.deadline = after(waitMs);
        return false;
      }
      wire::ByteWriter out = protocol::beginReply(
          w.id, static_cast<int>(ErrorCode::Incomplete),
          "staging server " + address_ + ": " + std::to_string(found.missing.size()) + " part(s) of '" + name +
              "' version " + std::to_string(version) + " were not written");
      out.u32(static_cast<std::uint32_t>(found.missing.size()));
      for (const Box& m : found.missing) protocol::writeBox(out, m);
      send(w.conn, out);
      return true;
    }
    std::uint64_t bytes = 0;
    for (const auto& f : found.fragments) bytes += f.rangeBytes;
    const std::uint64_t lease = found.fragments.empty() ? 0 : store_->lease(w.conn, name, version, bytes);
    wire::ByteWriter out = protocol::beginReply(w.id);
    out.u64(lease).u32(static_cast<std::uint32_t>(found.fragments.size()));
    for (const auto& f : found.fragments) {
      protocol::writeBox(out, f.piece);
      out.u64(f.offset).u64(f.rangeStart).u64(f.rangeBytes);
    }
    if (lease) leases_[lease] = LeaseState{w.conn, std::move(found.fragments)};
    send(w.conn, out);
    return true;
  }

  bool waitVersion(Waiting& w, wire::ByteReader& r, bool final) {
    const std::string name = r.str();
    const std::int64_t atLeast = r.i64();
    const std::uint64_t waitMs = r.u64();
    const std::vector<std::int64_t> complete = store_->completeVersions(name, atLeast);
    if (complete.empty() && !final && waitMs > 0) {
      if (w.deadline == Clock::time_point{}) w.deadline = after(waitMs);
      return false;
    }
    wire::ByteWriter out = protocol::beginReply(w.id);
    out.u32(static_cast<std::uint32_t>(complete.size()));
    for (std::int64_t v : complete) out.i64(v);
    send(w.conn, out);
    return true;
  }

  void fetch(ConnId c, std::uint64_t id, std::uint64_t lease) {
    auto it = leases_.find(lease);
    if (it == leases_.end() || it->second.conn != c) {
      throw Error(ErrorCode::InvalidArgument, "fetch of lease " + std::to_string(lease) + ", which this client does not hold");
    }
    const std::vector<Fragment> fragments = it->second.fragments;
    leases_.erase(it);
    auto left = std::make_shared<std::size_t>(fragments.size());
    auto failure = std::make_shared<std::string>();
    clients_[c].inflight += static_cast<int>(fragments.size());
    for (std::uint32_t i = 0; i < fragments.size(); ++i) {
      const Fragment& f = fragments[i];
      wire::ByteWriter h = protocol::begin(Op::Data, id);
      h.u32(i);
      node_->send(c, h.bytes(), arena_->at(f.offset + f.rangeStart), f.rangeBytes, rpc::Memory::Host,
                  [this, c, id, lease, left, failure](const std::string& f) {
                    if (!f.empty() && failure->empty()) *failure = f;
                    if (--*left == 0) {
                      store_->endLease(lease);
                      if (failure->empty()) replyOk(c, id);
                      else replyError(c, id, ErrorCode::ServerLost, "staging server " + address_ + ": sending failed: " + *failure);
                    }
                    transferEnded(c);
                  });
    }
  }

  // --- connections ----------------------------------------------------------------------------

  void connectionLost(ConnId c, const std::string& why) {
    auto it = clients_.find(c);
    if (it == clients_.end()) {
      node_->close(c);
      return;
    }
    it->second.gone = true;
    for (auto b = blocked_.begin(); b != blocked_.end();) {
      if (b->conn != c) {
        ++b;
        continue;
      }
      node_->drop(b->payload);
      b = blocked_.erase(b);
    }
    for (auto w = waiting_.begin(); w != waiting_.end();) w = w->conn == c ? waiting_.erase(w) : std::next(w);
    (void)why;  // a client's end is normal: nothing to report
    if (it->second.inflight == 0) forget(c);
  }

  void transferEnded(ConnId c) {
    auto it = clients_.find(c);
    if (it == clients_.end()) return;
    if (--it->second.inflight == 0 && it->second.gone) forget(c);
  }

  // The client is gone and UCX has ended its transfers: what it reserved or held is let go.
  void forget(ConnId c) {
    for (auto l = leases_.begin(); l != leases_.end();) l = l->second.conn == c ? leases_.erase(l) : std::next(l);
    store_->dropClient(c);
    clients_.erase(c);
    node_->close(c);
    snapshot();
  }

  // --- replies --------------------------------------------------------------------------------

  void send(ConnId c, const wire::ByteWriter& w) {
    if (w.bytes().size() <= node_->maxHeader()) {
      node_->send(c, w.bytes(), nullptr, 0, rpc::Memory::Host, [](const std::string&) {});
      return;
    }
    // Longer than a message header may be (a get's list of thousands of fragments): the head
    // alone as the header, the rest as the message's data, kept until UCX has sent it.
    auto body = std::make_shared<std::string>(w.bytes().substr(protocol::kHeadBytes));
    node_->send(c, w.bytes().substr(0, protocol::kHeadBytes), body->data(), body->size(), rpc::Memory::Host,
                [body](const std::string&) {});
  }
  void replyOk(ConnId c, std::uint64_t id) {
    if (id) send(c, protocol::beginReply(id));
  }
  void replyError(ConnId c, std::uint64_t id, ErrorCode code, const std::string& message) {
    if (id) send(c, protocol::beginReply(id, static_cast<int>(code), message));
  }

  ServerOptions options_;
  std::string identity_;
  std::vector<std::string> members_;
  std::vector<ConnId> joined_;  // the first server: connections of the servers that joined
  ConnId seed_ = 0;             // a joined server: its connection to the first
  std::unique_ptr<ServerArena> arena_;
  std::unique_ptr<rpc::Node> node_;
  std::unique_ptr<Store> store_;
  std::map<ConnId, ClientState> clients_;
  std::list<Blocked> blocked_;
  std::list<Waiting> waiting_;
  std::map<std::uint64_t, LeaseState> leases_;
  struct Landing {  // a reservation with Write data still arriving
    int writes = 0;
    bool abortWhenDone = false;  // its writer aborted it meanwhile
  };
  std::map<std::uint64_t, Landing> landing_;
  std::uint64_t seenGeneration_ = 0;
  Clock::time_point nextExpiry_{};
  bool stopping_ = false;
  double drainSec_ = 5.0;
  std::atomic<bool> stopRequested_{false};
  std::mutex stopMutex_;
  std::thread thread_;
  mutable std::mutex statsMutex_;
  StoreStats stats_;
};

Server::Server(const ServerOptions& options) : impl_(std::make_unique<Impl>(options)) {}
Server::~Server() = default;
const std::string& Server::address() const { return impl_->address_; }
std::uint64_t Server::epoch() const { return impl_->epoch_; }
int Server::index() const { return impl_->index_; }
void Server::start() { impl_->start(); }
void Server::run() { impl_->run(); }
void Server::stop(double drainSec) { impl_->stop(drainSec); }
void Server::requestStop() { impl_->requestStop(); }
StoreStats Server::stats() const { return impl_->stats(); }

}  // namespace axon::space
