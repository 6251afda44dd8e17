// A get's reassembly, planned before any byte moves: for every fragment the servers named, the
// strided copy that takes its part of the box into the caller's buffer (planCopy), and whether it
// is read in place (a get into host memory from a server whose arena is mapped here) or lands in
// staging first, and where (offsets aligned for the reassembly kernel's wide loads). Pure box
// arithmetic: the get (client_gets.cpp) reads the servers' answers, plans here, then moves the
// bytes by the plan; nothing here calls back into the client.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "space/box.hpp"
#include "space/store.hpp"  // Fragment

namespace axon::space {

// Staging offsets of fragments: aligned for wide loads in the reassembly kernel.
constexpr std::uint64_t kStagingAlign = 256;

// One server's answer to a get's query: the fragments it holds of the box.
struct FragmentSource {
  int server = -1;
  std::uint64_t lease = 0;  // pins the fragments until fetched or copied (0: none to pin)
  bool mapped = false;      // the server's arena is mapped here: fragments are read from it
  std::vector<Fragment> fragments;
};

struct FragmentPlan {
  CopyRegion region;      // from the piece, as stored, into the box
  bool staged = false;    // lands in staging first; else copied straight from the mapped arena
  std::uint64_t at = 0;   // where in staging (staged fragments only)
};

struct AssemblyPlan {
  std::vector<std::vector<FragmentPlan>> sources;  // per source, per fragment, in their order
  std::uint64_t stagingBytes = 0;                  // what the staged fragments need
  std::uint64_t fragments = 0;
};

// `device`: the box goes to GPU memory, where one kernel copies every fragment, each from
// device staging (mapped ones too: uploaded there first).
AssemblyPlan planAssembly(const std::vector<FragmentSource>& sources, const Box& box, std::size_t elementBytes,
                          bool device);

}  // namespace axon::space
