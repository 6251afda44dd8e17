#include "core/build_version.hpp"

#ifndef AXON_BUILD_VERSION
#error "AXON_BUILD_VERSION is set by src/CMakeLists.txt"
#endif

namespace axon {

const std::string& buildVersion() {
  static const std::string version = AXON_BUILD_VERSION;
  return version;
}

}  // namespace axon
