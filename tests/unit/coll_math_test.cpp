// The collectives' host-tested math: partitions, ring and chain schedules (simulated to the end),
// workspace layouts (host and GPU), plans, GPU channel shares, AXON_ALGO_* parsing, float16/bfloat16 conversion and the reductions.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <vector>

#include "axon/half.hpp"
#include "coll/plan.hpp"
#include "coll/reduce_host.hpp"
#include "coll/schedule.hpp"
#include "axon/device/coll_types.hpp"
#include "coll/workspace_layout.hpp"
#include "core/env.hpp"
#include "expect_error.hpp"

namespace axon::coll {
namespace {

TEST(CollSchedule, BalancedPartsCoverTheRangeInOrder) {
  for (std::size_t count : {0u, 1u, 5u, 7u, 64u, 1001u}) {
    for (int parts = 1; parts <= 9; ++parts) {
      std::size_t next = 0, largest = 0, smallest = count;
      for (int i = 0; i < parts; ++i) {
        Range r = balancedPart(count, parts, i);
        EXPECT_EQ(r.offset, next) << count << "/" << parts << " part " << i;
        next += r.count;
        largest = std::max(largest, r.count);
        smallest = std::min(smallest, r.count);
      }
      EXPECT_EQ(next, count);
      EXPECT_LE(largest - smallest, 1u);
    }
  }
}

// Simulates the ring allreduce: which PEs' contributions each published partial holds. Every
// segment must end complete (all n contributions, each once) on every PE.
TEST(CollSchedule, RingAllreduceEndsWithEverySegmentCompleteEverywhere) {
  for (int n = 2; n <= 9; ++n) {
    // published[pe] = (segment, contributors) of pe's last publication
    std::vector<std::pair<int, std::uint64_t>> published(n);
    std::vector<std::vector<std::uint64_t>> final(n, std::vector<std::uint64_t>(n, 0));
    for (int t = 0; t < ringSteps(n); ++t) {
      std::vector<std::pair<int, std::uint64_t>> next(n);
      for (int me = 0; me < n; ++me) {
        const int seg = ringSegment(me, t, n);
        std::uint64_t have = 0;
        if (t > 0) {
          auto [lseg, lhave] = published[mod(me - 1, n)];
          ASSERT_EQ(lseg, seg) << "n " << n << " step " << t << " PE " << me << " got another segment";
          have = lhave;
        }
        if (t <= n - 1) {
          ASSERT_EQ(have & (1ull << me), 0u) << "PE " << me << " would add its part twice";
          have |= 1ull << me;
        }
        if (t >= n - 1) final[me][seg] = have;
        next[me] = {seg, have};
      }
      published = next;
    }
    const std::uint64_t all = (1ull << n) - 1;
    for (int me = 0; me < n; ++me) {
      for (int s = 0; s < n; ++s) EXPECT_EQ(final[me][s], all) << "n " << n << " PE " << me << " segment " << s;
    }
    EXPECT_EQ(ringRoundsPerChunk(n), ringSteps(n) - 1);
  }
}

TEST(CollSchedule, RingAllgatherDeliversEveryBlock) {
  for (int n = 2; n <= 9; ++n) {
    for (int me = 0; me < n; ++me) {
      std::set<int> seen;
      for (int t = 0; t < n; ++t) seen.insert(ringGatherBlock(me, t, n));
      EXPECT_EQ(seen.size(), static_cast<std::size_t>(n));
      // What I hold at step t is what my left neighbour held at step t - 1.
      for (int t = 1; t < n; ++t) EXPECT_EQ(ringGatherBlock(me, t, n), ringGatherBlock(mod(me - 1, n), t - 1, n));
    }
  }
}

TEST(CollSchedule, ChainVisitsEveryPositionOnceAndEndsInTime) {
  for (int n = 2; n <= 9; ++n) {
    for (int root = 0; root < n; ++root) {
      std::set<int> members;
      for (int d = 0; d < n; ++d) {
        members.insert(chainMember(d, root, n));
        EXPECT_EQ(chainPosition(chainMember(d, root, n), root, n), d);
      }
      EXPECT_EQ(members.size(), static_cast<std::size_t>(n));
    }
    for (std::size_t chunks : {1u, 2u, 8u}) {
      // The last chunk leaves position n-2 at step chunks-1+n-2: the last publishing step.
      EXPECT_EQ(chainSteps(chunks, n), chunks - 1 + static_cast<std::size_t>(n) - 2 + 1);
    }
  }
}

TEST(CollLayout, FlagsOnTheirOwnLinesHalvesPageAligned) {
  for (int n : {1, 2, 8, 100}) {
    WorkspaceLayout l = workspaceLayout(n, 256 * 1024 + 5);
    EXPECT_GE(l.ready, sizeof(WorkspaceHeader));
    EXPECT_EQ(l.ready % 64, 0u);
    EXPECT_EQ(l.ack, l.ready + 64u * n);
    EXPECT_GE(l.half[0], l.ack + 64u * n);
    EXPECT_EQ(l.half[0] % 4096, 0u);
    EXPECT_EQ(l.halfBytes, 256u * 1024 + 4096);
    EXPECT_EQ(l.half[1], l.half[0] + l.halfBytes);
    EXPECT_EQ(l.total, l.half[1] + l.halfBytes);
  }
}

TEST(CollPlan, RoundsFollowTheAlgorithm) {
  const std::size_t buf = 4096;
  auto plan = [&](Collective c, std::size_t count, int n, std::optional<Algo> forced = std::nullopt) {
    return makePlan({c, count, 4, n, buf, forced});
  };
  EXPECT_EQ(plan(Collective::Allreduce, 100, 1).algo, Algo::Local);
  EXPECT_EQ(plan(Collective::Allreduce, 100, 1).rounds, 0u);
  // count 0 still takes a round: the call synchronizes, and a mismatch is found.
  EXPECT_EQ(plan(Collective::Allreduce, 0, 4).rounds, 1u);
  EXPECT_EQ(plan(Collective::Allreduce, 1024, 4).rounds, 1u);    // 4 KiB: one half
  EXPECT_EQ(plan(Collective::Allreduce, 1025, 4).rounds, 2u);
  EXPECT_EQ(plan(Collective::Allreduce, 4096, 4, Algo::TwoShot).rounds, 8u);
  // ring: a round carries one segment (a quarter of a 4-PE chunk): 4096 elements = 1 chunk of 6 rounds
  EXPECT_EQ(plan(Collective::Allreduce, 4096, 4, Algo::Ring).rounds, 6u);
  EXPECT_EQ(plan(Collective::Allreduce, 4097, 4, Algo::Ring).rounds, 12u);
  EXPECT_EQ(plan(Collective::Allgather, 2048, 5, Algo::Ring).rounds, 2u * 4);
  // reduce_scatter and alltoall: a round carries one piece per member
  EXPECT_EQ(plan(Collective::ReduceScatter, 256, 4).rounds, 1u);
  EXPECT_EQ(plan(Collective::ReduceScatter, 257, 4).rounds, 2u);
  // chain: chunks + n - 2
  Plan chain = plan(Collective::Broadcast, 4 * 1024, 4, Algo::Chain);
  EXPECT_EQ(chain.rounds, chain.chunks + 2);
  EXPECT_NE(plan(Collective::Broadcast, 4, 4, Algo::Chain).reason.find("AXON_ALGO_BROADCAST"), std::string::npos);
}

TEST(CollPlan, DefaultChoicesAndReasons) {
  auto plan = [](Collective c, std::size_t bytes, int n) { return makePlan({c, bytes, 1, n, 256 * 1024, {}}); };
  EXPECT_EQ(plan(Collective::Allreduce, 1024, 8).algo, Algo::OneShot);
  EXPECT_EQ(plan(Collective::Allreduce, 1 << 20, 2).algo, Algo::OneShot);
  Plan big = plan(Collective::Allreduce, 1 << 20, 4);
  EXPECT_EQ(big.algo, Algo::TwoShot);
  EXPECT_NE(big.reason.find("1 MiB on 4 PEs"), std::string::npos) << big.reason;
  EXPECT_EQ(plan(Collective::Broadcast, 4 << 20, 4).algo, Algo::Chain);
  EXPECT_EQ(plan(Collective::Broadcast, 4 << 20, 2).algo, Algo::OneShot);
}

TEST(CollPlan, AlgoVariablesAreParsedAndChecked) {
  EXPECT_EQ(algoVariable(Collective::ReduceScatter), "AXON_ALGO_REDUCE_SCATTER");
  Env env = Env::fromVars({{"AXON_ALGO_ALLREDUCE", "ring"}, {"AXON_COLL_BUFFER", "64K"}});
  EXPECT_EQ(env.algo[static_cast<int>(Collective::Allreduce)], "ring");
  EXPECT_EQ(env.collBuffer, 64u * 1024);
  std::string m = test::errorMessageOf([] { checkForcedAlgorithms(Env::fromVars({{"AXON_ALGO_BROADCAST", "ring"}})); },
                                       ErrorCode::InvalidArgument);
  EXPECT_TRUE(test::contains(m, "AXON_ALGO_BROADCAST='ring' is not one of oneshot, chain"));
  m = test::errorMessageOf([] { Env::fromVars({{"AXON_COLL_BUFFER", "1K"}}); }, ErrorCode::InvalidArgument);
  EXPECT_TRUE(test::contains(m, "AXON_COLL_BUFFER"));
}

TEST(CollHalf, KnownBitPatterns) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);  // rounds up to infinity
  EXPECT_EQ(floatToHalf(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(floatToHalf(0x1p-25f), 0x0000);  // ties to even: zero
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-11f), 0x3c00);  // tie, to even
  EXPECT_EQ(floatToHalf(1.0f + 0x1p-10f + 0x1p-11f), 0x3c02);  // tie, to even (up)
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(std::nanf("")))));
  EXPECT_EQ(halfToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(halfToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-8f), 0x3f80);           // tie, to even
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-7f + 0x1p-8f), 0x3f82);  // tie, to even (up)
  EXPECT_EQ(bf16ToFloat(0xc040), -3.0f);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(std::nanf("")))));
}

TEST(CollHalf, EveryHalfRoundTrips) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = halfToFloat(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(floatToHalf(f), h) << std::hex << h;
  }
}

TEST(CollReduce, IntegersWrapAndCompareSigned) {
  std::int8_t a[3] = {100, -128, -1}, b[3] = {100, -1, 1}, out[3];
  reduceHost(out, a, b, 3, DataType::Int8, ReduceOp::Sum);
  EXPECT_EQ(out[0], -56);
  EXPECT_EQ(out[1], 127);
  reduceHost(out, a, b, 3, DataType::Int8, ReduceOp::Min);
  EXPECT_EQ(out[1], -128);
  EXPECT_EQ(out[2], -1);
  std::uint64_t x[1] = {~0ull}, y[1] = {3};
  reduceHost(x, x, y, 1, DataType::Uint64, ReduceOp::Prod);
  EXPECT_EQ(x[0], ~0ull - 2);
  std::uint32_t u[1] = {5}, v[1] = {0xffffffffu};
  reduceHost(u, u, v, 1, DataType::Uint32, ReduceOp::Max);
  EXPECT_EQ(u[0], 0xffffffffu);
}

TEST(CollReduce, HalfTypesComputeInFloat) {
  std::uint16_t a[2] = {floatToHalf(1.5f), floatToHalf(2048.0f)}, b[2] = {floatToHalf(2.25f), floatToHalf(1.0f)};
  reduceHost(a, a, b, 2, DataType::Float16, ReduceOp::Sum);
  EXPECT_EQ(halfToFloat(a[0]), 3.75f);
  EXPECT_EQ(halfToFloat(a[1]), 2048.0f);  // 2049 is not a float16: ties to even
  std::uint16_t c[1] = {floatToBf16(3.0f)}, d[1] = {floatToBf16(-0.5f)};
  reduceHost(c, c, d, 1, DataType::BFloat16, ReduceOp::Prod);
  EXPECT_EQ(bf16ToFloat(c[0]), -1.5f);
  float nan = std::nanf(""), one = 1.0f, r;
  reduceHost(&r, &nan, &one, 1, DataType::Float32, ReduceOp::Max);
  EXPECT_TRUE(std::isnan(r));
}

TEST(GpuCollMath, ChannelSharesCoverTheBlockInAlignedPieces) {
  for (std::size_t len : {0u, 1u, 15u, 16u, 17u, 1031u, 70001u, 600000u}) {
    for (int channels : {1, 2, 3, 16}) {
      for (std::size_t unit : {1u, 4u, 16u}) {
        std::size_t next = 0;
        for (int c = 0; c < channels; ++c) {
          std::size_t lo = 0, hi = 0;
          device::collChannelRange(len, channels, c, unit, &lo, &hi);
          EXPECT_EQ(lo, next) << len << " " << channels << " " << c;
          EXPECT_LE(lo, hi);
          if (hi < len) {
            EXPECT_EQ(hi % unit, 0u) << "a share ends unaligned";
          }
          next = hi;
        }
        EXPECT_EQ(next, len);
      }
    }
  }
}

TEST(GpuCollMath, DirectPartsCoverTheRangeInAlignedPieces) {
  // The parts of a channel's range that Direct calls split among members (allreduce: n parts;
  // two-shot broadcast: n - 1): in order, disjoint, covering it, each but the last whole units.
  for (std::size_t len : {0ul, 1ul, 3ul, 15ul, 16ul, 17ul, 1000ul, 4096ul, 100003ul}) {
    for (int parts : {1, 2, 3, 4, 7, 8}) {
      for (std::size_t unit : {1ul, 4ul, 16ul}) {
        std::size_t next = 0;
        for (int k = 0; k < parts; ++k) {
          device::SizeT lo = 0, hi = 0;
          device::collPartRange(len, parts, k, unit, &lo, &hi);
          ASSERT_EQ(lo, next) << "len " << len << " parts " << parts << " unit " << unit << " part " << k;
          ASSERT_LE(lo, hi);
          ASSERT_LE(hi, len);
          if (hi < len) {
            EXPECT_EQ((hi - lo) % unit, 0u);
          }
          if (lo < hi) {
            EXPECT_EQ(lo % unit, 0u);  // empty parts sit at the end
          }
          next = hi;
        }
        EXPECT_EQ(next, len) << "len " << len << " parts " << parts << " unit " << unit;
      }
    }
  }
}

TEST(GpuCollMath, LayoutKeepsWritersOnTheirOwnLines) {
  const auto l = device::collLayout(4, 16, 64 * 1024, 8 * 1024);
  EXPECT_GE(l.rounds, sizeof(device::CollError));
  EXPECT_EQ(l.rounds % device::kCollLine, 0u);
  EXPECT_EQ(l.ready, l.rounds + 16 * device::kCollLine);
  EXPECT_EQ(l.records, l.ready + 16 * 4 * device::kCollLine);
  EXPECT_GE(l.ll, l.records + 16 * 2 * 4 * device::kCollLine);
  EXPECT_EQ(l.ll % 4096, 0u);
  // An LL slot holds the record's words, then two LL bytes per data byte, on whole line pairs
  // (so that 16-byte units never straddle two senders' slots).
  EXPECT_GE(l.llSlotBytes, device::kCollLlHeaderUnits * device::kCollLlUnit + 2 * 8 * 1024);
  EXPECT_LT(l.llSlotBytes, device::kCollLlHeaderUnits * device::kCollLlUnit + 2 * 8 * 1024 + 128);
  EXPECT_EQ(l.llSlotBytes % 128, 0u);
  EXPECT_EQ(device::kCollLlRecordUnits * 8, sizeof(device::CollRecord));
  EXPECT_EQ(device::kCollLlHeaderUnits, device::kCollLlRecordUnits + 1);
  EXPECT_GE(l.data, l.ll + 16ull * 2 * 4 * l.llSlotBytes);
  EXPECT_EQ(l.data % 4096, 0u);
  EXPECT_EQ(l.total, l.data + 16ull * 2 * 4 * 64 * 1024);
  EXPECT_LE(sizeof(device::CollSlotRecord), device::kCollLine);
  EXPECT_EQ(sizeof(device::CollSlotRecord), sizeof(device::CollRecord) + 24);  // round, two offsets
}

TEST(GpuCollMath, PlanPicksAlgorithmAndChannels) {
  // LL off here: these are the Simple protocol's channel counts (PlanPicksTheProtocol covers LL).
  auto plan = [](Collective c, std::size_t count, int n, std::optional<Algo> forced = std::nullopt) {
    return makeGpuPlan({c, count, 4, n, 16, 64 * 1024, 0, 8 * 1024, forced, true, DirectMode::Auto, 0});  // never pushed
  };
  EXPECT_EQ(plan(Collective::Allreduce, 2, 4).algo, Algo::OneShot);
  EXPECT_EQ(plan(Collective::Allreduce, 2, 4).channels, 1);
  EXPECT_EQ(plan(Collective::Allreduce, 2, 4).rounds, 1u);
  EXPECT_EQ(plan(Collective::Allreduce, 1 << 20, 2).algo, Algo::OneShot);   // 2 GPUs: one-shot
  EXPECT_EQ(plan(Collective::Allreduce, 1 << 20, 4).algo, Algo::TwoShot);   // 4 MiB on 4
  EXPECT_EQ(plan(Collective::Allreduce, 1 << 20, 4).channels, 16);
  EXPECT_EQ(plan(Collective::Allreduce, 1 << 14, 4).channels, 4);           // 64 KiB: 16 KiB shares
  EXPECT_EQ(plan(Collective::Allreduce, 1 << 14, 4).rounds, 1u);
  EXPECT_EQ(plan(Collective::Allreduce, 1 << 14, 4).threads, 128);          // small shares
  EXPECT_EQ(plan(Collective::Allreduce, 1 << 20, 2).threads, 512);
  EXPECT_EQ(plan(Collective::Allreduce, 1 << 22, 2).rounds, 16u);           // 16 MiB: 16 x 1 MiB
  EXPECT_EQ(plan(Collective::Allreduce, 1 << 20, 4, Algo::OneShot).algo, Algo::OneShot);
  const auto ring = plan(Collective::Allreduce, 8, 4, Algo::Ring);
  EXPECT_EQ(ring.algo, Algo::TwoShot);
  EXPECT_NE(ring.reason.find("host path only"), std::string::npos) << ring.reason;
  // Broadcast: two-shot (scatter, then allgather) above 512 KiB on more than 2 GPUs, and for a
  // forced chain (which runs on the host path only).
  EXPECT_EQ(plan(Collective::Broadcast, 128 * 1024, 4).algo, Algo::OneShot);      // 512 KiB
  EXPECT_EQ(plan(Collective::Broadcast, 128 * 1024 + 4, 4).algo, Algo::TwoShot);
  EXPECT_EQ(plan(Collective::Broadcast, 1 << 20, 2).algo, Algo::OneShot);         // 2 GPUs
  EXPECT_EQ(plan(Collective::Broadcast, 1 << 22, 4).rounds, 2u * 6);  // 16 MiB: 16 channels x 1 MiB, 3 x 64K a pair
  const auto chain = plan(Collective::Broadcast, 8, 4, Algo::Chain);
  EXPECT_EQ(chain.algo, Algo::TwoShot);
  EXPECT_NE(chain.reason.find("host path"), std::string::npos) << chain.reason;
  EXPECT_EQ(plan(Collective::Broadcast, 8, 4, Algo::OneShot).algo, Algo::OneShot);
  EXPECT_EQ(plan(Collective::Barrier, 0, 4).channels, 1);
  EXPECT_EQ(plan(Collective::Allgather, 0, 4).rounds, 1u);  // count 0 still synchronizes
  EXPECT_FALSE(plan(Collective::Allreduce, 2, 4).ll);
}

TEST(GpuCollMath, PlanPicksTheProtocol) {
  // float elements; LL up to 64 KiB per member, 8 KiB of data per LL round and channel.
  auto plan = [](Collective c, std::size_t count, int n, std::optional<Algo> forced = std::nullopt) {
    return makeGpuPlan({c, count, 4, n, 16, 64 * 1024, 64 * 1024, 8 * 1024, forced, true, DirectMode::Auto, 0});
  };
  const auto tiny = plan(Collective::Allreduce, 2, 2);
  EXPECT_TRUE(tiny.ll);
  EXPECT_EQ(tiny.channels, 1);
  EXPECT_EQ(tiny.chunkBytes, 8u * 1024);
  EXPECT_NE(tiny.reason.find("LL protocol"), std::string::npos) << tiny.reason;
  const auto edge = plan(Collective::Allreduce, 16 * 1024, 4);  // 64 KiB: still LL, 8 channels
  EXPECT_TRUE(edge.ll);
  EXPECT_EQ(edge.channels, 8);
  EXPECT_EQ(edge.rounds, 1u);
  // A thread per LL unit (8 data bytes) of a channel's round and per member, 64 to 512.
  EXPECT_EQ(tiny.threads, 64);
  EXPECT_EQ(plan(Collective::Allreduce, 504, 4).threads, 256);  // 2016 B: 252 units + 4
  EXPECT_EQ(plan(Collective::Allreduce, 512, 4).threads, 288);  // 2 KiB: 256 units + 4
  EXPECT_EQ(edge.threads, 512);                                 // 8 KiB per channel and round
  const auto over = plan(Collective::Allreduce, 16 * 1024 + 1, 4);
  EXPECT_FALSE(over.ll);
  EXPECT_EQ(over.chunkBytes, 64u * 1024);
  EXPECT_NE(over.reason.find("over AXON_COLL_GPU_LL_MAX"), std::string::npos) << over.reason;
  // Over LL: the Direct protocol (Simple where the buffers are not symmetric), unless turned off;
  // but a one-shot allreduce on more than 2 GPUs runs faster on Simple.
  const auto overCopy = plan(Collective::Allgather, 16 * 1024 + 1, 4);
  EXPECT_TRUE(overCopy.direct);
  EXPECT_NE(overCopy.reason.find("Direct protocol where every GPU's buffers"), std::string::npos) << overCopy.reason;
  EXPECT_FALSE(over.direct);
  EXPECT_NE(over.reason.find("one-shot allreduce to 256 KiB is faster on Simple"), std::string::npos) << over.reason;
  EXPECT_TRUE(plan(Collective::Allreduce, 16 * 1024 + 1, 4, Algo::TwoShot).direct);
  EXPECT_TRUE(plan(Collective::Allreduce, 1 << 20, 4, Algo::OneShot).direct);  // a forced 4 MiB one-shot: one pass
  // reduce on 2 GPUs: Simple at every size; on more, Simple to 1 MiB, then Direct below the
  // chained reduce's 128 MiB.
  EXPECT_FALSE(plan(Collective::Reduce, 8u << 20, 2).direct);  // 32 MiB
  EXPECT_NE(plan(Collective::Reduce, 8u << 20, 2).reason.find("reduce on 2 GPUs is faster on Simple"),
            std::string::npos) << plan(Collective::Reduce, 8u << 20, 2).reason;
  EXPECT_TRUE(plan(Collective::Reduce, (8u << 20) - 4, 4).direct);
  // broadcast on 2 GPUs from 32 MiB: the other GPU pulls the root's src (two-shot, one part), on Direct.
  const auto pull = plan(Collective::Broadcast, 8u << 20, 2);
  EXPECT_EQ(pull.algo, Algo::TwoShot);
  EXPECT_TRUE(pull.direct);
  EXPECT_NE(pull.reason.find("the other GPU reads the root's src"), std::string::npos) << pull.reason;
  EXPECT_NE(pull.reason.find("Simple protocol for other buffers (LL runs one-shot only)"), std::string::npos)
      << pull.reason;
  EXPECT_EQ(pull.rounds, plan(Collective::Broadcast, 8u << 20, 2, Algo::OneShot).rounds);  // one-shot's, on Simple
  EXPECT_NE(plan(Collective::Broadcast, 8u << 20, 2, Algo::Chain).reason.find("runs on the host path only"),
            std::string::npos);
  EXPECT_EQ(plan(Collective::Broadcast, (8u << 20) - 1, 2).algo, Algo::OneShot);
  EXPECT_EQ(plan(Collective::Broadcast, 8u << 20, 2, Algo::OneShot).algo, Algo::OneShot);
  GpuPlanInput pullOff{Collective::Broadcast, 8u << 20, 4, 2, 16, 64 * 1024, 64 * 1024, 8 * 1024,
                       std::nullopt, true, DirectMode::Off, std::nullopt};
  EXPECT_EQ(makeGpuPlan(pullOff).algo, Algo::OneShot);  // pulls need Direct
  EXPECT_FALSE(tiny.direct);
  GpuPlanInput noDirect{Collective::Allreduce, 16 * 1024 + 1, 4, 4, 16, 64 * 1024, 64 * 1024, 8 * 1024,
                        std::nullopt, true, DirectMode::Off, std::nullopt};
  EXPECT_FALSE(makeGpuPlan(noDirect).direct);
  EXPECT_EQ(makeGpuPlan(noDirect).channels, over.channels);  // the same plan otherwise
  EXPECT_NE(makeGpuPlan(noDirect).reason.find("AXON_COLL_GPU_DIRECT = 0"), std::string::npos);
  EXPECT_FALSE(plan(Collective::Barrier, 0, 4).direct);
  EXPECT_TRUE(plan(Collective::Allreduce, 2, 4, Algo::TwoShot).direct);
  // Where Direct was measured slower: one-shot broadcast, and 2 GPUs below 32 MiB; `always` there too.
  EXPECT_FALSE(plan(Collective::Broadcast, 64 * 1024, 4).direct);          // 256 KiB: one-shot
  EXPECT_TRUE(plan(Collective::Broadcast, 1 << 20, 4).direct);             // 4 MiB: two-shot
  EXPECT_FALSE(plan(Collective::Allgather, 1 << 20, 2).direct);            // 4 MiB on 2 GPUs
  // reduce_scatter at every size: Simple (pushes) beat Direct (loads); reduce to 1 MiB the same.
  EXPECT_FALSE(plan(Collective::ReduceScatter, 1 << 16, 4).direct);  // 256 KiB blocks
  EXPECT_FALSE(plan(Collective::ReduceScatter, 1 << 19, 4).direct);
  EXPECT_TRUE(makeGpuPlan({Collective::ReduceScatter, 1 << 16, 4, 4, 16, 64 * 1024, 64 * 1024, 8 * 1024, std::nullopt,
                           false, DirectMode::Always, 0})
                  .direct);
  EXPECT_FALSE(plan(Collective::Reduce, 1 << 18, 4).direct);  // 1 MiB
  EXPECT_NE(plan(Collective::Reduce, 1 << 18, 4).reason.find("a reduce to 1 MiB is faster on Simple"),
            std::string::npos) << plan(Collective::Reduce, 1 << 18, 4).reason;
  EXPECT_TRUE(plan(Collective::Reduce, (1 << 18) + 4, 4).direct);
  EXPECT_NE(plan(Collective::ReduceScatter, 1 << 19, 4).reason.find("faster on Simple (pushes)"), std::string::npos)
      << plan(Collective::ReduceScatter, 1 << 19, 4).reason;
  EXPECT_NE(plan(Collective::Allgather, 1 << 20, 2).reason.find("on 2 GPUs Direct pays from 32 MiB"),
            std::string::npos) << plan(Collective::Allgather, 1 << 20, 2).reason;
  EXPECT_TRUE(plan(Collective::Allgather, 8 << 20, 2).direct);             // 32 MiB on 2 GPUs
  EXPECT_TRUE(plan(Collective::Allgather, 8 << 20, 3).direct);
  GpuPlanInput always{Collective::Broadcast, 1 << 10, 4, 2, 16, 64 * 1024, 0, 8 * 1024, std::nullopt, true,
                      DirectMode::Always, std::nullopt};
  EXPECT_TRUE(makeGpuPlan(always).direct);
  always.collective = Collective::Barrier;
  EXPECT_FALSE(makeGpuPlan(always).direct);
  EXPECT_FALSE(plan(Collective::Allreduce, 2, 4, Algo::TwoShot).ll);  // LL runs one-shot only
  EXPECT_FALSE(plan(Collective::Barrier, 0, 4).ll);  // a barrier orders memory: always Simple
  EXPECT_NE(plan(Collective::Barrier, 0, 4).reason.find("orders memory"), std::string::npos);
  EXPECT_TRUE(plan(Collective::Alltoall, 0, 4).ll);
  // alltoall on 2 GPUs: LL to 64 KiB blocks only, whatever AXON_COLL_GPU_LL_MAX allows above.
  auto alltoall = [](std::size_t count, int n) {
    return makeGpuPlan({Collective::Alltoall, count, 4, n, 64, 128 * 1024, 128 * 1024, 1024, std::nullopt, true,
                        DirectMode::Auto, std::nullopt});
  };
  EXPECT_TRUE(alltoall(16 * 1024, 2).ll);        // 64 KiB blocks
  EXPECT_FALSE(alltoall(16 * 1024 + 1, 2).ll);
  EXPECT_NE(alltoall(16 * 1024 + 1, 2).reason.find("an alltoall on 2 GPUs takes LL to blocks of 64 KiB only"),
            std::string::npos) << alltoall(16 * 1024 + 1, 2).reason;
  EXPECT_NE(alltoall(64 * 1024, 2).reason.find("the block is over AXON_COLL_GPU_LL_MAX = 128 KiB"),
            std::string::npos) << alltoall(64 * 1024, 2).reason;  // 256 KiB blocks: over LL_MAX itself
  EXPECT_TRUE(alltoall(32 * 1024, 4).ll);        // 128 KiB blocks on 4 GPUs
  EXPECT_FALSE(alltoall(32 * 1024 + 1, 4).ll);
  // The host and the device-callable calls share the rule.
  EXPECT_TRUE(device::collUsesLl(64 * 1024, true, 64 * 1024, false));
  EXPECT_FALSE(device::collUsesLl(64 * 1024 + 1, true, 64 * 1024, false));
  EXPECT_FALSE(device::collUsesLl(8, false, 64 * 1024, false));
  EXPECT_FALSE(device::collUsesLl(0, true, 0, false));  // 0 turns LL off
  EXPECT_FALSE(device::collUsesLl(0, true, 64 * 1024, true));  // barriers never
}

TEST(GpuCollMath, PlanPushesLargeAllreduces) {
  // AXON_COLL_GPU_PUSH_MIN = 32 MiB: allreduce blocks from there take the pushed algorithm on the
  // Direct protocol's buffers, on 2 GPUs too; a round per chunk of n x 128 KiB, plus two.
  auto plan = [](Collective c, std::size_t count, int n, DirectMode direct = DirectMode::Auto,
                 std::optional<Algo> forced = std::nullopt) {
    return makeGpuPlan({c, count, 4, n, 64, 128 * 1024, 128 * 1024, 1024, forced, true, direct, 32u << 20});
  };
  const auto big = plan(Collective::Allreduce, 8u << 20, 4);  // 32 MiB of floats
  EXPECT_EQ(big.algo, Algo::Pushed);
  EXPECT_TRUE(big.direct);
  EXPECT_EQ(big.channels, 64);
  EXPECT_EQ(big.rounds, 1u + 2);  // 512 KiB per channel: one round of 4 x 128 KiB
  EXPECT_NE(big.reason.find("pushed two-shot"), std::string::npos) << big.reason;
  EXPECT_NE(big.reason.find("from 32 MiB (AXON_COLL_GPU_PUSH_MIN)"), std::string::npos) << big.reason;
  EXPECT_EQ(plan(Collective::Allreduce, 128u << 20, 4).rounds, 16u + 2);  // 512 MiB: 8 MiB a channel
  EXPECT_EQ(plan(Collective::Allreduce, (8u << 20) - 1, 4).algo, Algo::TwoShot);
  EXPECT_EQ(plan(Collective::Allreduce, 8u << 20, 2).algo, Algo::Pushed);
  EXPECT_EQ(plan(Collective::Allreduce, 8u << 20, 4, DirectMode::Off).algo, Algo::TwoShot);
  EXPECT_EQ(plan(Collective::Allreduce, 8u << 20, 4, DirectMode::Auto, Algo::TwoShot).algo, Algo::TwoShot);
  EXPECT_EQ(plan(Collective::Allreduce, 8u << 20, 2, DirectMode::Off).algo, Algo::OneShot);
  EXPECT_EQ(plan(Collective::ReduceScatter, 8u << 20, 4).algo, Algo::OneShot);  // not reduce_scatter
  EXPECT_EQ(plan(Collective::Allgather, 8u << 20, 4).algo, Algo::OneShot);
  // Allreduce only: broadcast keeps its Direct form, reduce its own (chained from 128 MiB).
  EXPECT_EQ(plan(Collective::Reduce, (8u << 20) - 4, 4).algo, Algo::OneShot);
  EXPECT_EQ(plan(Collective::Broadcast, 8u << 20, 4).algo, Algo::TwoShot);
  EXPECT_EQ(plan(Collective::Broadcast, 8u << 20, 4).rounds, 2u * 2);  // 512 KiB a channel: 2 x (3 x 128 KiB)
  // Unset: from 16 MiB.
  auto measured = [](Collective c, std::size_t bytes, int n) {
    return makeGpuPlan(
               {c, bytes / 4, 4, n, 64, 128 * 1024, 128 * 1024, 1024, std::nullopt, true, DirectMode::Auto, std::nullopt})
        .algo;
  };
  EXPECT_EQ(measured(Collective::Allreduce, 16u << 20, 4), Algo::Pushed);
  EXPECT_EQ(measured(Collective::Allreduce, (16u << 20) - 4, 4), Algo::TwoShot);
  EXPECT_EQ(measured(Collective::Allreduce, 32u << 20, 2), Algo::Pushed);  // Direct on 2 GPUs from 32 MiB
  EXPECT_EQ(measured(Collective::Allreduce, 16u << 20, 2), Algo::OneShot);
  // Not a choice AXON_ALGO_ALLREDUCE can make.
  EXPECT_EQ(algoFromName("pushed"), Algo::Pushed);
  EXPECT_FALSE(algorithmAllowed(Collective::Allreduce, Algo::Pushed));
  // 0: never.
  EXPECT_EQ(makeGpuPlan({Collective::Allreduce, 128u << 20, 4, 4, 64, 128 * 1024, 128 * 1024, 1024, std::nullopt,
                         false, DirectMode::Auto, 0}).algo,
            Algo::TwoShot);
}

TEST(GpuCollMath, ChainPiecesCoverAChannelInAlignedRounds) {
  // A quarter of the channel, 16-byte aligned, from 16 KiB to a slot (128 KiB here).
  // Elements in, elements out.
  EXPECT_EQ(device::collChainPiece(1u << 16, 4, 128 * 1024, 4), (1u << 16) / 4);  // 256 KiB of floats: 64 KiB pieces
  EXPECT_EQ(device::collChainPiece(1u << 18, 4, 128 * 1024, 4), 32u * 1024);      // 1 MiB: capped at the 128 KiB slot
  EXPECT_EQ(device::collChainPiece(1000, 4, 128 * 1024, 4), 4u * 1024);           // at least 16 KiB
  EXPECT_EQ(device::collChainPiece(1000, 2, 4 * 1024, 8), 2u * 1024);              // a 4 KiB slot caps that too
  EXPECT_EQ(device::collChainPiece(16 * 1001, 1, 1u << 20, 16) % 16, 0u);           // whole vectors
  for (std::size_t len : {0ul, 1ul, 4095ul, 4096ul, 4097ul, 1ul << 20, (1ul << 20) + 3}) {
    const std::size_t piece = device::collChainPiece(len, 4, 16 * 1024, 4);
    const std::size_t rounds = device::collChainRounds(len, piece);
    // An opening round, then pieces that cover the channel, the last one not empty (but for len 0).
    EXPECT_GE((rounds - 1) * piece, len) << len;
    EXPECT_LT((rounds - 2) * piece, std::max<std::size_t>(len, 1)) << len;
  }
  EXPECT_EQ(device::collChainRounds(0, 4096), 2u);
}

TEST(GpuCollMath, PlanChainsLargeReducesOnMoreThanTwoGpus) {
  auto plan = [](std::size_t bytes, int n, std::optional<std::size_t> chainMin,
                 DirectMode direct = DirectMode::Auto) {
    GpuPlanInput in{Collective::Reduce, bytes / 4, 4, n, 64, 128 * 1024, 128 * 1024, 1024, std::nullopt, true, direct,
                    std::nullopt};
    in.chainMinBytes = chainMin;
    return makeGpuPlan(in);
  };
  const auto big = plan(256u << 20, 4, std::nullopt);  // unset: from 128 MiB
  EXPECT_EQ(big.algo, Algo::Chain);
  EXPECT_FALSE(big.direct);  // on the Simple protocol's slots: any buffers
  EXPECT_FALSE(big.ll);
  EXPECT_EQ(big.channels, 64);
  EXPECT_EQ(big.threads, 512);
  EXPECT_EQ(big.rounds, 1u + 32);  // 4 MiB a channel: 32 pieces of 128 KiB (a slot)
  EXPECT_NE(big.reason.find("from 128 MiB (AXON_COLL_GPU_CHAIN_MIN): chained"), std::string::npos) << big.reason;
  EXPECT_NE(big.reason.find("Simple protocol's slots"), std::string::npos) << big.reason;
  EXPECT_EQ(plan(128u << 20, 3, std::nullopt).algo, Algo::Chain);
  EXPECT_EQ(plan((128u << 20) - 4, 4, std::nullopt).algo, Algo::OneShot);
  EXPECT_EQ(plan(64u << 20, 4, 32u << 20).rounds, 1u + 8);   // 1 MiB a channel: 8 pieces of 128 KiB
  EXPECT_EQ(plan(16u << 20, 4, 1).rounds, 1u + 4);           // 256 KiB a channel: 4 pieces of 64 KiB
  EXPECT_EQ(plan(1u << 30, 4, std::nullopt).rounds, 1u + 128);  // 16 MiB a channel: 128 KiB pieces
  EXPECT_EQ(plan(64u << 20, 2, std::nullopt).algo, Algo::OneShot);  // 2 GPUs: the peer pushes (Simple)
  EXPECT_EQ(plan(64u << 20, 4, 0).algo, Algo::OneShot);             // 0: never
  EXPECT_EQ(plan(256u << 10, 4, 256u << 10).algo, Algo::Chain);
  EXPECT_EQ(plan(64u << 10, 4, 1).ll, true);                       // LL sizes stay on LL
  EXPECT_EQ(plan(256u << 20, 4, std::nullopt, DirectMode::Always).algo, Algo::OneShot);  // Direct kept
  EXPECT_EQ(plan(256u << 20, 4, std::nullopt, DirectMode::Off).algo, Algo::Chain);
  GpuPlanInput forced{Collective::Reduce, 64u << 20, 4, 4, 64, 128 * 1024, 128 * 1024, 1024, Algo::OneShot, false,
                      DirectMode::Auto, std::nullopt};
  EXPECT_EQ(makeGpuPlan(forced).algo, Algo::OneShot);  // AXON_ALGO_REDUCE=oneshot
  const Env d = Env::fromVars({});
  EXPECT_FALSE(d.collGpuChainMin);
  EXPECT_EQ(Env::fromVars({{"AXON_COLL_GPU_CHAIN_MIN", "0"}}).collGpuChainMin, 0u);
  EXPECT_EQ(Env::fromVars({{"AXON_COLL_GPU_CHAIN_MIN", "64K"}}).collGpuChainMin, 64u << 10);
  EXPECT_THROW(Env::fromVars({{"AXON_COLL_GPU_CHAIN_MIN", "lots"}}), Error);
}

TEST(GpuCollMath, EnvReadsTheGpuWorkspaceSettings) {
  const Env d = Env::fromVars({});
  EXPECT_EQ(d.collGpuChunk, 128u * 1024);
  EXPECT_EQ(d.collGpuChannels, 64);
  EXPECT_EQ(d.collGpuLlMax, 128u * 1024);
  EXPECT_EQ(d.collGpuLlChunk, 1u * 1024);
  EXPECT_FALSE(d.collGpuPushMin);  // unset: each collective's measured threshold
  EXPECT_EQ(Env::fromVars({{"AXON_COLL_GPU_PUSH_MIN", "0"}}).collGpuPushMin, 0u);
  EXPECT_EQ(Env::fromVars({{"AXON_COLL_GPU_PUSH_MIN", "8M"}}).collGpuPushMin, 8u << 20);
  EXPECT_THROW(Env::fromVars({{"AXON_COLL_GPU_PUSH_MIN", "lots"}}), Error);
  const Env e = Env::fromVars({{"AXON_COLL_GPU_CHUNK", "1M"}, {"AXON_COLL_GPU_CHANNELS", "4"},
                               {"AXON_COLL_GPU_LL_MAX", "0"}, {"AXON_COLL_GPU_LL_CHUNK", "16K"}});
  EXPECT_EQ(Env::fromVars({{"AXON_COLL_GPU_LL_MAX", "64K"}}).collGpuLlMax, 64u * 1024);
  EXPECT_EQ(e.collGpuChunk, 1u << 20);
  EXPECT_EQ(e.collGpuChannels, 4);
  EXPECT_EQ(e.collGpuLlMax, 0u);
  EXPECT_EQ(e.collGpuLlChunk, 16u * 1024);
  for (const char* bad : {"100", "2M", "x", "0"}) {
    EXPECT_THROW(Env::fromVars({{"AXON_COLL_GPU_LL_CHUNK", bad}}), Error) << bad;
  }
  EXPECT_THROW(Env::fromVars({{"AXON_COLL_GPU_LL_MAX", "lots"}}), Error);
  EXPECT_TRUE(d.collGpuPdl);  // overlapped launches unless turned off
  EXPECT_FALSE(Env::fromVars({{"AXON_COLL_GPU_PDL", "0"}}).collGpuPdl);
  EXPECT_THROW(Env::fromVars({{"AXON_COLL_GPU_PDL", "maybe"}}), Error);
  EXPECT_EQ(d.collGpuDirect, DirectMode::Auto);  // Direct for symmetric buffers where it pays
  EXPECT_EQ(Env::fromVars({{"AXON_COLL_GPU_DIRECT", "0"}}).collGpuDirect, DirectMode::Off);
  EXPECT_EQ(Env::fromVars({{"AXON_COLL_GPU_DIRECT", "1"}}).collGpuDirect, DirectMode::Auto);
  EXPECT_EQ(Env::fromVars({{"AXON_COLL_GPU_DIRECT", "always"}}).collGpuDirect, DirectMode::Always);
  EXPECT_THROW(Env::fromVars({{"AXON_COLL_GPU_DIRECT", "sometimes"}}), Error);
  for (const char* bad : {"1000", "2K", "x"}) {
    EXPECT_THROW(Env::fromVars({{"AXON_COLL_GPU_CHUNK", bad}}), Error) << bad;
  }
  for (const char* bad : {"0", "129", "4x", "-2"}) {
    EXPECT_THROW(Env::fromVars({{"AXON_COLL_GPU_CHANNELS", bad}}), Error) << bad;
  }
}

}  // namespace
}  // namespace axon::coll
