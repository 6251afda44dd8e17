// The servers of a staging space, and hello (server_membership.hpp).
#include "space/server_membership.hpp"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <optional>

#include "axon/error.hpp"
#include "core/build_version.hpp"
#include "space/arena.hpp"
#include "space/handshake.hpp"
#include "space/protocol.hpp"
#include "space/server_clients.hpp"

namespace axon::space {

using protocol::Op;
using rpc::ConnId;

Membership::Membership(ClientLinks& clients, const ServerOptions& options, const Secret& key, std::uint64_t epoch,
                       std::string identity, const ServerArena& arena, const rpc::Node::Handlers& serving)
    : clients_(clients), epoch_(epoch), identity_(std::move(identity)), arena_(arena) {
  if (options.join.empty()) {
    index_ = 0;
    servers_ = options.servers;
    members_.push_back(clients_.address());
  } else {
    joinSpace(options, key, serving);
  }
}

void Membership::hello(ConnId c, std::uint64_t id, wire::ByteReader& r, const Digest& proof) {
  const std::string build = r.str();
  const std::string node = r.str();
  (void)r.u32();  // pid, for messages to come
  const std::string& address = clients_.address();
  if (build != buildVersion()) {
    throw Error(ErrorCode::InvalidArgument, "staging server " + address + " runs axon " + buildVersion() +
                                                " but the client runs " + build +
                                                "; client and server must come from the same build");
  }
  if (static_cast<int>(members_.size()) < servers_) {
    throw Error(ErrorCode::ServerLost, "staging server " + address + ": the space has " +
                                           std::to_string(members_.size()) + " of its " + std::to_string(servers_) +
                                           " servers so far (start the others with --join " + address + ")");
  }
  wire::ByteWriter w = protocol::beginReply(id);
  handshake::writeProof(w, proof);
  w.u32(index_).u32(servers_).u64(epoch_).str(identity_).str(arena_.name()).u64(arena_.capacity());
  w.u32(static_cast<std::uint32_t>(members_.size()));
  for (const auto& m : members_) w.str(m);
  (void)node;
  clients_.send(c, w);
}

void Membership::join(ConnId c, std::uint64_t id, wire::ByteReader& r, const Digest& proof) {
  const std::string address = r.str();
  const std::string& self = clients_.address();
  if (index_ != 0) throw Error(ErrorCode::InvalidArgument, "join " + self + ", the space's first server, instead");
  if (static_cast<int>(members_.size()) >= servers_) {
    throw Error(ErrorCode::InvalidArgument, "the space of " + self + " already has its " + std::to_string(servers_) +
                                                " servers (--servers)");
  }
  members_.push_back(address);
  joined_.push_back(c);
  wire::ByteWriter w = protocol::beginReply(id);
  handshake::writeProof(w, proof);
  w.u32(static_cast<std::uint32_t>(members_.size() - 1)).u32(static_cast<std::uint32_t>(servers_));
  clients_.send(c, w);
  if (static_cast<int>(members_.size()) < servers_) return;
  // All in: every joined server learns the list (clients may ask any of them).
  wire::ByteWriter m = protocol::begin(Op::Members, 0);
  m.u32(static_cast<std::uint32_t>(members_.size()));
  for (const auto& a : members_) m.str(a);
  for (ConnId j : joined_) clients_.send(j, m);
}

void Membership::membersKnown(ConnId c, wire::ByteReader& r) {
  if (c != seed_) throw Error(ErrorCode::InvalidArgument, "a member list from a connection that is not the first server");
  const std::uint32_t n = r.count(4);
  std::vector<std::string> members;
  for (std::uint32_t i = 0; i < n; ++i) members.push_back(r.str());
  members_ = std::move(members);
}

// The members list is the first server's; a joining one learns its index and the count. It
// connects as a client does: the first server's greeting, a Join that proves the key, and the
// reply's proof of the first server checked before anything in it is believed.
void Membership::joinSpace(const ServerOptions& options, const Secret& key, const rpc::Node::Handlers& serving) {
  rpc::Node& node = clients_.node();
  const std::string& address = clients_.address();
  // Shared with the handlers and the send's completion, which may outlive this call's frame.
  struct Join {
    std::optional<Nonce> greeting;
    Digest expect{};
    bool done = false;
    std::string failure;
    ErrorCode code = ErrorCode::ServerLost;
    int index = 0, servers = 0;
    std::vector<std::string> members;
    rpc::ConnId seed = 0;
  };
  auto st = std::make_shared<Join>();
  node.setHandlers({[&node, st](rpc::ConnId c, std::string h, rpc::Payload p) {
                      node.drop(p);
                      if (c != st->seed) return;  // a client too early: it retries its hello
                      if (!st->greeting) {
                        st->greeting = handshake::readGreeting(h);
                        if (!st->greeting) {
                          st->failure = "it did not greet this server as a staging server does";
                          st->done = true;
                        }
                        return;
                      }
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
                        if (!handshake::sameProof(st->expect, handshake::readProof(r))) {
                          throw Error(ErrorCode::PermissionDenied,
                                      "it did not prove the space's key: not the space's first server, or one "
                                      "with another key");
                        }
                        st->index = static_cast<int>(r.u32());
                        st->servers = static_cast<int>(r.u32());
                      } catch (const Error& e) {
                        st->failure = e.what();
                        st->code = e.code() == ErrorCode::PermissionDenied ? e.code() : ErrorCode::ServerLost;
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
  st->seed = node.connect(options.join);
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(options.timeoutSec));
  auto progressUntil = [&](auto ready) {
    while (!ready() && !st->done && Clock::now() < end) {
      if (!node.progress()) ::usleep(100);
    }
  };
  progressUntil([&] { return st->greeting.has_value(); });
  if (st->greeting && !st->done) {
    wire::ByteWriter claims;
    claims.str(address);
    std::string opening = handshake::opening(Op::Join, key, *st->greeting, claims.bytes(), st->expect);
    const std::uint64_t id = 1;
    std::memcpy(opening.data() + 8, &id, sizeof id);  // after magic, version and op
    node.send(st->seed, std::move(opening), nullptr, 0, rpc::Memory::Host, [st](const std::string& f) {
      if (f.empty() || st->done) return;
      st->failure = "sending failed: " + f;
      st->done = true;
    });
    progressUntil([] { return false; });
  }
  if (!st->done) st->failure = "no answer within " + std::to_string(options.timeoutSec) + " s";
  if (!st->failure.empty()) {
    node.close(st->seed);
    throw Error(st->code, "staging server " + address + ": joining the space of " + options.join +
                              " failed: " + st->failure);
  }
  index_ = st->index;
  servers_ = st->servers;
  members_ = st->members;
  seed_ = st->seed;  // kept: the first server sends the member list on it once the space is complete
  node.setHandlers(serving);
}

}  // namespace axon::space
