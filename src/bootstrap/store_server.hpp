// The key-value store that rank 0 serves over TCP. Every rendezvous of the runtime goes through
// it: a gather (every member of a group contributes a value, each gets all values once the last
// arrives) and plain keys (set, get that waits until keys exist, check, add, del). One thread,
// driven by epoll.
//
// Costs, for a rendezvous of N ranks: each contribution is one hash lookup; the last one builds the
// answer once and queues it, shared, to the N waiters. No request rescans the others.
//
// A client that stops reading (its replies pile up unsent for the reply timeout) is disconnected
// and reported as gone, like one that crashed: a reply is sent whole or the connection closes, so
// no client ever reads a torn stream.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "bootstrap/store_request.hpp"
#include "core/net.hpp"

namespace axon {

class StoreServer {
 public:
  // Binds host:port (port 0 picks a free one) and starts serving. `replyTimeoutSec` bounds how long
  // a reply may wait for its reader; `version` is the axon build of the serving PE: a client of
  // another build is refused, and every rank fails at its next rendezvous naming both builds.
  // Throws Bootstrap naming the address when it cannot bind.
  explicit StoreServer(const net::HostPort& addr, double replyTimeoutSec = 60.0, std::string version = "");
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  int port() const { return port_; }
  // Waits (bounded) until `ranks` clients have said goodbye or gone, then stops the thread.
  void shutdownAfterGoodbyes(int ranks, double timeoutSec);

 private:
  using Clock = std::chrono::steady_clock;
  using Bytes = std::shared_ptr<const std::string>;

  // A reply waiting to be sent: a header of its own and a body that many replies may share.
  struct OutPiece {
    Bytes data;
    std::size_t sent = 0;
  };
  struct Waiter {
    int fd;
    std::uint32_t id;
  };
  struct Conn {
    int fd = -1;
    int rank = -1;
    bool saidBye = false;
    bool closeWhenSent = false;     // refused: it goes once its answer is out
    std::size_t outBytes = 0;       // queued and not yet sent
    Clock::time_point stalledSince; // when its output last stopped moving
    std::string in;
    std::deque<OutPiece> out;
    std::vector<std::uint32_t> pendingGets;  // ids of its gets still waiting for keys
    std::set<std::string> gathers;           // groups it waits in
  };
  struct PendingGet {
    int fd;
    std::uint32_t id;
    std::vector<std::string> keys;
    std::size_t missing;  // keys not set yet
  };
  struct Group {
    std::uint32_t members = 0;
    std::uint32_t arrived = 0;
    std::vector<std::string> values;
    std::vector<bool> have;
    std::vector<Waiter> waiters;
    bool failed = false;  // its waiters were told it cannot complete
  };

  void loop();
  void acceptAll();
  void readFrom(Conn& c);
  void handleFrame(Conn& c, std::string_view body);
  void handleHello(Conn& c, const wire::StoreRequest& q);
  void handleGet(Conn& c, std::uint32_t id, std::vector<std::string> keys);
  void handleGather(Conn& c, std::uint32_t id, const std::string& group, std::uint32_t members,
                    std::uint32_t index, std::string value);
  void keySet(const std::string& key);
  void answerGet(const PendingGet& g);
  void completeGroup(const std::string& name, Group& g);
  // Fails every get and gather that can no longer complete (a rank is gone, or builds differ).
  void failWaiting();
  // Answers request `id` with why it cannot complete: the refusal, or the ranks gone.
  void queueFailure(int fd, std::uint32_t id);
  // Tells connection `fd` (request id 0, unasked) that `rank` left without a goodbye.
  void queueGoneEvent(int fd, int rank);
  std::string goneText() const;

  // Output: queue, then flush at the end of the loop's round (or when the socket has room).
  void queue(int fd, std::uint32_t id, std::uint8_t status, const std::string& fields = "", Bytes shared = nullptr);
  void flush(Conn& c);
  void watchOutput(Conn& c, bool on);
  void dropStalled();
  void markDead(int fd);
  void closeDead();
  void closeConn(int fd);

  int listenFd_ = -1;
  int epollFd_ = -1;
  int wakePipe_[2] = {-1, -1};
  int port_ = 0;
  double replyTimeoutSec_;
  std::string version_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> goodbyes_{0};

  std::unordered_map<int, Conn> conns_;
  std::unordered_map<std::string, std::string> kv_;
  std::unordered_map<std::uint64_t, PendingGet> gets_;  // (fd << 32 | id) -> get
  std::unordered_map<std::string, std::vector<std::uint64_t>> getsByKey_;
  std::unordered_map<std::string, Group> groups_;
  std::set<int> goneRanks_;   // ranks whose connection closed without a goodbye
  std::string refusal_;       // set when a client of another build came: every wait fails with it
  std::vector<int> toFlush_;  // connections with new output this round
  std::set<int> stalled_;     // connections whose output waits for room (EPOLLOUT armed)
  std::vector<int> dead_;     // connections to close at the end of this round
};

}  // namespace axon
