// A staging server's side of its connections to clients: the replies it sends (one too long for a
// message header goes as the message's data), and per client the transfers UCX still runs for it
// (landing a put, sending a get's fragments), so that a client that went away is forgotten (its
// reservations, holds and leases let go) only once UCX no longer uses the memory they name.
// Every handler of the server (server_puts, server_gets, server_membership) answers through it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "axon/error.hpp"
#include "bootstrap/wire.hpp"
#include "core/env.hpp"
#include "space/protocol.hpp"
#include "transport/rpc.hpp"

namespace axon::space {

using Clock = std::chrono::steady_clock;

// When a request that may wait `ms` (its timeout, as it travels) stops waiting.
// A client's wait (milliseconds from the wire) as a deadline; cut to kMaxTimeoutSec so that no
// value a client sends overflows the clock.
inline Clock::time_point deadlineIn(std::uint64_t ms) {
  return Clock::now() + std::chrono::milliseconds(std::min(ms, static_cast<std::uint64_t>(kMaxTimeoutSec * 1000)));
}

// A request kept until it can be served (a put waiting for memory, a get or a version wait for
// data), or until its deadline, set when it first has to wait.
struct HeldRequest {
  rpc::ConnId conn;
  std::uint64_t id;
  protocol::Op op;
  std::string header;
  Clock::time_point deadline;
};

// Whether a held request (a Put, Reserve, PutBatch, Query or WaitVersion: each names its
// variables first) is about the variable `name`.
inline bool concerns(const HeldRequest& h, const std::string& name) {
  try {
    wire::ByteReader r(h.header);
    protocol::readHead(r);
    if (h.op != protocol::Op::PutBatch) return r.str() == name;
    const std::uint32_t n = r.count(8);
    for (std::uint32_t i = 0; i < n; ++i) {
      if (r.str() == name) return true;
      r.i64();
      protocol::readBox(r);
      r.u64();
    }
  } catch (const wire::Malformed&) {
  }
  return false;
}

class ClientLinks {
 public:
  // `forget` lets go of what a client that is gone holds; called once its transfers have ended.
  ClientLinks(rpc::Node& node, std::string address, std::function<void(rpc::ConnId)> forget)
      : node_(node), address_(std::move(address)), forget_(std::move(forget)) {}

  rpc::Node& node() const { return node_; }
  // The server's own address, which its messages name.
  const std::string& address() const { return address_; }

  void send(rpc::ConnId c, const wire::ByteWriter& w);
  void replyOk(rpc::ConnId c, std::uint64_t id);  // id 0: the request wants no reply
  void replyError(rpc::ConnId c, std::uint64_t id, ErrorCode code, const std::string& message);

  // A client is known from its first message on.
  void known(rpc::ConnId c) { clients_[c]; }
  void transfersStarted(rpc::ConnId c, int n = 1) { clients_[c].inflight += n; }
  // One transfer for c ended (its completion ran); a client already gone is forgotten after its last.
  void transferEnded(rpc::ConnId c);
  // c's connection ended; false when c never sent anything.
  bool markGone(rpc::ConnId c);
  // No transfer for c under way.
  bool idle(rpc::ConnId c) const;
  void erase(rpc::ConnId c) { clients_.erase(c); }
  bool anyInflight() const;
  // Every client's connection, the clients forgotten here (at shutdown).
  std::vector<rpc::ConnId> takeAll();

 private:
  struct ClientState {
    int inflight = 0;  // transfers UCX still runs for it (their callbacks end them)
    bool gone = false;
  };

  rpc::Node& node_;
  const std::string address_;
  const std::function<void(rpc::ConnId)> forget_;
  std::map<rpc::ConnId, ClientState> clients_;
};

}  // namespace axon::space
