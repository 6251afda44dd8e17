// Two-sided messages: tagged send and receive of any buffer, the way MPI does them, on any team
// (the team is the communicator; sources and destinations are indices in it).
//
// Matching follows MPI: a message goes to the earliest posted receive whose source (or kAnySource)
// and tag (or kAnyTag) accept it, else it waits until a receive takes it; a receive takes the
// earliest waiting message it accepts. Messages between one pair of PEs never overtake each other.
// A message longer than the receive buffer fails the receive with Truncated (naming both sizes);
// nothing is cut silently. The sender's side completes normally, as in MPI.
//
// Buffers may be any memory this PE can reach: pageable or pinned host memory, GPU memory
// (cudaMalloc, a framework's pool), or either symmetric heap. Nothing needs registering.
//
// Protocols (axon explain, docs/architecture.md "Two-sided messages"): up to AXON_P2P_EAGER bytes
// the data travels with the message and waits at the receiver if nobody has asked for it yet;
// larger messages, and any message once the sender has used its share of the receiver's bound
// on waiting data (AXON_P2P_UNEXPECTED), wait at the sender until the receiver matches them and
// then move once, straight into the receive buffer. So a blocking send of a large message
// returns only once it is matched, and memory never grows without bound at the receiver. Between
// PEs of one node, a receive posted in either symmetric heap before its message takes a small
// message in one copy, straight from the send buffer (AXON_P2P_POSTED): GPU heap receives are
// the fastest way to get small GPU messages.
//
// Every wait is bounded by AXON_TIMEOUT: a receive that never matches fails with Timeout naming
// the (source, tag, size) it waited for and the messages that were waiting unmatched; a peer
// that died fails it with PeerDead. A request whose wait failed stays failed: end the job. (Its
// buffer may still be written: a node-local sender may have been copying into a receive offered
// to it when the wait gave up or its team was destroyed.)
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "axon/team.hpp"

struct CUstream_st;

namespace axon {

// A cudaStream_t or CUstream (the same type); nullptr is the legacy default stream.
using Stream = CUstream_st*;

namespace p2p {
struct Operation;
}

constexpr int kAnySource = -1;
constexpr int kAnyTag = -1;
// Tags are 0 .. kMaxTag.
constexpr int kMaxTag = 0x7fffffff;

// What a receive got: the sender's index in the team, the tag and the message's length.
struct Status {
  int source = -1;
  int tag = -1;
  std::size_t bytes = 0;
};

// A nonblocking send or receive. Copies share the operation; a request not waited for still
// completes (its buffers must stay valid until it has).
class Request {
 public:
  Request() = default;
  bool valid() const noexcept { return static_cast<bool>(op_); }
  // Advances messages once; true when the operation is complete (then *status is set for a
  // receive). Throws the operation's error if it failed.
  bool test(Status* status = nullptr);
  // Waits until complete (bounded by AXON_TIMEOUT); returns the receive's status (a send's is
  // {dest, tag, bytes}). Throws the operation's error if it failed.
  Status wait();

  explicit Request(std::shared_ptr<p2p::Operation> op) : op_(std::move(op)) {}
  const std::shared_ptr<p2p::Operation>& operation() const { return op_; }

 private:
  std::shared_ptr<p2p::Operation> op_;
};

// Sends `bytes` at `buf` to member `dest` of `team` with `tag` (0 .. kMaxTag). Returns when the
// buffer may be reused: at once for small messages, once matched for large ones.
void send(const void* buf, std::size_t bytes, int dest, int tag = 0, const Team& team = Team::world());
// Receives into `buf` (room for `capacity` bytes) the earliest message from member `source` (or
// kAnySource) with `tag` (or kAnyTag).
Status recv(void* buf, std::size_t capacity, int source = kAnySource, int tag = kAnyTag,
            const Team& team = Team::world());
Request isend(const void* buf, std::size_t bytes, int dest, int tag = 0, const Team& team = Team::world());
Request irecv(void* buf, std::size_t capacity, int source = kAnySource, int tag = kAnyTag,
              const Team& team = Team::world());

// Waits for every request (bounded); throws the first failure after all have ended.
void waitAll(Request* requests, std::size_t count);
inline void waitAll(std::vector<Request>& requests) { waitAll(requests.data(), requests.size()); }
// Waits until one request is complete; returns its index (and its status). Invalid requests are
// skipped; throws InvalidArgument when none is valid.
std::size_t waitAny(Request* requests, std::size_t count, Status* status = nullptr);
inline std::size_t waitAny(std::vector<Request>& requests, Status* status = nullptr) {
  return waitAny(requests.data(), requests.size(), status);
}

// The earliest waiting message a receive (source, tag) would take, without taking it: probe waits
// for one (bounded), iprobe looks once.
Status probe(int source = kAnySource, int tag = kAnyTag, const Team& team = Team::world());
std::optional<Status> iprobe(int source = kAnySource, int tag = kAnyTag, const Team& team = Team::world());

// ── Stream-ordered forms (GPU backend) ──────────────────────────────────────────────────────────
// Like NCCL's send/recv: each is enqueued on `stream` and returns at once. The message starts
// when the stream gets there, and the stream's later work waits until it has ended (the send
// buffer may be reused, the receive buffer holds the data). They can be captured into a CUDA
// graph; each replay sends and receives again.
//
// They pair by call order: this PE's k-th recvOnStream from `source` takes that PE's k-th
// sendOnStream to this PE, whatever streams they run on. They never match send/recv (a context of
// their own per team). A message longer than the receive fails it with Truncated. Buffers may be
// any memory, as for send/recv.
//
// A send waits for its match once it is larger than the eager limit: two PEs that each send to
// the other and then receive on one stream wait for each other until AXON_TIMEOUT. Put such
// exchanges in a group: calls between groupStart() and groupEnd() are enqueued on their stream as
// one step, all started together. A group's calls are on one stream; groups do not nest across
// threads (each thread has its own).
//
// Failures (Timeout, PeerDead, Truncated) release the stream so that it never hangs, and are
// thrown by this PE's next axon call on the GPU (naming the call).
void sendOnStream(const void* buf, std::size_t bytes, int dest, Stream stream, const Team& team = Team::world());
void recvOnStream(void* buf, std::size_t capacity, int source, Stream stream, const Team& team = Team::world());
void groupStart();
void groupEnd();

// This PE's message counts since init, and what waits here unmatched now (eager data held for
// receives not yet posted, bounded by AXON_P2P_UNEXPECTED).
struct MessageStats {
  std::uint64_t eagerSent = 0;       // messages sent with their data
  std::uint64_t rendezvousSent = 0;  // messages announced, their data moved once matched
  std::uint64_t postedSent = 0;      // messages copied straight into a receive the receiver had posted
  std::uint64_t received = 0;        // receives completed
  std::uint64_t waitingMessages = 0; // unmatched here now
  std::uint64_t waitingBytes = 0;    // eager data they hold
  std::uint64_t waitingBytesPeak = 0;
  std::uint64_t bound = 0;           // AXON_P2P_UNEXPECTED
};
MessageStats messageStats();

// Which protocol and path a message of `bytes` from this PE to `dest` would take, for a buffer in
// GPU memory or not: "eager through node shared memory", "rendezvous by CUDA IPC", ...
std::string explainMessage(std::size_t bytes, int dest, bool onDevice, const Team& team = Team::world());

}  // namespace axon
