#include "memory/peer_growth.hpp"

#include "bootstrap/blob.hpp"
#include "bootstrap/bootstrap.hpp"
#include "bootstrap/setup_step.hpp"

namespace axon {

std::vector<std::size_t> mappedSizesOf(const std::vector<std::string>& sizes, const SetupStep& step) {
  std::vector<std::size_t> mapped(sizes.size());
  for (std::size_t p = 0; p < sizes.size(); ++p) mapped[p] = wire::readWordBlob(sizes[p], step.originOf(p));
  return mapped;
}

void mapPeerGrowth(Bootstrap& boot, HeapSpace& heap, const std::vector<std::size_t>& peerMapped,
                   const std::string& tag, const std::string& what, const std::function<void()>& alsoDo) {
  SetupStep step(boot, tag, boot.worldRanks(), what);
  try {
    // The GPU heap waits for the peers' memory handles here: a peer that posted a failure ends it.
    heap.mapPeers(peerMapped, [&step] { step.checkPeers(); });
    if (alsoDo) alsoDo();
  } catch (const Error& e) {
    step.fail(e);
  }
  step.finish();
}

}  // namespace axon
