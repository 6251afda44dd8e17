// How a team whose members sit on several nodes is cut into levels: the members of each node (in
// team order) and one leader per node (its first member). Nodes are numbered in the order their
// first member appears in the team, so every member computes the same layout from the same names.
// Also where each member's block sits in the leaders' packed buffers: every node's part is padded
// to the largest part, so that the leaders' steps move equal blocks. Pure, tested on the host
// (tests/unit/hierarchy_layout_test.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace axon::coll {

struct HierarchyLayout {
  std::vector<std::vector<int>> parts;  // [node] team indices, ascending
  std::vector<int> nodeOf;              // [team index]
  std::vector<int> localIndexOf;        // [team index] its index in its node's part
  int widest = 0;                       // the largest part: each node's blocks are padded to it

  int nodes() const { return static_cast<int>(parts.size()); }
  int leaderOf(int node) const { return parts[node][0]; }
  bool isLeader(int member) const { return localIndexOf[member] == 0; }
  // The team index of local member i of `node`.
  int member(int node, int i) const { return parts[node][i]; }

  // `nodeNames[i]`: the node of team member i.
  static HierarchyLayout of(const std::vector<std::string>& nodeNames) {
    HierarchyLayout l;
    std::vector<std::string> seen;
    for (std::size_t i = 0; i < nodeNames.size(); ++i) {
      auto at = std::find(seen.begin(), seen.end(), nodeNames[i]);
      const int node = static_cast<int>(at - seen.begin());
      if (at == seen.end()) {
        seen.push_back(nodeNames[i]);
        l.parts.emplace_back();
      }
      l.nodeOf.push_back(node);
      l.localIndexOf.push_back(static_cast<int>(l.parts[node].size()));
      l.parts[node].push_back(static_cast<int>(i));
    }
    for (const auto& p : l.parts) l.widest = std::max(l.widest, static_cast<int>(p.size()));
    return l;
  }
};

// Block positions in the leaders' packed buffers (in blocks, not bytes).
// allgather / reduce_scatter: node j's local member i at j * widest + i.
constexpr std::size_t packedBlock(int node, int i, int widest) {
  return static_cast<std::size_t>(node) * static_cast<std::size_t>(widest) + static_cast<std::size_t>(i);
}
// alltoall: what local member `from` of node `fromNode` sends to local member `to` of node
// `toNode`, in the buffer that leader `fromNode` sends to leader `toNode` (part toNode of the
// sender's buffer, part fromNode of the receiver's).
constexpr std::size_t packedPairBlock(int node, int from, int to, int widest) {
  const auto w = static_cast<std::size_t>(widest);
  return static_cast<std::size_t>(node) * w * w + static_cast<std::size_t>(from) * w + static_cast<std::size_t>(to);
}

}  // namespace axon::coll
