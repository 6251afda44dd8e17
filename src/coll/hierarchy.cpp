#include "coll/hierarchy.hpp"

#include <cstring>
#include <limits>
#include <new>
#include <optional>
#include <vector>

#include "axon/error.hpp"
#include "coll/algorithms.hpp"
#include "coll/net_protocol.hpp"
#include "coll/plan.hpp"
#include "coll/protocol.hpp"
#include "core/pe_context.hpp"
#include "transport/network_transport.hpp"

namespace axon::coll {
namespace {

// Zeroed scratch of blocks * blockBytes bytes (padding the leaders send is never read, but never
// uninitialized either).
std::vector<char> scratch(PeContext& rt, std::size_t blocks, std::size_t blockBytes, const char* api) {
  if (blockBytes && blocks > std::numeric_limits<std::size_t>::max() / blockBytes) {
    throw Error(ErrorCode::InvalidArgument, "PE " + std::to_string(rt.myPe()) + ": " + api + ": " +
                                                std::to_string(blocks) + " blocks of " + std::to_string(blockBytes) +
                                                " bytes overflow the node leader's buffer size");
  }
  try {
    return std::vector<char>(blocks * blockBytes);
  } catch (const std::bad_alloc&) {
    throw Error(ErrorCode::OutOfMemory, "PE " + std::to_string(rt.myPe()) + ": " + api + ": the node leader's " +
                                            std::to_string(blocks * blockBytes) + "-byte buffer");
  }
}

void copyBytes(void* dst, const void* src, std::size_t bytes) {
  if (bytes && dst != src) std::memcpy(dst, src, bytes);
}

// One call's steps: the calls on both levels (local: null when this PE is alone on its node;
// net: null unless this PE leads its node) and the plans of each step.
struct Steps {
  PeContext& rt;
  const HierarchyLayout& layout;
  int myNode, myLocal;
  Call* local;
  Call* net;
  Call* direct;  // alltoall only: this member's call among the members of other nodes
  const Request& q;
  std::size_t elem;
  const char* api;

  int n() const { return static_cast<int>(layout.nodeOf.size()); }
  int localMembers() const { return static_cast<int>(layout.parts[myNode].size()); }
  bool leader() const { return myLocal == 0; }
  std::size_t block() const { return q.count * elem; }

  Plan localPlan(Collective c, std::size_t count) const {
    return makePlan({c, count, elem, localMembers(), rt.env().collBuffer, std::nullopt});
  }
  Plan leaderPlan(Collective c, std::size_t count) const {
    std::optional<Algo> algo;
    if (c == q.collective) algo = forcedAlgo(rt.env(), c);
    return makeLeaderPlan({c, count, elem, layout.nodes(), rt.env().collBuffer, algo});
  }
  Buffers buf(const void* src, void* dst, std::size_t count, int root) const {
    return {static_cast<const char*>(src), static_cast<char*>(dst), count, q.type, q.op, root, elem};
  }
  std::vector<char> scratchBlocks(std::size_t blocks) const { return scratch(rt, blocks, block(), api); }

  void barrier() {
    if (local) runBarrier(*local);
    if (net) runBarrier(*net);
    if (local) runBarrier(*local);  // nobody leaves before every node is in
  }

  void broadcast() {
    const int rootNode = layout.nodeOf[q.root];
    const bool onRootNode = myNode == rootNode;
    if (onRootNode && local) {
      runBroadcast(*local, localPlan(Collective::Broadcast, q.count),
                   buf(q.src, q.dst, q.count, layout.localIndexOf[q.root]));
    }
    if (net) {
      // The root's leader holds the data in dst now, or in src when it is the root and alone.
      const void* from = onRootNode && !local ? q.src : q.dst;
      runBroadcast(*net, leaderPlan(Collective::Broadcast, q.count), buf(from, q.dst, q.count, rootNode));
    }
    if (!onRootNode && local) runBroadcast(*local, localPlan(Collective::Broadcast, q.count), buf(q.dst, q.dst, q.count, 0));
  }

  void reduce() {
    const int rootNode = layout.nodeOf[q.root], rootLocal = layout.localIndexOf[q.root];
    const bool onRootNode = myNode == rootNode;
    // The node's partial result, on its leader: in dst when the leader is the root.
    std::vector<char> tmp;
    char* partialAt = nullptr;
    if (leader()) {
      if (onRootNode && rootLocal == 0) {
        partialAt = static_cast<char*>(q.dst);
      } else {
        tmp = scratchBlocks(1);
        partialAt = tmp.data();
      }
    }
    const void* partial = q.src;
    if (local) {
      runReduce(*local, localPlan(Collective::Reduce, q.count), buf(q.src, partialAt, q.count, 0));
      partial = partialAt;
    }
    if (net) runReduce(*net, leaderPlan(Collective::Reduce, q.count), buf(partial, partialAt, q.count, rootNode));
    if (onRootNode && rootLocal != 0) {
      runSend(*local, localPlan(Collective::Allgather, q.count), buf(partialAt, q.dst, q.count, 0), 0, rootLocal);
    }
  }

  void allreduce() {
    const void* partial = q.src;
    if (local) {
      runReduce(*local, localPlan(Collective::Reduce, q.count), buf(q.src, leader() ? q.dst : nullptr, q.count, 0));
      partial = q.dst;
    }
    if (net) runAllreduce(*net, leaderPlan(Collective::Allreduce, q.count), buf(partial, q.dst, q.count, 0));
    if (local) runBroadcast(*local, localPlan(Collective::Broadcast, q.count), buf(q.dst, q.dst, q.count, 0));
  }

  void allgather() {
    const int widest = layout.widest;
    std::vector<char> packed;  // the node's blocks, padded to `widest`
    if (leader()) {
      packed = scratchBlocks(static_cast<std::size_t>(widest));
      if (!local) copyBytes(packed.data(), q.src, block());
    }
    if (local) runGather(*local, localPlan(Collective::Allgather, q.count), buf(q.src, packed.data(), q.count, 0));
    if (net) {
      std::vector<char> all = scratchBlocks(static_cast<std::size_t>(layout.nodes()) * widest);
      runAllgather(*net, leaderPlan(Collective::Allgather, widest * q.count),
                   buf(packed.data(), all.data(), widest * q.count, 0));
      char* dst = static_cast<char*>(q.dst);
      for (int j = 0; j < layout.nodes(); ++j) {
        for (std::size_t i = 0; i < layout.parts[j].size(); ++i) {
          copyBytes(dst + layout.member(j, static_cast<int>(i)) * block(),
                    all.data() + packedBlock(j, static_cast<int>(i), widest) * block(), block());
        }
      }
    }
    const std::size_t total = static_cast<std::size_t>(n()) * q.count;
    if (local) runBroadcast(*local, localPlan(Collective::Broadcast, total), buf(q.dst, q.dst, total, 0));
  }

  void reduceScatter() {
    const int widest = layout.widest;
    const std::size_t total = static_cast<std::size_t>(n()) * q.count;
    std::vector<char> sum, mine;  // the node's sum of every block; this node's reduced blocks
    if (leader()) sum = scratchBlocks(static_cast<std::size_t>(n()));
    if (local) runReduce(*local, localPlan(Collective::Reduce, total), buf(q.src, sum.data(), total, 0));
    if (net) {
      const char* partial = local ? sum.data() : static_cast<const char*>(q.src);
      std::vector<char> packed = scratchBlocks(static_cast<std::size_t>(layout.nodes()) * widest);
      for (int j = 0; j < layout.nodes(); ++j) {
        for (std::size_t i = 0; i < layout.parts[j].size(); ++i) {
          copyBytes(packed.data() + packedBlock(j, static_cast<int>(i), widest) * block(),
                    partial + layout.member(j, static_cast<int>(i)) * block(), block());
        }
      }
      mine = scratchBlocks(static_cast<std::size_t>(widest));
      runReduceScatter(*net, leaderPlan(Collective::ReduceScatter, widest * q.count),
                       buf(packed.data(), mine.data(), widest * q.count, 0));
    }
    if (local) runScatter(*local, localPlan(Collective::Alltoall, q.count), buf(mine.data(), q.dst, q.count, 0));
    else copyBytes(q.dst, mine.data(), block());
  }

  // Pairwise and direct: no gathering to leaders. Each member exchanges its blocks with every
  // member of the other nodes over the network (runPairwise), chunked, several rounds in flight,
  // and, while its first rounds are on the wire, with its own node's members in shared memory.
  void alltoall() {
    copyBytes(static_cast<char*>(q.dst) + me() * block(), static_cast<const char*>(q.src) + me() * block(), block());
    const Buffers b = buf(q.src, q.dst, q.count, 0);
    const std::vector<int>& part = layout.parts[myNode];
    auto inNode = [&] {
      runPairwise(*local, rt.env().collBuffer / elem, b,
                  {[&](int i) { return static_cast<std::size_t>(part[i]); }, [](int) { return true; }});
    };
    PairwiseBlocks across{[](int p) { return static_cast<std::size_t>(p); },
                          [&](int p) { return layout.nodeOf[p] != myNode; }};
    if (local) across.meanwhile = inNode;
    runPairwise(*direct, netHalfBytes(rt.env().collBuffer) / elem, b, across);
  }
  int me() const { return layout.parts[myNode][myLocal]; }
};

}  // namespace

std::shared_ptr<Hierarchy> Hierarchy::create(PeContext& rt, NetworkTransport& net, const detail::TeamState& team,
                                             std::size_t halfBytes) {
  std::vector<std::string> names;
  for (int pe : team.members) names.push_back(rt.nodeName(pe));
  auto h = std::make_shared<Hierarchy>();
  h->net_ = &net;
  h->layout_ = HierarchyLayout::of(names);
  const HierarchyLayout& l = h->layout_;
  h->myNode_ = l.nodeOf[team.myIndex];
  h->myLocal_ = l.localIndexOf[team.myIndex];
  for (int i : l.parts[h->myNode_]) h->local_.members.push_back(team.members[i]);
  h->local_.myIndex = h->myLocal_;
  h->local_.name = team.name + "/node" + std::to_string(h->myNode_);
  for (int k = 0; k < l.nodes(); ++k) h->leaders_.members.push_back(team.members[l.leaderOf(k)]);
  h->leaders_.myIndex = h->myLocal_ == 0 ? h->myNode_ : -1;
  h->leaders_.name = team.name + "/leaders";
  if (h->local_.members.size() > 1) h->localWs_ = Workspace::create(rt, h->local_, halfBytes);
  // The leaders' rounds: a whole AXON_COLL_BUFFER each (a put, then its signal), two in flight. With
  // 64 KiB rounds and 8 in flight a 4 MiB allreduce on 2 emulated nodes took 3.2-3.3 ms against
  // 2.4 ms, with 256 KiB rounds and 8 in flight 3.8-12.9 ms in half the runs
  // (docs/performance.md, "Across nodes (emulated, host buffers)").
  if (h->myLocal_ == 0) h->netWs_ = NetWorkspace::create(rt, net, h->leaders_, halfBytes, 2);
  h->all_.members = team.members;
  h->all_.myIndex = team.myIndex;
  h->all_.name = team.name + "/direct";
  h->team_ = &team;  // owns this hierarchy (through its collectives): outlives it
  std::vector<char> remote(team.members.size());
  for (std::size_t i = 0; i < remote.size(); ++i) remote[i] = l.nodeOf[i] != h->myNode_;
  h->directWs_ = NetWorkspace::create(rt, net, h->all_, netHalfBytes(halfBytes), 0, &remote);
  return h;
}

void Hierarchy::release() {
  if (netWs_) netWs_->release();
  if (directWs_) directWs_->release();
}

void Hierarchy::run(PeContext& rt, const Request& q, const CallRecord& record, const char* api) {
  runCall(rt, &q, record, api);
}

void Hierarchy::sync(PeContext& rt, const char* what) {
  {
    std::lock_guard one(callMutex_);
    // After a failed call the members no longer count alike: the barrier goes on without a record.
    if ((localWs_ && !localWs_->failure.empty()) || (netWs_ && !netWs_->failure.empty()) ||
        (directWs_ && !directWs_->failure.empty())) {
      return;
    }
  }
  runCall(rt, nullptr, syncRecord(what), what);
}

void Hierarchy::runCall(PeContext& rt, const Request* q, const CallRecord& record, const char* api) {
  std::lock_guard one(callMutex_);
  // The team's own bound (Team::setTimeout), which may change between calls, on every level.
  const double bound = team_->ownTimeout();
  local_.setOwnTimeout(bound);
  leaders_.setOwnTimeout(bound);
  all_.setOwnTimeout(bound);
  std::optional<ShmCall> local;
  std::optional<NetCall> net, direct;
  try {
    if (localWs_) local.emplace(rt, local_, *localWs_, record, api);
    // A leader vouches for its node: it sends its record to the other leaders only once every
    // member of its node made the same call, so that a leader that has every leader's record
    // knows that every member of the team agrees.
    if (local && netWs_) local->agreeWithAll();
    if (netWs_) net.emplace(rt, leaders_, *netWs_, record, api, local ? &*local : nullptr);
    if (q && q->collective == Collective::Alltoall) {
      // The leaders move no data in it: their records go now, so that a leader in another call
      // finds the mismatch while this one waits on the direct level (which watches the leaders').
      if (net) net->sendRecords();
      direct.emplace(rt, all_, *directWs_, record, api, local ? &*local : nullptr, net ? &*net : nullptr);
    }
    if (q) {
      Steps s{rt, layout_, myNode_, myLocal_, local ? &*local : nullptr, net ? &*net : nullptr,
              direct ? &*direct : nullptr, *q, dataTypeSize(q->type), api};
      switch (q->collective) {
        case Collective::Barrier: s.barrier(); break;
        case Collective::Broadcast: s.broadcast(); break;
        case Collective::Reduce: s.reduce(); break;
        case Collective::Allreduce: s.allreduce(); break;
        case Collective::Allgather: s.allgather(); break;
        case Collective::ReduceScatter: s.reduceScatter(); break;
        case Collective::Alltoall: s.alltoall(); break;
      }
    }
    // Each level compares every member's record; a member returns only once its leader knows
    // that every leader (so every member) made the same call (else the leader's abort stops it).
    if (local) local->finish();
    if (direct) direct->finish();
    if (net) net->finish();
    if (local && myLocal_ == 0) local->confirmToNode();
    if (local && myLocal_ != 0) local->awaitNodeLeader(0);
  } catch (const Error& e) {
    // A mismatch found on one level stops the other too: the members there wait for this PE.
    if (e.code() == ErrorCode::CollectiveMismatch) {
      if (localWs_) localWs_->tellOthers(rt.myPe(), e.what());
      if (netWs_) netWs_->tellOthers(rt.myPe(), e.what());
      if (direct) directWs_->tellOthers(rt.myPe(), e.what());
    }
    const std::string why = std::string(errorCodeName(e.code())) + " in " + api;
    if (localWs_ && localWs_->failure.empty()) localWs_->failure = why;
    if (netWs_ && netWs_->failure.empty()) netWs_->failure = why;
    if (directWs_ && directWs_->failure.empty()) directWs_->failure = why;
    throw;
  }
}

void Hierarchy::explain(PeContext& rt, Explanation& e, std::size_t count, DataType type) const {
  const std::size_t elem = dataTypeSize(type);
  const int n = static_cast<int>(layout_.nodeOf.size());
  const char* steps = "";
  Collective leaderStep = e.collective;
  std::size_t leaderCount = count;
  const auto w = static_cast<std::size_t>(layout_.widest);
  switch (e.collective) {
    case Collective::Barrier: steps = "barrier in the node, among leaders, in the node"; break;
    case Collective::Broadcast: steps = "broadcast in the root's node, among leaders, in the other nodes"; break;
    case Collective::Reduce: steps = "reduce to each node's leader, among leaders to the root's, then to the root"; break;
    case Collective::Allreduce: steps = "reduce to each node's leader, allreduce among leaders, broadcast in the node"; break;
    case Collective::Allgather:
      steps = "gather to each node's leader, allgather among leaders, broadcast in the node";
      leaderCount = w * count;
      break;
    case Collective::ReduceScatter:
      steps = "reduce to each node's leader, reduce_scatter among leaders, scatter in the node";
      leaderCount = w * count;
      break;
    case Collective::Alltoall: break;
  }
  std::string link = "the network";
  if (net_) link = net_->pathTo(leaders_.members[myNode_ == 0 ? 1 : 0]);
  e.path = "hierarchical";
  if (e.collective == Collective::Alltoall) {
    // No leaders' step: every member exchanges its blocks itself (Steps::alltoall).
    const std::size_t chunk = std::max<std::size_t>(netHalfBytes(rt.env().collBuffer) / elem, 1);
    const std::size_t chunks = std::max<std::size_t>((count + chunk - 1) / chunk, 1);
    e.algorithm = "pairwise, direct between PEs";
    e.reason = std::to_string(n) + " PEs on " + std::to_string(layout_.nodes()) + " nodes (up to " +
               std::to_string(layout_.widest) + " per node): each PE exchanges its blocks with the PEs of its node " +
               "in host-shm (the node's collective workspace) and with every PE of the other nodes itself over " +
               link + ", pairwise (step s: to PE + s, from PE - s), in chunks of up to " +
               std::to_string(chunk * elem) + " bytes (one message each), up to " +
               std::to_string(directWs_ ? directWs_->layout().depth : 2) + " in flight per PE; nothing goes through the node leaders";
    e.chunkBytes = std::min(chunk, std::max<std::size_t>(count, 1)) * elem;
    e.rounds = chunks * static_cast<std::size_t>(n - 1);
    return;
  }
  const std::optional<Algo> algo = forcedAlgo(rt.env(), e.collective);
  const Plan lp = makeLeaderPlan({leaderStep, leaderCount, elem, layout_.nodes(), rt.env().collBuffer, algo});
  e.algorithm = std::string(algoName(lp.algo)) + " among node leaders";
  e.reason = std::to_string(n) + " PEs on " + std::to_string(layout_.nodes()) + " nodes (up to " +
             std::to_string(layout_.widest) + " per node): " + steps + ". In each node: host-shm, the node's " +
             "collective workspace. Among the leaders, over " + link + ": " + lp.reason;
  e.chunkBytes = lp.chunkElems * elem;
  e.rounds = lp.rounds;
}

}  // namespace axon::coll
