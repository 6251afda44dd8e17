// Which machine this process runs on, as other processes compare it: processes with the same
// identity share /dev/shm and can map each other's memory.
#pragma once

#include <string>

namespace axon {

std::string hostName();
// "host/boot-id", or "node:<name>" when `nodeOverride` (AXON_NODE) names the node.
std::string hostIdentity(const std::string& nodeOverride);

}  // namespace axon
