// Connection-oriented messaging for the staging space (src/space): a node listens on HOST:PORT or
// connects to one; a message is a small header plus an optional payload, in host or GPU memory,
// which the receiver lands wherever it chooses once it has read the header (straight into a
// staging server's arena, or a reader's device staging buffer). UCX carries it
// (transport/ucx/ucx_rpc.cpp): its socket-address listener, active messages, and its rendezvous for
// large payloads (GPUDirect RDMA or UCX's pipelined staging for GPU memory). No protocol of our
// own below the message: this header is UCX-free only so that src/space needs no UCX headers.
//
// Threads: handlers and completions run inside progress(), in whichever thread calls it, and never
// inside one of UCX's own callbacks (so they may send, receive or close); send, receive, drop and
// close may be called from any thread (the worker is multi-threaded).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/progress_engine.hpp"

namespace axon::rpc {

using ConnId = std::uint64_t;
enum class Memory { Host, Cuda };

// A payload that arrived with a message: eager bytes, copied out of UCX's buffer, or UCX's handle
// of a rendezvous the receiver has not fetched yet. A rendezvous must be received or dropped.
struct Payload {
  std::size_t bytes = 0;
  std::string eager;
  void* handle = nullptr;
  bool rendezvous() const { return handle != nullptr; }
};

// A completion: empty on success, else what failed (UCX's status in words).
using Done = std::function<void(const std::string& failure)>;

class Node : public ProgressClient {
 public:
  struct Handlers {
    std::function<void(ConnId, std::string header, Payload payload)> message;
    // The connection failed or the peer went away (never called for close()).
    std::function<void(ConnId, const std::string& why)> closed;
    std::function<void(ConnId)> accepted;  // a client connected (listening nodes)
  };

  // Before listen() or connect().
  virtual void setHandlers(Handlers h) = 0;
  // Listens on "host:port" (port 0: any; host empty or 0.0.0.0: every interface) and returns the
  // address clients should use ("10.0.0.2:4711"). Throws naming the address when UCX refuses it.
  virtual std::string listen(const std::string& hostPort) = 0;
  // Starts a connection; its failure shows as the closed handler or a failed send.
  virtual ConnId connect(const std::string& hostPort) = 0;
  // Sends `header` (at most maxHeader() bytes) and `bytes` of `data` (may be 0), which must stay
  // valid until `done` runs: from a later progress(), or at once when the connection is closed.
  virtual void send(ConnId c, std::string header, const void* data, std::size_t bytes, Memory m, Done done) = 0;
  // Lands `p` at `dst` (p.bytes). Eager bytes are copied at once (host memory only: eager data to
  // GPU memory is for the caller to copy); `done` runs when the data is there.
  virtual void receive(Payload& p, void* dst, Memory m, Done done) = 0;
  virtual void drop(Payload& p) = 0;
  // Closes the connection at once; in-flight operations on it fail.
  virtual void close(ConnId c) = 0;
  // "10.0.0.2:4711" for a connection made with connect(), "client 3 (10.0.0.5:51234)" for one
  // accepted.
  virtual std::string describe(ConnId c) const = 0;
  virtual std::size_t maxHeader() const = 0;
  // Whether UCX delivered a failure on c (closed handler already ran or is about to).
  virtual bool failed(ConnId c) const = 0;
};

// A node on its own UCX context and worker. Throws Unsupported, with the reason, where this
// build or machine has no UCX. `role` names it in errors ("staging server", "space client").
std::unique_ptr<Node> makeNode(const std::string& role);

}  // namespace axon::rpc
