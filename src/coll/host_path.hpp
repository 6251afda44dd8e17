// What the two host paths ("host-shm" on one node, "hierarchical" across nodes) share: the plan and
// the call record every member checks against the others', and host copies of GPU buffers (the
// host algorithms cannot read device memory).
#pragma once

#include <cstddef>
#include <mutex>
#include <string>
#include <utility>

#include "coll/plan.hpp"
#include "coll/request.hpp"
#include "coll/workspace_layout.hpp"

namespace axon {
class PeContext;
}

namespace axon::coll {

class HostStaging;

// The host algorithms' plan for a call (AXON_COLL_BUFFER rounds, AXON_ALGO_* where set).
Plan hostPlan(PeContext& rt, Collective c, std::size_t count, DataType type, int members);
// The record of a call that members compare (collective, type, op, algorithm, root, count, buffer).
CallRecord callRecord(PeContext& rt, const Request& q, const Plan& plan);

// A call on GPU buffers runs on host copies of them, in the team's staging memory, for as long as
// it lives: the constructor points `q` at the copies, copyBack() brings the result home.
class HostCopies {
 public:
  // `bytes`: what the call touches of src and dst on this PE (extents()); `me`: its team index;
  // `team` names the team in errors.
  HostCopies(PeContext& rt, HostStaging& staging, Request& q, std::pair<std::size_t, std::size_t> bytes, int me,
             const std::string& team, const char* api);
  void copyBack();

 private:
  PeContext& rt_;
  Request& q_;
  void* userDst_ = nullptr;
  std::size_t dstBytes_ = 0;
  std::unique_lock<std::mutex> held_;  // the team's staging, until the call has copied back
};

}  // namespace axon::coll
