// Data coming into a staging server, and the memory it takes (server_puts.hpp).
#include "space/server_puts.hpp"

#include <cstring>
#include <memory>
#include <vector>

#include "axon/error.hpp"
#include "space/arena.hpp"
#include "space/store.hpp"

namespace axon::space {

using protocol::Op;
using rpc::ConnId;

bool ServerPuts::start(ConnId c, const protocol::Head& h, const std::string& header, rpc::Payload& payload) {
  Blocked b{{c, h.id, h.op, header, {}}, std::move(payload)};
  if (admit(b)) return false;
  blocked_.push_back(std::move(b));
  return true;
}

bool ServerPuts::admit(Blocked& b) {
  wire::ByteReader r(b.header);
  protocol::readHead(r);
  if (b.op == Op::PutBatch) return admitBatch(b, r);
  const std::string name = r.str();
  const std::int64_t version = r.i64();
  const Box box = protocol::readBox(r);
  const std::uint64_t timeoutMs = r.u64();
  std::uint64_t bytes = b.payload.bytes;
  if (b.op == Op::Reserve) {
    const Variable& v = store_.variable(name);
    bytes = static_cast<std::uint64_t>(byteSize(box, dataTypeSize(v.dtype)));
  }
  auto res = store_.reserve(b.conn, name, version, box, bytes);
  if (!res) {
    if (b.deadline == Clock::time_point{}) b.deadline = deadlineIn(timeoutMs);
    return false;
  }
  try {
    arena_.ensure(res->offset + res->bytes);
  } catch (...) {
    store_.abort(res->id);
    throw;
  }
  if (b.op == Op::Reserve) {
    wire::ByteWriter w = protocol::beginReply(b.id);
    w.u64(res->id).u64(res->offset);
    clients_.send(b.conn, w);
    return true;
  }
  const ConnId c = b.conn;
  const std::uint64_t id = b.id, reservation = res->id;
  clients_.transfersStarted(c);
  clients_.node().receive(b.payload, arena_.at(res->offset), rpc::Memory::Host,
                          [this, c, id, reservation](const std::string& f) {
                            if (f.empty()) {
                              store_.commit(reservation);
                              clients_.replyOk(c, id);
                            } else {
                              store_.abort(reservation);
                              clients_.replyError(c, id, ErrorCode::ServerLost,
                                                  "staging server " + clients_.address() +
                                                      ": receiving the piece failed: " + f);
                            }
                            clients_.transferEnded(c);
                          });
  return true;
}

bool ServerPuts::admitBatch(Blocked& b, wire::ByteReader& r) {
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
    for (const auto& h : held) store_.unreserve(h.id);
  };
  try {
    for (const Item& it : items) {
      auto res = store_.reserve(b.conn, it.name, it.version, it.box, it.bytes);
      if (!res) {
        abortHeld();
        if (b.deadline == Clock::time_point{}) b.deadline = deadlineIn(timeoutMs);
        return false;
      }
      held.push_back(*res);
      arena_.ensure(res->offset + res->bytes);
    }
  } catch (...) {
    abortHeld();
    throw;
  }
  auto buffer = std::make_shared<std::vector<char>>(b.payload.bytes);
  const ConnId c = b.conn;
  const std::uint64_t id = b.id;
  clients_.transfersStarted(c);
  clients_.node().receive(b.payload, buffer->data(), rpc::Memory::Host, [this, c, id, held, buffer](const std::string& f) {
    if (f.empty()) {
      std::size_t at = 0;
      for (const auto& h : held) {
        std::memcpy(arena_.at(h.offset), buffer->data() + at, h.bytes);
        at += h.bytes;
        store_.commit(h.id);
      }
      wire::ByteWriter w = protocol::beginReply(id);
      w.u32(static_cast<std::uint32_t>(held.size()));
      clients_.send(c, w);
    } else {
      for (const auto& h : held) store_.abort(h.id);
      clients_.replyError(c, id, ErrorCode::ServerLost,
                          "staging server " + clients_.address() + ": receiving a put batch failed: " + f);
    }
    clients_.transferEnded(c);
  });
  return true;
}

// A chunk of a reservation's data (a pipelined GPU put): it lands at its offset in the
// reservation, which becomes visible only at Commit.
void ServerPuts::write(ConnId c, std::uint64_t id, wire::ByteReader& r, rpc::Payload& payload) {
  const std::uint64_t reservation = r.u64(), at = r.u64();
  const auto res = store_.reservationOf(c, reservation);
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
  clients_.transfersStarted(c);
  clients_.node().receive(payload, arena_.at(res->offset + at), rpc::Memory::Host,
                          [this, c, id, reservation](const std::string& f) {
                            auto l = landing_.find(reservation);
                            if (l != landing_.end() && --l->second.writes == 0) {
                              const bool abortNow = l->second.abortWhenDone;
                              landing_.erase(l);
                              if (abortNow) store_.abort(reservation);
                            }
                            if (f.empty()) {
                              clients_.replyOk(c, id);
                            } else {
                              clients_.replyError(c, id, ErrorCode::ServerLost,
                                                  "staging server " + clients_.address() +
                                                      ": receiving a write failed: " + f);
                            }
                            clients_.transferEnded(c);
                          });
}

void ServerPuts::commit(ConnId c, std::uint64_t id, wire::ByteReader& r) {
  const std::uint64_t reservation = r.u64();
  if (store_.reservationOwner(reservation) != c) {
    throw Error(ErrorCode::InvalidArgument, "commit of reservation " + std::to_string(reservation) +
                                                ", which this client does not hold");
  }
  if (auto l = landing_.find(reservation); l != landing_.end()) {
    throw Error(ErrorCode::InvalidArgument, "commit of reservation " + std::to_string(reservation) + " while " +
                                                std::to_string(l->second.writes) +
                                                " write(s) into it are still arriving");
  }
  store_.commit(reservation);
  clients_.replyOk(c, id);
}

void ServerPuts::abort(ConnId c, wire::ByteReader& r) {
  const std::uint64_t reservation = r.u64();
  if (store_.reservationOwner(reservation) != c) return;
  // Memory UCX is still landing data in goes back only once the data has landed.
  if (auto l = landing_.find(reservation); l != landing_.end()) {
    l->second.abortWhenDone = true;
  } else {
    store_.abort(reservation);
  }
}

void ServerPuts::retry() {
  for (auto it = blocked_.begin(); it != blocked_.end();) {
    bool started = false;
    try {
      started = admit(*it);
    } catch (const Error& e) {
      clients_.node().drop(it->payload);
      clients_.replyError(it->conn, it->id, e.code(), e.what());
      started = true;
    }
    it = started ? blocked_.erase(it) : std::next(it);
  }
}

void ServerPuts::expire(Clock::time_point now) {
  for (auto it = blocked_.begin(); it != blocked_.end();) {
    if (now < it->deadline) {
      ++it;
      continue;
    }
    clients_.node().drop(it->payload);
    const StoreStats s = store_.stats();
    clients_.replyError(
        it->conn, it->id, ErrorCode::SpaceFull,
        std::string(protocol::opName(it->op)) + " waited until its timeout (policy block): staging server " +
            clients_.address() + " holds " + std::to_string(s.bytesInUse) + " of " + std::to_string(s.capacity) +
            " bytes (--mem), and a new version also waits while keep_versions older ones are incomplete; "
            "readers must release versions, writers finish theirs, or --mem be raised");
    it = blocked_.erase(it);
  }
}

void ServerPuts::dropClient(ConnId c) {
  for (auto b = blocked_.begin(); b != blocked_.end();) {
    if (b->conn != c) {
      ++b;
      continue;
    }
    clients_.node().drop(b->payload);
    b = blocked_.erase(b);
  }
}

void ServerPuts::failWaitingOn(const std::string& name, const std::string& why) {
  for (auto b = blocked_.begin(); b != blocked_.end();) {
    if (!concerns(*b, name)) {
      ++b;
      continue;
    }
    clients_.node().drop(b->payload);
    clients_.replyError(b->conn, b->id, ErrorCode::InvalidArgument, std::string(protocol::opName(b->op)) + ": " + why);
    b = blocked_.erase(b);
  }
}

void ServerPuts::failAll(const std::string& why) {
  for (auto& b : blocked_) {
    clients_.node().drop(b.payload);
    clients_.replyError(b.conn, b.id, ErrorCode::ServerLost, why);
  }
  blocked_.clear();
}

}  // namespace axon::space
