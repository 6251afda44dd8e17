// A staging server inside a program (the demo, tests, benchmarks), as `axon space serve` runs one
// in its own process. Clients reach it through axon/space.hpp at address().
//
// One thread serves everything: UCX's progress, the store's rules, and the deadlines of waiting
// puts, gets and version waits. Bytes move without that thread copying them: UCX lands a put in
// the arena and sends a get's fragments from it; clients on the server's node copy in and out of
// its mapped arena themselves.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "axon/space.hpp"

namespace axon::space {

// What a full server does with a put that does not fit (--policy): the writer waits for room
// (block), the put is refused (reject), or the oldest versions go (evict).
enum class Policy { Block, Reject, Evict };
const char* policyName(Policy p);             // "block", "reject", "evict"
Policy parsePolicy(const std::string& text);  // throws InvalidArgument

struct ServerOptions {
  // --bind HOST:PORT (port 0: any free one). Empty, or an empty host (":4711"): this host's
  // address, the first interface that is up and not loopback (the one clients on other nodes
  // reach; 127.0.0.1 where there is none), never every interface unless "0.0.0.0" is asked for.
  std::string listen;
  std::uint64_t memBytes = 1ull << 30;  // --mem
  Policy policy = Policy::Block;     // --policy
  std::string contactFile;           // --contact-file: written atomically, removed at exit if still this server's;
                                     // refused (InvalidArgument) while another live server holds it
  int servers = 1;                   // --servers: how many servers form the space (on the first)
  std::string join;                  // --join ADDR: another server of the space (the first one)
  double timeoutSec = 300;           // joining, and the drain at shutdown
  // The space's key (docs/security.md), hex: every client and every joining server must prove it.
  // Empty: keyFile, else AXON_SPACE_KEY, else a new one (written into the contact file; key()).
  // A server that joins another must be given the key of that space.
  std::string key;
  std::string keyFile;               // --key-file: a file of this user with mode 0600 holding the key
  // --max-holds: per client, the versions it may hold (gets it has not released) and the reads it
  // may have under way on this server; one more is refused (InvalidArgument) until it releases.
  int maxHolds = 1024;
};

class Server {
 public:
  // Listens (and joins the space) before returning; throws when it cannot.
  explicit Server(const ServerOptions& options);
  ~Server();  // stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // "10.0.0.2:4711": what clients connect to (AXON_SPACE_ADDR).
  const std::string& address() const;
  std::uint64_t epoch() const;
  // The space's key, hex, for the clients of an embedded server (ConnectOptions::key), and where
  // it came from ("a new key", "AXON_SPACE_KEY", "key file PATH", "the key given").
  const std::string& key() const;
  const std::string& keyOrigin() const;
  int index() const;  // in the space (0: the first server)
  // Serves on a thread of its own until stop().
  void start();
  // Serves on the calling thread until stop() (from another thread or a signal handler's flag).
  void run();
  // Stops taking requests, lets transfers under way finish for up to drainSec, fails what is
  // left (clients get ServerLost), then returns. Safe to call twice and from any thread.
  void stop(double drainSec = 5.0);
  // Asks run() to stop and returns at once: only sets a flag, so a signal handler may call it.
  void requestStop();
  // What the server holds and did (as a client's Client::stats() reports it).
  ServerStats stats() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace axon::space
