// Rendezvous over the key-value store: allgather and barrier among any set of ranks.
// Rank 0 of the world serves the store; every rank, rank 0 included, is a client.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bootstrap/launch_detect.hpp"
#include "bootstrap/store_client.hpp"
#include "bootstrap/store_server.hpp"

namespace axon {

class Bootstrap {
 public:
  // Starts the store on rank 0 and connects every rank to it.
  Bootstrap(const LaunchInfo& launch, double timeoutSec);
  ~Bootstrap();

  int rank() const { return rank_; }
  int size() const { return size_; }
  StoreClient& store() { return *client_; }

  // Every rank in `ranks` (world ranks, including ours) contributes `data`; returns the
  // contributions in the order of `ranks`. `tag` names the group and operation: calls with one
  // tag must be collective over the same ranks, in the same order on every rank.
  std::vector<std::string> allgather(const std::string& tag, const std::vector<int>& ranks,
                                     const std::string& data);
  std::vector<std::string> allgatherWorld(const std::string& tag, const std::string& data);
  void barrier(const std::string& tag, const std::vector<int>& ranks);
  void barrierWorld(const std::string& tag) { barrier(tag, worldRanks_); }
  // 0, 1, ..., size-1.
  const std::vector<int>& worldRanks() const { return worldRanks_; }

  // Leaves: says goodbye, and on rank 0 waits (bounded) for the others before stopping the store.
  void finalize();

 private:
  int rank_;
  int size_;
  std::vector<int> worldRanks_;
  double timeoutSec_;
  std::unique_ptr<StoreServer> server_;
  std::unique_ptr<StoreClient> client_;
  std::map<std::string, long> generation_;  // per tag: how many rounds this rank has joined
};

}  // namespace axon
