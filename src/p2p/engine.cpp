#include "p2p/engine.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "axon/error.hpp"
#include "core/log.hpp"
#include "core/pe_context.hpp"
#include "core/team_state.hpp"
#include "core/wait.hpp"
#include "core/env.hpp"
#include "gpu/gpu_backend.hpp"

namespace axon::p2p {
namespace {

using Clock = std::chrono::steady_clock;

std::string me(const PeContext& rt) { return "PE " + std::to_string(rt.myPe()) + ": "; }

}  // namespace

Engine::Engine(PeContext& rt, std::unique_ptr<LocalChannel> local, Channel* network)
    : rt_(rt), local_(std::move(local)), network_(network) {
  const auto n = static_cast<std::size_t>(rt.nPes());
  share_ = rt.env().p2pUnexpected / n;
  credit_.assign(n, share_);
  owed_.assign(n, 0);
  queued_.resize(n);
}

Engine::~Engine() = default;

Channel& Engine::channelTo(int pe) {
  if (local_->reaches(pe)) return *local_;
  if (!network_) {
    throw Error(ErrorCode::Internal, me(rt_) + "no message channel reaches PE " + std::to_string(pe));
  }
  return *network_;
}

Engine::Context& Engine::context(const detail::TeamState& team, bool streamOrdered) {
  if (team.slot < 0 || team.slot >= kTeamSlots) {
    throw Error(ErrorCode::Internal, me(rt_) + "team " + team.name + " has slot " + std::to_string(team.slot));
  }
  const int index = team.slot + (streamOrdered ? kTeamSlots : 0);
  Context& c = contexts_[index];
  if (c.registered && c.members == team.members) return c;
  if (c.registered) forgetLocked(index);  // another team held the slot (destroyed elsewhere)
  c.registered = true;
  c.nextSend.assign(team.members.size(), 0);
  c.nextRecv.assign(team.members.size(), 0);
  c.name = team.name;
  c.members = team.members;
  c.indexOf.assign(static_cast<std::size_t>(rt_.nPes()), -1);
  for (std::size_t i = 0; i < team.members.size(); ++i) c.indexOf[team.members[i]] = static_cast<int>(i);
  c.matcher = std::make_unique<Matcher>(static_cast<int>(team.members.size()));
  auto early = std::move(c.early);
  c.early.clear();
  for (auto& m : early) {
    hold(*m, false);
    match(c, std::move(m));
  }
  return c;
}

std::shared_ptr<Operation> Engine::isend(const detail::TeamState& team, const void* buf, std::uint64_t bytes,
                                         int dest, int tag, const char* api, bool streamOrdered) {
  const int n = static_cast<int>(team.members.size());
  if (dest < 0 || dest >= n) {
    throw Error(ErrorCode::InvalidPe, me(rt_) + api + ": dest " + std::to_string(dest) + " is outside team " +
                                          team.name + " [0, " + std::to_string(n) + ")");
  }
  if (tag < 0 || tag > kMaxTag) {
    throw Error(ErrorCode::InvalidArgument,
                me(rt_) + api + ": tag " + std::to_string(tag) + " is outside [0, " + std::to_string(kMaxTag) + "]");
  }
  if (!buf && bytes) throw Error(ErrorCode::InvalidArgument, me(rt_) + api + ": buf is null with " + std::to_string(bytes) + " bytes");
  auto op = std::make_shared<Operation>();
  op->kind = Operation::Kind::Send;
  op->buffer = const_cast<void*>(buf);
  op->bytes = bytes;
  op->onDevice = buf && rt_.gpu() && rt_.gpu()->isDeviceMemory(buf);
  op->peer = dest;
  op->peerPe = team.members[dest];
  op->tag = tag;
  op->context = team.slot + (streamOrdered ? kTeamSlots : 0);
  op->streamOrdered = streamOrdered;
  op->teamName = team.name;
  op->timeoutSec = team.ownTimeout();
  op->status = Status{dest, tag, bytes};
  std::lock_guard lock(mutex_);
  context(team, streamOrdered);
  op->id = nextId_++;
  const int pe = op->peerPe;
  if (queued_[pe].empty()) queuedPes_.push_back(pe);
  queued_[pe].push_back(Queued{op, Header{op->context, tag, bytes, op->id, 0}});
  live_.push_back(op);
  flush(pe);
  return op;
}

std::shared_ptr<Operation> Engine::irecv(const detail::TeamState& team, void* buf, std::uint64_t capacity,
                                         int source, int tag, const char* api, bool streamOrdered) {
  const int n = static_cast<int>(team.members.size());
  if (source != kAnySource && (source < 0 || source >= n)) {
    throw Error(ErrorCode::InvalidPe, me(rt_) + api + ": source " + std::to_string(source) + " is outside team " +
                                          team.name + " [0, " + std::to_string(n) + ") and is not ANY_SOURCE");
  }
  if (tag != kAnyTag && (tag < 0 || tag > kMaxTag)) {
    throw Error(ErrorCode::InvalidArgument, me(rt_) + api + ": tag " + std::to_string(tag) + " is outside [0, " +
                                                std::to_string(kMaxTag) + "] and is not ANY_TAG");
  }
  if (!buf && capacity) throw Error(ErrorCode::InvalidArgument, me(rt_) + api + ": buf is null with room for " + std::to_string(capacity) + " bytes");
  auto op = std::make_shared<Operation>();
  op->kind = Operation::Kind::Recv;
  op->buffer = buf;
  op->bytes = capacity;
  op->onDevice = buf && rt_.gpu() && rt_.gpu()->isDeviceMemory(buf);
  op->peer = source;
  op->peerPe = source == kAnySource ? -1 : team.members[source];
  op->tag = tag;
  op->context = team.slot + (streamOrdered ? kTeamSlots : 0);
  op->streamOrdered = streamOrdered;
  op->teamName = team.name;
  op->timeoutSec = team.ownTimeout();
  std::lock_guard lock(mutex_);
  Context& c = context(team, streamOrdered);
  op->id = nextId_++;
  // Take in what has arrived, so that the receive matches the earliest message already here.
  progressLocked();
  live_.push_back(op);
  if (auto a = c.matcher->post(PostedReceive{source, tag, op->id})) {
    auto it = c.waiting.find(a->cookie);
    std::unique_ptr<Arrived> m = std::move(it->second);
    c.waiting.erase(it);
    hold(*m, false);
    deliver(c, *m, op);
  } else {
    c.posted.emplace(op->id, op);
    if (source != kAnySource) offerNext(op->context, source);
  }
  return op;
}

std::optional<Status> Engine::iprobe(const detail::TeamState& team, int source, int tag, const char* api) {
  const int n = static_cast<int>(team.members.size());
  if (source != kAnySource && (source < 0 || source >= n)) {
    throw Error(ErrorCode::InvalidPe, me(rt_) + api + ": source " + std::to_string(source) + " is outside team " +
                                          team.name + " [0, " + std::to_string(n) + ")");
  }
  if (tag != kAnyTag && (tag < 0 || tag > kMaxTag)) {
    throw Error(ErrorCode::InvalidArgument, me(rt_) + api + ": tag " + std::to_string(tag) + " is out of range");
  }
  std::lock_guard lock(mutex_);
  Context& c = context(team);
  progressLocked();
  auto e = c.matcher->probe(source, tag);
  if (!e) return std::nullopt;
  return Status{e->source, e->tag, e->bytes};
}

int Engine::streamCallNumber(const detail::TeamState& team, int peer, bool send) {
  std::lock_guard lock(mutex_);
  Context& c = context(team, true);
  std::uint32_t& next = send ? c.nextSend[peer] : c.nextRecv[peer];
  const int number = static_cast<int>(next);
  next = next == static_cast<std::uint32_t>(kMaxTag) ? 0 : next + 1;
  return number;
}

bool Engine::ended(Operation& op, Clock::time_point deadline) {
  if (op.done()) {
    op.rethrow();
    return true;
  }
  const int dead = rt_.findDeadPe();
  if (dead >= 0) throw Error(ErrorCode::PeerDead, me(rt_) + op.describe() + " gave up: " + rt_.deathOf(dead));
  if (Clock::now() >= deadline) throw Error(ErrorCode::Timeout, timeoutMessage(op));
  return false;
}

void Engine::arrived(std::unique_ptr<Arrived> m) {
  const int slot = m->header.context;
  if (slot < 0 || slot >= kContexts) {
    log(LogLevel::Error, rt_.myPe(), "a message from PE " + std::to_string(m->sourcePe) + " names team slot " +
                                         std::to_string(slot) + " (a peer of another build?); dropped");
    release(*m);
    return;
  }
  Context& c = contexts_[slot];
  if (!c.registered) {
    m->own();
    hold(*m, true);
    c.early.push_back(std::move(m));
    return;
  }
  match(c, std::move(m));
}

void Engine::match(Context& c, std::unique_ptr<Arrived> m) {
  const int source = c.indexOf[m->sourcePe];
  if (source < 0) {
    log(LogLevel::Error, rt_.myPe(),
        "a message from PE " + std::to_string(m->sourcePe) + " for team " + c.name +
            ", which it is not a member of, was dropped (a team destroyed on some PEs and not on others?)");
    release(*m);
    return;
  }
  const std::uint64_t cookie = nextId_++;
  const Envelope e{source, m->header.tag, m->header.bytes};
  if (auto r = c.matcher->arrive(Arrival{e, m->eager ? m->header.bytes : 0, cookie})) {
    auto it = c.posted.find(r->cookie);
    std::shared_ptr<Operation> recv = std::move(it->second);
    c.posted.erase(it);
    const auto withdrawal = local_->withdraw(*recv);
    if (withdrawal == LocalChannel::Withdrawal::Taken) {
      // The sender takes an offer only with none of its messages in flight, and this one was.
      log(LogLevel::Error, rt_.myPe(),
          "a message from PE " + std::to_string(m->sourcePe) + " matched " + recv->describe() +
              ", which that PE had already taken to copy into; its Delivered slot will find it gone");
    }
    deliver(c, *m, recv);
    // The receive left may now be the only one for that source (this one was offered, or a second
    // for that source, or a wildcard before it).
    offerNext(m->header.context, source);
    return;
  }
  m->own();
  hold(*m, true);
  c.waiting.emplace(cookie, std::move(m));
}

void Engine::delivered(int pe, const Header& h, std::uint64_t receiveId, const std::string& failure) {
  std::shared_ptr<Operation> recv;
  if (h.context >= 0 && h.context < kContexts) {
    Context& c = contexts_[h.context];
    auto it = c.posted.find(receiveId);
    if (it != c.posted.end()) {
      recv = std::move(it->second);
      c.posted.erase(it);
      c.matcher->cancel(receiveId);
      recv->status = Status{c.indexOf[pe], h.tag, h.bytes};
    }
  }
  if (!recv) {
    log(LogLevel::Warn, rt_.myPe(),
        "PE " + std::to_string(pe) + " copied a " + std::to_string(h.bytes) + "-byte message (tag " +
            std::to_string(h.tag) + ") into a receive that is no longer posted here (its team was destroyed meanwhile?)");
    return;
  }
  ++stats_.received;
  if (failure.empty()) recv->complete();
  else recv->fail(ErrorCode::System, me(rt_) + recv->describe() + ": " + failure);
  offerNext(h.context, recv->status.source);
}

void Engine::offerNext(int slot, int source) {
  Context& c = contexts_[slot];
  if (!c.registered || source < 0 || source >= static_cast<int>(c.members.size())) return;
  const int pe = c.members[source];
  if (pe == rt_.myPe() || !local_->reaches(pe) || local_->offering(pe)) return;
  // Only a receive that is the only one posted for that source: with several posted, the sender
  // is streaming and outruns each new offer, so its messages alternate between the two paths
  // (p2p-bw's windows on 2 H200s: 11-15% fewer small GPU messages a second with every receive
  // offered in one run; the next, with this rule, 5-11% more than with offers off, within that
  // machine's run-to-run noise of up to 20%).
  const auto r = c.matcher->onlyFrom(source);
  if (!r) return;
  auto it = c.posted.find(r->cookie);
  if (it != c.posted.end()) local_->offer(it->second);
}

void Engine::hold(const Arrived& m, bool held) {
  const std::uint64_t bytes = m.eager ? m.header.bytes : 0;
  if (held) {
    ++stats_.waitingMessages;
    stats_.waitingBytes += bytes;
    stats_.waitingBytesPeak = std::max(stats_.waitingBytesPeak, stats_.waitingBytes);
  } else {
    --stats_.waitingMessages;
    stats_.waitingBytes -= bytes;
  }
}

MessageStats Engine::stats() {
  std::lock_guard lock(mutex_);
  progressLocked();
  MessageStats s = stats_;
  s.bound = rt_.env().p2pUnexpected;
  return s;
}

void Engine::deliver(Context& c, Arrived& m, const std::shared_ptr<Operation>& recv) {
  const std::uint64_t bytes = m.header.bytes;
  recv->status = Status{c.indexOf[m.sourcePe], m.header.tag, bytes};
  if (bytes > recv->bytes) {
    release(m);
    recv->fail(ErrorCode::Truncated,
               me(rt_) + recv->describe() + ": the message from source " + std::to_string(recv->status.source) +
                   " (PE " + std::to_string(m.sourcePe) + "), tag " + std::to_string(m.header.tag) + ", has " +
                   std::to_string(bytes) + " bytes but the receive buffer holds only " + std::to_string(recv->bytes) +
                   " (the message was dropped)");
    return;
  }
  ++stats_.received;
  if (!m.eager) {
    m.channel->fetch(m, recv);
    owe(m.sourcePe, m.header.credit);  // charged eagerly but brought by rendezvous (UCX's choice)
    return;
  }
  try {
    if (bytes && recv->onDevice) rt_.gpu()->copyLocal(recv->buffer, m.data, bytes);
    else if (bytes) std::memcpy(recv->buffer, m.data, bytes);
    recv->complete();
  } catch (const Error& e) {
    recv->fail(e.code(), me(rt_) + recv->describe() + ": " + e.what());
  }
  owe(m.sourcePe, m.header.credit);
}

void Engine::release(Arrived& m) {
  owe(m.sourcePe, m.header.credit);
  if (!m.eager) m.channel->decline(m);
}

void Engine::owe(int pe, std::uint64_t credit) {
  if (credit == 0) return;
  owed_[pe] += credit;
  // In quarters of the share, so that a sender rarely runs dry while messages are taken.
  if (owed_[pe] < std::max<std::uint64_t>(share_ / 4, 1)) return;
  try {
    channelTo(pe).sendCredit(pe, owed_[pe]);
    owed_[pe] = 0;
  } catch (const Error& e) {
    log(LogLevel::Warn, rt_.myPe(), std::string("could not return message credit to PE ") + std::to_string(pe) + ": " + e.what());
  }
}

void Engine::credited(int pe, std::uint64_t bytes) {
  credit_[pe] = std::min(credit_[pe] + bytes, share_);
  if (!queued_[pe].empty()) flush(pe);
}

bool Engine::flush(int pe) {
  auto& q = queued_[pe];
  bool any = false;
  while (!q.empty()) {
    Queued& s = q.front();
    Operation& op = *s.op;
    bool sent = false;
    try {
      Channel& ch = channelTo(pe);
      const std::uint64_t charge = op.bytes + kMessageCharge;
      if (&ch == local_.get() && op.bytes <= ch.eagerMax() && local_->sendIntoPosted(pe, s.header, s.op)) {
        sent = true;  // one copy, straight into the receive PE `pe` offered; no credit spent
        ++stats_.postedSent;
      } else if (op.bytes <= ch.eagerMax() && credit_[pe] >= charge) {
        s.header.credit = charge;
        sent = ch.sendEager(pe, s.header, s.op);
        if (sent) {
          credit_[pe] -= charge;
          ++stats_.eagerSent;
        }
      } else {
        s.header.credit = 0;
        sent = ch.sendRendezvous(pe, s.header, s.op);
        if (sent) ++stats_.rendezvousSent;
      }
    } catch (const Error& e) {
      op.fail(e.code(), me(rt_) + op.describe() + ": " + e.what());
      sent = true;
    }
    if (!sent) break;
    q.pop_front();
    any = true;
  }
  if (q.empty()) std::erase(queuedPes_, pe);
  return any;
}

bool Engine::progressLocked() {
  bool any = local_->poll(*this);
  if (network_) any = network_->poll(*this) || any;
  // Copy: flush erases from the list.
  const std::vector<int> pes = queuedPes_;
  for (int pe : pes) any = flush(pe) || any;
  std::erase_if(live_, [](const std::shared_ptr<Operation>& op) { return op->done(); });
  return any;
}

bool Engine::progress() {
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return false;  // another thread is at it
  return progressLocked();
}

int Engine::armForSleep() {
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (!lock.owns_lock()) return kPollSoon;
  // Messages in flight need both sides polled (rendezvous answers, streamed pieces, credit).
  return live_.empty() ? kNoFd : kPollSoon;
}

Status Engine::wait(Operation& op) {
  if (!op.done()) {
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(waitBound(rt_, op.timeoutSec)));
    const std::function<void()> check = [&] {
      if (op.done()) return;
      const int dead = rt_.findDeadPe();
      if (dead >= 0) {
        throw Error(ErrorCode::PeerDead, me(rt_) + op.describe() + " gave up: " + rt_.deathOf(dead));
      }
      if (Clock::now() >= deadline) throw Error(ErrorCode::Timeout, timeoutMessage(op));
    };
    // The wait's own liveness check may see the death before `check` does: it names the call too.
    const std::string what = op.describe();
    WaitSite site{what.c_str()};
    site.timeoutSec = op.timeoutSec;
    site.waitingOn = op.peerPe;
    site.word = "the operation's state";
    site.onCheck = &check;
    waitUntil(rt_, &op.state, Cmp::Ne, Operation::kPending, site);
  }
  op.rethrow();
  return op.status;
}

std::size_t Engine::waitAny(const std::vector<Operation*>& ops) {
  const Operation* first = nullptr;
  for (const Operation* op : ops) first = first ? first : op;
  if (!first) throw Error(ErrorCode::InvalidArgument, me(rt_) + "wait_any: no valid request among " + std::to_string(ops.size()));
  auto ended = [&]() -> std::size_t {
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (ops[i] && ops[i]->done()) return i;
    }
    return ops.size();
  };
  if (const std::size_t i = ended(); i < ops.size()) return i;
  double bound = 0;  // the longest of the requests' bounds: none of them would have ended sooner
  for (const Operation* op : ops) bound = op ? std::max(bound, waitBound(rt_, op->timeoutSec)) : bound;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(bound));
  const std::function<void()> check = [&] {
    if (ended() < ops.size()) return;
    const int dead = rt_.findDeadPe();
    if (dead >= 0) throw Error(ErrorCode::PeerDead, me(rt_) + "wait_any on " + first->describe() + " and others gave up: " + rt_.deathOf(dead));
    if (Clock::now() >= deadline) {
      throw Error(ErrorCode::Timeout, me(rt_) + "wait_any: none of " + std::to_string(ops.size()) +
                                          " requests ended; the first: " + timeoutMessage(*first));
    }
  };
  WaitSite site{"wait_any"};
  site.timeoutSec = bound;  // the check above ends the wait at the same deadline, naming it
  site.word = "the requests' states";
  site.onCheck = &check;
  const std::uint64_t none = 0;
  waitUntil(rt_, &none, Cmp::Ne, 0, site, [&](const std::uint64_t*) -> std::uint64_t {
    return ended() < ops.size() ? 1 : 0;
  });
  return ended();
}

Status Engine::probe(const detail::TeamState& team, int source, int tag, const char* api) {
  if (auto s = iprobe(team, source, tag, api)) return *s;
  std::optional<Status> found;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(waitBound(rt_, team.ownTimeout())));
  const std::function<void()> check = [&] {
    const int dead = rt_.findDeadPe();
    if (dead >= 0) throw Error(ErrorCode::PeerDead, me(rt_) + api + " on team " + team.name + " gave up: " + rt_.deathOf(dead));
    if (Clock::now() < deadline) return;
    std::string waiting;
    {
      std::lock_guard lock(mutex_);
      waiting = contexts_[team.slot].matcher->describeUnexpected(8);
    }
    throw Error(ErrorCode::Timeout, me(rt_) + api + " for source " +
                                        (source == kAnySource ? std::string("ANY") : std::to_string(source)) +
                                        ", tag " + (tag == kAnyTag ? std::string("ANY") : std::to_string(tag)) +
                                        " on team " + team.name + " timed out after " +
                                        secondsText(waitBound(rt_, team.ownTimeout())) + " (" +
                                        waitBoundName(team.ownTimeout()) + "); messages waiting unmatched: " + waiting);
  };
  WaitSite site{api};
  site.timeoutSec = team.ownTimeout();
  site.waitingOn = source == kAnySource ? -1 : team.members[source];
  site.word = "a matching message";
  site.onCheck = &check;
  const std::uint64_t none = 0;
  waitUntil(rt_, &none, Cmp::Ne, 0, site, [&](const std::uint64_t*) -> std::uint64_t {
    found = iprobe(team, source, tag, api);
    return found ? 1 : 0;
  });
  return *found;
}

std::string Engine::timeoutMessage(const Operation& op) {
  std::string text = me(rt_) + op.describe() + " timed out after " + secondsText(waitBound(rt_, op.timeoutSec)) + " (" +
                     waitBoundName(op.timeoutSec) + ")";
  std::lock_guard lock(mutex_);
  // Stream-ordered calls pair by call number: a peer that never makes its matching call, or
  // makes it behind work on its stream that waits for this PE, leaves both waiting.
  const std::string streamHint =
      op.streamOrdered ? std::string("; stream-ordered calls pair with the peer's calls in order: check that it "
                                     "makes the matching call, and put sends and receives that must run at once "
                                     "(an exchange) in one group (group_start/group_end)")
                       : std::string();
  if (op.kind == Operation::Kind::Recv) {
    const Context& c = contexts_[op.context];
    text += ": no message matched it; messages waiting unmatched on this team: " +
            (c.matcher ? c.matcher->describeUnexpected(8) : std::string("none"));
    return text + streamHint;
  }
  const auto& q = queued_[op.peerPe];
  const bool queued = std::any_of(q.begin(), q.end(), [&](const Queued& s) { return s.op.get() == &op; });
  if (queued) {
    return text + ": it could not be handed over yet (PE " + std::to_string(op.peerPe) +
           " is not taking messages in: is it inside a long computation without calling axon?)" + streamHint;
  }
  return text + ": PE " + std::to_string(op.peerPe) +
         " has not posted a receive that matches it (a message this large waits at the sender until matched)" +
         streamHint;
}

std::string Engine::explain(const detail::TeamState& team, std::uint64_t bytes, int dest, bool onDevice) {
  const int n = static_cast<int>(team.members.size());
  if (dest < 0 || dest >= n) {
    throw Error(ErrorCode::InvalidPe, me(rt_) + "explain_message: dest " + std::to_string(dest) +
                                          " is outside team " + team.name + " [0, " + std::to_string(n) + ")");
  }
  std::lock_guard lock(mutex_);
  const int pe = team.members[dest];
  Channel& ch = channelTo(pe);
  const bool eager = bytes <= ch.eagerMax() && share_ >= bytes + kMessageCharge;
  std::string why = eager ? " (" + std::to_string(bytes) + " B <= AXON_P2P_EAGER " + std::to_string(ch.eagerMax()) +
                                "; by rendezvous instead while this PE has used its share of PE " +
                                std::to_string(pe) + "'s AXON_P2P_UNEXPECTED)"
                          : " (" + std::to_string(bytes) + " B is more than AXON_P2P_EAGER " +
                                std::to_string(ch.eagerMax()) + " or this PE's share of the receiver's AXON_P2P_UNEXPECTED)";
  return ch.describePath(pe, bytes, onDevice, eager) + why;
}

void Engine::forgetTeam(int slot) {
  std::lock_guard lock(mutex_);
  progressLocked();
  forgetLocked(slot);
  forgetLocked(slot + kTeamSlots);
}

void Engine::forgetLocked(int slot) {
  if (slot < 0 || slot >= kContexts) return;
  Context& c = contexts_[slot];
  if (!c.registered) return;
  for (auto& [cookie, recv] : c.posted) {
    local_->withdraw(*recv);  // taken: the copy lands anyway, and its Delivered slot finds no receive
    recv->fail(ErrorCode::InvalidArgument, me(rt_) + recv->describe() + ": the team was destroyed while it waited");
  }
  if (!c.waiting.empty()) {
    log(LogLevel::Warn, rt_.myPe(),
        "team " + c.name + " was destroyed with " + std::to_string(c.waiting.size()) +
            " messages nobody received: " + c.matcher->describeUnexpected(8) + "; they are dropped");
  }
  for (auto& [cookie, m] : c.waiting) {
    hold(*m, false);
    release(*m);
  }
  c = Context{};
}

}  // namespace axon::p2p
