// Mapping what the peers' heaps grew to, together: every PE maps, and a PE that cannot fails
// every PE alike (one set-up step) instead of throwing alone while the others go on.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "memory/heap_space.hpp"

namespace axon {

class Bootstrap;
class SetupStep;

// The mapped sizes every PE contributed to `step` (each a word blob), as numbers, in rank order.
std::vector<std::size_t> mappedSizesOf(const std::vector<std::string>& sizes, const SetupStep& step);

// `peerMapped` is every PE's mapped size from the exchange that came before (the same on every
// PE); `tag` and `what` name the step in the store and in messages. `alsoDo` runs inside the step
// after the mapping (the network transport takes the peers' registrations there), so that its
// failure fails the step on every PE too.
void mapPeerGrowth(Bootstrap& boot, HeapSpace& heap, const std::vector<std::size_t>& peerMapped,
                   const std::string& tag, const std::string& what, const std::function<void()>& alsoDo = {});

}  // namespace axon
