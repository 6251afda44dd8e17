// Which server of a space holds which part of a variable. The variable is cut along dimension 0
// into slabs, dealt to the servers round-robin, so that a large block is striped over every server
// and each part of a block stays contiguous in the writer's buffer (a row range of a row-major
// block): no packing before a put. One server: one slab, nothing cut. Pure arithmetic, tested on
// the host.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "space/box.hpp"

namespace axon::space {

class Placement {
 public:
  // Slabs per server when there are several: enough that a block spanning a fair share of the
  // rows touches every server.
  static constexpr int kSlabsPerServer = 4;

  Placement(const Box& shape, int servers);

  int servers() const { return servers_; }
  std::int64_t slabRows() const { return slabRows_; }
  int serverOfRow(std::int64_t row) const;
  // `box` cut at slab edges: (server, part) in dimension-0 order; every part lies in one slab.
  std::vector<std::pair<int, Box>> split(const Box& box) const;
  // The elements of the variable that `server` holds.
  std::int64_t ownedVolume(int server) const;

 private:
  Box shape_;
  int servers_;
  std::int64_t slabRows_;
};

}  // namespace axon::space
