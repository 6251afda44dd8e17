// A staging server (server.hpp): its set-up, its one thread's loop (UCX's progress, the requests
// that wait for memory or data, their deadlines, the drain at shutdown) and the dispatch of each
// request to the part that handles its family:
//   server_gate        who may speak: every connection proves the space's key first (handshake.hpp)
//   server_membership  the space's servers: joining the first one, the member list, a client's hello
//   server_puts        data coming in: admission against --mem, landing in the arena, commit, abort
//   server_gets        data going out: queries and their leases, fetches, version waits
//   server_removes     removing a variable: its waiting requests refused, its versions freed
//   server_clients     replies, and each client's transfers in flight (a client gone is
//                      forgotten once they end)
// The store (store.hpp) keeps the rules; nothing here needs a lock, the loop being one thread.
#include "axon/space_server.hpp"

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <random>

#include "axon/error.hpp"
#include "core/env.hpp"
#include "core/host_identity.hpp"
#include "core/log.hpp"
#include "core/net.hpp"
#include "space/arena.hpp"
#include "space/contact_file.hpp"
#include "space/protocol.hpp"
#include "space/server_clients.hpp"
#include "space/server_gate.hpp"
#include "space/server_gets.hpp"
#include "space/server_membership.hpp"
#include "space/server_puts.hpp"
#include "space/server_removes.hpp"
#include "space/space_key.hpp"
#include "transport/rpc.hpp"

namespace axon::space {

using protocol::Op;
using rpc::ConnId;

namespace {

// The address to listen on: the one asked for, else this host's address (net::primaryAddress:
// the first interface that is up and not loopback, which clients on other nodes reach, or
// 127.0.0.1). Never every interface unless asked for by name (0.0.0.0): a server listening on a
// public or management network its user never meant is one more way in.
std::string chooseListen(const std::string& asked) {
  if (asked.empty()) return net::primaryAddress() + ":0";
  if (asked.front() == ':') return net::primaryAddress() + asked;
  return asked;
}

}  // namespace

class Server::Impl {
 public:
  explicit Impl(const ServerOptions& o) : options_(o) {
    options_.timeoutSec = clampTimeout(o.timeoutSec, "the staging server's timeout (--timeout)");
    if (o.memBytes < (1u << 20)) {
      throw Error(ErrorCode::InvalidArgument, "--mem " + std::to_string(o.memBytes) + " bytes: at least 1M is needed");
    }
    if (o.servers < 1) throw Error(ErrorCode::InvalidArgument, "--servers must be at least 1");
    std::random_device rd;
    epoch_ = (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^
             static_cast<std::uint64_t>(Clock::now().time_since_epoch().count());
    if (o.maxHolds < 1) throw Error(ErrorCode::InvalidArgument, "--max-holds must be at least 1");
    const Env env = Env::fromProcess();
    SpaceKey key = serverKey(o, env);
    if (key.generated && !o.join.empty()) {
      throw Error(ErrorCode::PermissionDenied,
                  "a server joining the space of " + o.join +
                      " must prove that space's key: give it (--key-file, AXON_SPACE_KEY, or the key option); "
                      "the first server's contact file holds it");
    }
    key_ = key.key.hex();
    keyOrigin_ = key.origin;
    const std::string identity = hostIdentity(env.node);
    // Before anything is started: a path a live server holds refuses this one, untouched.
    if (!o.contactFile.empty()) {
      contact_ = std::make_unique<ContactFileClaim>(o.contactFile);
      if (!contact_->stale().empty() && logThreshold() >= static_cast<int>(LogLevel::Warn)) {
        std::fprintf(stderr, "axon space: note: replacing the stale contact file %s (it named %s, which no longer "
                             "holds it)\n", o.contactFile.c_str(), contact_->stale().c_str());
      }
    }
    ServerArena::removeStale();
    arena_ = std::make_unique<ServerArena>(o.memBytes);
    node_ = rpc::makeNode("staging server");
    node_->setHandlers(servingHandlers());
    address_ = node_->listen(chooseListen(o.listen));
    clients_ = std::make_unique<ClientLinks>(*node_, address_, [this](ConnId c) { forget(c); });
    gate_ = std::make_unique<Gate>(*node_, address_, key.key, options_.timeoutSec);
    membership_ = std::make_unique<Membership>(*clients_, options_, key.key, epoch_, identity, *arena_, servingHandlers());
    if (membership_->seed()) gate_->trust(membership_->seed());
    store_ = std::make_unique<Store>(o.memBytes, o.policy, membership_->index(), membership_->servers());
    puts_ = std::make_unique<ServerPuts>(*clients_, *store_, *arena_);
    gets_ = std::make_unique<ServerGets>(*clients_, *store_, *arena_, o.maxHolds);
    removes_ = std::make_unique<ServerRemoves>(*clients_, *store_, *puts_, *gets_);
    if (contact_) contact_->write(address_, epoch_, membership_->servers(), key_);
    snapshot();
  }

  ~Impl() {
    stop(0);
    contact_.reset();  // the file goes (if still ours) once nothing is served any more
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

  int index() const { return membership_->index(); }
  // Fixed at start-up: safe to read from any thread.
  Policy policy() const { return options_.policy; }
  bool pinned() const { return arena_->locked(); }

  std::string address_;
  std::uint64_t epoch_ = 0;
  std::string key_;  // hex
  std::string keyOrigin_;

 private:
  rpc::Node::Handlers servingHandlers() {
    return {[this](rpc::ConnId c, std::string h, rpc::Payload p) { handle(c, std::move(h), std::move(p)); },
            [this](rpc::ConnId c, const std::string& why) { connectionLost(c, why); },
            [this](rpc::ConnId c) { gate_->accepted(c); }};
  }

  // --- the loop -------------------------------------------------------------------------------

  void serveOnce(std::chrono::milliseconds nap) {
    bool busy = node_->progress();
    if (gets_->pump()) busy = true;  // a slice of the fetches being sent
    if (store_->generation() != seenGeneration_) {
      seenGeneration_ = store_->generation();
      puts_->retry();
      gets_->recheck();
      removes_->recheck();
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
    while (Clock::now() < end && clients_->anyInflight()) serveOnce(std::chrono::milliseconds(1));
    const std::string why = "staging server " + address_ + " is shutting down";
    puts_->failAll(why);
    gets_->failAll(why);
    removes_->failAll(why);
    // Let the last replies go out before the connections close.
    const auto flushEnd = Clock::now() + std::chrono::milliseconds(200);
    while (Clock::now() < flushEnd && node_->progress()) {
    }
    for (ConnId c : clients_->takeAll()) node_->close(c);
  }

  void expire() {
    const auto now = Clock::now();
    if (now < nextExpiry_) return;
    nextExpiry_ = now + std::chrono::milliseconds(5);
    gate_->expire(now);
    puts_->expire(now);
    gets_->expire(now);
    removes_->expire(now);
    snapshot();
  }

  void snapshot() {
    std::lock_guard lock(statsMutex_);
    stats_ = store_->stats();
  }

  // --- requests -------------------------------------------------------------------------------

  void handle(ConnId c, std::string header, rpc::Payload payload) {
    if (!gate_->admitted(c)) {
      node_->drop(payload);  // nothing a connection sends before its proof is received
      return introduce(c, header);
    }
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
      clients_->replyError(c, id, ErrorCode::InvalidArgument,
                           "staging server " + address_ + ": malformed " + protocol::opName(op) + " request: " + e.what());
    } catch (const Error& e) {
      node_->drop(payload);
      clients_->replyError(c, id, e.code(), e.what());
    } catch (const std::exception& e) {
      node_->drop(payload);
      clients_->replyError(c, id, ErrorCode::Internal, std::string("staging server ") + address_ + ": " + e.what());
    }
  }

  // The first message of a connection: a Hello or a Join that proves the space's key (the gate
  // refuses anything else, unread), then its claims.
  void introduce(ConnId c, const std::string& header) {
    auto admission = gate_->admit(c, header);
    if (!admission) return;
    const protocol::Head& h = admission->opening.head;
    clients_->known(c);
    try {
      wire::ByteReader claims(admission->opening.claims);
      if (stopping_) throw Error(ErrorCode::ServerLost, "staging server " + address_ + " is shutting down");
      if (h.op == Op::Hello) membership_->hello(c, h.id, claims, admission->serverProof);
      else membership_->join(c, h.id, claims, admission->serverProof);
    } catch (const wire::Malformed& e) {
      clients_->replyError(c, h.id, ErrorCode::InvalidArgument, "staging server " + address_ + ": malformed " +
                                                                    protocol::opName(h.op) + " request: " + e.what());
    } catch (const Error& e) {
      clients_->replyError(c, h.id, e.code(), e.what());
    }
  }

  void dispatch(ConnId c, const protocol::Head& h, const std::string& header, wire::ByteReader& r,
                rpc::Payload& payload) {
    switch (h.op) {
      case Op::Hello:
      case Op::Join:
        throw Error(ErrorCode::InvalidArgument, "staging server " + address_ + ": a second " +
                                                    protocol::opName(h.op) + " on one connection");
      case Op::Members: return membership_->membersKnown(c, r);
      case Op::Define: {
        store_->define(protocol::readVariable(r));
        return clients_->replyOk(c, h.id);
      }
      case Op::Describe: {
        wire::ByteWriter w = protocol::beginReply(h.id);
        protocol::writeVariable(w, store_->variable(r.str()));
        return clients_->send(c, w);
      }
      case Op::Put:
      case Op::PutBatch:
      case Op::Reserve: {
        if (puts_->start(c, h, header, payload)) snapshot();  // waits for memory
        return;
      }
      case Op::Write: return puts_->write(c, h.id, r, payload);
      case Op::Commit: return puts_->commit(c, h.id, r);
      case Op::Abort: return puts_->abort(c, r);
      case Op::Query:
      case Op::WaitVersion: return gets_->start(c, h, header);
      case Op::Fetch: return gets_->fetch(c, h.id, r.u64());
      case Op::Done: return gets_->done(c, r.u64());
      case Op::Release: {
        const std::string name = r.str();
        const std::int64_t version = r.i64();
        gets_->release(c, name, version);
        return clients_->replyOk(c, h.id);
      }
      case Op::Remove: {
        removes_->start(c, h, r);
        return snapshot();
      }
      case Op::Stats: {
        wire::ByteWriter w = protocol::beginReply(h.id);
        protocol::writeStats(w, store_->stats());
        w.str(policyName(store_->policy()))
            .u8(arena_->locked() ? 1 : 0)
            .u32(membership_->index())
            .u32(membership_->servers());
        return clients_->send(c, w);
      }
      default:
        throw Error(ErrorCode::InvalidArgument, "staging server " + address_ + ": unknown request op " +
                                                    std::to_string(static_cast<int>(h.op)));
    }
  }

  // --- connections ----------------------------------------------------------------------------

  void connectionLost(ConnId c, const std::string& why) {
    gate_->forget(c);
    if (!clients_->markGone(c)) {
      node_->close(c);
      return;
    }
    puts_->dropClient(c);
    gets_->dropWaiting(c);
    removes_->dropClient(c);
    (void)why;  // a client's end is normal: nothing to report
    if (clients_->idle(c)) forget(c);
  }

  // The client is gone and UCX has ended its transfers: what it reserved or held is let go.
  void forget(ConnId c) {
    gets_->dropLeases(c);
    store_->dropClient(c);
    clients_->erase(c);
    node_->close(c);
    snapshot();
  }

  // Destroyed in reverse: the handlers and the store before the node (whose completions name
  // them no more once it is gone), the node before the arena UCX lands data in.
  ServerOptions options_;
  std::unique_ptr<ContactFileClaim> contact_;
  std::unique_ptr<ServerArena> arena_;
  std::unique_ptr<rpc::Node> node_;
  std::unique_ptr<ClientLinks> clients_;
  std::unique_ptr<Gate> gate_;
  std::unique_ptr<Membership> membership_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<ServerPuts> puts_;
  std::unique_ptr<ServerGets> gets_;
  std::unique_ptr<ServerRemoves> removes_;
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
const std::string& Server::key() const { return impl_->key_; }
const std::string& Server::keyOrigin() const { return impl_->keyOrigin_; }
int Server::index() const { return impl_->index(); }
void Server::start() { impl_->start(); }
void Server::run() { impl_->run(); }
void Server::stop(double drainSec) { impl_->stop(drainSec); }
void Server::requestStop() { impl_->requestStop(); }
ServerStats Server::stats() const {
  return serverStatsOf(impl_->stats(), impl_->address_, policyName(impl_->policy()), impl_->pinned());
}

}  // namespace axon::space
