// Which algorithm a call uses and how it cuts the data into rounds. Pure: every member computes
// the same plan from the same arguments (the plan's algorithm and buffer size are part of the
// mismatch check). Tested on the host (tests/unit/coll_math_test.cpp).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "axon/collectives.hpp"
#include "core/env.hpp"

namespace axon::coll {

// Pushed: the GPU allreduce of large blocks (a reduce-scatter through the workspace's slots, the
// reduced parts stored into every member's dst); the GPU plan picks it, AXON_ALGO_* cannot.
enum class Algo { Local, OneShot, TwoShot, Ring, Chain, Doubling, Pipelined, Pushed };
const char* algoName(Algo a) noexcept;  // "oneshot", "recursive_doubling"
std::optional<Algo> algoFromName(std::string_view name);

// The algorithms AXON_ALGO_<COLLECTIVE> may name for `c`, e.g. "oneshot, twoshot, ring".
std::string allowedAlgorithms(Collective c);
bool algorithmAllowed(Collective c, Algo a);
// The algorithm AXON_ALGO_<COLLECTIVE> forces for `c`, if any (core/env.hpp reads the variables;
// checkForcedAlgorithms has refused bad names at init).
std::optional<Algo> forcedAlgo(const Env& env, Collective c);
// Throws InvalidArgument naming the variable when an AXON_ALGO_<COLLECTIVE> names an algorithm
// that collective does not have. init() calls it before joining the job.
void checkForcedAlgorithms(const Env& env);

struct PlanInput {
  Collective collective;
  std::size_t count;        // elements (per PE for allgather, reduce_scatter and alltoall)
  std::size_t elemBytes;
  int members;
  std::size_t bufferBytes;  // one workspace half
  std::optional<Algo> forced;  // from AXON_ALGO_<COLLECTIVE>
};

struct Plan {
  Algo algo;
  std::size_t chunkElems;  // elements per chunk (the unit each algorithm iterates over)
  std::size_t chunks;      // >= 1: a call with count 0 still takes its rounds (it synchronizes)
  std::size_t rounds;      // rounds the call takes, the same on every member
  std::string reason;
};

Plan makePlan(const PlanInput& in);

// The plan of a step among node leaders (the network level of a collective across nodes): a
// latency-bound allreduce doubles recursively (log2 rounds), a larger one takes the ring (each
// leader sends 2 (n-1)/n of the data, the least a link can carry; `pipelined`, a reduce-scatter
// then an allgather straight between leaders with rounds in flight, moves as much and is there to
// be forced); an allgather of 256 KiB or more
// on 3 or more leaders takes the ring; broadcasts choose as on one node. `forced` wins where the
// collective allows it.
Plan makeLeaderPlan(const PlanInput& in);

// The GPU path ("gpu-p2p", src/coll/gpu_path.cpp): kernels on the team's GPU workspace, one block
// per channel, each channel moving up to `chunkBytes` per sender and round.
struct GpuPlanInput {
  Collective collective;
  std::size_t count;        // elements (per PE for allgather, reduce_scatter and alltoall)
  std::size_t elemBytes;
  int members;
  int maxChannels;          // AXON_COLL_GPU_CHANNELS
  std::size_t chunkBytes;   // AXON_COLL_GPU_CHUNK
  std::size_t llMaxBytes;   // AXON_COLL_GPU_LL_MAX
  std::size_t llChunkBytes; // AXON_COLL_GPU_LL_CHUNK
  std::optional<Algo> forced;
  bool wantReason = false;  // explain() only: the calls themselves skip building the sentence
  DirectMode direct = DirectMode::Auto;  // AXON_COLL_GPU_DIRECT
  std::optional<std::size_t> pushMinBytes;  // AXON_COLL_GPU_PUSH_MIN (0: never; unset: 16 MiB)
  std::optional<std::size_t> chainMinBytes;  // AXON_COLL_GPU_CHAIN_MIN (0: never; unset: coll/plan.cpp)
};

struct GpuPlan {
  Algo algo;             // OneShot, TwoShot, Pushed or Chain (reduce)
  bool ll;               // the LL protocol (device::CollProto::LL)
  bool direct;           // else the Direct protocol (device::CollProto::Direct: Simple unless
                         // every member's buffers are at the same symmetric-heap offsets)
  int channels;          // blocks of the kernel
  std::size_t chunkBytes;  // data bytes per round, channel and sender
  int threads;           // per block
  std::size_t rounds;    // rounds of the busiest channel
  std::string reason;    // empty unless wantReason
};

GpuPlan makeGpuPlan(const GpuPlanInput& in);

}  // namespace axon::coll
