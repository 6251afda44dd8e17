// Who may speak to a staging server. Every connection it accepts is greeted with a nonce
// (space/handshake.hpp) and must prove the space's key in its first message, a Hello or a Join,
// within a few seconds. Until then nothing it sends is read past that message's fixed part, and the
// server's state (store, clients, membership) never hears of it. A connection that fails is
// answered PermissionDenied and closed; the server logs one line a second at most (with the count
// of the others). At most kMaxWaiting connections wait for their proof at once: more are closed at
// once, so that idle connections cannot pile up.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "core/secret.hpp"
#include "space/handshake.hpp"
#include "transport/rpc.hpp"

namespace axon::space {

class Gate {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::size_t kMaxWaiting = 256;
  static constexpr double kHandshakeSec = 5.0;

  // `address` names the server in messages; a handshake lasts at most min(kHandshakeSec, timeoutSec).
  Gate(rpc::Node& node, std::string address, Secret key, double timeoutSec);

  // A connection was accepted: greets it (or closes it when too many wait).
  void accepted(rpc::ConnId c);
  bool admitted(rpc::ConnId c) const { return admitted_.count(c) != 0; }
  // A connection this server made itself, to a server that proved the key to it (a joined
  // server's link to the space's first server, which sends the member list on it).
  void trust(rpc::ConnId c) { admitted_.insert(c); }

  // The first message of a connection not admitted yet. Its proof right: the connection is
  // admitted and the opening returned (its claims not read yet), with the proof the reply must
  // carry. Else nullopt: refused, closed soon (after the refusal's reply has gone).
  struct Admission {
    handshake::Opening opening;
    Digest serverProof{};
  };
  std::optional<Admission> admit(rpc::ConnId c, std::string_view header);

  // Closes the connections whose handshake ran past its deadline, and the refused ones whose
  // reply has had time to go.
  void expire(Clock::time_point now);
  // The connection ended.
  void forget(rpc::ConnId c);

  // Counts, for tests and stats: connections refused so far.
  std::uint64_t refusals() const { return refusals_; }

 private:
  struct Waiting {
    Nonce nonce{};
    Clock::time_point deadline;
  };
  void refuse(rpc::ConnId c, std::uint64_t id, const std::string& why);
  void close(rpc::ConnId c);
  void report(const std::string& line);

  rpc::Node& node_;
  const std::string address_;
  const Secret key_;
  const Clock::duration handshake_;
  std::map<rpc::ConnId, Waiting> waiting_;
  std::map<rpc::ConnId, Clock::time_point> refused_;  // closed at that time
  std::set<rpc::ConnId> admitted_;
  std::uint64_t refusals_ = 0;
  Clock::time_point lastReport_{};
  std::uint64_t unreported_ = 0;
};

}  // namespace axon::space
