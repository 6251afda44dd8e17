#include "p2p/operation.hpp"

namespace axon::p2p {

std::string Operation::describe() const {
  auto who = [](int index, int pe) {
    return std::to_string(index) + (pe >= 0 && pe != index ? " (PE " + std::to_string(pe) + ")" : "");
  };
  if (kind == Kind::Send) {
    return "send of " + std::to_string(bytes) + " B to " + who(peer, peerPe) + ", tag " + std::to_string(tag) +
           ", on team " + teamName;
  }
  const std::string from = peer == kAnySource ? "any source" : "source " + who(peer, peerPe);
  const std::string t = tag == kAnyTag ? "any tag" : "tag " + std::to_string(tag);
  return "recv from " + from + ", " + t + ", of up to " + std::to_string(bytes) + " B on team " + teamName;
}

}  // namespace axon::p2p
