// A staging server's connections to its clients (server_clients.hpp).
#include "space/server_clients.hpp"

#include <memory>

#include "space/protocol.hpp"

namespace axon::space {

void ClientLinks::send(rpc::ConnId c, const wire::ByteWriter& w) {
  if (w.bytes().size() <= node_.maxHeader()) {
    node_.send(c, w.bytes(), nullptr, 0, rpc::Memory::Host, [](const std::string&) {});
    return;
  }
  // Longer than a message header may be (a get's list of thousands of fragments): the head
  // alone as the header, the rest as the message's data, kept until UCX has sent it.
  auto body = std::make_shared<std::string>(w.bytes().substr(protocol::kHeadBytes));
  node_.send(c, w.bytes().substr(0, protocol::kHeadBytes), body->data(), body->size(), rpc::Memory::Host,
             [body](const std::string&) {});
}

void ClientLinks::replyOk(rpc::ConnId c, std::uint64_t id) {
  if (id) send(c, protocol::beginReply(id));
}

void ClientLinks::replyError(rpc::ConnId c, std::uint64_t id, ErrorCode code, const std::string& message) {
  if (id) send(c, protocol::beginReply(id, static_cast<int>(code), message));
}

void ClientLinks::transferEnded(rpc::ConnId c) {
  auto it = clients_.find(c);
  if (it == clients_.end()) return;
  if (--it->second.inflight == 0 && it->second.gone) forget_(c);
}

bool ClientLinks::markGone(rpc::ConnId c) {
  auto it = clients_.find(c);
  if (it == clients_.end()) return false;
  it->second.gone = true;
  return true;
}

bool ClientLinks::idle(rpc::ConnId c) const {
  auto it = clients_.find(c);
  return it == clients_.end() || it->second.inflight == 0;
}

bool ClientLinks::anyInflight() const {
  for (const auto& [c, s] : clients_) {
    if (s.inflight > 0) return true;
  }
  return false;
}

std::vector<rpc::ConnId> ClientLinks::takeAll() {
  std::vector<rpc::ConnId> open;
  for (auto& [c, s] : clients_) open.push_back(c);
  clients_.clear();
  return open;
}

}  // namespace axon::space
