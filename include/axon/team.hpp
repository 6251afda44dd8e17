// Teams: ordered subsets of the world's PEs (OpenSHMEM 1.5 teams).
#pragma once

#include <memory>
#include <vector>

namespace axon {

namespace detail {
struct TeamState;
}

class Team {
 public:
  // An invalid team (what a split returns to PEs outside the new team).
  Team() = default;

  static Team world();
  // The PEs that share memory with this one (same node).
  static Team node();

  bool valid() const noexcept { return static_cast<bool>(state_); }
  int myPe() const;   // my index in the team
  int nPes() const;
  // The index in `other` of this team's PE `pe`, or -1 when that PE is not in `other`.
  int translate(int pe, const Team& other) const;
  // The world rank of this team's PE `pe`.
  int worldPe(int pe) const;

  // Collective over this team: the PEs start, start+stride, ..., (size of them, indices in this
  // team) form the new team. PEs outside it get an invalid Team. Throws InvalidArgument when
  // the triple leaves the team, CollectiveMismatch when PEs pass different triples.
  Team splitStrided(int start, int stride, int size) const;
  // Collective over this team (MPI_Comm_split): the PEs that pass the same colour form a new
  // team, ordered by key (ties keep this team's order). A PE passing a negative colour (kNoColour)
  // joins none and gets an invalid Team. Any grouping works, on one node or across nodes.
  Team split(int colour, int key = 0) const;
  static constexpr int kNoColour = -1;
  // Collective over the listed world PEs only (PEs outside the list take no part): they form a
  // team in the list's order. Every listed PE calls it with the same list, at the same point among
  // its other team calls; this PE must be listed. For groups whose outsiders are never told, as
  // torch.distributed's new_group. Throws InvalidArgument for an empty list, a PE outside the
  // world or listed twice, or a list without this PE; CollectiveMismatch when members' lists differ.
  static Team ofWorldPes(const std::vector<int>& pes);

  // This PE's bound, in seconds, on every wait of the team's collectives (host and stream forms),
  // barriers and two-sided messages; 0 (the default) restores AXON_TIMEOUT. Local: each member
  // sets its own. It bounds the waits that start after it (a stream-ordered call queued before it
  // runs under the bound in force when it runs). A wait past it throws Timeout naming "the
  // team's timeout". At most 1e8 s (longer is cut to it, as AXON_TIMEOUT is). Throws InvalidArgument
  // for a negative or non-finite value.
  void setTimeout(double seconds) const;
  // The bound in force on this PE: the team's own, else AXON_TIMEOUT.
  double timeout() const;

  // Completes this PE's outstanding puts (quiet), then synchronizes the team.
  void barrier() const;
  // Synchronization only: no completion of outstanding puts.
  void sync() const;

  // Collective over the team; the object becomes invalid on every PE. On the GPU backend it first
  // waits until this PE's GPU has finished everything enqueued on any stream (the team's stream
  // barriers and collectives among it).
  void destroy();

  const detail::TeamState* state() const noexcept { return state_.get(); }

 private:
  explicit Team(std::shared_ptr<detail::TeamState> s) : state_(std::move(s)) {}
  friend struct detail::TeamState;
  std::shared_ptr<detail::TeamState> state_;
};

}  // namespace axon
