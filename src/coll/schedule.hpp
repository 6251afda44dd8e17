// Index and schedule math of the collective algorithms: pure functions, tested on the host
// (tests/unit/coll_math_test.cpp). The host algorithms in algorithms.cpp follow these and nothing
// else, so every member derives the same rounds from the same arguments.
#pragma once

#include <bit>
#include <cstddef>

namespace axon::coll {

constexpr std::size_t ceilDiv(std::size_t a, std::size_t b) { return (a + b - 1) / b; }

// Part i of `count` elements split into `parts` nearly equal parts (the first count % parts
// parts hold one more).
struct Range {
  std::size_t offset;
  std::size_t count;
};
constexpr Range balancedPart(std::size_t count, int parts, int i) {
  const std::size_t base = count / static_cast<std::size_t>(parts);
  const std::size_t extra = count % static_cast<std::size_t>(parts);
  const std::size_t ui = static_cast<std::size_t>(i);
  return {ui * base + (ui < extra ? ui : extra), base + (ui < extra ? 1 : 0)};
}

constexpr int mod(int a, int n) { return ((a % n) + n) % n; }

// Ring allreduce over n PEs, steps t = 0 .. 2n-2 (each step publishes one segment to the right
// neighbour, except the last, and consumes what the left one published the step before, except
// the first).
//  - steps 0 .. n-2 (reduce-scatter): the partial sum of segment (me - t) travels right, each PE
//    adding its own part;
//  - step n-1: the partial arriving from the left is segment me+1, complete once this PE adds its
//    part: the PE owns that segment's result;
//  - steps n-1 .. 2n-2 (allgather): finished segments travel right; at step t the segment in hand
//    is (me + n - t).
constexpr int ringSegment(int me, int t, int n) { return t < n - 1 ? mod(me - t, n) : mod(me + n - t, n); }
constexpr int ringSteps(int n) { return 2 * n - 1; }
constexpr int ringRoundsPerChunk(int n) { return 2 * n - 2; }  // steps that publish

// Ring allgather over n PEs, steps t = 0 .. n-1: at step t the block in hand is (me - t); steps
// 0 .. n-2 publish it to the right.
constexpr int ringGatherBlock(int me, int t, int n) { return mod(me - t, n); }

// Chain broadcast: PEs in order root, root+1, ...; position 0 is the root.
constexpr int chainPosition(int me, int root, int n) { return mod(me - root, n); }
constexpr int chainMember(int position, int root, int n) { return mod(root + position, n); }
// Steps of a chain broadcast of `chunks` chunks over n PEs: chunk k leaves position d at step k+d.
constexpr std::size_t chainSteps(std::size_t chunks, int n) { return chunks + static_cast<std::size_t>(n) - 2; }

// Recursive-doubling allreduce over n PEs. The largest power of two p2 <= n takes part in the
// doubling; the first 2 * (n - p2) PEs pair up first: the even one of each pair hands its data to
// the odd one (fold), which takes part for both and hands the result back at the end (unfold).
// Doubling step s exchanges with the partner whose doubling rank differs in bit s.
constexpr int doublingFolded(int n) { return n - static_cast<int>(std::bit_floor(static_cast<unsigned>(n))); }
constexpr int doublingSteps(int n) { return std::countr_zero(std::bit_floor(static_cast<unsigned>(n))); }
// The doubling rank of member me, or -1 for a member that folded its data into me + 1.
constexpr int doublingRank(int me, int n) {
  const int extra = doublingFolded(n);
  if (me < 2 * extra) return me % 2 == 0 ? -1 : me / 2;
  return me - extra;
}
// The member of doubling rank v.
constexpr int doublingMember(int v, int n) {
  const int extra = doublingFolded(n);
  return v < extra ? 2 * v + 1 : v + extra;
}
constexpr int doublingRoundsPerChunk(int n) { return doublingSteps(n) + (doublingFolded(n) > 0 ? 2 : 0); }

}  // namespace axon::coll
