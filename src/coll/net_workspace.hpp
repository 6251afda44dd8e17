// The collective workspace among a team's node leaders: one region per leader, registered with the
// network transport (NetworkTransport::exposeRegion), that the other leaders write into. Layout,
// the same on every leader:
//
//   abort[n]:  abort[p]: p told this leader to stop (written by p)
//   ready[n]:  ready[p] = the last round p published to this leader   (written by p)
//   ack[n]:    ack[p]   = the last round of this leader's that p consumed (written by p)
//   called[n]: called[p] = the number of p's last call whose record sits in calls (written by p)
//   calls[n][2]: p's record of its call #s in calls[p][s % 2], put at the start of the call, so
//              that every leader compares every other's call before it returns
//   inbox[n][D]: p's round r lands in inbox[p][r % D]: its call record, then its data
//   outbox[D]: where this leader prepares its round r (local only: the source of its puts)
//
// D (depth) rounds may be in flight per member: over the network a round trip (the ack) costs as
// much as a round's data, so two would leave the wire idle half the time.
//
// Flags sit on their own 64-byte lines. Created with the team: on leaders among the leaders, and
// on every member among all members (the direct steps, where each member talks only to the
// members of other nodes; the slots of its own node's members stay unused).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "coll/protocol_state.hpp"
#include "coll/workspace_layout.hpp"
#include "transport/transport.hpp"

namespace axon {
class PeContext;
class NetworkTransport;
namespace detail {
struct TeamState;
}

namespace coll {

constexpr std::size_t kSlotHeader = alignUp(sizeof(CallRecord), kFlagStride);

// What one round of the direct level (alltoall) carries at most, record included. When a put_signal
// over 64 KiB was a put, UCX's strong fence and a signal (UCX over TCP:
// transport/ucx/ucx_am_atomics.hpp), larger rounds stalled for milliseconds (an alltoall of 1 MiB
// on 2 nodes of 2 PEs took 17-33 ms with 256 KiB rounds, 1.3-1.4 ms with 64 KiB ones). Now that a
// put_signal up to 4 MiB is one message, 256 KiB rounds measured no better: 0.74-1.71 ms against
// 0.93-1.13 ms at 1 MiB, 5.1-7.5 ms against 3.6-4.1 ms at 4 MiB (three runs each, 2-core VM).
// Every member computes the same, so all count rounds alike.
constexpr std::size_t kNetRoundMax = 64 * 1024;
constexpr std::size_t netHalfBytes(std::size_t collBuffer) {
  return collBuffer < kNetRoundMax - kSlotHeader ? collBuffer : kNetRoundMax - kSlotHeader;
}

struct NetLayout {
  std::size_t abort, ready, ack, called, calls, inbox, outbox;
  std::size_t slotBytes;  // a record and a half
  std::size_t depth;      // slots per member
  std::size_t total;
};

// The depth of a level of `members`: 8 rounds in flight, fewer where the inboxes would pass 16 MiB
// (never below 2). The same on every member.
constexpr std::size_t netDepth(int members, std::size_t halfBytes) {
  const std::size_t slot = alignUp(kSlotHeader + halfBytes, 4096);
  const std::size_t fit = (std::size_t{16} << 20) / (slot * static_cast<std::size_t>(members > 0 ? members : 1));
  return fit < 2 ? 2 : (fit > 8 ? 8 : fit);
}

// `depth`: 0 for netDepth's choice.
constexpr NetLayout netLayout(int members, std::size_t halfBytes, std::size_t depth = 0) {
  const auto n = static_cast<std::size_t>(members);
  NetLayout l{};
  l.abort = 0;
  l.ready = alignUp(n * sizeof(AbortRecord), kFlagStride);
  l.ack = l.ready + n * kFlagStride;
  l.called = l.ack + n * kFlagStride;
  l.calls = l.called + n * kFlagStride;
  l.inbox = alignUp(l.calls + 2 * n * sizeof(CallRecord), 4096);
  l.slotBytes = alignUp(kSlotHeader + halfBytes, 4096);
  l.depth = depth ? depth : netDepth(members, halfBytes);
  l.outbox = l.inbox + l.depth * n * l.slotBytes;
  l.total = l.outbox + l.depth * l.slotBytes;
  return l;
}

class NetWorkspace : public ProtocolState {
 public:
  // Collective over the leaders (through the bootstrap store): each exposes its region and
  // accepts the others'. `remote` [member], when given: the members this one talks to on this
  // level (the direct workspace of every member: those on other nodes); `others` holds only them.
  // `depth`: rounds in flight per member (0: netDepth's choice).
  static std::unique_ptr<NetWorkspace> create(PeContext& rt, NetworkTransport& net, const detail::TeamState& leaders,
                                              std::size_t halfBytes, std::size_t depth,
                                              const std::vector<char>* remote = nullptr);
  // Gives the region back and forgets the peers'. Call when no leader writes any more (after the
  // team's last barrier); the transport frees what is left at finalize.
  void release();

  int members() const { return members_; }
  int me() const { return me_; }
  const NetLayout& layout() const { return layout_; }
  NetworkTransport& transport() const { return *net_; }
  // `offset` in member's region, for the transport.
  RemoteRef at(int member, std::size_t offset) const;
  // Tells every other leader to stop with `message` (once; best effort).
  void tellOthers(int myPe, const std::string& message);

  // Words and slots of this leader's own region.
  std::uint64_t* word(std::size_t offset) const { return reinterpret_cast<std::uint64_t*>(base_ + offset); }
  std::uint64_t* readyWord(int from) const { return word(layout_.ready + static_cast<std::size_t>(from) * kFlagStride); }
  std::uint64_t* ackWord(int from) const { return word(layout_.ack + static_cast<std::size_t>(from) * kFlagStride); }
  std::uint64_t* calledWord(int from) const { return word(calledOffset(from)); }
  const CallRecord& callFrom(int from, std::uint64_t seq) const {
    return *reinterpret_cast<const CallRecord*>(base_ + callOffset(from, seq));
  }
  AbortRecord& abortFrom(int from) const {
    return *reinterpret_cast<AbortRecord*>(base_ + layout_.abort + static_cast<std::size_t>(from) * sizeof(AbortRecord));
  }
  char* inbox(int from, std::uint64_t round) const { return base_ + inboxOffset(from, round); }
  char* outbox(std::uint64_t round) const {
    return base_ + layout_.outbox + (round % layout_.depth) * layout_.slotBytes;
  }
  // Offsets in any leader's region.
  std::size_t inboxOffset(int from, std::uint64_t round) const {
    return layout_.inbox + (static_cast<std::size_t>(from) * layout_.depth + round % layout_.depth) * layout_.slotBytes;
  }
  std::size_t readyOffset(int from) const { return layout_.ready + static_cast<std::size_t>(from) * kFlagStride; }
  std::size_t ackOffset(int from) const { return layout_.ack + static_cast<std::size_t>(from) * kFlagStride; }
  std::size_t calledOffset(int from) const { return layout_.called + static_cast<std::size_t>(from) * kFlagStride; }
  std::size_t callOffset(int from, std::uint64_t seq) const {
    return layout_.calls + (static_cast<std::size_t>(from) * 2 + seq % 2) * sizeof(CallRecord);
  }
  std::size_t abortOffset(int from) const { return layout_.abort + static_cast<std::size_t>(from) * sizeof(AbortRecord); }

  // The last round this leader acked to member p, per slot: an inbox slot not yet acked holds
  // complete data nobody overwrites.
  std::vector<std::vector<std::uint64_t>> acked;

 private:
  NetWorkspace(int members, int me, NetLayout layout) : members_(members), me_(me), layout_(layout) {}

  int members_, me_;
  NetLayout layout_;
  NetworkTransport* net_ = nullptr;
  char* base_ = nullptr;
  std::uint32_t myRegion_ = 0;
  std::vector<std::uint32_t> regions_;  // [member] its region's number
  std::vector<int> worldRanks_;
  bool toldOthers_ = false;
};

}  // namespace coll
}  // namespace axon
