// Which axon build this process runs: the project version, plus the git commit it was configured
// from when built from a checkout ("0.1.0+g1a2b3c4"). PEs of different builds may lay out what
// they exchange differently, so the store refuses to join them (bootstrap/store_server.cpp).
#pragma once

#include <string>

namespace axon {

const std::string& buildVersion();

}  // namespace axon
