// MPI's matching rules for two-sided messages on one team (the team is the communicator): which
// posted receive an arriving message goes to, and which queued message a new receive takes.
//
//   - A receive names a source (a team index, or kAnySource) and a tag (>= 0, or kAnyTag).
//   - A message goes to the earliest posted receive it matches; a receive takes the earliest
//     queued ("unexpected") message it matches. Messages from one source are handed to the matcher
//     in the order they were sent, so two messages between one pair with the same tag never
//     overtake each other, wildcards or not.
//   - What queued messages hold here (eager data; a rendezvous holds only its announcement) is
//     counted, not limited: the engine bounds it before messages are sent, by each sender's
//     credit at this PE (p2p/engine.hpp), so a full queue pushes back on senders instead of
//     refusing what already arrived.
//
// Pure bookkeeping, no I/O and no locks (the caller holds its own): tested on the host
// (tests/unit/p2p_matcher_test.cpp). Cookies are the protocol's handles for receives and messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>

namespace axon::p2p {

constexpr int kAnySource = -1;
constexpr int kAnyTag = -1;

// What a message says about itself.
struct Envelope {
  int source = 0;           // the sender's index in the team
  int tag = 0;              // >= 0
  std::uint64_t bytes = 0;  // the message's length
};

// A message that arrived: its envelope, what it holds here (counted against the bound), and the
// protocol's handle for it.
struct Arrival {
  Envelope envelope;
  std::size_t heldBytes = 0;
  std::uint64_t cookie = 0;
};

// A receive posted: what it accepts, and the protocol's handle for it.
struct PostedReceive {
  int source = kAnySource;
  int tag = kAnyTag;
  std::uint64_t cookie = 0;
};

// Whether a receive (source, tag) accepts a message's envelope.
constexpr bool accepts(int source, int tag, const Envelope& e) {
  return (source == kAnySource || source == e.source) && (tag == kAnyTag || tag == e.tag);
}

class Matcher {
 public:
  // `members`: the team's size (sources are [0, members)).
  explicit Matcher(int members);

  // A message arrives from its source (in that source's sending order): the receive it goes to
  // (no longer posted), or nothing, and it waits as unexpected. Throws Internal for a source
  // outside the team or a negative tag.
  std::optional<PostedReceive> arrive(const Arrival& a);

  // A receive is posted: the earliest queued message it accepts (no longer queued), or nothing,
  // and the receive waits for one.
  std::optional<Arrival> post(const PostedReceive& r);

  // The earliest queued message (source, tag) accepts, left in place (probe).
  std::optional<Envelope> probe(int source, int tag) const;

  // Withdraws a posted receive (its wait ended); false when it is not posted (it matched).
  bool cancel(std::uint64_t cookie);

  // The posted receive that accepts messages from `source` (naming it or kAnySource) when it is
  // the only one and names `source` itself: then that source's next message, whatever its tag,
  // can go nowhere else.
  std::optional<PostedReceive> onlyFrom(int source) const;

  std::size_t unexpectedCount() const { return unexpected_.size(); }
  std::size_t unexpectedBytes() const { return heldBytes_; }
  std::size_t postedCount() const { return posted_.size(); }
  // The queued messages, oldest first, at most `max` of them: "(source 1, tag 7, 64 B), ..."
  // (for a receive's timeout message).
  std::string describeUnexpected(std::size_t max) const;

 private:
  int members_;
  std::size_t heldBytes_ = 0;
  std::deque<PostedReceive> posted_;  // in posting order
  std::deque<Arrival> unexpected_;    // in arrival order
};

}  // namespace axon::p2p
