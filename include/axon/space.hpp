// The staging space: named, versioned n-dimensional arrays held by staging servers between
// loosely coupled programs. Writers put blocks; readers get any box, in any decomposition, into
// host or GPU memory. A client is not a PE: any process may connect (no axon::init needed).
//
//   axon::space::Client c;                                  // AXON_SPACE_ADDR or AXON_SPACE_FILE
//   c.define("temperature", {512, 512, 512}, axon::DataType::Float64);
//   c.put("temperature", step, {0, 0, 0}, {64, 512, 512}, devicePtr);   // returns once stored
//   c.get("temperature", step, {10, 0, 0}, {20, 512, 512}, out, outBytes);
//
// Boxes are half-open, [lo, hi), in elements: lo inclusive, hi exclusive, like Python slices
// (DataSpaces' bounds are inclusive: hi = ub + 1); a put's block is offset + count, as ADIOS2's
// start + count. Arrays are dense and row-major (C order). Up to 8 dimensions, 64-bit indices.
// Versions are numbers >= 0 (a negative one is refused, InvalidArgument); waitVersion's atLeast
// is a bound (below 0: any version). Pointers may be host memory or GPU memory (found out per
// call); a get's output is a pointer and a byte count, so the byte count (at least the box's) is
// all it can check: the box lands dense and row-major at `out` whatever the caller meant.
// Every call is bounded: by its own timeout where it takes one, else by AXON_TIMEOUT.
//
// Errors (axon::Error codes): InvalidArgument (bad boxes, unknown variables, a buffer too small,
// before any data moves), SpaceFull (the server's --mem is used up: policy reject, or block past
// the timeout), Evicted (the version was dropped), Incomplete (a box not fully written within the
// timeout; the message lists the missing boxes), ServerLost (a server died, shut down, cannot be
// did not answer in time; the message names it; later calls to it fail at once), ServerUnreachable
// (connecting: a server never reached, refused, no such host, no greeting; a missing or stale
// contact file),
// Timeout (waitVersion: no version complete everywhere in time), PermissionDenied (no key, a
// wrong one, or a server that could not prove it; the message names the server and where the key
// came from).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "axon/collectives.hpp"  // DataType

namespace axon::space {

using Index = std::vector<std::int64_t>;

// How GPU memory reaches the servers (and comes back). Boxes under 64 KiB take one message
// through host memory on every path (a copy of a few microseconds beats a second request).
enum class GpuPath {
  // To a server on this node: one DMA into its mapped memory. To another node: a pipeline through
  // pinned host buffers, each chunk copied while the previous ones are on the wire (a put lands
  // in one reservation, visible at its commit); gets land in pinned memory, then one upload.
  // An iput of 4 MiB or more of GPU data to another node runs its pipeline before it returns:
  // the GPU buffer may be reused at once, and only the commit is left to wait for.
  Direct,
  // To another node: GPU memory handed to UCX as is (GPUDirect RDMA where the NIC and UCX have
  // it, else UCX's own staging). On this node as Direct.
  UcxDevice,
  // The baseline of the DataSpaces-GPU study: the whole box copied to host memory first, then sent
  // (a get: assembled in host memory, then copied to the GPU).
  HostStaged,
};

struct ConnectOptions {
  std::string address;        // any server of the space; empty: AXON_SPACE_ADDR, then AXON_SPACE_FILE
  std::string contactFile;    // used when address and AXON_SPACE_ADDR are empty
  double timeoutSec = -1;     // connecting and every call without its own; <0: AXON_TIMEOUT
  GpuPath gpuPath = GpuPath::Direct;
  bool sharedMemory = true;   // false: UCX only, even to servers on this node
  std::int64_t batchBytes = -1;  // nonblocking puts up to this size travel in batches; <0: AXON_SPACE_BATCH, 0: off
  // The space's key, hex (the servers refuse a client that cannot prove it: PermissionDenied).
  // Empty: AXON_SPACE_KEY, else the key in the contact file the server was found through.
  std::string key;
};

// What one server holds, and what this client did.
struct ServerStats {
  std::string address;
  std::string policy;
  bool pinned = false;
  std::uint64_t capacity = 0, bytesInUse = 0, highWater = 0;
  std::uint64_t pieces = 0, versions = 0, variables = 0;
  std::uint64_t putsCommitted = 0, putsAborted = 0, bytesPut = 0, lookups = 0, bytesServed = 0;
  std::uint64_t versionsDropped = 0, versionsEvicted = 0, putsRejectedFull = 0;
};
struct ClientStats {
  std::uint64_t puts = 0, bytesPut = 0, gets = 0, bytesGot = 0;
  std::uint64_t batches = 0, batchedPuts = 0;          // puts that travelled in batches
  std::uint64_t sharedMemoryPuts = 0, ucxPuts = 0;     // path each put (part) took
  std::uint64_t sharedMemoryGets = 0, ucxGets = 0;
  std::uint64_t hostStagedCopies = 0;                  // GPU data copied to host first (GpuPath::HostStaged)
  std::uint64_t pipelinedPuts = 0, pipelineChunks = 0; // GPU puts through pinned buffers, and their chunks
  std::uint64_t fragments = 0;                         // stored pieces the gets were assembled from
  std::uint64_t fusedKernels = 0;                      // reassembly kernels launched (one per GPU get)
  std::uint64_t hostCopyThreads = 0;                   // threads of the last host reassembly
  std::string lastPath;                                // the path of the last put or get, in words
};
struct Stats {
  std::vector<ServerStats> servers;
  ClientStats client;
};

class Client;

// A nonblocking put or get. wait() rethrows its failure; a request not waited for is waited for
// by the client's destructor.
class Request {
 public:
  Request();
  ~Request();
  Request(Request&&) noexcept;
  Request& operator=(Request&&) noexcept;
  bool test();   // done? (throws its failure once done)
  void wait();   // bounded by the call's timeout
  bool valid() const { return state_ != nullptr; }

  struct State;
  explicit Request(std::shared_ptr<State> s);

 private:
  std::shared_ptr<State> state_;
};

class Client {
 public:
  explicit Client(const ConnectOptions& options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Defines a variable on every server (again: checked to be the same).
  void define(const std::string& name, const Index& shape, DataType dtype, int keepVersions = 2);
  // Stores the dense block at `offset` with extents `count` from `data` (host or GPU). Returns
  // when the servers own the data; the buffer may then be reused.
  void put(const std::string& name, std::int64_t version, const Index& offset, const Index& count, const void* data,
           double timeoutSec = -1);
  Request iput(const std::string& name, std::int64_t version, const Index& offset, const Index& count,
               const void* data, double timeoutSec = -1);
  // Fills `out` (host or GPU, `outBytes` long) with the box [lo, hi) of the version, waiting up to
  // the timeout for pieces still being written. Holds the version for this client until release().
  void get(const std::string& name, std::int64_t version, const Index& lo, const Index& hi, void* out,
           std::size_t outBytes, double timeoutSec = -1);
  Request iget(const std::string& name, std::int64_t version, const Index& lo, const Index& hi, void* out,
               std::size_t outBytes, double timeoutSec = -1);
  // Waits until a version >= atLeast is complete (every element written) and returns the newest
  // complete one.
  std::int64_t waitVersion(const std::string& name, std::int64_t atLeast, double timeoutSec = -1);
  // Lets the servers drop the version (when keep_versions or memory asks for it).
  void release(const std::string& name, std::int64_t version);
  // Removes the variable from every server: every version goes (held ones too) and its memory
  // returns to --mem; returns once it is gone everywhere, and the name may then be defined again
  // (any shape). Gets already reading it (their data being copied) and puts already landing
  // finish first; gets, version waits and puts still waiting for data or memory fail with
  // InvalidArgument ("was removed"), and so does every later call on the name until it is
  // defined again. Timeout when transfers under way on it outlast the client's timeout (it still
  // goes when they end). Other clients keep the definition they cached: one that uses the name
  // after a remove should define it again first (which refreshes it).
  void remove(const std::string& name);
  Stats stats();
  // Waits for every request, then disconnects (holds are dropped). Called by the destructor.
  void close();

  std::vector<std::string> servers() const;  // the space's servers, in placement order
  DataType dtypeOf(const std::string& name) const;  // of a variable this client defined or used
  Index shapeOf(const std::string& name) const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace axon::space
