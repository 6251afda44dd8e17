// Removing a variable on a staging server (server_removes.hpp).
#include "space/server_removes.hpp"

#include "axon/error.hpp"
#include "space/server_gets.hpp"
#include "space/server_puts.hpp"
#include "space/store.hpp"

namespace axon::space {

void ServerRemoves::start(rpc::ConnId c, const protocol::Head& h, wire::ByteReader& r) {
  const std::string name = r.str();
  const std::uint64_t waitMs = r.u64();
  checkName(name);
  if (!store_.removed(name) && !store_.removing(name)) {
    // Refused first, so that nothing waiting on it sees a variable of that name defined anew.
    const std::string why = "variable '" + name + "' was removed (a client's remove on staging server " +
                            clients_.address() + ") while this request waited";
    puts_.failWaitingOn(name, why);
    gets_.removed(name, why);
  }
  if (store_.remove(name)) return clients_.replyOk(c, h.id);
  pending_.push_back(Pending{c, h.id, name, deadlineIn(waitMs)});
}

void ServerRemoves::recheck() {
  for (auto it = pending_.begin(); it != pending_.end();) {
    // Not being removed any more: gone (perhaps defined again since, by another client).
    if (store_.removing(it->name)) {
      ++it;
      continue;
    }
    clients_.replyOk(it->conn, it->id);
    it = pending_.erase(it);
  }
}

void ServerRemoves::expire(Clock::time_point now) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (now < it->deadline) {
      ++it;
      continue;
    }
    clients_.replyError(it->conn, it->id, ErrorCode::Timeout,
                        "remove of '" + it->name + "' on staging server " + clients_.address() +
                            ": transfers under way on it (gets reading it, puts landing in it) did not end within "
                            "the timeout; it is refused to new requests and goes once they end");
    it = pending_.erase(it);
  }
}

void ServerRemoves::dropClient(rpc::ConnId c) {
  for (auto it = pending_.begin(); it != pending_.end();) it = it->conn == c ? pending_.erase(it) : std::next(it);
}

void ServerRemoves::failAll(const std::string& why) {
  for (auto& p : pending_) clients_.replyError(p.conn, p.id, ErrorCode::ServerLost, why);
  pending_.clear();
}

}  // namespace axon::space
