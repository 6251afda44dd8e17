// What each client holds on a staging server, bounded by --max-holds: the versions it pins (gets
// it has not released; block-policy writers may wait for them) and the reads it has under way
// (leases: fragments the server keeps for it). Without a bound one client could pin every version
// or grow the server's tables by querying without end. The store keeps the pins themselves
// (Store::lease, release, dropClient); this book only counts them per client, so that the
// (max+1)-th is refused before the store pins anything. Everything a client holds goes when its
// connection does (Server forget -> drop).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "transport/rpc.hpp"

namespace axon::space {

class HoldBook {
 public:
  explicit HoldBook(int maxHolds) : max_(static_cast<std::size_t>(maxHolds)) {}

  // Throws InvalidArgument (naming `server`, the limit and what to do) when c may not take a read
  // of (name, version) now.
  void check(rpc::ConnId c, const std::string& name, std::int64_t version, const std::string& server) const;
  void leased(rpc::ConnId c, const std::string& name, std::int64_t version);
  void leaseEnded(rpc::ConnId c);
  void released(rpc::ConnId c, const std::string& name, std::int64_t version);
  // The variable was removed: no client holds any of its versions any more.
  void removed(const std::string& name);
  void drop(rpc::ConnId c) { of_.erase(c); }

  // For tests: the versions c holds and its reads under way.
  std::size_t versionsHeld(rpc::ConnId c) const;
  std::size_t readsUnderWay(rpc::ConnId c) const;

 private:
  struct Holds {
    std::set<std::pair<std::string, std::int64_t>> versions;
    std::size_t leases = 0;
  };
  const std::size_t max_;
  std::map<rpc::ConnId, Holds> of_;
};

}  // namespace axon::space
