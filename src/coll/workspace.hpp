// A team's collective workspace: one shared-memory segment per member, mapped by every member
// (the host backend's path, "host-shm"). Created when the team is (world and node at init, split
// teams at the split), destroyed with it. Also carries this PE's protocol state for the team.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "coll/protocol_state.hpp"
#include "coll/workspace_layout.hpp"
#include "memory/shm_segment.hpp"

namespace axon {
class PeContext;
namespace detail {
struct TeamState;
}

namespace coll {

class Workspace : public ProtocolState {
 public:
  // Collective over the team's members (through the bootstrap store).
  static std::unique_ptr<Workspace> create(PeContext& rt, const detail::TeamState& team, std::size_t halfBytes);

  int members() const { return members_; }
  int me() const { return me_; }

  WorkspaceHeader& header(int member) const { return *reinterpret_cast<WorkspaceHeader*>(base(member)); }
  // member's ready[from] / ack[from].
  std::uint64_t* readyWord(int member, int from) const { return word(member, layout_.ready, from); }
  std::uint64_t* ackWord(int member, int from) const { return word(member, layout_.ack, from); }
  char* half(int member, std::uint64_t round) const { return base(member) + layout_.half[round % 2]; }
  // Tells every other member to stop with `message`: the first teller of each member wins.
  void tellOthers(int myPe, const std::string& message) const;

  std::string confirmedName;  // how waits name the node leader's `confirmed` flag

 private:
  Workspace(int members, int me, WorkspaceLayout layout) : members_(members), me_(me), layout_(layout) {}
  char* base(int member) const { return segments_[member].base(); }
  std::uint64_t* word(int member, std::size_t offset, int index) const {
    return reinterpret_cast<std::uint64_t*>(base(member) + offset + static_cast<std::size_t>(index) * kFlagStride);
  }

  int members_, me_;
  WorkspaceLayout layout_;
  std::vector<ShmSegment> segments_;  // [member]
};

}  // namespace coll
}  // namespace axon
