// Which servers form a staging space, and what a client learns of it. The first server of a space
// of N (--servers N) takes the others' Joins (--join ADDRESS: each learns its index and N) and,
// once all N are in, sends every one of them the member list, so that a client may say Hello to
// any server: the answer names the whole space in placement order (and the arena a client on this
// node maps). Until the space is complete, hellos are refused with ServerLost, which clients retry.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "axon/space_server.hpp"
#include "bootstrap/wire.hpp"
#include "core/secret.hpp"
#include "transport/rpc.hpp"

namespace axon::space {

class ClientLinks;
class ServerArena;

class Membership {
 public:
  // The first server of its space, or (options.join set) one that joins the space of that server
  // before returning: throws ServerLost when the join fails or takes past options.timeoutSec.
  // Joining uses the node's handlers; `serving` are those it sets again afterwards.
  // A joining server proves `key` to the first one, and checks the first one's proof in turn.
  Membership(ClientLinks& clients, const ServerOptions& options, const Secret& key, std::uint64_t epoch,
             std::string identity, const ServerArena& arena, const rpc::Node::Handlers& serving);

  int index() const { return index_; }
  int servers() const { return servers_; }
  // A joined server's connection to the space's first server (0 on the first).
  rpc::ConnId seed() const { return seed_; }

  // A client's Hello, its key proved (server_gate.hpp): its build must be this one; the answer
  // carries `proof` (the server's) and tells it the space. `claims` are the Hello's fields.
  void hello(rpc::ConnId c, std::uint64_t id, wire::ByteReader& claims, const Digest& proof);
  // A server joining this one (the first), its key proved.
  void join(rpc::ConnId c, std::uint64_t id, wire::ByteReader& claims, const Digest& proof);
  // The member list from the first server (this one joined it).
  void membersKnown(rpc::ConnId c, wire::ByteReader& r);

 private:
  void joinSpace(const ServerOptions& options, const Secret& key, const rpc::Node::Handlers& serving);

  ClientLinks& clients_;
  const std::uint64_t epoch_;
  const std::string identity_;
  const ServerArena& arena_;
  int index_ = 0;
  int servers_ = 1;
  std::vector<std::string> members_;
  std::vector<rpc::ConnId> joined_;  // the first server: connections of the servers that joined
  rpc::ConnId seed_ = 0;             // a joined server: its connection to the first
};

}  // namespace axon::space
