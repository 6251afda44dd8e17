// Collective allocation, heap growth, and the errors of bad allocation calls.
#include <gtest/gtest.h>

#include <axon/axon.hpp>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace {

int me() { return axon::myPe(); }
int np() { return axon::nPes(); }

TEST(Memory, SameOffsetOnEveryPe) {
  auto* a = static_cast<char*>(axon::malloc(1000));
  auto* b = static_cast<char*>(axon::malloc(3));
  auto offsets = static_cast<std::int64_t*>(axon::calloc(2 * np(), sizeof(std::int64_t)));
  // Everyone publishes b - a; they must all agree.
  std::int64_t diff = b - a;
  axon::p<std::int64_t>(offsets + me(), diff, 0);
  axon::barrierAll();
  if (me() == 0)
    for (int pe = 0; pe < np(); ++pe) EXPECT_EQ(offsets[pe], diff) << "PE " << pe;
  axon::free(offsets);
  axon::free(b);
  axon::free(a);
}

TEST(Memory, CallocZeroesAndZeroBytesIsNull) {
  auto* z = static_cast<unsigned char*>(axon::calloc(12345, 1));
  for (int i = 0; i < 12345; ++i) ASSERT_EQ(z[i], 0);
  EXPECT_EQ(axon::malloc(0), nullptr);
  axon::free(nullptr);
  axon::free(z);
}

TEST(Memory, FreedSpaceIsReused) {
  void* a = axon::malloc(4096);
  axon::free(a);
  void* b = axon::malloc(4096);
  EXPECT_EQ(a, b);
  axon::free(b);
}

TEST(Memory, GrowsOnDemandAndPeersSeeTheGrowth) {
  auto before = axon::heapStats();
  // Larger than the initial mapping (AXON_HEAP_CHUNK is 1 MiB in these tests).
  const std::size_t big = 24u << 20;
  auto* blob = static_cast<std::uint32_t*>(axon::malloc(big));
  auto after = axon::heapStats();
  EXPECT_GT(after.mappedBytes, before.mappedBytes);
  EXPECT_GE(after.mappedBytes, big);
  EXPECT_LE(after.mappedBytes, before.mappedBytes + big + (2u << 20));
  // Write the last word of the right neighbour's block, through put and through ptr.
  const int right = (me() + 1) % np();
  const std::size_t last = big / 4 - 1;
  axon::p<std::uint32_t>(blob + last, 0xA0000000u + me(), right);
  // Through ptr where the neighbour shares this node; a PE on another node has no address here.
  if (auto* mapped = static_cast<std::uint32_t*>(axon::ptr(blob, right))) mapped[last - 1] = 0xB0000000u + me();
  else axon::p<std::uint32_t>(blob + last - 1, 0xB0000000u + me(), right);
  axon::barrierAll();
  const int left = (me() + np() - 1) % np();
  EXPECT_EQ(blob[last], 0xA0000000u + left);
  EXPECT_EQ(blob[last - 1], 0xB0000000u + left);
  axon::free(blob);
}

TEST(Memory, MismatchedSizesFailOnEveryPe) {
  // PE 0 asks for a different size: every PE must get CollectiveMismatch, and nothing leaks.
  auto stats = axon::heapStats();
  try {
    axon::malloc(me() == 0 ? 100 : 200);
    FAIL() << "mismatched malloc did not throw";
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::CollectiveMismatch);
    EXPECT_NE(std::string(e.what()).find("malloc(100"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("malloc(200"), std::string::npos) << e.what();
  }
  EXPECT_EQ(axon::heapStats().allocations, stats.allocations);
  // The heap still works, in step, afterwards.
  void* ok = axon::malloc(64);
  EXPECT_NE(ok, nullptr);
  axon::free(ok);
}

TEST(Memory, MismatchedFreeFailsOnEveryPe) {
  void* a = axon::malloc(64);
  void* b = axon::malloc(64);
  try {
    axon::free(me() == 0 ? a : b);
    FAIL() << "mismatched free did not throw";
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::CollectiveMismatch) << e.what();
  }
  axon::free(a);
  axon::free(b);
}

TEST(Memory, BadFreeAndCapOverflowFailOnEveryPe) {
  int local = 0;
  try {
    axon::free(me() == np() - 1 ? static_cast<void*>(&local) : nullptr);
    FAIL();
  } catch (const axon::Error& e) {
    // The last PE passed a pointer outside the heap; every PE hears about it.
    EXPECT_EQ(e.code(), axon::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("not in the symmetric heap"), std::string::npos) << e.what();
  }
  try {
    axon::malloc(std::size_t{1} << 40);  // past AXON_HEAP_MAX
    FAIL();
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::OutOfMemory);
    EXPECT_NE(std::string(e.what()).find("AXON_HEAP_MAX"), std::string::npos) << e.what();
  }
  try {
    axon::calloc(std::size_t{1} << 40, std::size_t{1} << 40);  // count * size overflows
    FAIL();
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::OutOfMemory);
  }
  void* ok = axon::malloc(8);
  axon::free(ok);
}

TEST(BadInput, PeOutOfRange) {
  auto* x = static_cast<int*>(axon::malloc(64));
  int v = 1;
  for (int bad : {-1, np(), np() + 7}) {
    try {
      axon::put(x, &v, sizeof v, bad);
      FAIL();
    } catch (const axon::Error& e) {
      EXPECT_EQ(e.code(), axon::ErrorCode::InvalidPe);
      EXPECT_NE(std::string(e.what()).find("PE " + std::to_string(bad) + " is outside"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(axon::ptr(x, np()), axon::Error);
  axon::barrierAll();
  axon::free(x);
}

TEST(BadInput, AddressOutsideTheHeap) {
  int local[4] = {0, 0, 0, 0};
  int v = 1;
  try {
    axon::put(local, &v, sizeof v, 0);
    FAIL();
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::OutOfBounds);
    EXPECT_NE(std::string(e.what()).find("not in the symmetric heap"), std::string::npos) << e.what();
  }
  std::uint64_t sig = 0;
  EXPECT_THROW(axon::signalWaitUntil(&sig, axon::Cmp::Eq, 0), axon::Error);
  EXPECT_THROW(axon::atomicFetchAdd<int>(local, 1, 0), axon::Error);
}

TEST(BadInput, RangePastItsAllocation) {
  auto* x = static_cast<char*>(axon::malloc(100));
  auto* y = static_cast<char*>(axon::malloc(100));  // right after x: a silent overrun would hit it
  std::vector<char> v(200, 'x');
  try {
    axon::put(x + 50, v.data(), 51, 0);
    FAIL();
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::OutOfBounds);
    EXPECT_NE(std::string(e.what()).find("runs 1 bytes past its allocation (100 bytes"), std::string::npos) << e.what();
  }
  EXPECT_THROW(axon::get(v.data(), x, 101, 0), axon::Error);
  EXPECT_THROW(axon::put(x, v.data(), SIZE_MAX, 0), axon::Error);
  axon::put(x + 50, v.data(), 50, 0);  // exactly to the end is fine
  axon::barrierAll();
  axon::free(y);
  axon::free(x);
}

TEST(BadInput, FreedMemoryIsRejected) {
  auto* x = static_cast<int*>(axon::malloc(64));
  axon::free(x);
  int v = 0;
  try {
    axon::put(x, &v, sizeof v, 0);
    FAIL();
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::OutOfBounds);
    EXPECT_NE(std::string(e.what()).find("not in a live allocation"), std::string::npos) << e.what();
  }
}

// The heap an address is in, filling heap memory, and the keep-alive bindings hold.
TEST(Memory, HeapKindOfMemsetSymmetricAndHeapMappings) {
  auto* x = static_cast<unsigned char*>(axon::mallocHost(100));
  int local = 0;
  ASSERT_TRUE(axon::heapKindOf(x).has_value());
  EXPECT_EQ(*axon::heapKindOf(x), axon::HeapKind::Host);
  EXPECT_EQ(*axon::heapKindOf(x + 99), axon::HeapKind::Host);
  EXPECT_FALSE(axon::heapKindOf(&local).has_value());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(x) % axon::kHostHeapGranule, 0u);

  axon::memsetSymmetric(x, 0xAB, 100);
  axon::memsetSymmetric(x + 10, 0, 20);
  std::vector<unsigned char> got(100);
  axon::get(got.data(), x, 100, me());
  for (int i = 0; i < 100; ++i) ASSERT_EQ(got[i], i >= 10 && i < 30 ? 0 : 0xAB) << "byte " << i;
  axon::memsetSymmetric(x, 1, 0);  // nothing to do

  auto code = [](auto&& call) {
    try {
      call();
    } catch (const axon::Error& e) {
      return std::make_pair(e.code(), std::string(e.what()));
    }
    return std::make_pair(axon::ErrorCode::Internal, std::string("no error"));
  };
  auto [c1, m1] = code([&] { axon::memsetSymmetric(x, 0, 101); });
  EXPECT_EQ(c1, axon::ErrorCode::OutOfBounds) << m1;
  EXPECT_NE(m1.find("memset_symmetric: addr range of 101 bytes"), std::string::npos) << m1;
  EXPECT_NE(m1.find("runs 1 bytes past its allocation"), std::string::npos) << m1;
  auto [c2, m2] = code([&] { axon::memsetSymmetric(&local, 0, sizeof local); });
  EXPECT_EQ(c2, axon::ErrorCode::OutOfBounds) << m2;
  EXPECT_NE(m2.find("not in the symmetric heap"), std::string::npos) << m2;
  auto [c3, m3] = code([&] { axon::memsetSymmetric(x, 256, 4); });
  EXPECT_EQ(c3, axon::ErrorCode::InvalidArgument) << m3;
  EXPECT_NE(m3.find("value 256 is not a byte"), std::string::npos) << m3;

  // The host heap's mappings; the GPU heap's only with the GPU backend.
  std::shared_ptr<const void> host = axon::heapMappings(axon::HeapKind::Host);
  EXPECT_NE(host, nullptr);
  if (!axon::gpuEnabled()) {
    auto [c4, m4] = code([] { axon::heapMappings(axon::HeapKind::Gpu); });
    EXPECT_EQ(c4, axon::ErrorCode::Unsupported) << m4;
    EXPECT_NE(m4.find("heap_mappings: the GPU backend is off"), std::string::npos) << m4;
  }
  axon::barrierAll();
  axon::free(x);
}

}  // namespace
