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
//
// Strangers: every connection must first prove the job key (bootstrap/store_handshake.hpp). Until
// it has, it is "pending": it may send one frame of at most kMaxHelloFrame bytes within the
// handshake deadline, and nothing it sends or does (its close included) touches the job's state.
// One that fails is dropped, with a log line at most once a second naming its address. Pending
// connections are capped (the oldest goes first), a rank is bound to one connection at a time,
// and running out of file descriptors drops pending connections and pauses accepting instead of
// failing the job.
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
#include <utility>
#include <vector>

#include "bootstrap/store_handshake.hpp"
#include "bootstrap/store_request.hpp"
#include "core/net.hpp"
#include "core/secret.hpp"

namespace axon {

struct StoreServerOptions {
  Secret key;                     // the job key every client must prove (required)
  int worldSize = 0;              // the job's PEs (required): ranks, group sizes, connections
  double replyTimeoutSec = 60.0;  // how long a reply may wait for its reader
  // The axon build of the serving PE (default: this library's). A proven client of another build
  // is refused, and every rank fails at its next rendezvous naming both builds.
  std::string version;
  double handshakeSec = 5.0;      // a pending connection's deadline (at most replyTimeoutSec)
  std::size_t maxPending = 0;     // pending connections at once; 0: 64 + worldSize
  // Bytes of frames of more than 1 MiB that may be arriving at once over all connections; a
  // connection whose next frame does not fit waits (it is not read) until others complete. One
  // frame is always let through, so any frame up to wire::kMaxFrame completes.
  std::size_t maxPartialBytes = std::size_t{1} << 30;
};

class StoreServer {
 public:
  // Binds host:port (port 0 picks a free one) and starts serving. Throws Bootstrap naming the
  // address when it cannot bind, InvalidArgument without a key or a world size.
  StoreServer(const net::HostPort& addr, StoreServerOptions options);
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
    bool proven = false;            // it proved the job key: a rank of this job
    bool refused = false;           // a pending one refused: its input is ignored until it goes
    bool paused = false;            // not read: its next frame waits for room (maxPartialBytes)
    std::uint64_t serial = 0;       // tells connections apart that reuse a descriptor
    std::size_t reserved = 0;       // bytes of maxPartialBytes its arriving frame holds
    Nonce nonce{};                  // the store's nonce in its greeting
    std::string peer;               // its address, for the log
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
  // accept() found no descriptor left: drop pending connections, pause accepting for a while.
  void outOfDescriptors(int err);
  void readFrom(Conn& c);
  // Handles the complete frames of c.in; false when the connection must close.
  bool consume(Conn& c);
  // Holds room for the frame now arriving on `c` (its whole length); pauses `c` when there is none.
  void reserveArriving(Conn& c);
  void release(Conn& c);
  void resumePaused();
  void handleFirstFrame(Conn& c, std::string_view body);
  // Refuses a connection that has not proven the key: `why` goes to the log, a short word to it.
  void refusePending(Conn& c, std::uint32_t id, const std::string& why, const std::string& told);
  void dropExpiredHandshakes();
  void note(const std::string& line);  // a warning, at most one a second
  void handleFrame(Conn& c, std::string_view body);
  void handleHello(Conn& c, std::uint32_t id, const wire::HelloClaims& claims, const Digest& answer);
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
  // `raw`: `shared` is a whole frame of its own (the greeting), sent without a reply header.
  void queue(int fd, std::uint32_t id, std::uint8_t status, const std::string& fields = "", Bytes shared = nullptr,
             bool raw = false);
  void flush(Conn& c);
  void watchOutput(Conn& c, bool on);
  void dropStalled();
  void markDead(int fd);
  void closeDead();
  void closeConn(int fd);

  int listenFd_ = -1;
  int epollFd_ = -1;
  int wakePipe_[2] = {-1, -1};
  int spareFd_ = -1;  // held in reserve: closed to accept (and close) one connection without descriptors
  int port_ = 0;
  StoreServerOptions opt_;
  double replyTimeoutSec_;
  std::string version_;
  std::size_t maxPending_;
  std::uint64_t serials_ = 0;
  std::size_t pending_ = 0;  // connections that have not proven the key
  std::deque<std::pair<std::uint64_t, Clock::time_point>> handshakes_;  // (serial, deadline), oldest first
  std::unordered_map<std::uint64_t, int> fdOfSerial_;
  std::unordered_map<int, int> fdOfRank_;  // ranks bound to a live connection
  std::size_t partialBytes_ = 0;           // held by arriving large frames
  std::deque<int> pausedFds_;              // connections waiting for room, in order
  Clock::time_point acceptPausedUntil_{};  // out of descriptors: accept again from then
  bool acceptPaused_ = false;
  bool saidOutOfDescriptors_ = false;
  Clock::time_point lastNote_{};
  std::size_t notesDropped_ = 0;
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
