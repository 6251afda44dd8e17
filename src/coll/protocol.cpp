#include "coll/protocol.hpp"

#include <atomic>
#include <chrono>
#include <cstring>
#include <iterator>
#include <string_view>
#include <thread>

#include "axon/collectives.hpp"
#include "axon/error.hpp"
#include "coll/describe_call.hpp"
#include "coll/plan.hpp"
#include "core/pe_context.hpp"
#include "core/team_state.hpp"
#include "core/wait.hpp"

namespace axon::coll {
namespace {

std::uint64_t loadAcquire(const std::uint64_t& w) {
  return std::atomic_ref<const std::uint64_t>(w).load(std::memory_order_acquire);
}
void storeRelease(std::uint64_t& w, std::uint64_t v) {
  std::atomic_ref<std::uint64_t>(w).store(v, std::memory_order_release);
}

// Copies a member's record slot when it holds call `seq` (false while it is being rewritten or
// holds another call). Once it holds `seq`, nobody rewrites it before this PE is done with the
// call (WorkspaceHeader::calls).
bool readRecord(const CallRecord& slot, std::uint64_t seq, CallRecord& out) {
  if (loadAcquire(slot.seq) != seq) return false;
  std::memcpy(&out, &slot, sizeof(out));
  std::atomic_thread_fence(std::memory_order_acquire);
  return loadAcquire(slot.seq) == seq;
}

// The team barrier's callers (onesided/team_barrier.hpp), and how a message names each.
constexpr const char* kBarrierCallers[] = {"barrier_all", "sync_all", "barrier", "sync"};
constexpr const char* kBarrierNames[] = {"barrier_all()", "sync_all()", "Team::barrier()", "Team::sync()"};

}  // namespace

bool sameCall(const CallRecord& a, const CallRecord& b) {
  if (a.seq != b.seq || a.collective != b.collective) return false;
  // barrier_all against Team::barrier, sync_all, ...: the same synchronization of the team.
  if (a.collective == static_cast<std::uint32_t>(SyncKind::TeamBarrier)) return true;
  return a.dtype == b.dtype && a.op == b.op && a.algo == b.algo && a.root == b.root && a.count == b.count &&
         a.chunkBytes == b.chunkBytes;
}

CallRecord syncRecord(const char* what) {
  CallRecord r{};
  r.root = -1;
  const std::string_view w(what);
  if (w == "finalize") {
    r.collective = static_cast<std::uint32_t>(SyncKind::Finalize);
  } else if (w == "team_destroy") {
    r.collective = static_cast<std::uint32_t>(SyncKind::TeamDestroy);
  } else {
    r.collective = static_cast<std::uint32_t>(SyncKind::TeamBarrier);
    r.op = 2;
    for (std::uint32_t i = 0; i < std::size(kBarrierCallers); ++i) {
      if (w == kBarrierCallers[i]) r.op = i;
    }
  }
  return r;
}

std::string describeCall(const CallRecord& r) {
  switch (static_cast<SyncKind>(r.collective)) {
    case SyncKind::TeamBarrier:
      return std::string(kBarrierNames[r.op < std::size(kBarrierNames) ? r.op : 2]) + " (the team's barrier)";
    case SyncKind::Finalize: return "finalize()";
    case SyncKind::TeamDestroy: return "Team::destroy()";
  }
  if (r.collective > static_cast<std::uint32_t>(Collective::Alltoall)) {
    return "an unknown call (kind " + std::to_string(r.collective) + ")";
  }
  const auto c = static_cast<Collective>(r.collective);
  std::optional<DataType> type;
  if (c != Collective::Barrier) type = static_cast<DataType>(r.dtype);  // a barrier's record holds a type it never reads
  return coll::describeCall(CallDescription{c, r.count, type, static_cast<ReduceOp>(r.op), r.root,
                                            algoName(static_cast<Algo>(r.algo)), "buffer " + std::to_string(r.chunkBytes)});
}

Call::Call(PeContext& rt, const detail::TeamState& team, ProtocolState& state, int members, int me, CallRecord record,
           const char* api)
    : rt_(rt), team_(team), state_(state), record_(record), api_(api), onCheck_([this] {
        checkAbort();
        checkPeers();
      }),
      members_(members), me_(me) {
  if (!state_.failure.empty()) {
    throw Error(ErrorCode::CollectiveMismatch,
                "PE " + std::to_string(rt.myPe()) + ": " + api + " on team " + team.name +
                    ": an earlier collective on this team failed, so the members no longer agree on "
                    "where they are (" + state_.failure + "); destroy the team and split a new one");
  }
  record_.seq = ++state_.calls;
  record_.round = 0;
}

char* Call::beginPublish(std::uint64_t r) {
  ProtocolState::HalfUse& use = state_.halfUse[r % state_.depth()];
  for (int reader : use.readers) waitWord(ackWord(reader), use.round, reader, state_.ackNames[reader]);
  use.readers.clear();
  return halfFor(r);
}

void Call::published(std::uint64_t r, std::span<const int> readers) {
  ProtocolState::HalfUse& use = state_.halfUse[r % state_.depth()];
  use.round = r;
  use.readers.assign(readers.begin(), readers.end());
}

void Call::agreeWithAll() {
  for (int p : state_.others) {
    if (state_.agreed[p] == record_.seq) continue;  // compared already (with the data it sent)
    const CallRecord theirs = awaitRecord(p);
    if (theirs.seq != record_.seq) differs(theirs, p);
    comparePeer(theirs, p);
  }
}

void Call::finish() {
  sendRecords();
  agreeWithAll();
}

std::uint64_t Call::waitWord(std::uint64_t* word, std::uint64_t value, int member, const std::string& name) {
  // Already there: nothing to send first, nothing to check.
  if (const std::uint64_t seen = loadAcquire(*word); seen >= value) return seen;
  sendRecords();
  WaitSite site{api_, team_.name.c_str(), static_cast<int>(value), team_.members[member], name.c_str(), &onCheck_,
                team_.ownTimeout()};
  try {
    return waitUntil(rt_, word, Cmp::Ge, value, site);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::PeerDead) throw;
    // A member that left right after a mismatch (its finalize threw, it exited) can be seen dead
    // here before the word of the mismatch has come round (from another node, through its leader):
    // the mismatch is the cause, so give its abort record a moment to land.
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    while (std::chrono::steady_clock::now() < until) {
      checkAbort();
      if (!rt_.progress()) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    throw;
  }
}

void Call::checkRecord(const CallRecord& theirs, int member, std::uint64_t round) {
  if (sameCall(theirs, record_) && theirs.round == round) {
    state_.agreed[member] = record_.seq;
    return;
  }
  differs(theirs, member);
}

void Call::comparePeer(const CallRecord& theirs, int member) {
  if (theirs.seq != record_.seq) return;
  if (!sameCall(theirs, record_)) differs(theirs, member);
  state_.agreed[member] = record_.seq;
}

void Call::differs(const CallRecord& theirs, int member) {
  // Numbers only where they differ: a member that counted its calls otherwise.
  const bool renumbered = theirs.seq != record_.seq;
  mismatch("this PE called " + describeCall(record_) + " but team PE " + std::to_string(member) + " (PE " +
           std::to_string(team_.members[member]) + ") called " + describeCall(theirs) +
           (renumbered ? " as its call #" + std::to_string(theirs.seq) : std::string()));
}

void Call::mismatch(const std::string& text) {
  const std::string message = "PE " + std::to_string(rt_.myPe()) + ": collective mismatch on team " + team_.name +
                              " (call #" + std::to_string(record_.seq) + "): " + text;
  tellOthers(message);
  state_.failure = "this PE found a mismatch";
  throw Error(ErrorCode::CollectiveMismatch, message);
}

ShmCall::ShmCall(PeContext& rt, const detail::TeamState& team, Workspace& ws, CallRecord record, const char* api)
    : Call(rt, team, ws, ws.members(), ws.me(), record, api), ws_(ws) {
  // A peer scanning our record sees seq 0 while the fields change, and skips it.
  CallRecord& cur = ws_.header(me()).calls[record_.seq % 2];
  storeRelease(cur.seq, 0);
  CallRecord body = record_;
  body.seq = 0;
  std::memcpy(&cur, &body, sizeof(body));
  storeRelease(cur.seq, record_.seq);
  checkAbort();
}

void ShmCall::publish(std::uint64_t r, std::span<const int> readers, std::size_t) {
  CallRecord& rec = ws_.header(me()).half[r % 2];
  rec = record_;
  rec.round = r;
  published(r, readers);
  for (int reader : readers) storeRelease(*ws_.readyWord(reader, me()), r);
}

const char* ShmCall::await(int p, std::uint64_t r) {
  waitWord(ws_.readyWord(me(), p), r, p, ws_.readyNames[p]);
  checkRecord(ws_.header(p).half[r % 2], p, r);
  return ws_.half(p, r);
}

void ShmCall::ack(int p, std::uint64_t r) { storeRelease(*ws_.ackWord(p, me()), r); }

void ShmCall::checkAbort() {
  AbortRecord& mine = ws_.header(me()).abort;
  if (loadAcquire(mine.state) == 2) {
    std::string text(mine.text, strnlen(mine.text, sizeof(mine.text)));
    ws_.failure = "PE " + std::to_string(mine.pe) + " reported a mismatch";
    throw Error(ErrorCode::CollectiveMismatch, "PE " + std::to_string(rt_.myPe()) + ": " + api_ + " on team " +
                                                   team_.name + " stopped: PE " + std::to_string(mine.pe) +
                                                   " found a collective mismatch: " + text);
  }
}

void ShmCall::checkPeers() {
  // A peer in the same call (same seq) with other arguments is a mismatch even when no data
  // flows between us (a PE that thinks it is the root waits for acks that never come; a PE in a
  // team barrier never sets our ready flag).
  for (int p : ws_.others) {
    CallRecord copy;
    if (readRecord(ws_.header(p).calls[record_.seq % 2], record_.seq, copy)) comparePeer(copy, p);
  }
}

CallRecord ShmCall::awaitRecord(int p) {
  const CallRecord& slot = ws_.header(p).calls[record_.seq % 2];
  CallRecord copy;
  for (;;) {
    waitWord(const_cast<std::uint64_t*>(&slot.seq), record_.seq, p, ws_.callNames[p]);
    if (readRecord(slot, record_.seq, copy)) return copy;
    // Past this call: p counts its calls otherwise (a mismatch), unless caught mid-rewrite.
    const std::uint64_t seen = loadAcquire(slot.seq);
    if (seen > record_.seq) {
      std::memcpy(&copy, &slot, sizeof(copy));
      copy.seq = seen;
      return copy;
    }
  }
}

void ShmCall::confirmToNode() { storeRelease(ws_.header(me()).confirmed.value, record_.seq); }

void ShmCall::awaitNodeLeader(int leader) {
  waitWord(&ws_.header(leader).confirmed.value, record_.seq, leader, ws_.confirmedName);
}

void ShmCall::tellOthers(const std::string& message) { ws_.tellOthers(rt_.myPe(), message); }

}  // namespace axon::coll
