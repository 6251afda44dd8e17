// A staging-space client's link to the servers of its space: finding the space (an address, or a
// server's contact file), connecting to every server (a hello each, the member list, the arenas
// of servers on this node mapped here), and then carrying every request: a numbered call per
// request, its reply and the data messages that land for it, deadlines, and servers found lost.
// Puts, gets and the variable requests (client_puts, client_gets, client_catalog) build the
// messages; this is the one place that knows about calls in flight and the servers' state, under
// one lock, because the progress thread runs the reply handlers beside the caller's threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "axon/error.hpp"
#include "axon/space.hpp"
#include "core/progress_engine.hpp"
#include "core/secret.hpp"
#include "space/arena.hpp"
#include "space/protocol.hpp"
#include "transport/rpc.hpp"

namespace axon {
struct Env;
}

namespace axon::space {

class GpuSide;

using Clock = std::chrono::steady_clock;

// Data of at least this many bytes goes through a same-node server's mapped arena (two short
// requests around one copy); less travels with its request (one message). GPU data under it
// takes one copy through host memory on every path.
constexpr std::uint64_t kSharedMemoryMin = 64 * 1024;

// Now + sec; sec is cut to kMaxTimeoutSec (core/env.hpp), so the deadline never overflows.
Clock::time_point deadlineAfter(double sec);
// The timeout a call runs under: `given` when positive, else `fallback` (the client's); NaN is
// refused (InvalidArgument naming `what`), anything past kMaxTimeoutSec (inf too) is cut to it.
double callTimeout(double given, double fallback, const std::string& what);
// What is left until `t`, for the timeouts requests carry (0 once past).
std::uint64_t millisUntil(Clock::time_point t);

// One request to one server: its reply, and the data messages that land for it.
struct Call {
  int server = -1;
  protocol::Op op{};
  bool replied = false;
  bool answered = false;  // the server itself replied (not a failure found here)
  int status = 0;
  std::string message;
  std::string reply;  // the reply's fields, after status and message
  // Fetch: where each fragment lands.
  std::vector<void*> landing;
  std::shared_ptr<void> landingOwner;  // the staging the fragments land in, alive while UCX may write
  rpc::Memory memory = rpc::Memory::Host;
  std::size_t landed = 0;
  std::string dataFailure;
  // Its data comes from the caller's memory (not kept alive by the call), and whether UCX has
  // finished sending it: a call given up before then must cancel the send (close the connection)
  // before the caller may reuse that memory.
  bool borrowsData = false;
  bool sent = false;
  bool done() const { return replied && (status != 0 || landed == landing.size()); }
};

// The server to connect to first, and what named it (for messages); `epoch` is the one its
// contact file expects (0: none); the space's key and where it came from (space_key.hpp).
struct ServerContact {
  std::string address;
  std::uint64_t epoch = 0;
  std::string origin;
  Secret key;
  std::string keyOrigin;
};
// From the options, else AXON_SPACE_ADDR, else the contact file (given or AXON_SPACE_FILE); the
// key from the options, else AXON_SPACE_KEY, else that contact file. Throws PermissionDenied when
// there is no key.
ServerContact findServer(const ConnectOptions& o, const Env& env);

class Connection {
 public:
  // Connects to `first`, then to the rest of its space, proving the key to each (and checking
  // each one's proof: space/handshake.hpp); throws naming the server that failed.
  // `identity` is this host's (core/host_identity.hpp): servers with the same one share memory.
  Connection(const ConnectOptions& o, const std::string& identity, double timeoutSec, const ServerContact& first,
             GpuSide* gpu);
  ~Connection();  // stops the progress thread
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Stops the progress thread (before the parts that issue calls go).
  void stop() { engine_.stop(); }

  // The space's servers, in placement order.
  int servers() const { return static_cast<int>(servers_.size()); }
  const std::string& address(int s) const { return servers_[s].address; }
  std::vector<std::string> addresses() const;
  // The server's arena mapped here, when it shares this node (nullptr: UCX carries its data).
  ArenaView* arena(int s) const { return servers_[s].arena.get(); }

  // Sends a request to server s with `bytes` of `data` (kept alive by `keepAlive` until UCX has
  // sent it); its call ends with the reply. A lost server fails the call at once.
  std::shared_ptr<Call> issue(int s, protocol::Op op, const wire::ByteWriter& w, const void* data = nullptr,
                              std::size_t bytes = 0, rpc::Memory m = rpc::Memory::Host,
                              std::shared_ptr<void> keepAlive = nullptr);
  // The same with a call made by the caller (a fetch's landing places) and a header as bytes.
  std::shared_ptr<Call> issueCall(int s, protocol::Op op, std::string header, std::shared_ptr<Call> c,
                                  const void* data = nullptr, std::size_t bytes = 0, rpc::Memory m = rpc::Memory::Host,
                                  std::shared_ptr<void> keepAlive = nullptr);
  // Waits for the call until `deadline`; false if it did not end by then: the call fails with
  // Timeout, and its late reply is discarded when it comes (a lease it carries ended). The
  // connection stays in use unless UCX was still sending the call's data from the caller's
  // memory: then it is closed (which cancels that send) and the server is lost to this client.
  // Progress happens here and in the engine's thread.
  bool wait(const std::shared_ptr<Call>& c, Clock::time_point deadline, const std::string& what);
  // Throws the call's failure as the matching axon error.
  void check(const Call& c) const;
  // wait, then check.
  void await(const std::shared_ptr<Call>& c, Clock::time_point deadline, const std::string& what) {
    wait(c, deadline, what);
    check(*c);
  }
  // Whether every one of `calls` has ended (nonblocking requests' test()).
  bool allDone(const std::vector<std::shared_ptr<Call>>& calls);
  // Lets UCX move what it can; for test().
  void progress() { node_->progress(); }

  // A message that asks for no reply (Done, Abort); nothing is sent to a lost server.
  void notify(int s, const wire::ByteWriter& w);
  // Ends a lease (no reply): the client copied the fragments, or gave up on them.
  void sendDone(int s, std::uint64_t lease);

  // Servers answer a waiting get or version wait at the caller's deadline; the client allows this
  // much more before it calls the server lost.
  static Clock::duration grace();

  // Closes every connection; calls to the servers fail from now on.
  void disconnect();

 private:
  struct ServerConn {
    rpc::ConnId conn = 0;
    std::string address;
    int index = 0;
    std::unique_ptr<ArenaView> arena;  // when it shares this node and shared memory is allowed
    std::string lost;                  // why it is lost, once it is
    ErrorCode lostCode = ErrorCode::ServerLost;  // ServerUnreachable: never reached at all
    std::shared_ptr<Call> greeting;    // while connecting: ends with the server's greeting (its nonce)
  };

  void connectAll(const ServerContact& first);
  // Connects to one server and says hello; appends it to servers_ and returns its epoch. For a
  // member of the space (its index given) that cannot be reached, the entry appended is that
  // server lost, and the error thrown says so.
  std::uint64_t connectServer(const std::string& address, Clock::time_point deadline, const std::string& origin,
                              int member = -1);
  std::uint64_t helloServer(const std::string& address, Clock::time_point deadline, const std::string& origin);
  // The server's greeting on a connection being made.
  void onGreeting(rpc::ConnId conn, const std::string& header);
  static void fail(Call& c, ErrorCode code, const std::string& why);
  void onMessage(rpc::ConnId conn, std::string header, rpc::Payload payload);
  void takeReply(const std::shared_ptr<Call>& c, std::uint64_t id, wire::ByteReader& r);
  void onLost(rpc::ConnId conn, const std::string& why);

  const bool sharedMemory_;
  const double timeoutSec_;
  const std::string identity_;
  Secret key_;
  std::string keyOrigin_;
  GpuSide* const gpu_;
  std::unique_ptr<rpc::Node> node_;
  ProgressEngine engine_;
  std::mutex mu_;  // servers_ (once connected: their connections and losses), calls_, every Call
  std::vector<ServerConn> servers_;
  std::vector<std::string> members_;
  std::map<std::uint64_t, std::shared_ptr<Call>> calls_;
  std::uint64_t lastId_ = 0;
};

}  // namespace axon::space
