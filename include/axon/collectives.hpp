// Collectives over a team: barrier, broadcast, reduce, allreduce, allgather, reduce_scatter and
// alltoall, on symmetric memory.
//
// Buffers may be any memory the calling PE can read and write (they need not be symmetric): each
// call stages data through the team's workspace, a symmetric buffer every member maps. Every
// member of the team must make the same calls in the same order with the same arguments
// (count, type, op, root); a PE that differs gets CollectiveMismatch, and so does every PE that
// waits on it, instead of a hang or wrong data. A team whose collective failed that way refuses
// further collectives: destroy it and split a new one.
//
// In place: allreduce, reduce and broadcast take src == dst. allgather takes
// src == dst + myPe * count (its own block of dst); reduce_scatter takes dst == src + myPe * count.
// Any other overlap of src and dst is an InvalidArgument.
//
// Every wait is bounded by AXON_TIMEOUT. The algorithm is chosen per call by size, team size and
// path; AXON_ALGO_<COLLECTIVE> overrides the choice and explain() says what a call would use.
//
// Paths: on the host backend, shared memory ("host-shm"). On the GPU backend, a team whose GPUs
// all map each other's memory runs every collective as kernels on a GPU workspace ("gpu-p2p"):
// the blocking calls below then take device or host buffers (host buffers are staged through
// device memory) and wait for the kernel, which does not wait for the program's own streams
// (synchronize them first). Other teams copy device buffers through host memory ("host-shm").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "axon/device/coll_types.hpp"
#include "axon/team.hpp"

struct CUstream_st;

namespace axon {

// A cudaStream_t or CUstream (the same type); nullptr is the legacy default stream.
using Stream = CUstream_st*;

enum class DataType { Int8, Uint8, Int32, Uint32, Int64, Uint64, Float16, BFloat16, Float32, Float64 };
enum class ReduceOp { Sum, Prod, Min, Max };
enum class Collective { Barrier, Broadcast, Reduce, Allreduce, Allgather, ReduceScatter, Alltoall };

std::size_t dataTypeSize(DataType t) noexcept;
const char* dataTypeName(DataType t) noexcept;      // "float32"
const char* reduceOpName(ReduceOp op) noexcept;     // "sum"
const char* collectiveName(Collective c) noexcept;  // "reduce_scatter"

// Synchronizes the team through its collective workspace (so that a barrier matched against a
// different collective on another PE is reported as a mismatch). Completes nothing else: use
// Team::barrier() to also complete this PE's one-sided puts.
void barrier(const Team& team);

// Copies `count` elements of root's src to dst on every member. src is read on the root only.
void broadcast(const Team& team, const void* src, void* dst, std::size_t count, DataType type, int root);
// dst on the root receives the element-wise reduction of every member's src; other members' dst
// is not written (it may be nullptr there).
void reduce(const Team& team, const void* src, void* dst, std::size_t count, DataType type,
            ReduceOp op, int root);
void allreduce(const Team& team, const void* src, void* dst, std::size_t count, DataType type, ReduceOp op);
// Each member contributes `count` elements; dst holds nPes * count, member i's at i * count.
void allgather(const Team& team, const void* src, void* dst, std::size_t count, DataType type);
// src holds nPes * count elements; member i's dst receives the reduction of block i of every src.
void reduceScatter(const Team& team, const void* src, void* dst, std::size_t count, DataType type,
                   ReduceOp op);
// src holds nPes blocks of `count`; block j goes to member j, which stores it as its block i
// (i = the sender).
void alltoall(const Team& team, const void* src, void* dst, std::size_t count, DataType type);

// ── Stream-ordered forms (GPU backend) ──────────────────────────────────────────────────────────
// Each enqueues the collective on `stream` as a kernel and returns at once; work enqueued after
// it sees the result. Buffers must be GPU memory. They can be captured into a CUDA graph (the
// workspace counts its rounds on the GPU, so replays stay in step). The team's stream-ordered,
// device-callable and blocking collectives share one workspace: issue them in one order on every
// member, and run one at a time per team (one stream per team, as with an NCCL communicator): a
// blocking collective after stream-ordered ones on the same team synchronizes their stream first.
// The team barriers (barrierAll, Team::barrier) may be called with stream-ordered calls pending.
// A failure in the kernel (a member's different call, a wait past AXON_TIMEOUT) is printed by the
// GPU, stops the team's collectives on every member, and is thrown by the team's next call.
// The barrier's stream form is barrierOnStream(team, stream) (axon/gpu.hpp).
// Teams whose GPUs cannot all map each other's memory (AXON_P2P=0, no peer access) have no GPU
// workspace: these calls throw Unsupported there, and the blocking calls take the host path.
void broadcastOnStream(const Team& team, const void* src, void* dst, std::size_t count, DataType type, int root,
                       Stream stream);
void reduceOnStream(const Team& team, const void* src, void* dst, std::size_t count, DataType type, ReduceOp op,
                    int root, Stream stream);
void allreduceOnStream(const Team& team, const void* src, void* dst, std::size_t count, DataType type, ReduceOp op,
                       Stream stream);
void allgatherOnStream(const Team& team, const void* src, void* dst, std::size_t count, DataType type,
                       Stream stream);
void reduceScatterOnStream(const Team& team, const void* src, void* dst, std::size_t count, DataType type,
                           ReduceOp op, Stream stream);
void alltoallOnStream(const Team& team, const void* src, void* dst, std::size_t count, DataType type,
                      Stream stream);

// What kernels need to call the device-callable collectives (axon/device/collectives.hpp) on the
// team. Throws Unsupported where the team has no GPU workspace. Valid until the team is destroyed;
// its kernels' bound is the team's timeout when the handle is taken (Team::setTimeout).
device::CollHandle deviceCollHandle(const Team& team);

// Typed conveniences.
template <class T> constexpr DataType dataTypeOf();
template <> constexpr DataType dataTypeOf<std::int8_t>() { return DataType::Int8; }
template <> constexpr DataType dataTypeOf<std::uint8_t>() { return DataType::Uint8; }
template <> constexpr DataType dataTypeOf<std::int32_t>() { return DataType::Int32; }
template <> constexpr DataType dataTypeOf<std::uint32_t>() { return DataType::Uint32; }
template <> constexpr DataType dataTypeOf<std::int64_t>() { return DataType::Int64; }
template <> constexpr DataType dataTypeOf<std::uint64_t>() { return DataType::Uint64; }
template <> constexpr DataType dataTypeOf<float>() { return DataType::Float32; }
template <> constexpr DataType dataTypeOf<double>() { return DataType::Float64; }

template <class T>
void allreduce(const Team& team, const T* src, T* dst, std::size_t count, ReduceOp op) {
  allreduce(team, src, dst, count, dataTypeOf<T>(), op);
}
template <class T>
void broadcast(const Team& team, const T* src, T* dst, std::size_t count, int root) {
  broadcast(team, src, dst, count, dataTypeOf<T>(), root);
}

// Which algorithm and path a call would use, and why: the same choice the call itself makes.
struct Explanation {
  Collective collective;
  std::string algorithm;  // "oneshot", "twoshot", "ring", "chain"
  std::string path;       // "host-shm" (the host backend's shared memory)
  std::string reason;     // one sentence: the size, team size and rule (or override) that chose it
  std::size_t chunkBytes; // bytes staged per round through the workspace
  std::size_t rounds;     // flag rounds the call takes
  // The GPU path ("gpu-p2p") only; 0 on paths that run no kernel. What the call occupies while it
  // runs: its blocks (one per channel), their threads, how many of them one SM holds at once (the
  // CUDA occupancy calculator: threads, registers, shared memory), and so how many SMs' worth
  // (blocks / blocksPerSm) it takes from other kernels, of the GPU's deviceSms.
  int blocks = 0;
  int threadsPerBlock = 0;
  int blocksPerSm = 0;
  double sms = 0;
  int deviceSms = 0;
};
Explanation explain(Collective c, const Team& team, std::size_t count, DataType type);
std::string toString(const Explanation& e);
// The GPU occupancy part of toString: "64 block(s) of 512 threads, 1 to an SM: 64 SM(s) of the
// GPU's 132" ("no kernel" on paths without one).
std::string smUseText(const Explanation& e);

}  // namespace axon
