#include "coll/protocol.hpp"

#include <atomic>
#include <cstring>

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

}  // namespace

bool sameCall(const CallRecord& a, const CallRecord& b) {
  return a.seq == b.seq && a.collective == b.collective && a.dtype == b.dtype && a.op == b.op &&
         a.algo == b.algo && a.root == b.root && a.count == b.count && a.chunkBytes == b.chunkBytes;
}

std::string describeCall(const CallRecord& r) {
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
  ProtocolState::HalfUse& use = state_.halfUse[r % 2];
  for (int reader : use.readers) waitWord(ackWord(reader), use.round, reader, state_.ackNames[reader]);
  use.readers.clear();
  return halfFor(r);
}

void Call::published(std::uint64_t r, std::span<const int> readers) {
  ProtocolState::HalfUse& use = state_.halfUse[r % 2];
  use.round = r;
  use.readers.assign(readers.begin(), readers.end());
  lastPublished_ = r;
}

void Call::finish() {
  if (readSomething_ || lastPublished_ == 0) return;
  const ProtocolState::HalfUse& use = state_.halfUse[lastPublished_ % 2];
  for (int reader : use.readers) waitWord(ackWord(reader), use.round, reader, state_.ackNames[reader]);
}

std::uint64_t Call::waitWord(std::uint64_t* word, std::uint64_t value, int member, const std::string& name) {
  WaitSite site{api_, team_.name.c_str(), static_cast<int>(value), team_.members[member], name.c_str(), &onCheck_};
  return waitUntil(rt_, word, Cmp::Ge, value, site);
}

void Call::checkRecord(const CallRecord& theirs, int member, std::uint64_t round) {
  if (sameCall(theirs, record_) && theirs.round == round) return;
  mismatch("this PE called " + describeCall(record_) + " but team PE " + std::to_string(member) + " (PE " +
           std::to_string(team_.members[member]) + ") called " + describeCall(theirs));
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
  CallRecord& cur = ws_.header(me()).current;
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
  readSomething();
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
  // flows between us (a PE that thinks it is the root waits for acks that never come).
  for (int p = 0; p < members(); ++p) {
    if (p == me()) continue;
    const CallRecord& cur = ws_.header(p).current;
    const std::uint64_t s1 = loadAcquire(cur.seq);
    if (s1 != record_.seq) continue;
    CallRecord copy;
    std::memcpy(&copy, &cur, sizeof(copy));
    std::atomic_thread_fence(std::memory_order_acquire);
    if (loadAcquire(cur.seq) != s1) continue;
    if (!sameCall(copy, record_)) {
      mismatch("this PE called " + describeCall(record_) + " but team PE " + std::to_string(p) + " (PE " +
               std::to_string(team_.members[p]) + ") called " + describeCall(copy));
    }
  }
}

void ShmCall::tellOthers(const std::string& message) { ws_.tellOthers(rt_.myPe(), message); }

}  // namespace axon::coll
