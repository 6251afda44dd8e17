#include "coll/net_protocol.hpp"

#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "axon/error.hpp"
#include "core/pe_context.hpp"
#include "core/team_state.hpp"
#include "transport/network_transport.hpp"

namespace axon::coll {
namespace {

std::uint64_t loadAcquire(const std::uint64_t& w) {
  return std::atomic_ref<const std::uint64_t>(w).load(std::memory_order_acquire);
}

}  // namespace

NetCall::NetCall(PeContext& rt, const detail::TeamState& leaders, NetWorkspace& ws, CallRecord record, const char* api,
                 Call* local, Call* watch)
    : Call(rt, leaders, ws, ws.members(), ws.me(), record, api), ws_(ws), net_(ws.transport()), local_(local),
      recordDue_(static_cast<std::size_t>(ws.members()), 0) {
  checkAbort();
  for (int p : ws_.others) recordDue_[p] = 1;
  recordsDue_ = !ws_.others.empty();
  if (watch) {
    onCheck_ = [this, watch] {
      checkAbort();
      checkPeers();
      watch->check();
    };
  }
}

void NetCall::sendRecords() {
  if (!recordsDue_) return;
  recordsDue_ = false;
  // A blocking put: `rec` is on the stack. Slot seq % 2 is not rewritten before every member is
  // done with this call: a member starts call seq + 2 only after it had every record of call
  // seq + 1 (here or with the data).
  CallRecord rec = record_;
  for (int p : ws_.others) {
    if (!recordDue_[p]) continue;
    recordDue_[p] = 0;
    net_.putSignal(ws_.at(p, ws_.callOffset(me(), record_.seq)), &rec, sizeof(rec), ws_.at(p, ws_.calledOffset(me())),
                   record_.seq, SignalOp::Set, false);
  }
}

CallRecord NetCall::awaitRecord(int p) {
  const std::uint64_t called = waitWord(ws_.calledWord(p), record_.seq, p, ws_.callNames[p]);
  CallRecord theirs;
  std::memcpy(&theirs, &ws_.callFrom(p, record_.seq), sizeof(theirs));
  if (called > record_.seq && theirs.seq != record_.seq) theirs.seq = called;  // p counts its calls otherwise
  return theirs;
}

void NetCall::publish(std::uint64_t r, std::span<const int> readers, std::size_t bytes) {
  char* slot = ws_.outbox(r);
  CallRecord rec = record_;
  rec.round = r;
  std::memcpy(slot, &rec, sizeof(rec));
  published(r, readers);
  // The outbox half is not written again before every reader acked this round, by which time the
  // put has landed: it needs no local completion here.
  // The slot's header is this call's record: a reader that had none yet has it now.
  for (int reader : readers) {
    net_.putSignal(ws_.at(reader, ws_.inboxOffset(me(), r)), slot, kSlotHeader + bytes,
                   ws_.at(reader, ws_.readyOffset(me())), r, SignalOp::Set, true);
    recordDue_[reader] = 0;
  }
}

const char* NetCall::await(int p, std::uint64_t r) {
  waitWord(ws_.readyWord(p), r, p, ws_.readyNames[p]);
  CallRecord theirs;
  std::memcpy(&theirs, ws_.inbox(p, r), sizeof(theirs));
  checkRecord(theirs, p, r);
  return ws_.inbox(p, r) + kSlotHeader;
}

void NetCall::ack(int p, std::uint64_t r) {
  ws_.acked[p][r % ws_.layout().depth] = r;
  net_.signal(ws_.at(p, ws_.ackOffset(me())), r, SignalOp::Set);
}

void NetCall::checkPeers() {
  // A leader in the same call with other arguments, whose data this one has not read (or will
  // never read: every leader thinks it is the broadcast root). Only complete slots not acked yet
  // are looked at: nobody writes them meanwhile.
  for (int p : ws_.others) {
    const std::uint64_t ready = loadAcquire(*ws_.readyWord(p));
    const std::uint64_t depth = ws_.layout().depth;
    for (std::uint64_t half = 0; half < depth; ++half) {
      CallRecord theirs;
      std::memcpy(&theirs, ws_.inbox(p, half), sizeof(theirs));
      if (theirs.round == 0 || theirs.round > ready || theirs.round % depth != half ||
          theirs.round <= ws_.acked[p][half]) {
        continue;
      }
      if (theirs.seq == record_.seq && !sameCall(theirs, record_)) differs(theirs, p);
    }
    // Its record of this call, once complete (the signal comes after the put).
    if (loadAcquire(*ws_.calledWord(p)) >= record_.seq) {
      CallRecord theirs;
      std::memcpy(&theirs, &ws_.callFrom(p, record_.seq), sizeof(theirs));
      comparePeer(theirs, p);
    }
  }
}

void NetCall::checkAbort() {
  for (int p : ws_.others) {
    AbortRecord& rec = ws_.abortFrom(p);
    if (loadAcquire(rec.state) != 2) continue;
    std::string text(rec.text, strnlen(rec.text, sizeof(rec.text)));
    ws_.failure = "PE " + std::to_string(rec.pe) + " reported a mismatch";
    throw Error(ErrorCode::CollectiveMismatch, "PE " + std::to_string(rt_.myPe()) + ": " + api_ + " on team " +
                                                   team_.name + " stopped: PE " + std::to_string(rec.pe) +
                                                   " found a collective mismatch: " + text);
  }
  if (local_) local_->checkAbort();
}

void NetCall::tellOthers(const std::string& message) { ws_.tellOthers(rt_.myPe(), message); }

}  // namespace axon::coll
