#include "space/placement.hpp"

#include <algorithm>

#include "axon/error.hpp"

namespace axon::space {

Placement::Placement(const Box& shape, int servers) : shape_(shape), servers_(servers) {
  if (servers < 1) throw Error(ErrorCode::InvalidArgument, "a space needs at least one server");
  const std::int64_t rows = shape.extent(0);
  const std::int64_t slabs = servers == 1 ? 1 : static_cast<std::int64_t>(servers) * kSlabsPerServer;
  slabRows_ = std::max<std::int64_t>(1, (rows + slabs - 1) / slabs);
}

int Placement::serverOfRow(std::int64_t row) const {
  return static_cast<int>((row / slabRows_) % servers_);
}

std::vector<std::pair<int, Box>> Placement::split(const Box& box) const {
  std::vector<std::pair<int, Box>> parts;
  for (std::int64_t row = box.lo[0]; row < box.hi[0];) {
    const std::int64_t slabEnd = (row / slabRows_ + 1) * slabRows_;
    Box part = box;
    part.lo[0] = row;
    part.hi[0] = std::min(box.hi[0], slabEnd);
    parts.emplace_back(serverOfRow(row), part);
    row = part.hi[0];
  }
  return parts;
}

std::int64_t Placement::ownedVolume(int server) const {
  std::int64_t total = 0;
  for (const auto& [owner, part] : split(shape_)) {
    if (owner == server) total += volume(part);
  }
  return total;
}

}  // namespace axon::space
