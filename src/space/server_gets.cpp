// Data leaving a staging server: queries, leases, fetches and version waits (server_gets.hpp).
#include "space/server_gets.hpp"

#include <memory>

#include "axon/error.hpp"
#include "space/arena.hpp"

namespace axon::space {

using protocol::Op;
using rpc::ConnId;

void ServerGets::start(ConnId c, const protocol::Head& h, const std::string& header) {
  Waiting w{c, h.id, h.op, header, {}};
  if (!answer(w, false)) waiting_.push_back(std::move(w));
}

bool ServerGets::answer(Waiting& w, bool final) {
  try {
    wire::ByteReader r(w.header);
    protocol::readHead(r);
    return w.op == Op::Query ? query(w, r, final) : waitVersion(w, r, final);
  } catch (const Error& e) {
    clients_.replyError(w.conn, w.id, e.code(), e.what());
  } catch (const wire::Malformed& e) {
    clients_.replyError(w.conn, w.id, ErrorCode::InvalidArgument, std::string("malformed request: ") + e.what());
  }
  return true;
}

bool ServerGets::query(Waiting& w, wire::ByteReader& r, bool final) {
  const std::string name = r.str();
  const std::int64_t version = r.i64();
  const std::uint32_t n = r.count(17);
  std::vector<Box> boxes;
  for (std::uint32_t i = 0; i < n; ++i) boxes.push_back(protocol::readBox(r));
  const std::uint64_t waitMs = r.u64();
  const bool waits = !final && waitMs > 0;
  // A query that waits only needs to know whether a part is missing: the boxes are listed once
  // it answers.
  Store::Lookup found = store_.lookup(name, version, boxes, !waits);
  if (!found.missing.empty()) {
    if (waits) {
      if (w.deadline == Clock::time_point{}) w.deadline = deadlineIn(waitMs);
      return false;
    }
    wire::ByteWriter out = protocol::beginReply(
        w.id, static_cast<int>(ErrorCode::Incomplete),
        "staging server " + clients_.address() + ": " + std::to_string(found.missing.size()) + " part(s) of '" +
            name + "' version " + std::to_string(version) + " were not written");
    out.u32(static_cast<std::uint32_t>(found.missing.size()));
    for (const Box& m : found.missing) protocol::writeBox(out, m);
    clients_.send(w.conn, out);
    return true;
  }
  std::uint64_t bytes = 0;
  for (const auto& f : found.fragments) bytes += f.rangeBytes;
  if (!found.fragments.empty()) holds_.check(w.conn, name, version, clients_.address());
  const std::uint64_t lease = found.fragments.empty() ? 0 : store_.lease(w.conn, name, version, bytes);
  if (lease) holds_.leased(w.conn, name, version);
  wire::ByteWriter out = protocol::beginReply(w.id);
  out.u64(lease).u32(static_cast<std::uint32_t>(found.fragments.size()));
  for (const auto& f : found.fragments) {
    protocol::writeBox(out, f.piece);
    out.u64(f.offset).u64(f.rangeStart).u64(f.rangeBytes);
  }
  if (lease) leases_[lease] = LeaseState{w.conn, std::move(found.fragments)};
  clients_.send(w.conn, out);
  return true;
}

bool ServerGets::waitVersion(Waiting& w, wire::ByteReader& r, bool final) {
  const std::string name = r.str();
  const std::int64_t atLeast = r.i64();
  const std::uint64_t waitMs = r.u64();
  const std::vector<std::int64_t> complete = store_.completeVersions(name, atLeast);
  if (complete.empty() && !final && waitMs > 0) {
    if (w.deadline == Clock::time_point{}) w.deadline = deadlineIn(waitMs);
    return false;
  }
  wire::ByteWriter out = protocol::beginReply(w.id);
  out.u32(static_cast<std::uint32_t>(complete.size()));
  for (std::int64_t v : complete) out.i64(v);
  clients_.send(w.conn, out);
  return true;
}

void ServerGets::fetch(ConnId c, std::uint64_t id, std::uint64_t lease) {
  auto it = leases_.find(lease);
  if (it == leases_.end() || it->second.conn != c) {
    throw Error(ErrorCode::InvalidArgument, "fetch of lease " + std::to_string(lease) + ", which this client does not hold");
  }
  Outgoing o{c, id, lease, std::move(it->second.fragments), 0, std::make_shared<Sending>()};
  leases_.erase(it);
  o.sending->left = o.fragments.size();
  outgoing_.push_back(std::move(o));
  pump();  // a small fetch goes at once
}

bool ServerGets::pump() {
  std::size_t budget = kFragmentsPerTurn;
  bool sent = false;
  while (budget > 0 && !outgoing_.empty()) {
    Outgoing& o = outgoing_.front();
    while (budget > 0 && o.next < o.fragments.size()) {
      sendOne(o);
      --budget;
      sent = true;
    }
    if (o.next == o.fragments.size()) {
      outgoing_.pop_front();
    } else {
      outgoing_.splice(outgoing_.end(), outgoing_, outgoing_.begin());  // the others' turn
    }
  }
  return sent;
}

void ServerGets::sendOne(Outgoing& o) {
  const std::uint32_t i = static_cast<std::uint32_t>(o.next++);
  const Fragment& f = o.fragments[i];
  wire::ByteWriter h = protocol::begin(Op::Data, o.id);
  h.u32(i);
  clients_.transfersStarted(o.conn, 1);
  clients_.node().send(o.conn, h.bytes(), arena_.at(f.offset + f.rangeStart), f.rangeBytes, rpc::Memory::Host,
                       [this, c = o.conn, id = o.id, lease = o.lease, sending = o.sending](const std::string& f) {
                         if (!f.empty() && sending->failure.empty()) sending->failure = f;
                         if (--sending->left == 0) {
                           store_.endLease(lease);
                           holds_.leaseEnded(c);
                           if (sending->failure.empty()) clients_.replyOk(c, id);
                           else clients_.replyError(c, id, ErrorCode::ServerLost,
                                                    "staging server " + clients_.address() +
                                                        ": sending failed: " + sending->failure);
                         }
                         clients_.transferEnded(c);
                       });
}

void ServerGets::unsent(const Outgoing& o, std::size_t n, bool reply) {
  if (n == 0) return;
  o.sending->left -= n;
  if (o.sending->left != 0) return;  // the last completion on the wire answers
  store_.endLease(o.lease);
  holds_.leaseEnded(o.conn);
  if (reply) {
    clients_.replyError(o.conn, o.id, ErrorCode::ServerLost,
                        o.sending->failure.empty() ? "staging server " + clients_.address() + " stopped sending"
                                                   : o.sending->failure);
  }
}

void ServerGets::done(ConnId c, std::uint64_t lease) {
  auto it = leases_.find(lease);
  if (it != leases_.end() && it->second.conn == c) {
    leases_.erase(it);
    store_.endLease(lease);
    holds_.leaseEnded(c);
  }
}

void ServerGets::release(ConnId c, const std::string& name, std::int64_t version) {
  store_.release(c, name, version);
  holds_.released(c, name, version);
}

void ServerGets::recheck() {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    it = answer(*it, false) ? waiting_.erase(it) : std::next(it);
  }
}

void ServerGets::expire(Clock::time_point now) {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (now < it->deadline) {
      ++it;
      continue;
    }
    Waiting w = std::move(*it);
    it = waiting_.erase(it);
    answer(w, true);
  }
}

void ServerGets::dropWaiting(ConnId c) {
  for (auto w = waiting_.begin(); w != waiting_.end();) w = w->conn == c ? waiting_.erase(w) : std::next(w);
  for (auto o = outgoing_.begin(); o != outgoing_.end();) {
    if (o->conn != c) {
      ++o;
      continue;
    }
    unsent(*o, o->fragments.size() - o->next, false);
    o = outgoing_.erase(o);
  }
}

void ServerGets::dropLeases(ConnId c) {
  for (auto l = leases_.begin(); l != leases_.end();) l = l->second.conn == c ? leases_.erase(l) : std::next(l);
  holds_.drop(c);
}

void ServerGets::removed(const std::string& name, const std::string& why) {
  for (auto w = waiting_.begin(); w != waiting_.end();) {
    if (!concerns(*w, name)) {
      ++w;
      continue;
    }
    clients_.replyError(w->conn, w->id, ErrorCode::InvalidArgument,
                        std::string(w->op == Op::Query ? "get" : "wait_version") + ": " + why);
    w = waiting_.erase(w);
  }
  holds_.removed(name);
}

void ServerGets::failAll(const std::string& why) {
  for (auto& w : waiting_) clients_.replyError(w.conn, w.id, ErrorCode::ServerLost, why);
  waiting_.clear();
  for (auto& o : outgoing_) {
    if (o.sending->failure.empty()) o.sending->failure = why;
    unsent(o, o.fragments.size() - o.next, true);
  }
  outgoing_.clear();
}

}  // namespace axon::space
