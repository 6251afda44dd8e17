// The one-sided conformance suite: every transport must pass it, on every kind of memory.
//
// The same tests run over each memory kind (the heap the symmetric side lives in x where the local
// side lives), and each ctest run picks the transport by how it starts the PEs:
//   shm       host backend, one node                      tests/mp      (mp_onesided_*)
//   ucx       host backend, emulated nodes (UCX over TCP)  tests/mp      (mp_onesided_*_nodes)
//   cuda_ipc  GPU backend, peers map each other's heaps   tests/gpu     (gpu_*pe)
//   staged    GPU backend, AXON_P2P=0                      tests/gpu     (gpu_staged_*)
//   ucx + GPU GPU backend, emulated nodes                  tests/gpu     (gpu_nodes_*)
// A test only reads and writes symmetric memory through axon itself (a get or put to its own PE),
// so it checks any heap the same way. Kinds a build or backend does not have are skipped:
// the GPU heap without the GPU backend, device buffers in the host-only build (the GPU suite
// compiles this file as CUDA, onesided_conformance.cu, and adds them).
#include <gtest/gtest.h>

#include <axon/axon.hpp>

#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#ifdef AXON_CONFORMANCE_CUDA
#include <cuda_runtime.h>
#endif

namespace {

int me() { return axon::myPe(); }
int np() { return axon::nPes(); }

// Where the symmetric side lives: the GPU heap (axon::malloc with the GPU backend) or the host heap
// (axon::mallocHost; the only heap of the host backend).
enum class Heap { Gpu, Host };
// Where the local side lives: a private host buffer, or device memory outside the heaps (cudaMalloc).
enum class Local { Host, Device };

struct Kinds {
  Heap heap;
  Local local;
};

std::string kindsName(const ::testing::TestParamInfo<Kinds>& info) {
  return std::string(info.param.heap == Heap::Gpu ? "gpu_heap" : "host_heap") + "_" +
         (info.param.local == Local::Device ? "device_buffer" : "host_buffer");
}

// A private buffer of `count` T on the local side of a call.
template <class T>
class LocalBuffer {
 public:
  LocalBuffer(Local kind, std::size_t count) : kind_(kind), host_(count) {
#ifdef AXON_CONFORMANCE_CUDA
    if (kind_ == Local::Device) {
      EXPECT_EQ(cudaMalloc(&device_, count * sizeof(T)), cudaSuccess);
      set(host_);
    }
#endif
  }
  ~LocalBuffer() {
#ifdef AXON_CONFORMANCE_CUDA
    if (device_) cudaFree(device_);
#endif
  }
  LocalBuffer(const LocalBuffer&) = delete;
  LocalBuffer& operator=(const LocalBuffer&) = delete;

  T* data() { return device_ ? device_ : host_.data(); }
  std::size_t bytes() const { return host_.size() * sizeof(T); }
  // Writes `v` (count elements) into the buffer.
  void set(const std::vector<T>& v) {
    host_ = v;
#ifdef AXON_CONFORMANCE_CUDA
    // cudaMemcpy from pageable memory may return before the data reaches the GPU, and axon's host
    // calls do not order with the legacy stream: wait for the copy.
    if (device_) {
      EXPECT_EQ(cudaMemcpy(device_, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    }
#endif
  }
  // The buffer's contents.
  std::vector<T> get() {
#ifdef AXON_CONFORMANCE_CUDA
    if (device_) EXPECT_EQ(cudaMemcpy(host_.data(), device_, bytes(), cudaMemcpyDeviceToHost), cudaSuccess);
#endif
    return host_;
  }

 private:
  Local kind_;
  std::vector<T> host_;
  T* device_ = nullptr;
};

class OneSided : public ::testing::TestWithParam<Kinds> {
 protected:
  void SetUp() override {
    if (heap() == Heap::Gpu && !axon::gpuEnabled()) GTEST_SKIP() << "no GPU heap: " << axon::gpuUnavailableReason();
#ifndef AXON_CONFORMANCE_CUDA
    if (local() == Local::Device) GTEST_SKIP() << "device buffers: the GPU suite's build";
#else
    if (local() == Local::Device && !axon::gpuEnabled()) GTEST_SKIP() << "device buffers need the GPU backend";
#endif
  }
  // Tests whose calls take no local buffer run once per heap: their device-buffer runs would repeat
  // the host-buffer ones.
  void onlyHostBuffers() {
    if (local() == Local::Device) GTEST_SKIP() << "no local buffer: the host-buffer run covers it";
  }
  Heap heap() const { return GetParam().heap; }
  Local local() const { return GetParam().local; }

  // `count` T of symmetric memory of this test's heap, zero on every PE (collective).
  template <class T>
  T* alloc(std::size_t count) {
    const std::size_t bytes = count * sizeof(T);
    void* p = heap() == Heap::Gpu ? axon::malloc(bytes) : axon::mallocHost(bytes);
    if (bytes) {
      const std::vector<unsigned char> zeros(bytes, 0);
      axon::put(p, zeros.data(), bytes, me());
    }
    axon::barrierAll();
    return static_cast<T*>(p);
  }
  // This PE's copy of `count` T at `sym`, read through axon (any heap).
  template <class T>
  static std::vector<T> read(const T* sym, std::size_t count) {
    std::vector<T> v(count);
    axon::get(v.data(), sym, count * sizeof(T), me());
    return v;
  }
  template <class T>
  LocalBuffer<T> buffer(std::size_t count) {
    return LocalBuffer<T>(local(), count);
  }
};

TEST_P(OneSided, PutToEveryPe) {
  const std::size_t count = 1000;
  auto* inbox = alloc<int>(count * np());  // row r is written by PE r
  std::vector<int> mine(count);
  for (std::size_t i = 0; i < count; ++i) mine[i] = me() * 1000003 + static_cast<int>(i);
  auto src = buffer<int>(count);
  src.set(mine);
  for (int pe = 0; pe < np(); ++pe) axon::put(inbox + me() * count, src.data(), count * sizeof(int), pe);
  axon::barrierAll();
  auto all = read(inbox, count * np());
  for (int r = 0; r < np(); ++r)
    for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(all[r * count + i], r * 1000003 + static_cast<int>(i)) << "row " << r;
  axon::barrierAll();
  axon::free(inbox);
}

TEST_P(OneSided, GetFromEveryPe) {
  auto* data = alloc<double>(257);
  std::vector<double> mine(257);
  for (int i = 0; i < 257; ++i) mine[i] = me() + i * 0.5;
  axon::put(data, mine.data(), sizeof(double) * 257, me());
  axon::barrierAll();
  auto got = buffer<double>(257);
  for (int pe = 0; pe < np(); ++pe) {
    axon::get(got.data(), data, sizeof(double) * 257, pe);
    auto v = got.get();
    for (int i = 0; i < 257; ++i) ASSERT_DOUBLE_EQ(v[i], pe + i * 0.5);
    EXPECT_DOUBLE_EQ(axon::g(data + 100, pe), pe + 50.0);
  }
  axon::barrierAll();
  axon::free(data);
}

// An odd size (not a multiple of any chunk or vector width), host and local buffers mixed.
TEST_P(OneSided, PutGetOddSizeFromEveryKindOfBuffer) {
  const std::size_t count = 100003;
  auto* inbox = alloc<std::int64_t>(count * np());
  std::vector<std::int64_t> mine(count);
  for (std::size_t i = 0; i < count; ++i) mine[i] = me() * 1000003 + static_cast<std::int64_t>(i);
  auto local = buffer<std::int64_t>(count);
  local.set(mine);
  for (int pe = 0; pe < np(); ++pe) {
    // This test's local kind to odd PEs, pageable host memory to even ones.
    const void* src = pe % 2 ? static_cast<const void*>(local.data()) : mine.data();
    axon::put(inbox + me() * count, src, count * sizeof(std::int64_t), pe);
  }
  axon::barrierAll();
  auto all = read(inbox, count * np());
  for (int r = 0; r < np(); ++r)
    for (std::size_t i = 0; i < count; ++i)
      ASSERT_EQ(all[r * count + i], r * 1000003 + static_cast<std::int64_t>(i)) << "row " << r << " i " << i;
  for (int pe = 0; pe < np(); ++pe) {
    axon::get(local.data(), inbox + pe * count, count * sizeof(std::int64_t), (pe + 1) % np());
    auto got = local.get();
    std::vector<std::int64_t> host(count);
    axon::get(host.data(), inbox + pe * count, count * sizeof(std::int64_t), (pe + 1) % np());
    for (std::size_t i = 0; i < count; i += 97) {
      ASSERT_EQ(got[i], pe * 1000003 + static_cast<std::int64_t>(i));
      ASSERT_EQ(host[i], pe * 1000003 + static_cast<std::int64_t>(i));
    }
  }
  axon::barrierAll();
  axon::free(inbox);
}

TEST_P(OneSided, NbiCompleteAtQuiet) {
  auto* dst = alloc<long>(64);
  std::vector<long> values(64);
  std::iota(values.begin(), values.end(), me() * 100);
  auto src = buffer<long>(64);
  src.set(values);
  const int right = (me() + 1) % np(), left = (me() + np() - 1) % np();
  axon::putNbi(dst, src.data(), sizeof(long) * 64, right);
  axon::quiet();
  axon::barrierAll();
  auto got = read(dst, 64);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(got[i], left * 100 + i);
  auto back = buffer<long>(64);
  axon::getNbi(back.data(), dst, sizeof(long) * 64, right);
  axon::quiet();
  auto b = back.get();
  for (int i = 0; i < 64; ++i) ASSERT_EQ(b[i], me() * 100 + i);
  axon::barrierAll();
  axon::free(dst);
}

// Several nonblocking puts of one large buffer, completed by one quiet.
TEST_P(OneSided, ManyNbiPiecesThenQuiet) {
  const std::size_t count = 1 << 18;
  auto* dst = alloc<float>(count);
  std::vector<float> values(count);
  std::iota(values.begin(), values.end(), static_cast<float>(me()));
  auto src = buffer<float>(count);
  src.set(values);
  const int right = (me() + 1) % np();
  for (int k = 0; k < 4; ++k) {
    axon::putNbi(dst + k * (count / 4), src.data() + k * (count / 4), count / 4 * sizeof(float), right);
  }
  axon::quiet();
  axon::barrierAll();
  auto got = read(dst, count);
  const int left = (me() + np() - 1) % np();
  for (std::size_t i = 0; i < count; i += 101) ASSERT_FLOAT_EQ(got[i], static_cast<float>(left) + i);
  axon::barrierAll();
  axon::free(dst);
}

TEST_P(OneSided, PAndG) {
  onlyHostBuffers();
  auto* cell = alloc<std::int64_t>(np());
  for (int pe = 0; pe < np(); ++pe) axon::p<std::int64_t>(cell + me(), 7 * me() + pe, pe);
  axon::barrierAll();
  auto got = read(cell, np());
  for (int r = 0; r < np(); ++r) EXPECT_EQ(got[r], 7 * r + me());
  axon::barrierAll();
  axon::free(cell);
}

TEST_P(OneSided, PutSignalSetAndAdd) {
  const int right = (me() + 1) % np(), left = (me() + np() - 1) % np();
  auto* buf = alloc<int>(4096);
  auto* sig = alloc<std::uint64_t>(2);
  std::vector<int> values(4096, me() + 1);
  auto src = buffer<int>(4096);
  for (int round = 1; round <= 20; ++round) {
    values[0] = round;
    src.set(values);
    axon::putSignal(buf, src.data(), values.size() * sizeof(int), &sig[0], static_cast<std::uint64_t>(round),
                    axon::SignalOp::Set, right);
    EXPECT_EQ(axon::signalWaitUntil(&sig[0], axon::Cmp::Eq, static_cast<std::uint64_t>(round)), static_cast<std::uint64_t>(round));
    auto got = read(buf, 4096);
    ASSERT_EQ(got[0], round);
    ASSERT_EQ(got[4095], left + 1);
    axon::syncAll();  // the sender must not overwrite buf before it is checked
  }
  // Every PE adds 1 to PE 0's counter: it sees exactly nPes.
  axon::signalOp(&sig[1], 1, axon::SignalOp::Add, 0);
  if (me() == 0) EXPECT_EQ(axon::signalWaitUntil(&sig[1], axon::Cmp::Ge, static_cast<std::uint64_t>(np())), static_cast<std::uint64_t>(np()));
  axon::barrierAll();
  if (me() == 0) EXPECT_EQ(axon::signalFetch(&sig[1]), static_cast<std::uint64_t>(np()));
  axon::barrierAll();
  axon::free(sig);
  axon::free(buf);
}

// A ring of put_signal with an adding signal, round after round.
TEST_P(OneSided, PutSignalRingWithAddingSignal) {
  const std::size_t count = 4096;
  auto* data = alloc<int>(count);
  auto* sig = alloc<std::uint64_t>(1);
  const int right = (me() + 1) % np(), left = (me() + np() - 1) % np();
  auto src = buffer<int>(count);
  for (std::uint64_t round = 1; round <= 5; ++round) {
    src.set(std::vector<int>(count, static_cast<int>(me() * 100 + round)));
    axon::putSignal(data, src.data(), count * sizeof(int), sig, 1, axon::SignalOp::Add, right);
    EXPECT_EQ(axon::signalWaitUntil(sig, axon::Cmp::Ge, round), round);
    auto got = read(data, count);
    ASSERT_EQ(got[0], static_cast<int>(left * 100 + round));
    ASSERT_EQ(got[count - 1], static_cast<int>(left * 100 + round));
    axon::barrierAll();  // nobody overwrites `data` before its owner has read it
  }
  EXPECT_EQ(axon::signalFetch(sig), 5u);
  axon::barrierAll();
  axon::free(sig);
  axon::free(data);
}

// What quiet completes is applied at the target, also where signals, atomics and small put_signals
// travel as active messages (over TCP): PE 1 learns of PE 0's quiet from another PE, never from PE 0
// itself, and must find every add and the put_signal's data already there.
TEST_P(OneSided, QuietCompletesSignalsAndAtomicsAtTheTarget) {
  if (np() < 3) GTEST_SKIP() << "needs a third PE to carry the news";
  auto* counter = alloc<std::uint64_t>(2);
  auto* data = alloc<int>(256);
  auto* news = alloc<std::uint64_t>(1);
  constexpr int kAdds = 500;
  if (me() == 0) {
    auto src = buffer<int>(256);
    src.set(std::vector<int>(256, 42));
    for (int i = 0; i < kAdds; ++i) axon::signalOp(&counter[0], 1, axon::SignalOp::Add, 1);
    for (int i = 0; i < kAdds; ++i) axon::atomicAdd<std::uint64_t>(&counter[1], 2, 1);
    axon::putSignal(data, src.data(), 256 * sizeof(int), news, 0, axon::SignalOp::Add, 1);
    axon::quiet();
    axon::signalOp(news, 1, axon::SignalOp::Set, 2);  // PE 2 passes it on to PE 1
  } else if (me() == 2) {
    axon::signalWaitUntil(news, axon::Cmp::Eq, 1);
    axon::signalOp(news, 1, axon::SignalOp::Add, 1);
  } else if (me() == 1) {
    axon::signalWaitUntil(news, axon::Cmp::Ge, 1);
    auto counters = read(counter, 2);
    EXPECT_EQ(counters[0], static_cast<std::uint64_t>(kAdds));
    EXPECT_EQ(counters[1], static_cast<std::uint64_t>(2 * kAdds));
    auto got = read(data, 256);
    EXPECT_EQ(got[0], 42);
    EXPECT_EQ(got[255], 42);
  }
  axon::barrierAll();
  axon::free(news);
  axon::free(data);
  axon::free(counter);
}

TEST_P(OneSided, SignalWaitComparisons) {
  onlyHostBuffers();
  auto* sig = alloc<std::uint64_t>(1);
  axon::signalOp(sig, 10, axon::SignalOp::Set, me());
  EXPECT_EQ(axon::signalWaitUntil(sig, axon::Cmp::Eq, 10), 10u);
  EXPECT_EQ(axon::signalWaitUntil(sig, axon::Cmp::Ne, 3), 10u);
  EXPECT_EQ(axon::signalWaitUntil(sig, axon::Cmp::Gt, 9), 10u);
  EXPECT_EQ(axon::signalWaitUntil(sig, axon::Cmp::Ge, 10), 10u);
  EXPECT_EQ(axon::signalWaitUntil(sig, axon::Cmp::Lt, 11), 10u);
  EXPECT_EQ(axon::signalWaitUntil(sig, axon::Cmp::Le, 10), 10u);
  axon::barrierAll();
  axon::free(sig);
}

class Atomics : public OneSided {
 protected:
  template <class T>
  void everyOperation() {
    auto* word = alloc<T>(4);
    const T n = static_cast<T>(np());
    // fetch_add from everyone to PE 0: the fetched values are a permutation of 0..n-1.
    T fetched = axon::atomicFetchAdd<T>(&word[0], T(1), 0);
    EXPECT_GE(fetched, T(0));
    EXPECT_LT(fetched, n);
    axon::atomicAdd<T>(&word[1], T(me() + 1), 0);
    axon::barrierAll();
    if (me() == 0) {
      auto w = read(word, 2);
      EXPECT_EQ(w[0], n);
      EXPECT_EQ(w[1], static_cast<T>(np() * (np() + 1) / 2));
    }
    EXPECT_EQ(axon::atomicFetch<T>(&word[0], 0), n);
    axon::barrierAll();
    // compare_swap: exactly one PE wins the 0 -> me+1 swap on the last PE.
    const int last = np() - 1;
    T before = axon::atomicCompareSwap<T>(&word[2], T(0), static_cast<T>(me() + 1), last);
    auto* wins = alloc<std::int64_t>(1);
    if (before == T(0)) axon::atomicAdd<std::int64_t>(wins, 1, 0);
    axon::barrierAll();
    if (me() == 0) EXPECT_EQ(read(wins, 1)[0], 1);
    T winner = axon::atomicFetch<T>(&word[2], last);
    EXPECT_GE(winner, T(1));
    EXPECT_LE(winner, n);
    axon::barrierAll();
    // swap, set, and the bitwise ops on my right neighbour's word[3].
    const int right = (me() + 1) % np();
    axon::atomicSet<T>(&word[3], T(0b1100), right);
    axon::barrierAll();
    EXPECT_EQ(axon::atomicSwap<T>(&word[3], T(0b1010), right), T(0b1100));
    EXPECT_EQ(axon::atomicFetchAnd<T>(&word[3], T(0b0110), right), T(0b1010));
    EXPECT_EQ(axon::atomicFetchOr<T>(&word[3], T(0b1001), right), T(0b0010));
    EXPECT_EQ(axon::atomicFetchXor<T>(&word[3], T(0b1111), right), T(0b1011));
    EXPECT_EQ(axon::atomicFetch<T>(&word[3], right), T(0b0100));
    axon::barrierAll();
    axon::free(wins);
    axon::free(word);
  }
};

TEST_P(Atomics, Int32) { everyOperation<std::int32_t>(); }
TEST_P(Atomics, Int64) { everyOperation<std::int64_t>(); }
TEST_P(Atomics, UInt32) { everyOperation<std::uint32_t>(); }
TEST_P(Atomics, UInt64) { everyOperation<std::uint64_t>(); }

TEST_P(Atomics, SignedWrapAndNegative) {
  auto* w = alloc<std::int32_t>(1);
  if (me() == 0) {
    axon::atomicSet<std::int32_t>(w, -5, np() - 1);
    EXPECT_EQ(axon::atomicFetchAdd<std::int32_t>(w, -10, np() - 1), -5);
    EXPECT_EQ(axon::atomicFetch<std::int32_t>(w, np() - 1), -15);
  }
  axon::barrierAll();
  axon::free(w);
}

// Repeated adds from every PE, a compare-and-swap from the value everyone saw, and a swap.
TEST_P(Atomics, CountersAddUpAndOneSwapWins) {
  auto* counter = alloc<std::uint64_t>(1);
  auto* word = alloc<std::int32_t>(1);
  for (int i = 0; i < 10; ++i) axon::atomicFetchAdd<std::uint64_t>(counter, me() + 1, 0);
  axon::atomicAdd<std::int32_t>(word, -1, 0);
  axon::barrierAll();
  const std::uint64_t expected = 10ull * np() * (np() + 1) / 2;
  EXPECT_EQ(axon::atomicFetch(counter, 0), expected);
  EXPECT_EQ(axon::atomicFetch(word, 0), -np());
  axon::barrierAll();
  // Exactly one PE wins a compare-and-swap from the value everyone saw.
  std::int32_t old = axon::atomicCompareSwap<std::int32_t>(word, -np(), me(), 0);
  auto* winners = alloc<std::uint64_t>(1);
  if (old == -np()) axon::atomicAdd<std::uint64_t>(winners, 1, 0);
  axon::barrierAll();
  EXPECT_EQ(axon::atomicFetch(winners, 0), 1u);
  EXPECT_EQ(axon::atomicSwap<std::uint64_t>(counter, 7, me()), me() == 0 ? expected : 0u);
  axon::barrierAll();
  axon::free(winners);
  axon::free(word);
  axon::free(counter);
}

TEST_P(OneSided, FenceKeepsPutsInOrderToOnePe) {
  // PE 0 writes data then a flag with a fence between; readers that see the flag see the data.
  auto* data = alloc<int>(1024);
  auto* flag = alloc<std::uint64_t>(1);
  if (me() == 0) {
    auto v = buffer<int>(1024);
    v.set(std::vector<int>(1024, 42));
    for (int pe = 0; pe < np(); ++pe) {
      axon::put(data, v.data(), 1024 * sizeof(int), pe);
      axon::fence();
      axon::signalOp(flag, 1, axon::SignalOp::Set, pe);
    }
  }
  axon::signalWaitUntil(flag, axon::Cmp::Eq, 1);
  auto got = read(data, 1024);
  for (int i = 0; i < 1024; ++i) ASSERT_EQ(got[i], 42);
  axon::barrierAll();
  axon::free(flag);
  axon::free(data);
}

TEST_P(OneSided, SignalsOrderEarlierPutsToTheirPeWithoutAFence) {
  // PE 0 issues nonblocking puts to every PE, then per PE a put_signal of other data and a signal,
  // with no fence or quiet of its own: whoever sees a signal sees the data put to it before.
  // (Across nodes the puts are UCX RMA, which the signals' own fence must flush first.)
  constexpr std::size_t kBig = 256 * 1024, kSmall = 64;
  auto* big = alloc<int>(kBig);
  auto* small = alloc<int>(kSmall);
  auto* flags = alloc<std::uint64_t>(2);
  if (me() == 0) {
    auto v = buffer<int>(kBig);
    auto w = buffer<int>(kSmall);
    std::vector<int> values(kBig);
    for (std::size_t i = 0; i < kBig; ++i) values[i] = static_cast<int>(i * 7 + 1);
    v.set(values);
    w.set(std::vector<int>(kSmall, -5));
    for (int pe = 0; pe < np(); ++pe) axon::putNbi(big, v.data(), kBig * sizeof(int), pe);
    for (int pe = 0; pe < np(); ++pe) {
      axon::putSignal(small, w.data(), kSmall * sizeof(int), &flags[0], 1, axon::SignalOp::Set, pe);
      axon::signalOp(&flags[1], 1, axon::SignalOp::Set, pe);
    }
    axon::quiet();  // the local buffers live until here
  }
  axon::signalWaitUntil(&flags[0], axon::Cmp::Eq, 1);
  axon::signalWaitUntil(&flags[1], axon::Cmp::Eq, 1);
  auto got = read(big, kBig);
  for (std::size_t i = 0; i < kBig; ++i) ASSERT_EQ(got[i], static_cast<int>(i * 7 + 1)) << "element " << i;
  auto gotSmall = read(small, kSmall);
  for (std::size_t i = 0; i < kSmall; ++i) ASSERT_EQ(gotSmall[i], -5) << "element " << i;
  axon::barrierAll();
  axon::free(flags);
  axon::free(small);
  axon::free(big);
}

// Load and store through axon::ptr: the host heap, from the host (a GPU heap's pointer is for
// kernels; tests/gpu covers it).
TEST_P(OneSided, LoadStoreThroughPtr) {
  if (heap() == Heap::Gpu || local() == Local::Device) GTEST_SKIP() << "host heap, host loads and stores";
  auto* x = alloc<int>(16);
  const int right = (me() + 1) % np();
  int* remote = static_cast<int*>(axon::ptr(x, right));
  EXPECT_EQ(axon::ptr(x, me()), static_cast<void*>(x));
  // A PE on another node has no address here: ptr says so with nullptr, and a put does the job.
  const bool sameNode = axon::pathTo(right).rfind("ucx", 0) != 0;
  EXPECT_EQ(remote != nullptr, sameNode) << "path to PE " << right << ": " << axon::pathTo(right);
  const int mine = 1000 + me();
  if (remote) remote[3] = mine;
  else axon::put(&x[3], &mine, sizeof(mine), right);
  axon::barrierAll();
  EXPECT_EQ(x[3], 1000 + (me() + np() - 1) % np());
  EXPECT_TRUE(axon::isSymmetric(x));
  int local = 0;
  EXPECT_FALSE(axon::isSymmetric(&local));
  axon::barrierAll();
  axon::free(x);
}

INSTANTIATE_TEST_SUITE_P(Conformance, OneSided,
                         ::testing::Values(Kinds{Heap::Host, Local::Host}, Kinds{Heap::Host, Local::Device},
                                           Kinds{Heap::Gpu, Local::Host}, Kinds{Heap::Gpu, Local::Device}),
                         kindsName);
// Atomics take no local buffer: once per heap.
INSTANTIATE_TEST_SUITE_P(Conformance, Atomics,
                         ::testing::Values(Kinds{Heap::Host, Local::Host}, Kinds{Heap::Gpu, Local::Host}), kindsName);

}  // namespace
