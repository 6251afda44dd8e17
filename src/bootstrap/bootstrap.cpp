#include "bootstrap/bootstrap.hpp"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <numeric>

#include "axon/error.hpp"

namespace axon {

Bootstrap::Bootstrap(const LaunchInfo& launch, double timeoutSec, const JobKeyConfig& keys)
    : rank_(launch.rank),
      size_(launch.worldSize),
      worldRanks_(launch.worldSize),
      timeoutSec_(timeoutSec),
      key_(JobKey::resolve(keys, launch, timeoutSec)) {
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
    StoreServerOptions options;
    options.key = key_.secret();
    options.worldSize = size_;
    // A client that does not read its replies for AXON_TIMEOUT is dropped and counts as gone.
    options.replyTimeoutSec = timeoutSec;
    server_ = std::make_unique<StoreServer>(addr, std::move(options));
    if (addr.port == 0) addr.port = server_->port();
  }
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(timeoutSec));
  while (true) {
    const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    try {
      client_ = std::make_unique<StoreClient>(addr, origin, rank_, std::max(left, 0.001), key_.secret(), key_.source());
      return;
    } catch (const Error& e) {
      if (e.code() != ErrorCode::PermissionDenied) throw;
      // Read before rank 0 replaced an earlier job's file: try the key it holds now.
      if (key_.reload()) continue;
      if (key_.advice().empty()) throw;
      throw Error(ErrorCode::PermissionDenied, std::string(e.what()) + "; " + key_.advice());
    }
  }
}

Bootstrap::~Bootstrap() = default;

long Bootstrap::nextRound(const std::string& tag) {
  std::lock_guard lock(roundsMu_);
  return rounds_[tag]++;
}

std::vector<std::string> Bootstrap::gatherRound(const std::string& tag, long round, const std::vector<int>& ranks,
                                                const std::string& data) {
  auto me = std::find(ranks.begin(), ranks.end(), rank_);
  if (me == ranks.end()) {
    throw Error(ErrorCode::Internal, "PE " + std::to_string(rank_) + " joined the '" + tag + "' rendezvous of ranks it is not one of");
  }
  // The server answers when all have contributed; the group is forgotten once answered, so
  // nothing piles up round after round.
  auto values = client_->gather(tag + "/" + std::to_string(round), static_cast<std::uint32_t>(ranks.size()),
                                static_cast<std::uint32_t>(me - ranks.begin()), data,
                                "'" + tag + "' rendezvous (round " + std::to_string(round) + ") of " +
                                    std::to_string(ranks.size()) + " PEs",
                                [&ranks](std::uint32_t m) { return "PE " + std::to_string(ranks[m]); });
  // Every PE has proven the key once a rendezvous of the whole world is answered: rank 0's key
  // file has done its job. Removed now, it is not left behind when rank 0 is killed later.
  if (static_cast<int>(ranks.size()) == size_) std::call_once(keyFileRemoved_, [this] { key_.removeFile(); });
  return values;
}

std::vector<std::string> Bootstrap::allgather(const std::string& tag, const std::vector<int>& ranks,
                                              const std::string& data) {
  return gatherRound(tag, nextRound(tag), ranks, data);
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
  key_.removeFile();
}

}  // namespace axon
