// What each client holds on a staging server (server_holds.hpp).
#include "space/server_holds.hpp"

#include <climits>

#include "axon/error.hpp"

namespace axon::space {

void HoldBook::check(rpc::ConnId c, const std::string& name, std::int64_t version, const std::string& server) const {
  auto it = of_.find(c);
  if (it == of_.end()) return;
  const Holds& h = it->second;
  if (h.versions.size() >= max_ && !h.versions.count({name, version})) {
    throw Error(ErrorCode::InvalidArgument,
                "get of '" + name + "' version " + std::to_string(version) + ": this client holds " +
                    std::to_string(h.versions.size()) + " versions on staging server " + server +
                    ", the most one client may (--max-holds " + std::to_string(max_) +
                    "): release the versions it has read (release(name, version)) before it gets others");
  }
  if (h.leases >= max_) {
    throw Error(ErrorCode::InvalidArgument,
                "get of '" + name + "' version " + std::to_string(version) + ": this client has " +
                    std::to_string(h.leases) + " reads under way on staging server " + server +
                    ", the most one client may (--max-holds " + std::to_string(max_) +
                    "): wait for some of its gets before it starts more");
  }
}

void HoldBook::leased(rpc::ConnId c, const std::string& name, std::int64_t version) {
  Holds& h = of_[c];
  h.versions.insert({name, version});
  ++h.leases;
}

void HoldBook::leaseEnded(rpc::ConnId c) {
  auto it = of_.find(c);
  if (it != of_.end() && it->second.leases > 0) --it->second.leases;
}

void HoldBook::released(rpc::ConnId c, const std::string& name, std::int64_t version) {
  auto it = of_.find(c);
  if (it != of_.end()) it->second.versions.erase({name, version});
}

void HoldBook::removed(const std::string& name) {
  for (auto& [c, h] : of_) {
    auto it = h.versions.lower_bound({name, INT64_MIN});
    while (it != h.versions.end() && it->first == name) it = h.versions.erase(it);
  }
}

std::size_t HoldBook::versionsHeld(rpc::ConnId c) const {
  auto it = of_.find(c);
  return it == of_.end() ? 0 : it->second.versions.size();
}

std::size_t HoldBook::readsUnderWay(rpc::ConnId c) const {
  auto it = of_.find(c);
  return it == of_.end() ? 0 : it->second.leases;
}

}  // namespace axon::space
