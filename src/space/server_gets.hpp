// How data leaves a staging server: a Query names the pieces of a version that meet a get's boxes
// and leases them (the version stays pinned while the client reads them), or, when parts are not
// written yet, waits for them until its timeout and then says what is missing; a Fetch sends the
// leased fragments from the arena over UCX (clients on this node copy them from their mapping and
// say Done instead). WaitVersion waits here the same way, for a version complete on this server.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/wire.hpp"
#include "space/protocol.hpp"
#include "space/server_clients.hpp"
#include "space/server_holds.hpp"
#include "space/store.hpp"
#include "transport/rpc.hpp"

namespace axon::space {

class ServerArena;

class ServerGets {
 public:
  // `maxHolds`: per client, versions held and reads under way (server_holds.hpp).
  ServerGets(ClientLinks& clients, Store& store, ServerArena& arena, int maxHolds)
      : clients_(clients), store_(store), arena_(arena), holds_(maxHolds) {}

  // A Query or a WaitVersion: answered now, or kept until it can be, or its timeout.
  void start(rpc::ConnId c, const protocol::Head& h, const std::string& header);
  // Queues the lease's fragments for sending; pump() sends them a slice at a time.
  void fetch(rpc::ConnId c, std::uint64_t id, std::uint64_t lease);
  // Sends up to kFragmentsPerTurn queued fragments, taking fetches in turn, so that a get of
  // many pieces never holds the server's thread from other clients' requests; true if it sent any.
  bool pump();
  // The client copied the leased fragments itself (no reply).
  void done(rpc::ConnId c, std::uint64_t lease);
  // The client lets go of a version it got (Release).
  void release(rpc::ConnId c, const std::string& name, std::int64_t version);

  // The store changed: answers the waiting requests that can be answered now.
  void recheck();
  // Answers the waiting requests whose timeout has passed, with what there is.
  void expire(Clock::time_point now);
  // The client is gone: its waiting requests and fragments not yet sent are dropped...
  void dropWaiting(rpc::ConnId c);
  // ... and, once its transfers have ended, its leases.
  void dropLeases(rpc::ConnId c);
  // Shutdown: every waiting request fails with `why`.
  void failAll(const std::string& why);
  // The variable was removed: the queries and version waits waiting for it fail with `why`, and
  // no client holds its versions any more. Fetches under way finish (their leases keep the data).
  void removed(const std::string& name, const std::string& why);

 private:
  using Waiting = HeldRequest;  // a query or a version wait waiting for data
  struct LeaseState {
    rpc::ConnId conn;
    std::vector<Fragment> fragments;
  };

  // Answers a query or a version wait when it can be (or `final`ly, at its deadline); false: keep
  // waiting.
  bool answer(Waiting& w, bool final);
  bool query(Waiting& w, wire::ByteReader& r, bool final);
  bool waitVersion(Waiting& w, wire::ByteReader& r, bool final);

  // A fetch being sent: its fragments from `next` on are still queued.
  struct Sending {
    std::size_t left = 0;  // fragments not yet completed (queued or on the wire)
    std::string failure;
  };
  struct Outgoing {
    rpc::ConnId conn;
    std::uint64_t id = 0, lease = 0;
    std::vector<Fragment> fragments;
    std::size_t next = 0;
    std::shared_ptr<Sending> sending;
  };
  static constexpr std::size_t kFragmentsPerTurn = 64;
  void sendOne(Outgoing& o);
  // `n` fragments of the fetch will never be sent: when none is left, its lease ends and (unless
  // the client is gone) it is answered.
  void unsent(const Outgoing& o, std::size_t n, bool reply);

  ClientLinks& clients_;
  Store& store_;
  ServerArena& arena_;
  std::list<Outgoing> outgoing_;
  std::list<Waiting> waiting_;
  std::map<std::uint64_t, LeaseState> leases_;
  HoldBook holds_;
};

}  // namespace axon::space
