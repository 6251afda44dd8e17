#include "bootstrap/bootstrap.hpp"

#include <numeric>

#include "axon/error.hpp"

namespace axon {

Bootstrap::Bootstrap(const LaunchInfo& launch, double timeoutSec)
    : rank_(launch.rank), size_(launch.worldSize), worldRanks_(launch.worldSize), timeoutSec_(timeoutSec) {
  std::iota(worldRanks_.begin(), worldRanks_.end(), 0);
  net::HostPort addr;
  std::string origin = launch.storeHint;
  if (launch.storeAddr.empty()) {
    // A world of one: serve ourselves on a free loopback port.
    addr = {"127.0.0.1", 0};
    origin = "a world of one";
  } else {
    addr = net::parseHostPort(launch.storeAddr, launch.storeHint);
  }
  if (rank_ == 0) {
    server_ = std::make_unique<StoreServer>(addr);
    if (addr.port == 0) addr.port = server_->port();
  }
  client_ = std::make_unique<StoreClient>(addr, origin, rank_, timeoutSec);
}

Bootstrap::~Bootstrap() = default;

std::vector<std::string> Bootstrap::allgather(const std::string& tag, const std::vector<int>& ranks,
                                              const std::string& data) {
  long gen = generation_[tag]++;
  auto key = [&](long g, int r) {
    return "ag/" + tag + "/" + std::to_string(g) + "/" + std::to_string(r);
  };
  // Two rounds back every rank has read our key (they have all joined the previous round, which
  // they could only do after finishing the one before it), so it can go.
  if (gen >= 2) client_->del(key(gen - 2, rank_));
  client_->set(key(gen, rank_), data);
  std::vector<std::string> keys, labels;
  keys.reserve(ranks.size());
  for (int r : ranks) {
    keys.push_back(key(gen, r));
    labels.push_back("PE " + std::to_string(r));
  }
  return client_->get(keys,
                      "'" + tag + "' rendezvous (round " + std::to_string(gen) + ") of " +
                          std::to_string(ranks.size()) + " PEs",
                      labels);
}

std::vector<std::string> Bootstrap::allgatherWorld(const std::string& tag, const std::string& data) {
  return allgather(tag, worldRanks_, data);
}

void Bootstrap::barrier(const std::string& tag, const std::vector<int>& ranks) {
  allgather(tag, ranks, std::string());
}

void Bootstrap::finalize() {
  if (client_) client_->bye();
  if (server_) server_->shutdownAfterGoodbyes(size_, timeoutSec_);
  client_.reset();
  server_.reset();
}

}  // namespace axon
