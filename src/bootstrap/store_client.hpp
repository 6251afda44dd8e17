// Client of the key-value store. Thread-safe; every call is bounded by a timeout.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/net.hpp"

namespace axon {

class StoreClient {
 public:
  // Connects, retrying while rank 0 is still starting, until `timeoutSec`. `origin` says where the
  // address came from (for errors). Throws Bootstrap naming the address when it cannot connect.
  StoreClient(const net::HostPort& addr, const std::string& origin, int rank, double timeoutSec);
  ~StoreClient();
  StoreClient(const StoreClient&) = delete;
  StoreClient& operator=(const StoreClient&) = delete;

  void set(const std::string& key, const std::string& value);
  // Waits until every key exists and returns their values in order. On timeout throws Timeout
  // naming `what`, the address and what is still missing (`labels[i]` names keys[i] in that
  // message, e.g. "PE 3"; the key itself when labels is empty); when a PE disconnected, PeerDead.
  std::vector<std::string> get(const std::vector<std::string>& keys, const std::string& what,
                               const std::vector<std::string>& labels = {});
  // Which of `keys` exist now.
  std::vector<bool> check(const std::vector<std::string>& keys);
  std::int64_t add(const std::string& key, std::int64_t delta);
  void del(const std::string& key);
  // Tells the server this rank leaves on purpose, then closes.
  void bye();

  const net::HostPort& addr() const { return addr_; }
  double timeoutSec() const { return timeoutSec_; }

 private:
  // Sends one request and waits for its reply body (after id and status). Throws on timeout.
  std::string roundTrip(const std::string& frame, std::uint32_t id, const std::string& what,
                        std::uint8_t& status);
  std::uint32_t nextId() { return ++lastId_; }

  net::HostPort addr_;
  std::string origin_;
  int rank_;
  double timeoutSec_;
  int fd_ = -1;
  std::uint32_t lastId_ = 0;
  std::string in_;
  std::recursive_mutex mu_;
};

}  // namespace axon
