#include "core/host_identity.hpp"

#include <unistd.h>

#include <fstream>

namespace axon {

std::string hostName() {
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  return host;
}

std::string hostIdentity(const std::string& nodeOverride) {
  if (!nodeOverride.empty()) return "node:" + nodeOverride;
  std::string boot;
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::getline(f, boot);
  return hostName() + "/" + boot;
}

}  // namespace axon
