// The key-value store that rank 0 serves over TCP: set, get (waits until keys exist), check,
// add, del. Every rendezvous of the runtime goes through it. One thread, poll()-driven.
#pragma once

#include <atomic>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/net.hpp"

namespace axon {

class StoreServer {
 public:
  // Binds host:port (port 0 picks a free one) and starts serving. Throws Bootstrap naming the
  // address when it cannot bind.
  explicit StoreServer(const net::HostPort& addr);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  int port() const { return port_; }
  // Waits (bounded) until `ranks` clients have said goodbye or gone, then stops the thread.
  void shutdownAfterGoodbyes(int ranks, double timeoutSec);

 private:
  struct Conn {
    int fd = -1;
    int rank = -1;
    bool saidBye = false;
    std::string in;
  };
  struct PendingGet {
    int fd;
    std::uint32_t id;
    std::vector<std::string> keys;
  };

  void loop();
  void acceptOne();
  bool readFrom(Conn& c);          // false: connection closed
  void handleFrame(Conn& c, std::string_view body);
  void closeConn(int fd);
  bool tryAnswer(const PendingGet& g);
  void answerPending();
  void reply(int fd, const std::string& frame);

  int listenFd_ = -1;
  int wakePipe_[2] = {-1, -1};
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> goodbyes_{0};

  std::map<int, Conn> conns_;
  std::unordered_map<std::string, std::string> kv_;
  std::vector<PendingGet> pending_;
  std::set<int> goneRanks_;  // ranks whose connection closed without a goodbye
};

}  // namespace axon
