// Types of the device collectives (axon/device/collectives.hpp) that host code also uses: the
// trivially copyable handle a host program passes to its kernels, the call record members compare,
// the error report, and the layout of a team's GPU collective workspace.
//
// This header compiles alone under a host C++ compiler, nvcc and NVRTC (it includes only types.hpp).
#pragma once

#include "axon/device/types.hpp"

namespace axon {
namespace device {

// Same values as axon::DataType and axon::ReduceOp on the host.
enum class DataType : int {
  Int8, Uint8, Int32, Uint32, Int64, Uint64, Float16, BFloat16, Float32, Float64
};
enum class ReduceOp : int { Sum = 0, Prod = 1, Min = 2, Max = 3 };

// The 16-bit floating-point types as stored (IEEE binary16 and bfloat16 bits); reductions compute
// in float and round to nearest even, as the host path does.
struct Half { unsigned short bits; };
struct BFloat16 { unsigned short bits; };

// How the bytes of a call travel (CollRecord::proto).
//   Simple: pushes into plain slots, then one release/acquire signal per member and round.
//   LL ("low latency"): every 8-byte word carries 4 bytes of data and the round's 4-byte flag, so a
//   receiver polls the data itself: no fence, no separate signal, half the bandwidth. Small calls.
//   Direct: when every member's buffers are at the same offsets of the symmetric GPU heap, kernels
//   read and write the members' buffers themselves between two rounds of signals (each byte
//   crosses NVLink once, no slots, no rounds per chunk); otherwise the call runs as Simple. The
//   members learn each other's offsets in the first round, so they always decide alike.
enum class CollProto : unsigned int { Simple = 0, LL = 1, Direct = 2 };

// A heap offset that says "not on the symmetric heap" (Direct proposals).
constexpr unsigned long long kCollNoOffset = ~0ull;

// What one call is: every member must make the same one. Same values as the host's enums;
// `algo` as axon::coll::Algo; `channels` the blocks the call uses (0 for a device-callable call).
// Its size is a multiple of 8: the LL protocol sends it as the first words of a message.
struct CollRecord {
  unsigned int collective, dtype, op, algo;
  int root;
  unsigned int channels;
  unsigned int proto;  // CollProto
  unsigned int reserved;
  unsigned long long count;
};

enum class CollErrorCode : int { None = 0, Timeout = 1, Mismatch = 2 };

// The first error a PE's GPU collectives met on a team: written by the kernel that met it into
// pinned host memory (and into every member's workspace, so that their kernels stop too); the host
// reads it after the kernel and throws. `state`: 0 none, 1 being written, 2 complete.
struct CollError {
  unsigned long long state;
  int code;     // CollErrorCode
  int pe;       // world PE that met it
  int peer;     // world PE it waited on or disagreed with
  int channel;
  unsigned long long address;   // the word waited on (timeouts)
  unsigned long long expected;  // round waited for (Simple), flag waited for (LL)
  unsigned long long seen;      // value seen
  CollRecord mine;              // the call of `pe`
  CollRecord theirs;            // the call of `peer` (mismatches)
};

// What kernels need to run collectives on a team: the members' workspaces, mapped in this process
// `stride` bytes apart (member i's at base + i * stride). Host code gets it from
// axon::deviceCollHandle(team) and passes it to kernels by value; valid until the team is
// destroyed.
struct CollHandle {
  char* base;               // member 0's workspace as this process sees it
  long long stride;         // bytes from member i's workspace to member i+1's
  int size;                 // members
  int myIndex;              // this PE's index in the team
  int myPe;                 // this PE's world rank
  int teamStart, teamStride;  // member i is world PE teamStart + i * teamStride, without a table
  int channels;             // independent channels of the workspace (blocks a call may use)
  unsigned long long chunkBytes;  // data bytes per channel, half and sender (Simple)
  unsigned long long llChunkBytes;  // data bytes per channel, half and sender (LL)
  unsigned long long llSlotBytes;   // bytes of one LL slot: header words, then 2 x llChunkBytes
  unsigned long long llMaxBytes;    // device-callable calls of at most this many bytes take LL
  char* heapBase;                   // this PE's symmetric GPU heap (Direct calls)
  long long heapStride;             // bytes from one node-local PE's heap slot to the next, as mapped here
  unsigned long long roundsOffset, readyOffset, recordsOffset, llOffset, dataOffset;
  unsigned long long timeoutNs;   // AXON_TIMEOUT: bound on every wait (0: forever)
  CollError* error;         // this PE's report for the team (pinned host memory)
  // Added last, so the fields above keep their offsets for code that reads the handle as bytes.
  const int* members;       // [size] world PEs in GPU memory for a team that is not strided; else nullptr
  int heapPeStride;         // world ranks from one node-local PE to the next (Context::peStride)
  // A team that spans nodes has no workspace (base is null): the host proxy runs each call as
  // the host's blocking collective on the team (coll_proxy_impl.hpp). proxyTeam is the team's
  // slot + 1 there, 0 otherwise; proxy is this PE's proxy channel (Context::proxy).
  unsigned int proxyTeam;
  ProxyChannel proxy;
};

// ── Workspace layout (one per member, the same on every member) ───────────────────────────────
//   abort     CollError written by a member that met an error (offset 0)
//   rounds    [channel]: rounds this PE completed on the channel (only this PE's kernels touch it)
//   ready     [channel][from]: the last round member `from` signalled to this PE
//   records   [channel][half][from]: the call `from` made in that round (CollRecord + round)
//   ll        [channel][half][from]: LL messages from `from`: the header (the call's digest, then
//             its record), then the data, in 16-byte units {data, flag, data, flag}
//   data      [channel][half][from]: chunkBytes that `from` pushed to this PE
// Words that different PEs write sit on their own 64-byte lines.
constexpr unsigned long long kCollLine = 64;
constexpr unsigned long long kCollLlUnit = 16;  // bytes of one LL unit; it carries 8 data bytes
// An LL message's header: one unit with a 64-bit digest of the call record (what receivers wait
// for and compare), then the record itself in 8-byte pieces (read only when the digests differ,
// to report the mismatch).
constexpr unsigned long long kCollLlRecordUnits = sizeof(CollRecord) / 8;
constexpr unsigned long long kCollLlHeaderUnits = 1 + kCollLlRecordUnits;
static_assert(sizeof(CollRecord) % 8 == 0, "the LL header carries the record in 8-byte pieces");

// What a member says to another in a round: its call, the round, and for the first round of a
// Direct call the heap offsets of its src and dst (kCollNoOffset otherwise). One line.
struct CollSlotRecord {
  CollRecord call;
  unsigned long long round;
  unsigned long long srcOffset, dstOffset;
};
static_assert(sizeof(CollSlotRecord) <= kCollLine, "a slot record fits its line");

struct CollLayout {
  unsigned long long rounds, ready, records, ll, llSlotBytes, data, total;
};

AXON_HOST_DEVICE_INLINE unsigned long long collAlignUp(unsigned long long v, unsigned long long a) {
  return (v + a - 1) / a * a;
}

// Bytes of one LL slot: the header units, then the data units. Each 16-byte unit carries 8 data
// bytes, so llChunkBytes of data take 2 x llChunkBytes.
AXON_HOST_DEVICE_INLINE unsigned long long collLlSlotBytes(unsigned long long llChunkBytes) {
  return collAlignUp(kCollLlHeaderUnits * kCollLlUnit + 2 * llChunkBytes, 2 * kCollLine);
}

AXON_HOST_DEVICE_INLINE CollLayout collLayout(int members, int channels,
                                              unsigned long long chunkBytes,
                                              unsigned long long llChunkBytes) {
  const unsigned long long n = static_cast<unsigned long long>(members);
  const unsigned long long c = static_cast<unsigned long long>(channels);
  CollLayout l{};
  l.rounds = collAlignUp(sizeof(CollError), kCollLine);
  l.ready = l.rounds + c * kCollLine;
  l.records = l.ready + c * n * kCollLine;
  l.ll = collAlignUp(l.records + c * 2 * n * kCollLine, 4096);
  l.llSlotBytes = collLlSlotBytes(llChunkBytes);
  l.data = collAlignUp(l.ll + c * 2 * n * l.llSlotBytes, 4096);
  l.total = l.data + c * 2 * n * chunkBytes;
  return l;
}

// Whether a call takes the LL protocol: one-shot calls whose block (bytes per member) is at most
// llMaxBytes (AXON_COLL_GPU_LL_MAX; 0: never), barriers excepted. LL orders a call's own data
// only (no release), and a barrier exists to order the stores made before it. The host's plans
// pass a lower limit where measured (an alltoall on 2 GPUs: coll/plan.cpp); device-callable
// calls pass theirs (coll_impl.hpp), the same on every member.
AXON_HOST_DEVICE_INLINE bool collUsesLl(unsigned long long blockBytes, bool oneShot,
                                        unsigned long long llMaxBytes, bool barrier) {
  return llMaxBytes != 0 && oneShot && !barrier && blockBytes <= llMaxBytes;
}

// Channel c's share [lo, hi) of `len` elements split over `channels` (in whole `unit`s, so that
// every share but the last starts 16-byte aligned when the buffer does). Used by the library's
// kernels, one block per channel; host-testable.
AXON_HOST_DEVICE_INLINE void collChannelRange(SizeT len, int channels, int c, SizeT unit, SizeT* lo,
                                              SizeT* hi) {
  const SizeT units = (len + unit - 1) / unit;
  const SizeT n = static_cast<SizeT>(channels), i = static_cast<SizeT>(c);
  const SizeT per = units / n, rem = units % n;
  SizeT l = (i * per + (i < rem ? i : rem)) * unit;
  SizeT e = l + (per + (i < rem ? 1 : 0)) * unit;
  *lo = l < len ? l : len;
  *hi = e < len ? e : len;
}

// Part `index` [lo, hi) of `parts` parts of `len` elements: each a whole number of `unit`s but the
// last, so that parts start 16-byte aligned when the range does (Direct calls: the part each
// member reduces, or reads from the root). Host-testable.
AXON_HOST_DEVICE_INLINE void collPartRange(SizeT len, int parts, int index, SizeT unit, SizeT* lo,
                                           SizeT* hi) {
  const SizeT p = collAlignUp((len + static_cast<SizeT>(parts) - 1) / static_cast<SizeT>(parts), unit);
  const SizeT l = static_cast<SizeT>(index) * p;
  *lo = l < len ? l : len;
  *hi = len - *lo < p ? len : *lo + p;
}

// The chained reduce (impl/coll_chain_impl.hpp) moves a channel's `len` elements a piece a round:
// about len / kCollChainPieces, at least kCollChainMinPieceBytes, at most a slot (`chunkBytes`). A
// round costs microseconds of signals and fences whatever its size, so a few large pieces beat many
// small ones despite the chain's filling (a round per member past the second): on 4 H200s a 16 MiB
// reduce (256 KiB a channel) took 0.70x NCCL's time in 4 pieces a channel, 0.51x in 16. In whole
// `unit`s, so that pieces start 16-byte aligned when the range does. Host-testable.
constexpr unsigned long long kCollChainPieces = 4;
constexpr unsigned long long kCollChainMinPieceBytes = 16 * 1024;

AXON_HOST_DEVICE_INLINE SizeT collChainPiece(SizeT len, SizeT elemBytes, SizeT chunkBytes, SizeT unit) {
  const SizeT least = kCollChainMinPieceBytes / elemBytes, most = chunkBytes / elemBytes;
  SizeT per = collAlignUp((len + kCollChainPieces - 1) / kCollChainPieces, unit);
  if (per < least) per = least;
  return per < most ? per : most;
}

// The rounds a chained reduce takes on a channel of `len` elements: one that opens the call, then
// a piece a round (one round when len is 0).
AXON_HOST_DEVICE_INLINE SizeT collChainRounds(SizeT len, SizeT piece) {
  const SizeT pieces = (len + piece - 1) / piece;
  return 1 + (pieces ? pieces : 1);
}

}  // namespace device
}  // namespace axon
