// Variables, versions and server statistics of a staging-space client (client_catalog.hpp).
#include "space/client_catalog.hpp"

#include <algorithm>
#include <iterator>
#include <set>
#include <utility>

#include "axon/error.hpp"
#include "core/log.hpp"  // secondsText
#include "space/placement.hpp"

namespace axon::space {

using protocol::Op;

void Catalog::define(const Variable& v) {
  checkDefinition(v);
  std::vector<std::shared_ptr<Call>> calls;
  const auto deadline = deadlineAfter(timeoutSec_);
  for (int s = 0; s < conn_.servers(); ++s) {
    wire::ByteWriter w = protocol::begin(Op::Define, 0);
    protocol::writeVariable(w, v);
    calls.push_back(conn_.issue(s, Op::Define, w));
  }
  for (auto& c : calls) conn_.await(c, deadline, "define of '" + v.name + "'");
  std::lock_guard lock(mu_);
  vars_[v.name] = v;
}

Variable Catalog::variable(const std::string& name) {
  checkName(name);
  {
    std::lock_guard lock(mu_);
    auto it = vars_.find(name);
    if (it != vars_.end()) return it->second;
  }
  wire::ByteWriter w = protocol::begin(Op::Describe, 0);
  w.str(name);
  auto c = conn_.issue(0, Op::Describe, w);
  conn_.await(c, deadlineAfter(timeoutSec_), "describe of '" + name + "'");
  wire::ByteReader r(c->reply);
  Variable v = protocol::readVariable(r);
  std::lock_guard lock(mu_);
  vars_[name] = v;
  return v;
}

std::int64_t Catalog::waitVersion(const std::string& name, std::int64_t atLeast, double timeoutSec) {
  const Variable v = variable(name);
  const double t = callTimeout(timeoutSec, timeoutSec_, "wait_version of '" + name + "'");
  const auto deadline = deadlineAfter(t);
  const Placement placement(v.shape, conn_.servers());
  std::string seen;
  std::int64_t searchFrom = atLeast;
  do {
    std::vector<std::pair<int, std::shared_ptr<Call>>> calls;
    for (int s = 0; s < conn_.servers(); ++s) {
      if (placement.ownedVolume(s) == 0) continue;
      wire::ByteWriter w = protocol::begin(Op::WaitVersion, 0);
      w.str(name).i64(searchFrom).u64(millisUntil(deadline));
      calls.emplace_back(s, conn_.issue(s, Op::WaitVersion, w));
    }
    std::set<std::int64_t> common;
    bool first = true;
    std::int64_t newest = atLeast;
    seen.clear();
    for (auto& [s, c] : calls) {
      conn_.await(c, deadline + Connection::grace(), "wait_version of '" + name + "'");
      wire::ByteReader r(c->reply);
      const std::uint32_t n = r.count(8);
      std::set<std::int64_t> mine;
      for (std::uint32_t i = 0; i < n; ++i) mine.insert(r.i64());
      if (!mine.empty()) newest = std::max(newest, *mine.rbegin());
      seen += (seen.empty() ? "" : "; ") + conn_.address(s) + " has " + std::to_string(mine.size());
      if (first) common = mine;
      else {
        std::set<std::int64_t> both;
        std::set_intersection(common.begin(), common.end(), mine.begin(), mine.end(), std::inserter(both, both.end()));
        common.swap(both);
      }
      first = false;
    }
    if (!common.empty()) return *common.rbegin();
    // No version complete everywhere yet: ask from the newest one some server has, so that the
    // servers wait for it instead of answering at once again.
    searchFrom = newest;
  } while (Clock::now() < deadline);
  throw Error(ErrorCode::Timeout, "wait_version of '" + name + "': no version >= " + std::to_string(atLeast) +
                                      " was complete on every server within " + secondsText(t) +
                                      " (complete versions >= " + std::to_string(atLeast) + ": " + seen + ")");
}

void Catalog::release(const std::string& name, std::int64_t version) {
  checkName(name);
  checkVersion(version, "release of '" + name + "'");
  const auto deadline = deadlineAfter(timeoutSec_);
  std::vector<std::shared_ptr<Call>> calls;
  for (int s = 0; s < conn_.servers(); ++s) {
    wire::ByteWriter w = protocol::begin(Op::Release, 0);
    w.str(name).i64(version);
    calls.push_back(conn_.issue(s, Op::Release, w));
  }
  for (auto& c : calls) conn_.await(c, deadline, "release of '" + name + "'");
}

void Catalog::remove(const std::string& name) {
  checkName(name);
  const auto deadline = deadlineAfter(timeoutSec_);
  std::vector<std::shared_ptr<Call>> calls;
  for (int s = 0; s < conn_.servers(); ++s) {
    wire::ByteWriter w = protocol::begin(Op::Remove, 0);
    w.str(name).u64(millisUntil(deadline));
    calls.push_back(conn_.issue(s, Op::Remove, w));
  }
  {
    std::lock_guard lock(mu_);
    vars_.erase(name);  // whatever the servers answer: its definition is asked again if needed
  }
  for (auto& c : calls) conn_.await(c, deadline + Connection::grace(), "remove of '" + name + "'");
}

std::vector<ServerStats> Catalog::serverStats() {
  std::vector<ServerStats> out;
  const auto deadline = deadlineAfter(timeoutSec_);
  for (int s = 0; s < conn_.servers(); ++s) {
    auto c = conn_.issue(s, Op::Stats, protocol::begin(Op::Stats, 0));
    conn_.await(c, deadline, "stats");
    wire::ByteReader r(c->reply);
    const StoreStats st = protocol::readStats(r);
    const std::string policy = r.str();
    const bool pinned = r.u8() != 0;
    out.push_back(serverStatsOf(st, conn_.address(s), policy, pinned));
  }
  return out;
}

}  // namespace axon::space
