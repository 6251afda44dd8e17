#include "coll/plan.hpp"

#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "axon/device/coll_types.hpp"
#include "axon/error.hpp"
#include "coll/schedule.hpp"

namespace axon::coll {
namespace {

constexpr std::size_t kGpuTwoShotBytes = 256 * 1024;  // as device::kDeviceTwoShotBytes
// Broadcast two-shot pays a second round of signals: on 4 H200s it took 12.7 us at 512 KiB and
// 22.7 us at 2 MiB, where one-shot had taken 11.5 and 26.6 us in an earlier run.
constexpr std::size_t kGpuBroadcastTwoShotBytes = 512 * 1024;
constexpr std::size_t kGpuFewThreadsBytes = 16 * 1024;  // channel shares up to this use 128 threads
constexpr std::size_t kGpuChannelShareBytes = 16 * 1024;  // a channel per this much of a block
constexpr std::array<const char*, 8> kAlgoNames = {"local", "oneshot",           "twoshot",   "ring",
                                                   "chain", "recursive_doubling", "pipelined", "pushed"};

std::string bytesText(std::size_t b) {
  if (b >= (1u << 20) && b % (1u << 20) == 0) return std::to_string(b >> 20) + " MiB";
  if (b >= 1024 && b % 1024 == 0) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

// Direct calls pay a second round of signals to save the slot copies and the per-chunk rounds,
// which counts from a size that depends on the team. Measured (docs/performance.md):
// - 4 H200s: Direct was faster from 512 KiB for allreduce (13.9 against 16.8 us at 512 KiB) and
//   two-shot broadcast (18.8 against 23.6 us at 2 MiB), even with Simple for allgather at 512 KiB
//   and faster above (14.0 against 16.2 us at 2 MiB); one-shot broadcast was slower (13.2 against
//   10.7 us at 512 KiB: the root's stores gain nothing over pushes into slots).
// - 2 H200s: Direct was slower up to 8 MiB (allreduce 36.9 against 35.8 us at 8 MiB, allgather
//   11.2 against 9.8 us at 2 MiB) and faster from 32 MiB (allreduce 114 against 121 us, allgather
//   59 against 68 us).
constexpr std::size_t kGpuDirectTwoGpuBytes = 32u << 20;

// reduce on more than 2 GPUs runs on Simple (every member pushes its data into the root's slots,
// one round) for blocks to 1 MiB, where Direct's two rounds of signals around the loads cost more:
// on 4 H200s 8.8 against 12.7 us at 256 KiB, 0.86-0.91x against 0.79x NCCL's time at 1 MiB; at
// 4 MiB Simple took 0.61x, Direct 0.80x (the root's NVLink ingress carries every member's data).
constexpr std::size_t kGpuReduceSimpleBytes = 1u << 20;

// The block from which allreduce runs pushed (AXON_COLL_GPU_PUSH_MIN unset), measured on 4 H200s
// against the Direct one-pass allreduce (docs/performance.md, issue 42): pushed 1.00-1.07x NCCL's
// time from 16 to 128 MiB and 0.97-0.98x at 512 MiB, against 0.91-0.98x; at 8 MiB 0.98x against
// 1.05x. Pushed reduce and broadcast were built and measured too, and are gone: on 4 H200s from 2
// MiB they took 0.55-0.79x and 0.74-0.88x NCCL's time, against 0.73-0.86x and 0.89-1.00x for the
// Direct forms (the root's link idles while the others reduce or forward); on 2 GPUs reduce gained
// 0.80-0.92x against 0.83-0.84x, not enough for a second form.
constexpr std::size_t kGpuPushMinBytes = 16u << 20;

std::size_t pushMinBytes(const GpuPlanInput& in) { return in.pushMinBytes ? *in.pushMinBytes : kGpuPushMinBytes; }

// The block from which reduce on more than 2 GPUs runs chained (AXON_COLL_GPU_CHAIN_MIN unset):
// partial sums passed along the members to the root, only stores crossing NVLink
// (device/impl/coll_chain_impl.hpp). On 4 H200s (docs/performance.md, issue 42) chained took
// 0.87-0.93x NCCL's time from 128 MiB to 1 GiB against 0.79-0.83x for the Direct reduce (its
// loads), and 0.77-0.81x at 64 MiB against 0.83x: below, a round's signals and fences cost more.
constexpr std::size_t kGpuChainMinBytes = 128u << 20;

std::size_t chainMinBytes(const GpuPlanInput& in) { return in.chainMinBytes ? *in.chainMinBytes : kGpuChainMinBytes; }

// Whether a reduce runs chained. AXON_COLL_GPU_DIRECT=always keeps the Direct reduce at every size,
// AXON_ALGO_REDUCE=oneshot the one-shot forms.
bool chains(const GpuPlanInput& in, std::size_t block) {
  const std::size_t least = chainMinBytes(in);
  return in.collective == Collective::Reduce && in.members > 2 && least != 0 && block >= least &&
         in.direct != DirectMode::Always && !in.forced;
}

// Why a call above LL runs faster on Simple than on Direct (nullopt: Direct pays), as measured:
// - on more than 2 GPUs, a one-shot allreduce (blocks to 256 KiB): on 4 H200s at 256 KiB 11.5 us
//   against 13.4 on Direct, NCCL 12.7 (docs/performance.md), as one round of pushes costs less
//   than Direct's two rounds of signals around the loads;
// - reduce on 2 GPUs at every size: the root's loads of the peer's data (Direct) took 0.86-0.88x
//   NCCL's time from 32 to 512 MiB, the peer's pushes into the slots (Simple) 0.97-1.03x;
// - reduce on more GPUs to kGpuReduceSimpleBytes (above);
// - reduce_scatter at every size: on 4 H200s pushes into the slots (Simple) took 1.04-1.28x
//   NCCL's time from 8 to 512 MiB of input, against 1.00-1.05x for loads of the peers' blocks
//   (Direct), and 1.00-1.77x against 0.76-0.87x at 1 MiB, 1.21-1.35x against 0.98-1.03x at 2 MiB.
std::optional<std::string> directCostsMore(const GpuPlanInput& in, Algo algo, std::size_t block) {
  if (in.collective == Collective::Broadcast && algo == Algo::OneShot) {
    return "a one-shot broadcast is faster on Simple than on Direct";
  }
  if (in.collective == Collective::Allreduce && algo == Algo::OneShot && in.members > 2 && block <= kGpuTwoShotBytes) {
    return "a one-shot allreduce to " + bytesText(kGpuTwoShotBytes) +
           " is faster on Simple (one round of pushes) than on Direct (two rounds of signals around the loads)";
  }
  if (in.collective == Collective::Reduce && in.members == 2) {
    return "a reduce on 2 GPUs is faster on Simple (the peer pushes) than on Direct (the root loads)";
  }
  if (in.collective == Collective::Reduce && block <= kGpuReduceSimpleBytes) {
    return "a reduce to " + bytesText(kGpuReduceSimpleBytes) +
           " is faster on Simple (one round of pushes into the root's slots) than on Direct (two rounds of signals "
           "around the loads)";
  }
  if (in.collective == Collective::ReduceScatter) {
    return "a reduce_scatter is faster on Simple (pushes) than on Direct (loads)";
  }
  if (in.members <= 2 && block < kGpuDirectTwoGpuBytes) {
    return "on 2 GPUs Direct pays from " + bytesText(kGpuDirectTwoGpuBytes) +
           " (AXON_COLL_GPU_DIRECT=always for every size)";
  }
  return std::nullopt;
}

bool directPays(const GpuPlanInput& in, Algo algo, std::size_t block) {
  return !directCostsMore(in, algo, block);
}

// alltoall on 2 GPUs takes LL for blocks to 64 KiB only: at a 128 KiB block (256 KiB a PE) LL
// took 10.1 us on 2 H200s and Simple 8.9, where the next larger size took 9.1 us on Simple. On 4
// GPUs the two took the same time there (12.0 and 12.1 us at 512 KiB a PE).
constexpr std::size_t kGpuAlltoallTwoGpuLlBytes = 64 * 1024;

// The largest block that takes LL: AXON_COLL_GPU_LL_MAX, less where measured.
std::size_t llMaxFor(const GpuPlanInput& in) {
  if (in.collective == Collective::Alltoall && in.members == 2) {
    return std::min<std::size_t>(in.llMaxBytes, kGpuAlltoallTwoGpuLlBytes);
  }
  return in.llMaxBytes;
}

// Why a call does not take LL (its block is over the limit, or it is not one-shot).
std::string notLlBecause(const GpuPlanInput& in, Algo algo, std::size_t block) {
  if (algo != Algo::OneShot) return "LL runs one-shot only";
  if (in.llMaxBytes == 0) return "AXON_COLL_GPU_LL_MAX = 0 turns LL off";
  if (block <= in.llMaxBytes) return "an alltoall on 2 GPUs takes LL to blocks of " + bytesText(llMaxFor(in)) + " only";
  return "the block is over AXON_COLL_GPU_LL_MAX = " + bytesText(in.llMaxBytes);
}

// Broadcast on 2 GPUs from kGpuDirectTwoGpuBytes, where Direct runs: two-shot with its one part,
// that is, the other GPU loads the root's src into its dst while the root, out of place, copies
// its own. On 2 H200s from 32 to 512 MiB 1.01-1.08x NCCL's time out of place and 1.01-1.03x in
// place, against 0.93-1.00x and 0.96-1.04x for the root's pushes into the slots (Simple
// one-shot); below 32 MiB it was slower (2 MiB: 20.5 against 15.3 us), so Simple one-shot stays
// there. Where the members' buffers do not allow Direct, the kernel runs it as Simple one-shot.
bool pullsOnTwoGpus(const GpuPlanInput& in, std::size_t block) {
  return in.collective == Collective::Broadcast && in.members == 2 && in.direct != DirectMode::Off &&
         block >= kGpuDirectTwoGpuBytes && !(in.forced && *in.forced == Algo::OneShot);
}

// The default choice on the host-shm path, with its reason.
std::pair<Algo, std::string> choose(const PlanInput& in, std::size_t bytes) {
  const std::string size = bytesText(bytes) + " on " + std::to_string(in.members) + " PEs";
  switch (in.collective) {
    case Collective::Allreduce:
      if (bytes <= 64 * 1024 || in.members <= 2) {
        return {Algo::OneShot, size + ": one-shot (every PE reads every peer once; latency-bound size, or "
                                      "2 PEs where two-shot saves nothing)"};
      }
      return {Algo::TwoShot, size + " > 64 KiB: two-shot (reduce-scatter then allgather; each PE reduces "
                                    "1/n of the data); ring only pays off across slower links"};
    case Collective::Broadcast:
      if (bytes >= 1024 * 1024 && in.members >= 3) {
        return {Algo::Chain, size + ": pipelined chain (the root sends each chunk once; chunks overlap "
                                    "along the chain)"};
      }
      return {Algo::OneShot, size + ": one-shot (every PE reads the root's copy; < 1 MiB or < 3 PEs)"};
    default:
      return {Algo::OneShot, size + ": one-shot (every PE reads what it needs from every peer)"};
  }
}

// The sentence explain() gives for a GPU plan's algorithm.
std::string gpuAlgoReason(const GpuPlanInput& in, Algo algo, std::size_t block) {
  const int n = in.members;
  const std::string size = bytesText(block) + " on " + std::to_string(n) + " GPUs";
  if (in.collective == Collective::Allreduce) {
    if (in.forced) {
      return size + ": " + algoName(algo) + ", set by " + algoVariable(in.collective) +
             (*in.forced == Algo::Ring || *in.forced == Algo::Doubling
                  ? std::string(" (") + algoName(*in.forced) + " runs on the host path only; the GPU runs two-shot)"
                  : "");
    }
    if (algo == Algo::Pushed) {
      return size + " from " + bytesText(pushMinBytes(in)) + " (AXON_COLL_GPU_PUSH_MIN)" +
             ": pushed two-shot (every GPU pushes part j of its data into GPU j's workspace, which reduces "
             "it and stores the result into every GPU's dst: only stores cross NVLink)";
    }
    if (algo == Algo::TwoShot) {
      return size + " > 256 KiB: two-shot (each GPU reduces 1/n of the data, then sends it to all)";
    }
    return size + ": one-shot (every GPU pushes its data to every other and reduces all of it; " +
           (n <= 2 ? "2 GPUs, where two-shot saves nothing)" : "latency-bound size)");
  }
  if (algo == Algo::Chain) {
    return size + " from " + bytesText(chainMinBytes(in)) + " (AXON_COLL_GPU_CHAIN_MIN): chained (the members pass "
           "partial sums along a chain that ends at the root, each adding its own data, a piece a round; every "
           "link carries each byte once, and only stores cross NVLink)";
  }
  if (in.collective == Collective::Broadcast && algo == Algo::TwoShot && n == 2) {
    return size + ": two-shot with one part from " + bytesText(kGpuDirectTwoGpuBytes) +
           " on 2 GPUs (the other GPU reads the root's src where that is on the symmetric heap too; the root "
           "copies its own, out of place; one-shot where Direct does not run)" +
           (in.forced ? ", for " + algoVariable(in.collective) + "=" + algoName(*in.forced) +
                            " (which runs on the host path only)"
                      : std::string());
  }
  if (in.collective == Collective::Broadcast && algo == Algo::TwoShot) {
    return size + (in.forced ? ": two-shot, for " + algoVariable(in.collective) + "=" + algoName(*in.forced) +
                                   " (the GPU's pipelined broadcast: the chain runs on the host path)"
                             : std::string(" > 512 KiB: two-shot (the root sends part j to GPU j, which sends it to "
                                           "the others: the root's egress carries each byte once)"));
  }
  if (in.forced && *in.forced != Algo::OneShot) {
    return size + ": one-shot (" + algoVariable(in.collective) + "=" + algoName(*in.forced) +
           " runs on the host path only)";
  }
  if (in.collective == Collective::Barrier) return "one round of signals between every pair of GPUs";
  return size + ": one-shot (every GPU pushes what each other needs into its workspace)";
}

// ... and its protocol.
std::string gpuPlanReason(const GpuPlanInput& in, const GpuPlan& p, std::size_t block) {
  std::string s = gpuAlgoReason(in, p.algo, block);
  if (p.ll) {
    return s + "; LL protocol (data and flag in each 8-byte word: no fences, half the bandwidth), as the block is at "
               "most AXON_COLL_GPU_LL_MAX = " + bytesText(in.llMaxBytes);
  }
  if (p.algo == Algo::Chain) {
    return s + "; on the Simple protocol's slots, for any buffers (each member signals its neighbours only)";
  }
  if (p.direct && p.algo == Algo::Pushed) {
    return s + "; where every GPU's src and dst are at the same offsets of the symmetric heap (axon::malloc); two-shot "
               "on the Simple protocol for other buffers";
  }
  if (p.direct) {
    return s + "; Direct protocol where every GPU's buffers are at the same offsets of the symmetric heap "
               "(axon::malloc): the kernels read and write the GPUs' buffers themselves between two rounds "
               "of signals; Simple protocol for other buffers (" + notLlBecause(in, p.algo, block) + ")";
  }
  if (in.collective == Collective::Barrier) return s + "; Simple protocol (a barrier orders memory: LL does not)";
  std::string why = notLlBecause(in, p.algo, block);
  if (in.direct == DirectMode::Off) {
    why += "; AXON_COLL_GPU_DIRECT = 0 turns Direct off";
  } else if (auto costs = directCostsMore(in, p.algo, block)) {
    why += "; " + *costs;
  }
  return s + "; Simple protocol (" + why + ")";
}

}  // namespace

const char* algoName(Algo a) noexcept {
  auto i = static_cast<std::size_t>(a);
  return i < kAlgoNames.size() ? kAlgoNames[i] : "?";
}

std::optional<Algo> algoFromName(std::string_view name) {
  for (std::size_t i = 0; i < kAlgoNames.size(); ++i) {
    if (name == kAlgoNames[i]) return static_cast<Algo>(i);
  }
  return std::nullopt;
}

bool algorithmAllowed(Collective c, Algo a) {
  switch (c) {
    case Collective::Allreduce:
      return a == Algo::OneShot || a == Algo::TwoShot || a == Algo::Ring || a == Algo::Doubling ||
             a == Algo::Pipelined;
    case Collective::Broadcast: return a == Algo::OneShot || a == Algo::Chain;
    case Collective::Allgather: return a == Algo::OneShot || a == Algo::Ring;
    default: return a == Algo::OneShot;
  }
}

std::string allowedAlgorithms(Collective c) {
  std::string s;
  for (std::size_t i = 1; i < kAlgoNames.size(); ++i) {
    if (!algorithmAllowed(c, static_cast<Algo>(i))) continue;
    if (!s.empty()) s += ", ";
    s += kAlgoNames[i];
  }
  return s;
}

std::optional<Algo> forcedAlgo(const Env& env, Collective c) {
  const std::string& name = env.algo[static_cast<int>(c)];
  return name.empty() ? std::nullopt : algoFromName(name);
}

void checkForcedAlgorithms(const Env& env) {
  for (int i = 0; i < static_cast<int>(env.algo.size()); ++i) {
    const auto c = static_cast<Collective>(i);
    const std::string& value = env.algo[i];
    if (value.empty()) continue;
    auto algo = algoFromName(value);
    if (!algo || !algorithmAllowed(c, *algo)) {
      throw Error(ErrorCode::InvalidArgument,
                  algoVariable(c) + "='" + value + "' is not one of " + allowedAlgorithms(c));
    }
  }
}

Plan makePlan(const PlanInput& in) {
  const std::size_t e = in.elemBytes;
  const int n = in.members;
  const std::size_t bytes = in.count * e;
  Plan p{};
  if (n == 1) {
    p.algo = Algo::Local;
    p.chunkElems = std::max<std::size_t>(in.count, 1);
    p.chunks = 1;
    p.rounds = 0;
    p.reason = "a team of one PE: a local copy";
    return p;
  }
  if (in.forced) {
    p.algo = *in.forced;
    p.reason = bytesText(bytes) + " on " + std::to_string(n) + " PEs: " + algoName(*in.forced) + ", set by " +
               algoVariable(in.collective);
  } else {
    auto [algo, why] = choose(in, bytes);
    p.algo = algo;
    p.reason = std::move(why);
  }
  const std::size_t perHalf = std::max<std::size_t>(in.bufferBytes / e, 1);
  const auto nn = static_cast<std::size_t>(n);
  switch (in.collective) {
    case Collective::Barrier:
      p.chunkElems = 1;
      break;
    case Collective::ReduceScatter:
    case Collective::Alltoall:
      p.chunkElems = std::max<std::size_t>(perHalf / nn, 1);  // a round carries one chunk per member
      break;
    case Collective::Allreduce:
      p.chunkElems = p.algo == Algo::Ring ? perHalf * nn : perHalf;  // ring: a round carries one segment
      break;
    case Collective::Broadcast:
      if (p.algo == Algo::Chain) {
        // Small enough chunks that the chain's stages overlap (8 per call), big enough to amortize a
        // round (16 KiB), never more than a half.
        const std::size_t target = std::clamp<std::size_t>(ceilDiv(bytes, 8), 16 * 1024, in.bufferBytes);
        p.chunkElems = std::max<std::size_t>(target / e, 1);
      } else {
        p.chunkElems = perHalf;
      }
      break;
    default:
      p.chunkElems = perHalf;
      break;
  }
  p.chunks = std::max<std::size_t>(ceilDiv(in.count, p.chunkElems), 1);
  // Pipelined: a round carries one piece of one member's segment (the largest, ceil(count / n)).
  if (p.algo == Algo::Pipelined) p.chunks = std::max<std::size_t>(ceilDiv(ceilDiv(in.count, nn), p.chunkElems), 1);
  switch (p.algo) {
    case Algo::TwoShot: p.rounds = 2 * p.chunks; break;
    case Algo::Ring:
      p.rounds = p.chunks * static_cast<std::size_t>(in.collective == Collective::Allreduce
                                                         ? ringRoundsPerChunk(n)
                                                         : n - 1);
      break;
    case Algo::Chain: p.rounds = chainSteps(p.chunks, n); break;
    case Algo::Doubling: p.rounds = p.chunks * static_cast<std::size_t>(doublingRoundsPerChunk(n)); break;
    case Algo::Pipelined: p.rounds = p.chunks * nn; break;  // n - 1 to reduce-scatter, 1 to allgather
    default: p.rounds = p.chunks; break;
  }
  return p;
}

Plan makeLeaderPlan(const PlanInput& in) {
  PlanInput chosen = in;
  if (in.members > 1 && !(in.forced && algorithmAllowed(in.collective, *in.forced))) {
    const std::size_t bytes = in.count * in.elemBytes;
    const std::string size = bytesText(bytes) + " on " + std::to_string(in.members) + " node leaders";
    std::string why;
    if (in.collective == Collective::Allreduce) {
      // Ring rather than pipelined (AXON_ALGO_ALLREDUCE=pipelined): on 2 emulated nodes a 4 MiB
      // allreduce took 2.0 ms either way in good runs, the pipelined one 2.5-2.8 ms in others.
      chosen.forced = bytes <= 64 * 1024 ? Algo::Doubling : Algo::Ring;
      why = bytes <= 64 * 1024 ? size + ": recursive doubling (log2 rounds; latency-bound size)"
                               : size + " > 64 KiB: ring (each leader sends 2(n-1)/n of the data over its link)";
    } else if (in.collective == Collective::Allgather && in.members >= 3 && bytes * in.members >= 256 * 1024) {
      chosen.forced = Algo::Ring;
      why = size + ": ring (each leader sends each block once over its link)";
    }
    if (chosen.forced) {
      Plan p = makePlan(chosen);
      p.reason = why;
      return p;
    }
    chosen.forced.reset();
  }
  Plan p = makePlan(chosen);
  if (in.members > 1 && !in.forced) {
    // makePlan speaks of PEs: the step runs among leaders.
    const std::string pes = " PEs";
    if (auto at = p.reason.find(pes); at != std::string::npos) p.reason.replace(at, pes.size(), " node leaders");
  }
  return p;
}

GpuPlan makeGpuPlan(const GpuPlanInput& in) {
  const int n = in.members;
  const std::size_t block = in.count * in.elemBytes;  // one member's block
  GpuPlan p{};
  p.algo = Algo::OneShot;
  // Two-shot: allreduce as reduce-scatter then allgather; broadcast as scatter then allgather
  // (the root sends each byte once instead of once per member: its NVLink egress bounds one-shot).
  const bool twoShotKind = in.collective == Collective::Allreduce || in.collective == Collective::Broadcast;
  const std::size_t twoShotAbove = in.collective == Collective::Broadcast ? kGpuBroadcastTwoShotBytes : kGpuTwoShotBytes;
  const bool twoShot = twoShotKind && n > 2 && (in.forced ? *in.forced != Algo::OneShot : block > twoShotAbove);
  if (twoShot || pullsOnTwoGpus(in, block)) p.algo = Algo::TwoShot;
  p.ll = device::collUsesLl(block, p.algo == Algo::OneShot, llMaxFor(in), in.collective == Collective::Barrier);
  p.direct = !p.ll && in.collective != Collective::Barrier &&
             (in.direct == DirectMode::Always || (in.direct == DirectMode::Auto && directPays(in, p.algo, block)));
  if (!p.ll && chains(in, block)) {
    p.algo = Algo::Chain;
    p.direct = false;
  }
  // The pushed allreduce runs on the Direct protocol's buffers (every member's dst on the heap).
  const std::size_t pushMin = pushMinBytes(in);
  if (p.direct && in.collective == Collective::Allreduce && !in.forced && pushMin != 0 && block >= pushMin) {
    p.algo = Algo::Pushed;
  }
  p.chunkBytes = p.ll ? in.llChunkBytes : in.chunkBytes;
  if (in.wantReason) p.reason = gpuPlanReason(in, p, block);
  // A channel per 16 KiB of a member's block (LL: per LL chunk), up to the workspace's channels:
  // small calls use one block (fewest signals), larger ones spread over the SMs. One SM moves and
  // reduces a 16 KiB share in about the time a round's signal takes, so medium calls finish in
  // one round on several channels rather than several rounds on one.
  // Two-shot moves a part per member (broadcast: per member but the root) in each pair of rounds.
  const std::size_t parts = static_cast<std::size_t>(in.collective == Collective::Broadcast ? n - 1 : n);
  const std::size_t perChannelRound = p.algo != Algo::OneShot ? p.chunkBytes * parts : p.chunkBytes;
  const std::size_t share = p.ll ? p.chunkBytes : std::min(p.chunkBytes, kGpuChannelShareBytes);
  const std::size_t wanted = std::max<std::size_t>(ceilDiv(block, share), 1);
  p.channels = static_cast<int>(std::min<std::size_t>(wanted, static_cast<std::size_t>(in.maxChannels)));
  if (in.collective == Collective::Barrier) p.channels = 1;
  const std::size_t perChannel = ceilDiv(block, static_cast<std::size_t>(p.channels));
  // A block's threads cost time at every barrier and launch: on two H200s a 16 KiB one-shot
  // allreduce took 5.0 us inside a kernel of 128 threads and 6.5 us with 512. Shares that small
  // are latency-bound; larger ones need the loads that 512 threads keep in flight.
  p.threads = perChannel <= kGpuFewThreadsBytes ? 128 : 512;
  // LL: a thread per 16-byte unit of a round (8 data bytes), and one per member for the header
  // digests (the block's last threads), so that every wait runs at once: a thread that walks
  // several units pays a memory latency per unit (on four H200s an 8 KiB LL round took 15 us on
  // 128 threads, 4 us for 512 bytes), and one that checks a header too pays one more.
  if (p.ll) {
    const std::size_t units = ceilDiv(std::min(perChannel, p.chunkBytes), std::size_t{8});
    const std::size_t wanted = units + static_cast<std::size_t>(n);
    p.threads = static_cast<int>(std::clamp<std::size_t>(ceilDiv(wanted, std::size_t{32}) * 32, 64, 512));
  }
  const std::size_t chunks = std::max<std::size_t>(ceilDiv(perChannel, perChannelRound), 1);
  // Pushed: a round per chunk, and the Direct protocol's opening and closing rounds.
  // A broadcast's two-shot on 2 GPUs is Direct's pull, else the one-shot rounds.
  const bool twoRounds = p.algo == Algo::TwoShot && !(in.collective == Collective::Broadcast && n == 2);
  p.rounds = twoRounds ? 2 * chunks : p.algo == Algo::Pushed ? chunks + 2 : chunks;
  if (p.algo == Algo::Chain) {  // an opening round, then a piece a round
    const std::size_t unit = std::max<std::size_t>(16 / in.elemBytes, 1);
    const std::size_t elems = ceilDiv(ceilDiv(in.count, static_cast<std::size_t>(p.channels)), unit) * unit;
    p.rounds = device::collChainRounds(elems, device::collChainPiece(elems, in.elemBytes, p.chunkBytes, unit));
  }
  return p;
}

}  // namespace axon::coll
