// Rendezvous over the key-value store: allgather and barrier among any set of ranks.
// Rank 0 of the world serves the store; every rank, rank 0 included, is a client.
//
// Threads: allgather and barrier may be called from several threads at once for different tags;
// the rounds of one tag must be made in the same order on every rank (as collective calls are).
// goneRank() may be called from any thread at any time.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/env.hpp"
#include "core/launch_detect.hpp"
#include "bootstrap/job_key.hpp"
#include "bootstrap/store_client.hpp"
#include "bootstrap/store_server.hpp"

namespace axon {

class Bootstrap {
 public:
  // Resolves the job key (bootstrap/job_key.hpp), starts the store on rank 0 and connects every
  // rank to it, proving the key.
  Bootstrap(const LaunchInfo& launch, double timeoutSec, const JobKeyConfig& keys);
  ~Bootstrap();

  int rank() const { return rank_; }
  int size() const { return size_; }
  double timeoutSec() const { return timeoutSec_; }
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

  // The two halves of allgather, for steps that must name their round before they gather
  // (bootstrap/setup_step.hpp): the next round of `tag` on this rank, and the gather of a round.
  long nextRound(const std::string& tag);
  std::vector<std::string> gatherRound(const std::string& tag, long round, const std::vector<int>& ranks,
                                       const std::string& data);

  // A rank whose store connection closed without finalize, or -1 (see StoreClient::goneRank).
  int goneRank() { return client_ ? client_->goneRank() : -1; }

  // Leaves: says goodbye, and on rank 0 waits (bounded) for the others before stopping the store.
  void finalize();

 private:
  int rank_;
  int size_;
  std::once_flag keyFileRemoved_;  // rank 0's key file goes once the whole world has met
  std::vector<int> worldRanks_;
  double timeoutSec_;
  JobKey key_;
  std::unique_ptr<StoreServer> server_;
  std::unique_ptr<StoreClient> client_;
  std::mutex roundsMu_;
  std::map<std::string, long> rounds_;  // per tag: how many rounds this rank has begun
};

}  // namespace axon
