// The device API as a host compiler sees it: the types a host program passes to its kernels (by
// value, so trivially copyable with a fixed layout) and the host-callable address arithmetic.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "axon/device/device.hpp"
#include "axon/device/proxy_ring.hpp"
#include "axon/onesided.hpp"

namespace ad = axon::device;

namespace {

static_assert(std::is_trivially_copyable_v<ad::Context> && std::is_standard_layout_v<ad::Context>);
static_assert(std::is_trivially_copyable_v<ad::Team> && std::is_standard_layout_v<ad::Team>);
static_assert(std::is_trivially_copyable_v<ad::ControlWords> &&
              std::is_standard_layout_v<ad::ControlWords>);
static_assert(std::is_same_v<ad::SizeT, std::size_t>);
static_assert(sizeof(ad::Context::reachable) * 8 == ad::kMaxPeers);
// The GPU backend zeroes and reads these words on the host: the layout both sides assume.
static_assert(offsetof(ad::ControlWords, barrier) == 0);
static_assert(offsetof(ad::ControlWords, epoch) ==
              sizeof(std::uint64_t) * ad::kMaxTeams * ad::kMaxBarrierRounds);
static_assert(sizeof(ad::ControlWords) ==
              sizeof(std::uint64_t) * ad::kMaxTeams * (ad::kMaxBarrierRounds + 1));
// Same values as the host API's enums.
static_assert(static_cast<int>(ad::SignalOp::Add) == 1 && static_cast<int>(ad::Cmp::Le) == 5);
// The proxy channel: kernels hand it over by value in the Context; the host proxy reads the ring's
// words at these offsets, and carries atomics out by the host's AtomicOp values.
static_assert(std::is_trivially_copyable_v<ad::ProxyChannel> && std::is_standard_layout_v<ad::ProxyRing>);
static_assert(offsetof(ad::ProxySlot, ticket) == 64 && offsetof(ad::ProxySlot, done) == 128);
static_assert(static_cast<int>(ad::ProxyAtomic::Fetch) == static_cast<int>(axon::AtomicOp::Fetch) &&
              static_cast<int>(ad::ProxyAtomic::Set) == static_cast<int>(axon::AtomicOp::Set) &&
              static_cast<int>(ad::ProxyAtomic::CompareSwap) == static_cast<int>(axon::AtomicOp::CompareSwap) &&
              static_cast<int>(ad::ProxyAtomic::Add) == static_cast<int>(axon::AtomicOp::Add) &&
              static_cast<int>(ad::ProxyAtomic::FetchXor) == static_cast<int>(axon::AtomicOp::FetchXor));

ad::Context makeContext(int myPe, int nPes, long long stride) {
  ad::Context ctx{};
  ctx.myPe = myPe;
  ctx.nPes = nPes;
  ctx.heapBase = reinterpret_cast<char*>(0x7f0000000000ull + static_cast<unsigned long long>(myPe) *
                                                                static_cast<unsigned long long>(stride));
  ctx.heapStride = stride;
  ctx.world = ad::Team{0, 1, nPes, 0, myPe, nullptr};
  return ctx;
}

TEST(DeviceHostTypes, RemoteMovesByWholeHeapsForwardAndBack) {
  const long long stride = 1ll << 36;  // 64 GiB apart: the product needs 64 bits
  const ad::Context ctx = makeContext(2, 8, stride);
  auto* local = reinterpret_cast<double*>(ctx.heapBase + 4096);
  EXPECT_EQ(ad::remote(ctx, local, 2), local);
  EXPECT_EQ(reinterpret_cast<char*>(ad::remote(ctx, local, 7)), ctx.heapBase + 4096 + 5 * stride);
  EXPECT_EQ(reinterpret_cast<char*>(ad::remote(ctx, local, 0)), ctx.heapBase + 4096 - 2 * stride);
  // const and void pointers keep their qualification.
  const int* c = reinterpret_cast<const int*>(ctx.heapBase + 64);
  const int* r = ad::remote(ctx, c, 3);
  EXPECT_EQ(reinterpret_cast<const char*>(r), ctx.heapBase + 64 + stride);
  void* v = ctx.heapBase;
  EXPECT_EQ(static_cast<char*>(ad::remote(ctx, v, 1)), ctx.heapBase - stride);
}

TEST(DeviceHostTypes, IsReachableReadsOneBitPerPe) {
  ad::Context ctx = makeContext(0, 100, 1 << 20);
  ctx.reachable[0] = 0x5u;            // PEs 0 and 2
  ctx.reachable[1] = 0x80000000u;     // PE 63
  ctx.reachable[3] = 0x1u;            // PE 96
  EXPECT_TRUE(ad::isReachable(ctx, 0));
  EXPECT_FALSE(ad::isReachable(ctx, 1));
  EXPECT_TRUE(ad::isReachable(ctx, 2));
  EXPECT_TRUE(ad::isReachable(ctx, 63));
  EXPECT_FALSE(ad::isReachable(ctx, 64));
  EXPECT_TRUE(ad::isReachable(ctx, 96));
  EXPECT_FALSE(ad::isReachable(ctx, -1));
  // Outside [0, nPes) even where a stray bit is set.
  ctx.nPes = 50;
  EXPECT_FALSE(ad::isReachable(ctx, 63));
  EXPECT_FALSE(ad::isReachable(ctx, 96));
  // A world larger than the device API addresses: PEs from kMaxPeers on are never reachable.
  ctx.nPes = 1000;
  ctx.reachable[3] = 0xffffffffu;
  EXPECT_TRUE(ad::isReachable(ctx, ad::kMaxPeers - 1));
  EXPECT_FALSE(ad::isReachable(ctx, ad::kMaxPeers));
  EXPECT_FALSE(ad::isReachable(ctx, 999));
}

}  // namespace
