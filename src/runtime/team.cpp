// Team handles: world, node, split_strided, split (by colour), of listed world PEs, translation,
// barrier.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <string>

#include "axon/error.hpp"
#include "axon/onesided.hpp"
#include "axon/team.hpp"
#include "bootstrap/blob.hpp"
#include "bootstrap/setup_step.hpp"
#include "coll/team_collectives.hpp"
#include "runtime/runtime.hpp"
#include "p2p/engine.hpp"
#include "core/control_block.hpp"
#include "core/team_state.hpp"
#include "core/wait.hpp"
#include "onesided/team_barrier.hpp"

namespace axon {
namespace detail {

const TeamState& requireValidTeam(const Team& t, const char* api) {
  if (!t.valid()) {
    throw Error(ErrorCode::InvalidArgument,
                std::string("axon: ") + api + " on an invalid team (a team this PE is not in, or "
                                              "one that was destroyed)");
  }
  return *t.state();
}

Team TeamState::make(int slot, std::vector<int> members, int myWorldRank, bool sharedMemory,
                     std::string name) {
  auto s = std::make_shared<TeamState>();
  s->slot = slot;
  s->members = std::move(members);
  auto it = std::find(s->members.begin(), s->members.end(), myWorldRank);
  s->myIndex = it == s->members.end() ? -1 : static_cast<int>(it - s->members.begin());
  s->sharedMemory = sharedMemory;
  s->name = std::move(name);
  return Team(std::move(s));
}

}  // namespace detail

namespace {

void checkTeamPe(const detail::TeamState& s, int pe, const char* api) {
  if (pe < 0 || pe >= static_cast<int>(s.members.size())) {
    throw Error(ErrorCode::InvalidPe, std::string("axon: ") + api + ": PE " + std::to_string(pe) +
                                          " is outside team " + s.name + " [0, " +
                                          std::to_string(s.members.size()) + ")");
  }
}

}  // namespace

Team Team::world() { return runtime("team_world").world(); }
Team Team::node() { return runtime("team_node").node(); }

int Team::myPe() const { return detail::requireValidTeam(*this, "team_my_pe").myIndex; }
int Team::nPes() const { return static_cast<int>(detail::requireValidTeam(*this, "team_n_pes").members.size()); }

int Team::worldPe(int pe) const {
  const auto& s = detail::requireValidTeam(*this, "team_world_pe");
  checkTeamPe(s, pe, "team_world_pe");
  return s.members[pe];
}

int Team::translate(int pe, const Team& other) const {
  const auto& s = detail::requireValidTeam(*this, "team_translate_pe");
  const auto& o = detail::requireValidTeam(other, "team_translate_pe");
  checkTeamPe(s, pe, "team_translate_pe");
  auto it = std::find(o.members.begin(), o.members.end(), s.members[pe]);
  return it == o.members.end() ? -1 : static_cast<int>(it - o.members.begin());
}

namespace {

// What every member of the parent contributes to a split: which split it calls, its arguments and
// its free team slots. So a mismatched call fails on every PE alike, and the new teams' slot is
// free on all their members.
struct SplitCall {
  std::uint8_t kind;  // 0: split_strided (start, stride, size); 1: split (colour, key);
                      // 2: of_world_pes (list size, list hash, teams of the list before)
  int a, b, c;
  std::uint64_t slotsInUse;
};
constexpr const char* kSplitNames[] = {"team_split_strided", "team_split", "team_of_world_pes"};

std::string argsText(const SplitCall& c) {
  if (c.kind == 2) {
    return "(a list of " + std::to_string(c.a) + " PEs, hash " + std::to_string(static_cast<unsigned>(c.b)) +
           ", its team #" + std::to_string(c.c) + ")";
  }
  return c.kind == 0 ? "(" + std::to_string(c.a) + ", " + std::to_string(c.b) + ", " + std::to_string(c.c) + ")"
                     : "(colour " + std::to_string(c.a) + ", key " + std::to_string(c.b) + ")";
}

// Exchanges `mine` over `members` (world ranks; the parent's, or the listed PEs'); throws
// CollectiveMismatch when a member made another kind of call. Returns every member's call, in order.
std::vector<SplitCall> exchangeSplit(Runtime& rt, const std::vector<int>& members, const std::string& name,
                                     const SplitCall& mine) {
  wire::BlobWriter w(wire::BlobKind::TeamSplit);
  w.u8(mine.kind).i32(mine.a).i32(mine.b).i32(mine.c).u64(mine.slotsInUse);
  const char* api = kSplitNames[mine.kind];
  SetupStep step(rt.bootstrap(), "split-" + name, members, std::string(api) + " on team " + name);
  auto all = step.finish(w.take());
  std::vector<SplitCall> calls;
  for (std::size_t i = 0; i < all.size(); ++i) {
    SplitCall c = wire::decodeBlob(all[i], wire::BlobKind::TeamSplit, step.originOf(i), [](wire::ByteReader& in) {
      SplitCall c{};
      c.kind = in.u8();
      if (c.kind > 2) throw wire::Malformed("a split of kind " + std::to_string(c.kind));
      c.a = in.i32();
      c.b = in.i32();
      c.c = in.i32();
      c.slotsInUse = in.u64();
      return c;
    });
    if (c.kind != mine.kind) {
      throw Error(ErrorCode::CollectiveMismatch, "PE " + std::to_string(rt.myPe()) + ": " + api + " on team " + name +
                                                     ": PE " + std::to_string(members[i]) + " called " +
                                                     kSplitNames[c.kind] + argsText(c) + " instead");
    }
    calls.push_back(c);
  }
  return calls;
}

// The slot free on every member of the parent (so on every new team's members).
int freeSlot(const std::vector<SplitCall>& calls, const char* api) {
  std::uint64_t taken = 0;
  for (const SplitCall& c : calls) taken |= c.slotsInUse;
  if (~taken == 0) {
    throw Error(ErrorCode::OutOfMemory, std::string("axon: ") + api + ": all " + std::to_string(kMaxTeams) +
                                            " team slots are in use; destroy teams you no longer need");
  }
  return std::countr_one(taken);
}

// This PE's new team of `members` (world ranks, in team order) in `slot`, or an invalid team when
// it is not among them.
Team joinSplit(Runtime& rt, int slot, std::vector<int> members, std::string name) {
  if (std::find(members.begin(), members.end(), rt.myPe()) == members.end()) return Team();
  bool shared = std::all_of(members.begin(), members.end(), [&](int pe) { return rt.nodeLocal()[pe]; });
  rt.teamSlotsInUse() |= std::uint64_t{1} << slot;
  // The slot's counters are zero on every member: fresh, or zeroed by the destroy that freed it.
  Team team = detail::TeamState::make(slot, std::move(members), rt.myPe(), shared, std::move(name));
  rt.attachCollectives(*team.state());
  return team;
}

}  // namespace

Team Team::splitStrided(int start, int stride, int size) const {
  const auto& s = detail::requireValidTeam(*this, "team_split_strided");
  Runtime& rt = runtime("team_split_strided");
  const int n = static_cast<int>(s.members.size());
  const int splitNo = s.splits++;
  // Everyone checks the triple, contributes it, and learns the others': so a bad or mismatched
  // triple fails on every PE alike.
  std::string problem;
  if (size < 1 || start < 0 || start >= n || (size > 1 && stride < 1) ||
      static_cast<long long>(start) + static_cast<long long>(stride) * (size - 1) >= n) {
    problem = "start " + std::to_string(start) + ", stride " + std::to_string(stride) + ", size " +
              std::to_string(size) + " leaves team " + s.name + " of " + std::to_string(n) + " PEs";
  }
  const SplitCall mine{0, start, stride, size, rt.teamSlotsInUse()};
  auto calls = exchangeSplit(rt, s.members, s.name, mine);
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].a != start || calls[i].b != stride || calls[i].c != size) {
      throw Error(ErrorCode::CollectiveMismatch,
                  "PE " + std::to_string(rt.myPe()) + ": team_split_strided on team " + s.name + ": this PE passed " +
                      argsText(mine) + " but PE " + std::to_string(s.members[i]) + " passed " + argsText(calls[i]));
    }
  }
  if (!problem.empty()) throw Error(ErrorCode::InvalidArgument, "axon: team_split_strided: " + problem);
  const int slot = freeSlot(calls, "team_split_strided");
  std::vector<int> members;
  for (int i = 0; i < size; ++i) members.push_back(s.members[start + i * stride]);
  return joinSplit(rt, slot, std::move(members), s.name + "." + std::to_string(splitNo));
}

Team Team::split(int colour, int key) const {
  const auto& s = detail::requireValidTeam(*this, "team_split");
  Runtime& rt = runtime("team_split");
  const int splitNo = s.splits++;
  auto calls = exchangeSplit(rt, s.members, s.name, SplitCall{1, colour, key, 0, rt.teamSlotsInUse()});
  const int slot = freeSlot(calls, "team_split");
  if (colour < 0) return Team();
  // The members of this PE's colour, by key, ties in parent order.
  std::vector<int> order;
  for (int i = 0; i < static_cast<int>(calls.size()); ++i) {
    if (calls[i].a == colour) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return calls[x].b < calls[y].b; });
  std::vector<int> members;
  for (int i : order) members.push_back(s.members[i]);
  // Each colour's team is named apart: their workspaces meet in the store under the name.
  return joinSplit(rt, slot, std::move(members), s.name + "." + std::to_string(splitNo) + "c" + std::to_string(colour));
}

namespace {

// FNV-1a of the list, folded to 31 bits: names the list in store keys and in mismatch messages.
int hashOfPes(const std::vector<int>& pes) {
  std::uint64_t h = 14695981039346656037ull;
  for (int pe : pes) {
    for (int byte = 0; byte < 4; ++byte) {
      h ^= static_cast<std::uint8_t>(static_cast<std::uint32_t>(pe) >> (8 * byte));
      h *= 1099511628211ull;
    }
  }
  return static_cast<int>((h ^ (h >> 32)) & 0x7fffffff);
}

}  // namespace

Team Team::ofWorldPes(const std::vector<int>& pes) {
  constexpr const char* api = "team_of_world_pes";
  Runtime& rt = runtime(api);
  const int n = rt.nPes();
  std::string problem;
  std::vector<bool> seen(static_cast<std::size_t>(n), false);
  for (int pe : pes) {
    if (pe < 0 || pe >= n) {
      problem = "PE " + std::to_string(pe) + " is outside the world [0, " + std::to_string(n) + ")";
      break;
    }
    if (seen[pe]) {
      problem = "PE " + std::to_string(pe) + " is listed twice";
      break;
    }
    seen[pe] = true;
  }
  if (pes.empty()) problem = "the list of PEs is empty";
  if (problem.empty() && !seen[rt.myPe()]) {
    problem = "this PE (" + std::to_string(rt.myPe()) + ") is not in the list; only the listed PEs call it";
  }
  // Checked before any exchange: a bad list names no set of PEs to exchange with.
  if (!problem.empty()) throw Error(ErrorCode::InvalidArgument, std::string("axon: ") + api + ": " + problem);
  const int hash = hashOfPes(pes);
  const int made = rt.teamsOfPes()[pes]++;
  const std::string name = "pes" + std::to_string(hash) + "n" + std::to_string(pes.size()) + "." + std::to_string(made);
  const SplitCall mine{2, static_cast<int>(pes.size()), hash, made, rt.teamSlotsInUse()};
  auto calls = exchangeSplit(rt, pes, name, mine);
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (calls[i].a != mine.a || calls[i].b != mine.b || calls[i].c != mine.c) {
      throw Error(ErrorCode::CollectiveMismatch, "PE " + std::to_string(rt.myPe()) + ": " + api + ": this PE passed " +
                                                     argsText(mine) + " but PE " + std::to_string(pes[i]) +
                                                     " passed " + argsText(calls[i]));
    }
  }
  return joinSplit(rt, freeSlot(calls, api), pes, name);
}

void Team::setTimeout(double seconds) const {
  const auto& s = detail::requireValidTeam(*this, "team_set_timeout");
  if (!std::isfinite(seconds) || seconds < 0) {
    throw Error(ErrorCode::InvalidArgument, "axon: team_set_timeout on team " + s.name + ": " + std::to_string(seconds) +
                                                " s is not a bound; pass seconds > 0, or 0 for AXON_TIMEOUT");
  }
  const double bound = std::min(seconds, 1e8);  // as AXON_TIMEOUT: a later deadline would overflow the clock
  s.setOwnTimeout(bound);
  noteTeamBound(bound);
}

double Team::timeout() const {
  const auto& s = detail::requireValidTeam(*this, "team_timeout");
  return waitBound(runtime("team_timeout"), s.ownTimeout());
}

void Team::barrier() const {
  const auto& s = detail::requireValidTeam(*this, "team_barrier");
  Runtime& rt = runtime("team_barrier");
  rt.quietAll();
  teamBarrier(rt, s, "barrier");
}

void Team::sync() const {
  const auto& s = detail::requireValidTeam(*this, "team_sync");
  teamBarrier(runtime("team_sync"), s, "sync");
}

void Team::destroy() {
  const auto& s = detail::requireValidTeam(*this, "team_destroy");
  Runtime& rt = runtime("team_destroy");
  if (s.slot <= 1) {
    throw Error(ErrorCode::InvalidArgument, "axon: team_destroy: the world and node teams cannot be destroyed");
  }
  // Work this PE enqueued on the team (barrier_on_stream, stream collectives, on any stream) ends
  // first, on every member: a member's stream barrier may still be about to increment our counters,
  // and zeroing them under it would lose the increment (its kernel then times out).
  if (rt.gpu()) rt.gpu()->synchronize("team_destroy");
  // And this PE's writes into the members' team regions (a collective's last acks, which its
  // publisher did not wait for) have landed before it enters the barrier.
  rt.quietAll();
  // After this barrier no member will increment our counters for this team again (each
  // increment of it was waited for), so the row can be zeroed for the next team in the slot.
  teamBarrier(rt, s, "team_destroy");
  // Zeroed on every team, also one across nodes: a stale count would let the next team's barrier
  // in this slot pass before its members arrive.
  for (auto& word : rt.control(rt.myPe()).barrier[s.slot]) {
    std::atomic_ref<std::uint64_t>(word).store(0, std::memory_order_relaxed);
  }
  // Its GPU call log too (coll/gpu_call_order.hpp): members read it only in the team's barriers.
  rt.control(rt.myPe()).gpuCalls[s.slot] = TeamCallLog{};
  if (rt.gpu()) rt.gpu()->resetTeamSlot(s.slot);
  rt.messages().forgetTeam(s.slot);
  // No member touches the team's workspaces after the barrier above, nor writes into this
  // leader's network region; the GPU is synchronized.
  if (s.collectives) s.collectives->release();
  s.syncOrder.reset();
  s.collectives.reset();
  rt.teamSlotsInUse() &= ~(std::uint64_t{1} << s.slot);
  state_.reset();
}

}  // namespace axon
