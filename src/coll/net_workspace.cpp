#include "coll/net_workspace.hpp"

#include <cstddef>
#include <cstdio>

#include "axon/error.hpp"
#include "bootstrap/blob.hpp"
#include "bootstrap/setup_step.hpp"
#include "core/pe_context.hpp"
#include "core/team_state.hpp"
#include "transport/network_transport.hpp"

namespace axon::coll {

std::unique_ptr<NetWorkspace> NetWorkspace::create(PeContext& rt, NetworkTransport& net,
                                                   const detail::TeamState& leaders, std::size_t halfBytes,
                                                   std::size_t depth, const std::vector<char>* remote) {
  const int n = static_cast<int>(leaders.members.size());
  std::unique_ptr<NetWorkspace> ws(new NetWorkspace(n, leaders.myIndex, netLayout(n, halfBytes, depth)));
  ws->net_ = &net;
  ws->worldRanks_ = leaders.members;
  const std::string what = "the network collective workspace of team " + leaders.name + " (AXON_COLL_BUFFER sets its size)";
  SetupStep expose(rt.bootstrap(), "coll-net-" + leaders.name, leaders.members, what);
  std::string mine;
  try {
    void* base = nullptr;
    const std::string registration = ws->net_->exposeRegion(ws->layout_.total, ws->myRegion_, base);
    ws->base_ = static_cast<char*>(base);
    wire::BlobWriter w(wire::BlobKind::CollRegion);
    w.u32(ws->myRegion_).str(registration);
    mine = w.take();
  } catch (const Error& e) {
    expose.fail(e);
  }
  auto all = expose.finish(mine);
  SetupStep accept(rt.bootstrap(), "coll-net-keys-" + leaders.name, leaders.members, what);
  ws->regions_.assign(n, 0);
  try {
    for (int i = 0; i < n; ++i) {
      if (i == ws->me_) {
        ws->regions_[i] = ws->myRegion_;
        continue;
      }
      if (remote && !(*remote)[i]) continue;  // on this node: never written to from here
      std::string registration;
      ws->regions_[i] = wire::decodeBlob(all[i], wire::BlobKind::CollRegion, expose.originOf(i),
                                         [&](wire::ByteReader& in) {
                                           const std::uint32_t id = in.u32();
                                           registration = in.str();
                                           return id;
                                         });
      ws->net_->acceptRegistration(leaders.members[i], registration, expose.originOf(i));
    }
  } catch (const Error& e) {
    accept.fail(e);
  }
  accept.finish();
  ws->acked.assign(n, std::vector<std::uint64_t>(ws->layout_.depth, 0));
  ws->halfUse.resize(ws->layout_.depth);
  ws->nameFlags(n, ws->me_, "team " + leaders.name + "'s network collective workspace");
  if (remote) std::erase_if(ws->others, [&](int i) { return !(*remote)[i]; });
  return ws;
}

RemoteRef NetWorkspace::at(int member, std::size_t offset) const {
  return RemoteRef{worldRanks_[member], offset, nullptr, HeapKind::Host, regions_[member]};
}

void NetWorkspace::tellOthers(int myPe, const std::string& message) {
  if (toldOthers_ || !net_) return;
  toldOthers_ = true;
  AbortRecord rec{};
  rec.pe = myPe;
  std::snprintf(rec.text, sizeof(rec.text), "%s", message.c_str());
  constexpr std::size_t body = offsetof(AbortRecord, pe);
  for (int p : others) {
    // Best effort: this PE is failing already; a leader it cannot reach fails on its own.
    try {
      net_->put(at(p, abortOffset(me_) + body), reinterpret_cast<const char*>(&rec) + body, sizeof(rec) - body);
      net_->signal(at(p, abortOffset(me_)), 2, SignalOp::Set);
    } catch (const Error&) {
    }
  }
}

void NetWorkspace::release() {
  if (!net_) return;
  for (int i = 0; i < members_; ++i) {
    if (i != me_ && regions_[i]) net_->forgetRegion(worldRanks_[i], regions_[i]);
  }
  if (myRegion_) net_->withdrawRegion(myRegion_);
  net_ = nullptr;
  base_ = nullptr;
}

}  // namespace axon::coll
