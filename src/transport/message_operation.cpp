#include "transport/message_operation.hpp"

namespace axon::p2p {

std::string Operation::describe() const {
  auto who = [](int index, int pe) {
    return std::to_string(index) + (pe >= 0 && pe != index ? " (PE " + std::to_string(pe) + ")" : "");
  };
  if (streamOrdered) {
    // The tag is the call's number among this pair's stream-ordered calls.
    if (kind == Kind::Send) {
      return "send_on_stream of " + std::to_string(bytes) + " B to " + who(peer, peerPe) + " (call " +
             std::to_string(tag) + " to it) on team " + teamName;
    }
    return "recv_on_stream of up to " + std::to_string(bytes) + " B from " + who(peer, peerPe) + " (call " +
           std::to_string(tag) + " from it) on team " + teamName;
  }
  if (kind == Kind::Send) {
    return "send of " + std::to_string(bytes) + " B to " + who(peer, peerPe) + ", tag " + std::to_string(tag) +
           ", on team " + teamName;
  }
  const std::string from = peer == kAnySource ? "any source" : "source " + who(peer, peerPe);
  const std::string t = tag == kAnyTag ? "any tag" : "tag " + std::to_string(tag);
  return "recv from " + from + ", " + t + ", of up to " + std::to_string(bytes) + " B on team " + teamName;
}

}  // namespace axon::p2p
