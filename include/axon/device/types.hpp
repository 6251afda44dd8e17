// Types shared by the host and the device side of axon's device API: the trivially copyable
// handle a host program passes to its kernels, teams, scopes and the enums of the one-sided calls.
//
// This header compiles alone under a host C++ compiler, nvcc and NVRTC: it includes nothing.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define AXON_DEVICE_INLINE __device__ __forceinline__
#define AXON_DEVICE_NOINLINE __device__ __noinline__
// Pure arithmetic that host code may call too (remote(), isReachable()).
#define AXON_HOST_DEVICE_INLINE __host__ __device__ __forceinline__
#else
#define AXON_DEVICE_INLINE inline
#define AXON_DEVICE_NOINLINE
#define AXON_HOST_DEVICE_INLINE inline
#endif

namespace axon {
namespace device {

// size_t without <cstddef>, which NVRTC does not have: the type of sizeof is size_t by definition.
using SizeT = decltype(sizeof(0));

// Largest number of PEs whose GPU heaps one process can reach by load/store (one bit each in
// Context::reachable).
constexpr int kMaxPeers = 128;
// Live teams at once and rounds of a dissemination barrier (as the host control block).
constexpr int kMaxTeams = 64;
constexpr int kMaxBarrierRounds = 32;

// Cooperation scope of a device call: which threads call it together, with the same arguments.
// Thread: one thread alone. Warp: all 32 lanes of a warp. Block: every thread of the block.
struct Thread {};
struct Warp {};
struct Block {};

// Same values as axon::SignalOp and axon::Cmp on the host.
enum class SignalOp : int { Set = 0, Add = 1 };
enum class Cmp : int { Eq = 0, Ne = 1, Gt = 2, Ge = 3, Lt = 4, Le = 5 };

// A team as a kernel sees it: member i is world PE members[i] when the team has a member table
// (a team split by colour into any grouping), else start + i * stride (no memory access).
struct Team {
  int start;
  int stride;
  int size;
  int slot;     // row of ControlWords::barrier this team uses
  int myIndex;  // this PE's index in the team, or -1 when it is not a member
  const int* members;  // [size] world PEs, in GPU memory; nullptr for a strided team
};

// The first words of every PE's GPU heap (heap offset 0), as the host control block is for the
// host heap. `barrier` is incremented by peers; `epoch` is this PE's own count of device barriers
// completed per team slot.
struct ControlWords {
  unsigned long long barrier[kMaxTeams][kMaxBarrierRounds];
  unsigned long long epoch[kMaxTeams];
};

struct ProxyRing;  // axon/device/proxy_ring.hpp

// How kernels reach the PEs they cannot load from or store to (another node, a GPU without peer
// access): the host proxy's ring (pinned host memory) and its ticket counter (GPU memory). Both
// null when this PE has no proxy (every PE's GPU heap is mapped here).
struct ProxyChannel {
  ProxyRing* ring;
  unsigned long long* tickets;
};

// What a kernel needs to address every PE's symmetric GPU memory. Host code gets it from
// axon::deviceContext() and passes it to kernels by value; it stays valid until finalize().
//
// The GPU heaps of the node-local PEs (and only theirs: PEs on other nodes take no address space)
// lie in one reservation of this process's address space, one slot per node-local PE,
// `heapStride` bytes apart. Node-local PEs are `peStride` world ranks apart (1 when PEs are
// placed on nodes in blocks, the node count when round robin), so the address of a symmetric
// object on a node-local PE p is its local address plus (p - myPe) / peStride * heapStride: no
// table lookup on the device.
struct Context {
  int myPe;
  int nPes;
  char* heapBase;                // this PE's GPU heap, as this process sees it
  long long heapStride;          // bytes from one node-local PE's heap to the next one's
  unsigned long long timeoutNs;  // AXON_TIMEOUT in nanoseconds: bound on every device wait
  unsigned int reachable[kMaxPeers / 32];  // bit p: PE p's GPU heap is mapped here
  Team world;
  int peStride;                  // world ranks from one node-local PE to the next (0 reads as 1)
  ProxyChannel proxy;            // requests for the PEs not reachable by load/store
};

}  // namespace device
}  // namespace axon
