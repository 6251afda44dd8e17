#include "coll/workspace.hpp"

#include <atomic>
#include <cstdio>

#include "axon/error.hpp"
#include "bootstrap/setup_step.hpp"
#include "core/pe_context.hpp"
#include "core/team_state.hpp"

namespace axon::coll {

std::unique_ptr<Workspace> Workspace::create(PeContext& rt, const detail::TeamState& team, std::size_t halfBytes) {
  const int n = static_cast<int>(team.members.size());
  const WorkspaceLayout layout = workspaceLayout(n, halfBytes);
  std::unique_ptr<Workspace> ws(new Workspace(n, team.myIndex, layout));
  // A PE that cannot create its segment, or open a member's, says so in the step, so that every
  // member fails naming it instead of waiting for a name that never comes.
  const std::string what = "the collective workspace of team " + team.name + " (AXON_COLL_BUFFER sets its size)";
  SetupStep create(rt.bootstrap(), "coll-ws-" + team.name, team.members, what);
  std::optional<ShmSegment> mine;
  try {
    mine.emplace(ShmSegment::create(freshShmName(rt.myPe(), "-ws"), layout.total));
    mine->growTo(layout.total);
  } catch (const Error& e) {
    create.fail(e);
  }
  auto names = create.finish(mine ? mine->name() : "");
  SetupStep open(rt.bootstrap(), "coll-ws-open-" + team.name, team.members, what);
  try {
    for (int i = 0; i < n; ++i) {
      if (i == team.myIndex) {
        ws->segments_.push_back(std::move(*mine));
        continue;
      }
      ShmSegment peer = ShmSegment::open(names[i], layout.total);
      peer.growTo(layout.total);
      ws->segments_.push_back(std::move(peer));
    }
  } catch (const Error& e) {
    open.fail(e);
  }
  // Every member has opened every name: ours can go, so that a crash leaves nothing behind.
  open.finish();
  ws->segments_[team.myIndex].unlinkName();
  ws->nameFlags(n, team.myIndex, "team " + team.name + "'s collective workspace");
  ws->confirmedName = "confirmed call of team " + team.name + "'s collective workspace (set by its first member)";
  return ws;
}

void Workspace::tellOthers(int myPe, const std::string& message) const {
  for (int p = 0; p < members_; ++p) {
    if (p == me_) continue;
    AbortRecord& rec = header(p).abort;
    std::uint64_t expected = 0;
    if (!std::atomic_ref<std::uint64_t>(rec.state).compare_exchange_strong(expected, 1)) continue;
    rec.pe = myPe;
    std::snprintf(rec.text, sizeof(rec.text), "%s", message.c_str());
    std::atomic_ref<std::uint64_t>(rec.state).store(2, std::memory_order_release);
  }
}

}  // namespace axon::coll
