// Env: every AXON_* variable (and the launcher variables we read) read once, validated, typed.
// docs/configuration.md lists them; keep the two in step.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include "axon/collectives.hpp"
#include "core/launch_detect.hpp"
#include "core/secret.hpp"

namespace axon {

using EnvVars = std::map<std::string, std::string>;

enum class Backend { Auto, Host, Gpu };
// AXON_COLL_GPU_DIRECT: when GPU collectives above LL may take the Direct protocol.
enum class DirectMode { Off, Auto, Always };
// AXON_UCX_ATOMICS: how atomics and signals reach PEs on other nodes: active messages the target
// carries out, UCX's own atomic operations, or (auto) the first unless the NIC does atomics.
enum class RemoteAtomics { Auto, ActiveMessage, Native };

// Where a job's key comes from (bootstrap/job_key.hpp resolves it): AXON_JOB_KEY, else
// AXON_JOB_KEY_FILE, else a file that rank 0 writes into a directory of this user's.
struct JobKeyConfig {
  Secret key;               // AXON_JOB_KEY (hex), parsed; empty when unset
  std::string file;         // AXON_JOB_KEY_FILE: a 0600 file holding the key in hex
  std::string runtimeDir;   // XDG_RUNTIME_DIR: rank 0's key file for jobs on one node
  std::string homeDir;      // HOME: ~/.axon/keys, for jobs across nodes (a shared home) or without XDG_RUNTIME_DIR
};

struct Env {
  LaunchInfo launch;            // rank, size, local rank/size, store address, and who told us
  int hostPes = 0;              // AXON_HOST_PES: PEs on this machine (emulated nodes share one); 0: launch.localSize
  double timeoutSec = 300.0;    // AXON_TIMEOUT: bound on every wait
  std::size_t heapMax = 0;      // AXON_HEAP_MAX: cap of the symmetric heap per PE
  std::size_t heapChunk = 0;    // AXON_HEAP_CHUNK: granularity by which the heap grows
  int logLevel = 1;             // AXON_LOG: 0 error, 1 warn, 2 info, 3 debug
  Backend backend = Backend::Auto;  // AXON_BACKEND: auto (GPU when there is one), host, gpu
  int device = -1;              // AXON_DEVICE: GPU ordinal; -1 = the program's, else local rank
  bool p2p = true;              // AXON_P2P: map peers' GPU memory (0: always the staged path)
  std::string node;             // AXON_NODE: this PE's node name, overriding host name + boot id
  RemoteAtomics ucxAtomics = RemoteAtomics::Auto;  // AXON_UCX_ATOMICS: auto, am, native
  std::size_t gpuHeapMax = 0;   // AXON_GPU_HEAP_MAX: cap of the GPU heap per PE (address space)
  std::size_t gpuHeapChunk = 0; // AXON_GPU_HEAP_CHUNK: granularity by which the GPU heap grows
  std::size_t stageChunk = 0;   // AXON_STAGE_CHUNK: pipeline chunk of the staged path
  std::size_t p2pEager = 0;     // AXON_P2P_EAGER: largest two-sided message sent eagerly (a ring slot's payload)
  std::size_t p2pUnexpected = 0;  // AXON_P2P_UNEXPECTED: bound on eager data waiting unmatched at a PE
  bool p2pPosted = true;        // AXON_P2P_POSTED: senders on the node copy small messages straight into posted heap receives
  std::size_t collBuffer = 0;   // AXON_COLL_BUFFER: bytes per round of a team's collective workspace
  std::size_t collGpuChunk = 0; // AXON_COLL_GPU_CHUNK: bytes per round, channel and sender (GPU)
  int collGpuChannels = 0;      // AXON_COLL_GPU_CHANNELS: channels of a GPU workspace (blocks per call)
  std::size_t collGpuLlMax = 0;   // AXON_COLL_GPU_LL_MAX: largest block (bytes) on the LL protocol
  std::size_t collGpuLlChunk = 0; // AXON_COLL_GPU_LL_CHUNK: LL data bytes per round, channel and sender
  bool collGpuPdl = true;         // AXON_COLL_GPU_PDL: launch collective kernels as programmatic dependents
  DirectMode collGpuDirect = DirectMode::Auto;  // AXON_COLL_GPU_DIRECT: Direct protocol (symmetric buffers)
  // AXON_COLL_GPU_PUSH_MIN: smallest block of the pushed allreduce (0: never); unset: the measured
  // one (coll/plan.cpp)
  std::optional<std::size_t> collGpuPushMin;
  // AXON_COLL_GPU_CHAIN_MIN: smallest block of the chained reduce on more than 2 GPUs (0: never);
  // unset: the measured one (coll/plan.cpp)
  std::optional<std::size_t> collGpuChainMin;
  JobKeyConfig jobKey;          // AXON_JOB_KEY, AXON_JOB_KEY_FILE (and where rank 0 may write one)
  std::string spaceAddr;        // AXON_SPACE_ADDR: a staging server's host:port (any server of the space)
  std::string spaceFile;        // AXON_SPACE_FILE: a staging server's contact file (when no address)
  std::string spaceKey;         // AXON_SPACE_KEY: a staging space's key, hex (checked here, used by clients and servers)
  std::size_t spaceBatch = 0;   // AXON_SPACE_BATCH: nonblocking puts up to this size are sent in batches (0: off)
  // AXON_ALGO_<COLLECTIVE>: a forced algorithm name per collective (index: axon::Collective), or ""
  std::array<std::string, 7> algo;

  // The process environment. init() reads it once and keeps it for the life of the runtime.
  static Env fromProcess();
  // Parse a given set of variables; throws axon::Error(InvalidArgument) naming the variable.
  static Env fromVars(const EnvVars& vars);
  static EnvVars processVars();
};

// "AXON_ALGO_REDUCE_SCATTER": the variable that forces `c`'s algorithm (Env::algo).
std::string algoVariable(Collective c);

// "64M", "4G", "123", "1.5G" -> bytes. Throws InvalidArgument naming `what` on a bad value.
std::size_t parseByteSize(const std::string& text, const std::string& what);
// "300", "2.5" -> seconds; must be positive.
double parseSeconds(const std::string& text, const std::string& what);

// The longest timeout axon keeps: about 3.2 years. Longer ones (inf included) are cut to it, so
// that a deadline (now + timeout, in the steady clock's 64-bit nanoseconds, which overflow past
// about 9.2e9 s) is never in the past.
constexpr double kMaxTimeoutSec = 1e8;
// A timeout as given: NaN, or a negative one when `negativeMeansDefault` is false, is refused with
// InvalidArgument naming `what`; longer than kMaxTimeoutSec (inf too) is cut to it.
double clampTimeout(double sec, const std::string& what, bool negativeMeansDefault = false);
// AXON_TIMEOUT's text: a positive number of seconds, or "inf"; cut to kMaxTimeoutSec.
double parseTimeout(const std::string& text, const std::string& what);

}  // namespace axon
