#include "coll/gpu_call_order.hpp"

#include <atomic>
#include <cstddef>
#include <cstring>
#include <functional>
#include <string>

#include "axon/error.hpp"
#include "coll/gpu_path.hpp"
#include "coll/protocol.hpp"
#include "core/control_block.hpp"
#include "core/pe_context.hpp"
#include "core/team_state.hpp"
#include "core/wait.hpp"
#include "transport/transport.hpp"
#include "gpu/gpu_backend.hpp"

namespace axon::coll {
namespace {

static_assert(sizeof(device::CollRecord) == sizeof(TeamCallLog::last), "a call log holds one call record");
static_assert(offsetof(TeamCallLog, issued) == 0, "a member's log is found by the address of its count");

using Word = std::atomic_ref<std::uint64_t>;

TeamCallLog& ownLog(PeContext& rt, const detail::TeamState& team) {
  return rt.control(rt.myPe()).gpuCalls[team.slot];
}

// A member's log as this process maps it, or nullptr where its host heap is not mapped here.
TeamCallLog* peerLog(PeContext& rt, const detail::TeamState& team, int pe) {
  return static_cast<TeamCallLog*>(rt.controlRef(pe, &ownLog(rt, team).issued).mapped);
}

// A team barrier as a GPU call record: which barrier (barrier_all, Team::sync, ...) in dtype.
device::CollRecord barrierRecord(const char* what) {
  const CallRecord sync = syncRecord(what);
  device::CollRecord r{};
  r.collective = static_cast<unsigned>(Collective::Barrier);
  r.op = sync.collective;
  r.dtype = sync.op;
  r.root = -1;
  return r;
}

// The last call member `pe` logged, with the count it was logged under (a torn read retries).
std::pair<std::uint64_t, device::CollRecord> lastCall(TeamCallLog& log) {
  for (;;) {
    const std::uint64_t before = Word(log.issued).load(std::memory_order_acquire);
    std::uint64_t words[5];
    for (int i = 0; i < 5; ++i) words[i] = Word(log.last[i]).load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (Word(log.issued).load(std::memory_order_relaxed) != before) continue;
    device::CollRecord r;
    std::memcpy(&r, words, sizeof(r));
    return {before, r};
  }
}

// Stops the team's GPU collectives on every member with this report, then throws it here.
[[noreturn]] void fail(PeContext& rt, const detail::TeamState& team, GpuTeamWorkspace& ws, const char* what,
                       const device::CollError& e) {
  // The team failed before (this report, raised by another member, or an earlier call's): that is
  // the cause, and the counts may differ because of it.
  throwIfGpuFailed(rt, team, ws, what);
  ws.raise(e);
  throw Error(ErrorCode::CollectiveMismatch, "PE " + std::to_string(rt.myPe()) + ": " + what + " on team " + team.name +
                                                 ": " + describeGpuMismatch(e) +
                                                 ". The team's collectives are stopped: destroy the team and split a new one");
}

device::CollError mismatchWith(PeContext& rt, const char* what, int peer, std::uint64_t mine, std::uint64_t theirs,
                               const device::CollRecord& theirCall) {
  device::CollError e{};
  e.code = static_cast<int>(device::CollErrorCode::Mismatch);
  e.pe = rt.myPe();
  e.peer = peer;
  e.channel = -1;
  e.expected = mine;
  e.seen = theirs;
  e.mine = barrierRecord(what);
  e.theirs = theirCall;
  return e;
}

}  // namespace

void logGpuCall(PeContext& rt, const detail::TeamState& team, const device::CollRecord& record) {
  TeamCallLog& log = ownLog(rt, team);
  std::uint64_t words[5];
  std::memcpy(words, &record, sizeof(record));
  for (int i = 0; i < 5; ++i) Word(log.last[i]).store(words[i], std::memory_order_relaxed);
  Word(log.issued).fetch_add(1, std::memory_order_release);
}

void unlogGpuCall(PeContext& rt, const detail::TeamState& team) {
  Word(ownLog(rt, team).issued).fetch_sub(1, std::memory_order_release);
}

void enterGpuTeamBarrier(PeContext& rt, const detail::TeamState& team, GpuTeamWorkspace& ws, const char* what) {
  TeamCallLog& mine = ownLog(rt, team);
  // Members can be at most one barrier apart (none passes a barrier before all entered it), so
  // two entries by parity keep every member's entry of this barrier readable until all are through.
  const std::uint64_t target = team.barriers + 1;
  const int parity = static_cast<int>(target & 1);
  const std::uint64_t issued = Word(mine.issued).load(std::memory_order_relaxed);
  Word(mine.barrierIssued[parity]).store(issued, std::memory_order_relaxed);
  Word(mine.barrierTarget[parity]).store(target, std::memory_order_release);
  // Compared also after a failed call: the counts are what the hosts issued, alike on members that
  // made the same calls, and a member that found a mismatch here left without signalling, so a
  // member going on would wait for it until AXON_TIMEOUT.
  //
  // Not entered yet: fine while the member issued no more GPU collectives than this PE. Its count
  // is read before its entry, and it logs its entry before it issues any call after the barrier,
  // so a count past ours with no entry seen is a call it made instead of this barrier. That check
  // runs while the member is late (each liveness check of the wait): a member that is on time
  // costs one load, so the barrier's cost stays one round of loads. One check for the whole
  // barrier, pointed at each member in turn.
  TeamCallLog* log = nullptr;
  int pe = -1;
  auto late = [&] {
    const auto [theirs, call] = lastCall(*log);
    if (theirs > issued && Word(log->barrierTarget[parity]).load(std::memory_order_acquire) < target) {
      fail(rt, team, ws, what, mismatchWith(rt, what, pe, issued, theirs, call));
    }
  };
  std::function<void()> check;  // made only for a late member (it may allocate)
  for (int m = 0; m < static_cast<int>(team.members.size()); ++m) {
    if (m == team.myIndex) continue;
    pe = team.members[m];
    log = peerLog(rt, team, pe);
    if (!log) continue;  // not comparable from here: the barrier's own waits still bound it
    if (Word(log->barrierTarget[parity]).load(std::memory_order_acquire) < target) {
      if (!check) check = late;
      late();
      waitUntil(rt, &log->barrierTarget[parity], Cmp::Ge, target,
                WaitSite{what, team.name.c_str(), -1, pe, "the GPU call log of the member", &check, team.ownTimeout()});
    }
    const std::uint64_t theirs = Word(log->barrierIssued[parity]).load(std::memory_order_relaxed);
    if (theirs != issued) fail(rt, team, ws, what, mismatchWith(rt, what, pe, issued, theirs, barrierRecord(what)));
  }
}

}  // namespace axon::coll
