// GPU collectives: the stream-ordered, blocking and device-callable forms on the team's GPU
// workspace, every collective, type and op, graph capture, two teams on two streams, 1,000 mixed
// calls back to back, and mismatched calls.
#include <axon/axon.h>
#include <axon/axon.hpp>
#include <axon/collectives.hpp>
#include <axon/device/collectives.hpp>
#include <axon/device/device.hpp>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "axon/typed_value.hpp"
#include "gpu_test_util.hpp"

namespace {

using axon::Collective;
using axon::DataType;
using axon::ReduceOp;

int me() { return axon::myPe(); }
int np() { return axon::nPes(); }

// Inputs in {1, 2, 3}: every sum, product, min and max over up to 4 PEs is exact in every type.
double inputAt(int pe, std::size_t i) { return static_cast<double>(1 + (pe + i * 7) % 3); }

double fold(ReduceOp op, double a, double b) {
  switch (op) {
    case ReduceOp::Sum: return a + b;
    case ReduceOp::Prod: return a * b;
    case ReduceOp::Min: return std::min(a, b);
    case ReduceOp::Max: return std::max(a, b);
  }
  return 0;
}

double reducedAt(ReduceOp op, std::size_t i) {
  double acc = inputAt(0, i);
  for (int pe = 1; pe < np(); ++pe) acc = fold(op, acc, inputAt(pe, i));
  return acc;
}

using axon::loadAt;
using axon::storeAt;

// Where a test buffer lives: cudaMalloc (Plain), or the symmetric GPU heap at the same offset on
// every PE (Heap: the Direct protocol's case), or cases where the members' buffers do not allow it
// (the calls then run as Simple): the heap on even PEs and cudaMalloc on odd ones, or the heap one
// element further in on PE 0. Every kind but Plain allocates on the heap on every PE (collective).
enum class Where { Plain, Heap, HeapOnEvenPes, HeapShiftedOnPe0 };

// A device buffer of `count` elements of `type`, filled from fn(i), readable back as doubles.
struct DeviceArray {
  DataType type;
  std::size_t count;
  void* ptr = nullptr;
  void* heap = nullptr;
  void* plain = nullptr;
  DeviceArray(DataType t, std::size_t n, Where where = Where::Plain) : type(t), count(n) {
    const std::size_t e = axon::dataTypeSize(t), bytes = std::max<std::size_t>(n, 1) * e;
    if (where != Where::Plain) heap = axon::malloc(bytes + e);
    if (where == Where::Plain || (where == Where::HeapOnEvenPes && me() % 2 == 1)) {
      cudaMalloc(&plain, bytes);
      ptr = plain;
    } else {
      ptr = static_cast<char*>(heap) + (where == Where::HeapShiftedOnPe0 && me() == 0 ? e : 0);
    }
    cudaMemset(ptr, 0, bytes);
    cudaDeviceSynchronize();
  }
  ~DeviceArray() {
    if (plain) cudaFree(plain);
    if (heap) axon::free(heap);
  }
  DeviceArray(const DeviceArray&) = delete;
  template <class F>
  void fill(F fn) {
    std::vector<char> h(count * axon::dataTypeSize(type));
    for (std::size_t i = 0; i < count; ++i) storeAt(type, h.data(), i, fn(i));
    cudaMemcpy(ptr, h.data(), h.size(), cudaMemcpyHostToDevice);
    cudaDeviceSynchronize();
  }
  std::vector<double> read() const {
    std::vector<char> h(count * axon::dataTypeSize(type));
    cudaMemcpy(h.data(), ptr, h.size(), cudaMemcpyDeviceToHost);
    std::vector<double> v(count);
    for (std::size_t i = 0; i < count; ++i) v[i] = loadAt(type, h.data(), i);
    return v;
  }
  char* at(std::size_t i) const { return static_cast<char*>(ptr) + i * axon::dataTypeSize(type); }
};

constexpr DataType kTypes[] = {DataType::Int8,    DataType::Uint8,    DataType::Int32,   DataType::Uint32,
                               DataType::Int64,   DataType::Uint64,   DataType::Float16, DataType::BFloat16,
                               DataType::Float32, DataType::Float64};
constexpr ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max};
// Zero, one element, odd sizes, several channels, several rounds per channel (64 KiB chunks).
constexpr std::size_t kCounts[] = {0, 1, 7, 1031, 70001, 600000};

class Stream {
 public:
  Stream() { cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking); }
  ~Stream() { cudaStreamDestroy(s_); }
  operator cudaStream_t() const { return s_; }

 private:
  cudaStream_t s_ = nullptr;
};

#define EXPECT_VALUES(got, want_expr, what)                                                   \
  do {                                                                                        \
    const auto& g_ = (got);                                                                   \
    for (std::size_t i = 0; i < g_.size(); ++i) {                                             \
      const double w_ = (want_expr);                                                          \
      if (g_[i] != w_) {                                                                      \
        FAIL() << what << ": element " << i << " is " << g_[i] << ", expected " << w_;        \
      }                                                                                       \
    }                                                                                         \
  } while (0)

TEST(GpuColl, ReductionsEveryTypeOpAndCountOnAStream) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no GPU workspace";
  const auto world = axon::Team::world();
  Stream stream;
  for (DataType t : kTypes) {
    for (ReduceOp op : kOps) {
      for (std::size_t count : kCounts) {
        if (count > 70001 && (op == ReduceOp::Prod || op == ReduceOp::Min)) continue;  // keep it quick
        const std::string what = std::string(axon::dataTypeName(t)) + " " + axon::reduceOpName(op) + " count " +
                                 std::to_string(count);
        DeviceArray src(t, count), dst(t, count), rs(t, count * np()), rsOut(t, count);
        src.fill([](std::size_t i) { return inputAt(me(), i); });
        axon::allreduceOnStream(world, src.ptr, dst.ptr, count, t, op, stream);
        rs.fill([](std::size_t i) { return inputAt(me(), i); });
        axon::reduceScatterOnStream(world, rs.ptr, rsOut.ptr, count, t, op, stream);
        CUDA_OK(cudaStreamSynchronize(stream));
        EXPECT_VALUES(dst.read(), reducedAt(op, i), "allreduce " + what);
        EXPECT_VALUES(rsOut.read(), reducedAt(op, me() * count + i), "reduce_scatter " + what);
        // In place, and reduce to every root.
        axon::allreduceOnStream(world, src.ptr, src.ptr, count, t, op, stream);
        CUDA_OK(cudaStreamSynchronize(stream));
        EXPECT_VALUES(src.read(), reducedAt(op, i), "in-place allreduce " + what);
        if (count > 1031) continue;
        src.fill([](std::size_t i) { return inputAt(me(), i); });
        for (int root = 0; root < np(); ++root) {
          dst.fill([](std::size_t) { return 0.0; });
          axon::reduceOnStream(world, src.ptr, dst.ptr, count, t, op, root, stream);
          CUDA_OK(cudaStreamSynchronize(stream));
          if (me() == root) EXPECT_VALUES(dst.read(), reducedAt(op, i), "reduce to " + std::to_string(root) + " " + what);
          else EXPECT_VALUES(dst.read(), 0.0, "reduce leaves non-roots alone " + what);
        }
      }
    }
  }
}

TEST(GpuColl, TwoShotAndForcedAlgorithmsAgree) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no GPU workspace";
  // Large enough for two-shot on more than 2 GPUs; the explanation names the path.
  const std::size_t count = 1 << 20;
  const auto e = axon::explain(Collective::Allreduce, axon::Team::world(), count, DataType::Float32);
  EXPECT_EQ(e.path, "gpu-p2p") << axon::toString(e);
  EXPECT_EQ(e.algorithm, np() > 2 ? "twoshot" : "oneshot") << axon::toString(e);
  Stream stream;
  DeviceArray src(DataType::Float32, count), dst(DataType::Float32, count);
  src.fill([](std::size_t i) { return inputAt(me(), i); });
  axon::allreduceOnStream(axon::Team::world(), src.ptr, dst.ptr, count, DataType::Float32, ReduceOp::Sum, stream);
  CUDA_OK(cudaStreamSynchronize(stream));
  EXPECT_VALUES(dst.read(), reducedAt(ReduceOp::Sum, i), "allreduce 4 MiB");
}

TEST(GpuColl, ExplainSaysWhatTheKernelOccupies) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no GPU workspace";
  int device = 0, sms = 0, threadsPerSm = 0;
  CUDA_OK(cudaGetDevice(&device));
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUDA_OK(cudaDeviceGetAttribute(&threadsPerSm, cudaDevAttrMaxThreadsPerMultiProcessor, device));
  for (Collective c : {Collective::Allreduce, Collective::Broadcast, Collective::Alltoall}) {
    for (std::size_t count : {std::size_t{2}, std::size_t{1} << 22}) {
      const auto e = axon::explain(c, axon::Team::world(), count, DataType::Float32);
      const std::string text = axon::toString(e);
      ASSERT_EQ(e.path, "gpu-p2p") << text;
      EXPECT_GE(e.blocks, 1) << text;
      EXPECT_NE(e.reason.find("; " + std::to_string(e.blocks) + " channel(s)"), std::string::npos) << text;
      EXPECT_GE(e.threadsPerBlock, 32) << text;
      EXPECT_LE(e.threadsPerBlock, 512) << text;
      EXPECT_EQ(e.threadsPerBlock % 32, 0) << text;
      // An SM holds at most its thread slots' worth of blocks.
      EXPECT_GE(e.blocksPerSm, 1) << text;
      EXPECT_LE(e.blocksPerSm * e.threadsPerBlock, threadsPerSm) << text;
      EXPECT_DOUBLE_EQ(e.sms, static_cast<double>(e.blocks) / e.blocksPerSm) << text;
      EXPECT_EQ(e.deviceSms, sms) << text;
      EXPECT_NE(text.find(axon::smUseText(e)), std::string::npos) << text;
    }
  }
  // A large call spreads over more blocks than a small one (unless this run allows one channel).
  if (const char* channels = std::getenv("AXON_COLL_GPU_CHANNELS"); channels && std::string(channels) == "1") return;
  EXPECT_GT(axon::explain(Collective::Allreduce, axon::Team::world(), std::size_t{1} << 22, DataType::Float32).blocks,
            axon::explain(Collective::Allreduce, axon::Team::world(), 2, DataType::Float32).blocks);
}

// Holds the stream it runs on for a while (one block, so no thread writes early), then fills.
__global__ void slowFill(std::int64_t* p, std::size_t count, std::int64_t value) {
  const long long start = clock64();
  while (clock64() - start < 20'000'000) {
  }
  __syncthreads();
  for (std::size_t i = threadIdx.x; i < count; i += blockDim.x) p[i] = value;
}

TEST(GpuColl, NullStreamIsTheLegacyStream) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no GPU workspace";
  // A null stream is the legacy default stream: the call is enqueued after the producer there
  // (not run at once on a stream of axon's), from C++ and from C.
  const std::size_t count = 100000;
  DeviceArray src(DataType::Int64, count), dst(DataType::Int64, count);
  for (int form = 0; form < 2; ++form) {
    slowFill<<<1, 256>>>(static_cast<std::int64_t*>(src.ptr), count, me() + 1 + form);  // the legacy stream
    if (form == 0) {
      axon::allreduceOnStream(axon::Team::world(), src.ptr, dst.ptr, count, DataType::Int64, ReduceOp::Sum, nullptr);
    } else {
      ASSERT_EQ(axon_allreduce_on_stream(AXON_TEAM_WORLD, src.ptr, dst.ptr, count, AXON_INT64, AXON_SUM, nullptr),
                AXON_SUCCESS)
          << axon_last_error();
    }
    CUDA_OK(cudaDeviceSynchronize());
    const std::string what = form == 0 ? "allreduceOnStream on the legacy stream" : "axon_allreduce_on_stream on NULL";
    EXPECT_VALUES(dst.read(), static_cast<double>(np() * (np() + 1) / 2 + np() * form), what);
  }
}

TEST(GpuColl, CApiForms) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no GPU workspace";
  // The C API's handle is the C++ one, byte for byte.
  const axon::device::CollHandle h = axon::deviceCollHandle(axon::Team::world());
  unsigned char bytes[AXON_DEVICE_COLL_HANDLE_BYTES];
  ASSERT_EQ(axon_device_coll_handle(AXON_TEAM_WORLD, bytes, sizeof bytes), AXON_SUCCESS) << axon_last_error();
  EXPECT_EQ(std::memcmp(bytes, &h, sizeof h), 0);
  axon::device::CollHandle fromC;
  std::memcpy(&fromC, bytes, sizeof fromC);
  EXPECT_EQ(fromC.size, np());
  EXPECT_EQ(fromC.myPe, me());
  // Every stream form through C on a stream of its own.
  Stream stream;
  const std::size_t count = 1031;
  const int root = np() - 1;
  DeviceArray src(DataType::Float32, count), big(DataType::Float32, count * np()), sum(DataType::Float32, count),
      max(DataType::Float32, count), bc(DataType::Float32, count), gathered(DataType::Float32, count * np()),
      scattered(DataType::Float32, count), exchanged(DataType::Float32, count * np());
  src.fill([](std::size_t i) { return inputAt(me(), i); });
  big.fill([](std::size_t i) { return inputAt(me(), i); });
  void* s = static_cast<cudaStream_t>(stream);
  ASSERT_EQ(axon_allreduce_on_stream(AXON_TEAM_WORLD, src.ptr, sum.ptr, count, AXON_FLOAT32, AXON_SUM, s), AXON_SUCCESS);
  ASSERT_EQ(axon_reduce_on_stream(AXON_TEAM_WORLD, src.ptr, max.ptr, count, AXON_FLOAT32, AXON_MAX, root, s),
            AXON_SUCCESS);
  ASSERT_EQ(axon_broadcast_on_stream(AXON_TEAM_WORLD, src.ptr, bc.ptr, count, AXON_FLOAT32, root, s), AXON_SUCCESS);
  ASSERT_EQ(axon_allgather_on_stream(AXON_TEAM_WORLD, src.ptr, gathered.ptr, count, AXON_FLOAT32, s), AXON_SUCCESS);
  ASSERT_EQ(axon_reduce_scatter_on_stream(AXON_TEAM_WORLD, big.ptr, scattered.ptr, count, AXON_FLOAT32, AXON_MIN, s),
            AXON_SUCCESS);
  ASSERT_EQ(axon_alltoall_on_stream(AXON_TEAM_WORLD, big.ptr, exchanged.ptr, count, AXON_FLOAT32, s), AXON_SUCCESS);
  CUDA_OK(cudaStreamSynchronize(stream));
  EXPECT_VALUES(sum.read(), reducedAt(ReduceOp::Sum, i), "C allreduce");
  if (me() == root) EXPECT_VALUES(max.read(), reducedAt(ReduceOp::Max, i), "C reduce");
  EXPECT_VALUES(bc.read(), inputAt(root, i), "C broadcast");
  EXPECT_VALUES(gathered.read(), inputAt(static_cast<int>(i / count), i % count), "C allgather");
  EXPECT_VALUES(scattered.read(), reducedAt(ReduceOp::Min, me() * count + i), "C reduce_scatter");
  EXPECT_VALUES(exchanged.read(), inputAt(static_cast<int>(i / count), me() * count + i % count), "C alltoall");
  // A host buffer is refused by the stream forms, with the status and the message.
  std::vector<float> host(count);
  EXPECT_EQ(axon_allreduce_on_stream(AXON_TEAM_WORLD, host.data(), sum.ptr, count, AXON_FLOAT32, AXON_SUM, s),
            AXON_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(axon_last_error()).find("is not GPU memory"), std::string::npos) << axon_last_error();
}

TEST(GpuColl, CopiesEveryCountAndRoot) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no GPU workspace";
  const auto world = axon::Team::world();
  Stream stream;
  for (std::size_t count : kCounts) {
    for (DataType t : {DataType::Uint8, DataType::BFloat16, DataType::Float64}) {
      const std::string what = std::string(axon::dataTypeName(t)) + " count " + std::to_string(count);
      DeviceArray src(t, count), dst(t, count);
      src.fill([](std::size_t i) { return inputAt(me(), i); });
      for (int root = 0; root < np(); ++root) {
        dst.fill([](std::size_t) { return 0.0; });
        axon::broadcastOnStream(world, src.ptr, dst.ptr, count, t, root, stream);
        CUDA_OK(cudaStreamSynchronize(stream));
        EXPECT_VALUES(dst.read(), inputAt(root, i), "broadcast from " + std::to_string(root) + " " + what);
        DeviceArray inPlace(t, count);  // the root's buffer is the source
        inPlace.fill([&](std::size_t i) { return me() == root ? inputAt(root, i) : 0.0; });
        axon::broadcastOnStream(world, inPlace.ptr, inPlace.ptr, count, t, root, stream);
        CUDA_OK(cudaStreamSynchronize(stream));
        EXPECT_VALUES(inPlace.read(), inputAt(root, i), "in-place broadcast from " + std::to_string(root) + " " + what);
      }
      DeviceArray gathered(t, count * np()), a2aIn(t, count * np()), a2aOut(t, count * np());
      axon::allgatherOnStream(world, src.ptr, gathered.ptr, count, t, stream);
      a2aIn.fill([](std::size_t i) { return inputAt(me(), i); });
      axon::alltoallOnStream(world, a2aIn.ptr, a2aOut.ptr, count, t, stream);
      CUDA_OK(cudaStreamSynchronize(stream));
      const std::size_t c = std::max<std::size_t>(count, 1);
      EXPECT_VALUES(gathered.read(), inputAt(static_cast<int>(i / c), i % c), "allgather " + what);
      EXPECT_VALUES(a2aOut.read(), inputAt(static_cast<int>(i / c), me() * count + i % c), "alltoall " + what);
      // In place: own block of dst is the source.
      DeviceArray inPlace(t, count * np());
      inPlace.fill([&](std::size_t i) { return i / c == static_cast<std::size_t>(me()) ? inputAt(me(), i % c) : 0.0; });
      axon::allgatherOnStream(world, inPlace.at(me() * count), inPlace.ptr, count, t, stream);
      CUDA_OK(cudaStreamSynchronize(stream));
      EXPECT_VALUES(inPlace.read(), inputAt(static_cast<int>(i / c), i % c), "in-place allgather " + what);
    }
  }
}

// Every collective but the barrier on buffers of `where`, at sizes past LL (the Direct protocol's
// on symmetric buffers, Simple's otherwise), one-shot and two-shot, in place too, against exact
// values.
void checkEveryCollective(Where where, const std::string& place) {
  const auto world = axon::Team::world();
  Stream stream;
  const int n = np();
  for (DataType t : {DataType::Float32, DataType::BFloat16, DataType::Float64, DataType::Uint8}) {
    for (std::size_t count : {std::size_t{40001}, std::size_t{600001}}) {
      const std::string what = place + ", " + axon::dataTypeName(t) + " count " + std::to_string(count);
      DeviceArray src(t, count, where), dst(t, count, where);
      src.fill([](std::size_t i) { return inputAt(me(), i); });
      axon::allreduceOnStream(world, src.ptr, dst.ptr, count, t, ReduceOp::Sum, stream);
      CUDA_OK(cudaStreamSynchronize(stream));
      EXPECT_VALUES(dst.read(), reducedAt(ReduceOp::Sum, i), "allreduce " + what);
      axon::allreduceOnStream(world, src.ptr, src.ptr, count, t, ReduceOp::Max, stream);
      CUDA_OK(cudaStreamSynchronize(stream));
      EXPECT_VALUES(src.read(), reducedAt(ReduceOp::Max, i), "in-place allreduce " + what);

      DeviceArray blocks(t, count * n, where), part(t, count, where);
      blocks.fill([](std::size_t i) { return inputAt(me(), i); });
      axon::reduceScatterOnStream(world, blocks.ptr, part.ptr, count, t, ReduceOp::Sum, stream);
      CUDA_OK(cudaStreamSynchronize(stream));
      EXPECT_VALUES(part.read(), reducedAt(ReduceOp::Sum, me() * count + i), "reduce_scatter " + what);
      axon::reduceScatterOnStream(world, blocks.ptr, blocks.at(me() * count), count, t, ReduceOp::Min, stream);
      CUDA_OK(cudaStreamSynchronize(stream));
      const auto mine = blocks.read();
      for (std::size_t i = 0; i < count; ++i) {
        ASSERT_EQ(mine[me() * count + i], reducedAt(ReduceOp::Min, me() * count + i)) << "in-place reduce_scatter " << what << " element " << i;
      }

      src.fill([](std::size_t i) { return inputAt(me(), i); });
      for (int root = 0; root < n; ++root) {
        dst.fill([](std::size_t) { return 0.0; });
        axon::reduceOnStream(world, src.ptr, dst.ptr, count, t, ReduceOp::Max, root, stream);
        axon::broadcastOnStream(world, src.ptr, part.ptr, count, t, root, stream);
        CUDA_OK(cudaStreamSynchronize(stream));
        const std::string from = " root " + std::to_string(root) + " " + what;
        if (me() == root) EXPECT_VALUES(dst.read(), reducedAt(ReduceOp::Max, i), "reduce to" + from);
        else EXPECT_VALUES(dst.read(), 0.0, "reduce leaves non-roots alone," + from);
        EXPECT_VALUES(part.read(), inputAt(root, i), "broadcast from" + from);
        DeviceArray inPlace(t, count, where);
        inPlace.fill([&](std::size_t i) { return me() == root ? inputAt(root, i) : 0.0; });
        axon::broadcastOnStream(world, inPlace.ptr, inPlace.ptr, count, t, root, stream);
        CUDA_OK(cudaStreamSynchronize(stream));
        EXPECT_VALUES(inPlace.read(), inputAt(root, i), "in-place broadcast from" + from);
      }

      DeviceArray gathered(t, count * n, where), exchanged(t, count * n, where);
      axon::allgatherOnStream(world, src.ptr, gathered.ptr, count, t, stream);
      CUDA_OK(cudaStreamSynchronize(stream));
      EXPECT_VALUES(gathered.read(), inputAt(static_cast<int>(i / count), i % count), "allgather " + what);
      blocks.fill([](std::size_t i) { return inputAt(me(), i); });  // as before the in-place reduce_scatter
      axon::alltoallOnStream(world, blocks.ptr, exchanged.ptr, count, t, stream);
      CUDA_OK(cudaStreamSynchronize(stream));
      EXPECT_VALUES(exchanged.read(), inputAt(static_cast<int>(i / count), me() * count + i % count), "alltoall " + what);
      gathered.fill([&](std::size_t i) { return i / count == static_cast<std::size_t>(me()) ? inputAt(me(), i % count) : 0.0; });
      axon::allgatherOnStream(world, gathered.at(me() * count), gathered.ptr, count, t, stream);
      CUDA_OK(cudaStreamSynchronize(stream));
      EXPECT_VALUES(gathered.read(), inputAt(static_cast<int>(i / count), i % count), "in-place allgather " + what);
    }
  }
}

TEST(GpuColl, DirectProtocolOnSymmetricBuffers) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no GPU workspace";
  // 4 MiB takes the Direct protocol on more than 2 GPUs (on 2 from 32 MiB, or with
  // AXON_COLL_GPU_DIRECT=always), unless this run raised AXON_COLL_GPU_LL_MAX above it.
  const auto e = axon::explain(Collective::Allreduce, axon::Team::world(), 1 << 20, DataType::Float32);
  if (e.reason.find("LL protocol") == std::string::npos) {
    const char* mode = std::getenv("AXON_COLL_GPU_DIRECT");
    const bool always = mode && std::string(mode) == "always";
    // Or the pushed allreduce, where this run lowered AXON_COLL_GPU_PUSH_MIN below 4 MiB.
    const bool pushed = e.reason.find("pushed two-shot") != std::string::npos;
    EXPECT_TRUE(pushed || e.reason.find(np() > 2 || always ? "Direct protocol where" : "Direct pays from 32 MiB") !=
                              std::string::npos)
        << axon::toString(e);
  }
  checkEveryCollective(Where::Heap, "symmetric heap");
}

// A Direct reduce whose root's dst is not on the heap: the members cannot store into it, so the
// root reads every member's src itself (with the dst on the heap, the others reduce a part each
// into it: DirectProtocolOnSymmetricBuffers).
TEST(GpuColl, DirectReduceIntoADstOffTheHeap) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no GPU workspace";
  const auto world = axon::Team::world();
  Stream stream;
  for (DataType t : {DataType::Float32, DataType::Int64}) {
    const std::size_t count = 300001;
    DeviceArray src(t, count, Where::Heap), dst(t, count, Where::Plain);
    src.fill([](std::size_t i) { return inputAt(me(), i); });
    for (int root = 0; root < np(); ++root) {
      dst.fill([](std::size_t) { return 0.0; });
      axon::reduceOnStream(world, src.ptr, dst.ptr, count, t, ReduceOp::Sum, root, stream);
      CUDA_OK(cudaStreamSynchronize(stream));
      const std::string what = std::string(axon::dataTypeName(t)) + " root " + std::to_string(root);
      if (me() == root) EXPECT_VALUES(dst.read(), reducedAt(ReduceOp::Sum, i), "reduce to " + what);
      else EXPECT_VALUES(dst.read(), 0.0, "reduce leaves non-roots alone, " + what);
    }
  }
}

// From 32 MiB on 2 GPUs a broadcast on symmetric buffers has the other GPU read the root's src
// (two-shot with one part, Direct) and a reduce runs on Simple; where the buffers do not allow
// Direct (not symmetric, or not on the heap) the broadcast runs one-shot on Simple, and where only
// dst is on the heap the root writes it (Direct one-shot). On more GPUs the same calls run their
// usual forms. Out of place and in place, from every root, against exact values.
TEST(GpuColl, LargeBroadcastAndReduceOnEveryBufferKind) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no GPU workspace";
  const auto world = axon::Team::world();
  const std::size_t count = (std::size_t{8} << 20) + 3;  // 32 MiB of float32, and a 12-byte tail
  const char* mode = std::getenv("AXON_COLL_GPU_DIRECT");
  const std::string direct = mode ? mode : "auto";
  if (np() == 2 && direct != "0") {
    const auto e = axon::explain(Collective::Broadcast, world, count, DataType::Float32);
    EXPECT_EQ(e.algorithm, "twoshot") << axon::toString(e);
    EXPECT_NE(e.reason.find("the other GPU reads the root's src"), std::string::npos) << axon::toString(e);
    const auto r = axon::explain(Collective::Reduce, world, count, DataType::Float32);
    EXPECT_NE(r.reason.find(direct == "always" ? "Direct protocol where" : "reduce on 2 GPUs is faster on Simple"),
              std::string::npos)
        << axon::toString(r);
  }
  // On more GPUs a reduce runs chained (any buffers) from 128 MiB, unless this run moved the bound
  // (the chained reduce at every size: the gpu_coll_chain tests).
  if (np() > 2 && direct != "always" && !std::getenv("AXON_COLL_GPU_CHAIN_MIN")) {
    const auto r = axon::explain(Collective::Reduce, world, std::size_t{32} << 20, DataType::Float32);
    EXPECT_EQ(r.algorithm, "chain") << axon::toString(r);
    EXPECT_EQ(axon::explain(Collective::Reduce, world, count, DataType::Float32).algorithm, "oneshot");
  }
  struct Kind {
    Where src, dst;
    const char* name;
  };
  const Kind kinds[] = {{Where::Heap, Where::Heap, "symmetric heap"},
                        {Where::HeapShiftedOnPe0, Where::HeapShiftedOnPe0, "heap, one element further on PE 0"},
                        {Where::Plain, Where::Plain, "cudaMalloc"},
                        {Where::Plain, Where::Heap, "src from cudaMalloc, dst on the heap"}};
  Stream stream;
  for (const Kind& k : kinds) {
    DeviceArray src(DataType::Float32, count, k.src), dst(DataType::Float32, count, k.dst);
    DeviceArray inPlace(DataType::Float32, count, k.dst);
    src.fill([](std::size_t i) { return inputAt(me(), i); });
    for (int root = 0; root < np(); ++root) {
      const std::string from = " from " + std::to_string(root) + ", " + k.name;
      dst.fill([](std::size_t) { return 0.0; });
      axon::broadcastOnStream(world, src.ptr, dst.ptr, count, DataType::Float32, root, stream);
      CUDA_OK(cudaStreamSynchronize(stream));
      EXPECT_VALUES(dst.read(), inputAt(root, i), "broadcast" + from);
      inPlace.fill([&](std::size_t i) { return me() == root ? inputAt(root, i) : 0.0; });
      axon::broadcastOnStream(world, inPlace.ptr, inPlace.ptr, count, DataType::Float32, root, stream);
      CUDA_OK(cudaStreamSynchronize(stream));
      EXPECT_VALUES(inPlace.read(), inputAt(root, i), "in-place broadcast" + from);
      dst.fill([](std::size_t) { return 0.0; });
      axon::reduceOnStream(world, src.ptr, dst.ptr, count, DataType::Float32, ReduceOp::Sum, root, stream);
      CUDA_OK(cudaStreamSynchronize(stream));
      if (me() == root) EXPECT_VALUES(dst.read(), reducedAt(ReduceOp::Sum, i), "reduce to" + from);
      else EXPECT_VALUES(dst.read(), 0.0, "reduce leaves non-roots alone," + from);
    }
  }
}

TEST(GpuColl, SimpleWhereTheMembersBuffersDisagree) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no GPU workspace";
  checkEveryCollective(Where::HeapOnEvenPes, "heap on even PEs, cudaMalloc on odd");
  checkEveryCollective(Where::HeapShiftedOnPe0, "heap, one element further on PE 0");
}

TEST(GpuColl, BlockingCallsTakeDeviceAndHostBuffers) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no GPU workspace";
  const auto world = axon::Team::world();
  const std::size_t count = 5000;
  std::vector<double> host(count);
  for (std::size_t i = 0; i < count; ++i) host[i] = inputAt(me(), i);
  std::vector<double> out(count, -1);
  axon::allreduce(world, host.data(), out.data(), count, DataType::Float64, ReduceOp::Max);
  EXPECT_VALUES(out, reducedAt(ReduceOp::Max, i), "blocking allreduce on host buffers");
  axon::allreduce(world, host.data(), host.data(), count, DataType::Float64, ReduceOp::Sum);
  EXPECT_VALUES(host, reducedAt(ReduceOp::Sum, i), "blocking in-place allreduce on host buffers");
  DeviceArray src(DataType::Int32, count), gathered(DataType::Int32, count * np());
  src.fill([](std::size_t i) { return inputAt(me(), i); });
  axon::allgather(world, src.ptr, gathered.ptr, count, DataType::Int32);
  EXPECT_VALUES(gathered.read(), inputAt(static_cast<int>(i / count), i % count), "blocking allgather");
  // Mixed: device source, host destination.
  std::vector<std::int32_t> hostOut(count * np(), -1);
  axon::allgather(world, src.ptr, hostOut.data(), count, DataType::Int32);
  for (std::size_t i = 0; i < hostOut.size(); ++i) ASSERT_EQ(hostOut[i], inputAt(static_cast<int>(i / count), i % count));
  axon::barrier(world);
}

// Every blocking collective on device buffers, at a large, a small and a middling count in turn.
// Where the team has no GPU workspace (AXON_P2P=0, or across nodes) these run on host copies that
// the team keeps between calls: a smaller call after a larger one must not see the larger one's
// bytes, a broadcast's root and the members a reduce does not write must keep their buffers.
TEST(GpuColl, BlockingCallsOnDeviceBuffersEveryCollectiveAndSize) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no collectives to stage";
  const auto world = axon::Team::world();
  const DataType t = DataType::Int32;
  constexpr double kUntouched = 9;  // not an input value: a write where none belongs shows
  for (const std::size_t count : {std::size_t(70001), std::size_t(3), std::size_t(5000)}) {
    const std::string what = "count " + std::to_string(count);
    for (int root = 0; root < np(); ++root) {
      DeviceArray inPlace(t, count);
      inPlace.fill([&](std::size_t i) { return me() == root ? inputAt(root, i) : kUntouched; });
      axon::broadcast(world, inPlace.ptr, inPlace.ptr, count, t, root);
      EXPECT_VALUES(inPlace.read(), inputAt(root, i), "in-place broadcast from " + std::to_string(root) + ", " + what);
      DeviceArray src(t, count), dst(t, count);
      src.fill([&](std::size_t i) { return inputAt(me(), i); });
      dst.fill([](std::size_t) { return kUntouched; });
      axon::broadcast(world, src.ptr, dst.ptr, count, t, root);
      EXPECT_VALUES(dst.read(), inputAt(root, i), "broadcast from " + std::to_string(root) + ", " + what);
      EXPECT_VALUES(src.read(), inputAt(me(), i), "broadcast's source, " + what);
      dst.fill([](std::size_t) { return kUntouched; });
      axon::reduce(world, src.ptr, dst.ptr, count, t, ReduceOp::Sum, root);
      EXPECT_VALUES(dst.read(), me() == root ? reducedAt(ReduceOp::Sum, i) : kUntouched,
                    "reduce to " + std::to_string(root) + ", " + what);
    }
    DeviceArray src(t, count), dst(t, count);
    src.fill([&](std::size_t i) { return inputAt(me(), i); });
    axon::allreduce(world, src.ptr, dst.ptr, count, t, ReduceOp::Max);
    EXPECT_VALUES(dst.read(), reducedAt(ReduceOp::Max, i), "allreduce, " + what);
    axon::allreduce(world, src.ptr, src.ptr, count, t, ReduceOp::Sum);
    EXPECT_VALUES(src.read(), reducedAt(ReduceOp::Sum, i), "in-place allreduce, " + what);
    DeviceArray blocks(t, count * np()), scattered(t, count), exchanged(t, count * np());
    blocks.fill([&](std::size_t i) { return inputAt(me(), i); });
    axon::reduceScatter(world, blocks.ptr, scattered.ptr, count, t, ReduceOp::Sum);
    EXPECT_VALUES(scattered.read(), reducedAt(ReduceOp::Sum, me() * count + i), "reduce_scatter, " + what);
    axon::alltoall(world, blocks.ptr, exchanged.ptr, count, t);
    EXPECT_VALUES(exchanged.read(), inputAt(static_cast<int>(i / count), me() * count + i % count),
                  "alltoall, " + what);
  }
  axon::barrier(world);
}

// A team split by colour into a grouping that is not a strided range ({0, 1, 3} of 4 PEs): its
// GPU workspace carries a member table, which the stream, blocking and device-callable calls and
// the device barrier read. Heap buffers at the same offset everywhere would invite the Direct
// protocol, which assumes evenly spaced heaps; the table makes such calls take Simple.
__global__ void groupedTeamCalls(axon::device::Context ctx, axon::device::Team team, axon::device::CollHandle h,
                                 const float* src, float* sum, std::size_t count, int* ok) {
  namespace ad = axon::device;
  ad::barrier<ad::Block>(ctx, team);
  const bool fine = ad::allreduce<ad::Block>(h, src, sum, count, ad::ReduceOp::Sum, 0);
  if (threadIdx.x == 0) *ok = fine ? 1 : 0;
}

TEST(GpuColl, TeamSplitIntoAnyGroupingUsesItsMemberTable) {
  if (np() < 4) GTEST_SKIP() << "needs 4 PEs";
  const int colour = me() == 2 ? 1 : 0;
  axon::Team grouped = axon::Team::world().split(colour);
  ASSERT_TRUE(grouped.valid());
  const std::vector<int> members = colour == 0 ? std::vector<int>{0, 1, 3} : std::vector<int>{2};
  ASSERT_EQ(grouped.nPes(), static_cast<int>(members.size()));
  const std::size_t count = 70001;  // several rounds of Simple and LL
  DeviceArray src(DataType::Float32, count, Where::Heap), sum(DataType::Float32, count, Where::Heap);
  auto expected = [&](std::size_t i) {
    double acc = 0;
    for (int pe : members) acc += inputAt(pe, i);
    return acc;
  };
  src.fill([](std::size_t i) { return inputAt(me(), i); });
  if (colour == 0) {
    Stream stream;
    axon::barrierOnStream(grouped, stream);
    axon::allreduceOnStream(grouped, src.ptr, sum.ptr, count, DataType::Float32, ReduceOp::Sum, stream);
    CUDA_OK(cudaStreamSynchronize(stream));
    EXPECT_VALUES(sum.read(), expected(i), "stream allreduce on {0, 1, 3}");
    sum.fill([](std::size_t) { return 0.0; });
    axon::allreduce(grouped, src.ptr, sum.ptr, count, DataType::Float32, ReduceOp::Sum);
    EXPECT_VALUES(sum.read(), expected(i), "blocking allreduce on {0, 1, 3}");
    sum.fill([](std::size_t) { return 0.0; });
    const axon::device::Team team = axon::deviceTeam(grouped);
    EXPECT_NE(team.members, nullptr);
    const axon::device::CollHandle h = axon::deviceCollHandle(grouped);
    EXPECT_NE(h.members, nullptr);
    int* ok = nullptr;
    CUDA_OK(cudaMallocManaged(&ok, sizeof(int)));
    *ok = 0;
    groupedTeamCalls<<<1, 256, 0, stream>>>(axon::deviceContext(), team, h, static_cast<const float*>(src.ptr),
                                           static_cast<float*>(sum.ptr), count, ok);
    CUDA_OK(cudaStreamSynchronize(stream));
    EXPECT_EQ(*ok, 1);
    EXPECT_VALUES(sum.read(), expected(i), "device-callable allreduce on {0, 1, 3}");
    cudaFree(ok);
  }
  grouped.destroy();
  axon::barrierAll();
}

TEST(GpuColl, GraphCaptureReplaysInStep) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no GPU workspace";
  const auto world = axon::Team::world();
  const std::size_t count = 4099;
  DeviceArray src(DataType::Float32, count), sum(DataType::Float32, count), gathered(DataType::Float32, count * np());
  Stream stream;
  cudaGraph_t graph;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  axon::allreduceOnStream(world, src.ptr, sum.ptr, count, DataType::Float32, ReduceOp::Sum, stream);
  axon::allgatherOnStream(world, src.ptr, gathered.ptr, count, DataType::Float32, stream);
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 20; ++replay) {
    src.fill([&](std::size_t i) { return static_cast<double>((me() + 1) * (replay + 1) + i % 3); });
    CUDA_OK(cudaGraphLaunch(exec, stream));
    CUDA_OK(cudaStreamSynchronize(stream));
    const double peSum = static_cast<double>(np() * (np() + 1) / 2);
    EXPECT_VALUES(sum.read(), peSum * (replay + 1) + np() * static_cast<double>(i % 3),
                  "replay " + std::to_string(replay) + " allreduce");
    EXPECT_VALUES(gathered.read(), static_cast<double>((i / count + 1) * (replay + 1) + (i % count) % 3),
                  "replay " + std::to_string(replay) + " allgather");
    axon::barrier(world);  // no PE refills src before every PE's replay is done with it
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

__global__ void deviceCollectives(axon::device::CollHandle h, const float* src, float* sum, float* gathered,
                                  std::size_t count, int* ok) {
  namespace ad = axon::device;
  // Two blocks, two channels: each runs its own sequence of calls.
  bool fine = true;
  if (blockIdx.x == 0) {
    for (int k = 0; k < 10 && fine; ++k) fine = ad::allreduce<ad::Block>(h, src, sum, count, ad::ReduceOp::Sum, 0);
    fine = fine && ad::barrier<ad::Block>(h, 0);
  } else {
    for (int k = 0; k < 10 && fine; ++k) fine = ad::allgather<ad::Block>(h, src, gathered, count, 1);
  }
  if (threadIdx.x == 0) ok[blockIdx.x] = fine ? 1 : 0;
}

TEST(GpuColl, DeviceCallableAtBlockScope) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no GPU workspace";
  const std::size_t count = 100003;
  DeviceArray src(DataType::Float32, count), sum(DataType::Float32, count), gathered(DataType::Float32, count * np());
  src.fill([](std::size_t i) { return inputAt(me(), i); });
  int* ok = nullptr;
  CUDA_OK(cudaMallocManaged(&ok, 2 * sizeof(int)));
  ok[0] = ok[1] = -1;
  deviceCollectives<<<2, 256>>>(axon::deviceCollHandle(axon::Team::world()), static_cast<float*>(src.ptr),
                                static_cast<float*>(sum.ptr), static_cast<float*>(gathered.ptr), count, ok);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(ok[0], 1);
  EXPECT_EQ(ok[1], 1);
  EXPECT_VALUES(sum.read(), reducedAt(ReduceOp::Sum, i), "device allreduce");
  EXPECT_VALUES(gathered.read(), inputAt(static_cast<int>(i / count), i % count), "device allgather");
  cudaFree(ok);
}

// One channel alternates small calls (the LL protocol) with large ones (Simple), so each protocol
// starts its rounds where the other left the channel.
__global__ void deviceMixedProtocols(axon::device::CollHandle h, const float* src, float* small, float* large,
                                     std::size_t smallCount, std::size_t largeCount, int calls, int* ok) {
  namespace ad = axon::device;
  bool fine = true;
  for (int k = 0; k < calls && fine; ++k) {
    fine = ad::allreduce<ad::Block>(h, src, small + k * smallCount, smallCount, ad::ReduceOp::Max, 0) &&
           ad::broadcast<ad::Block>(h, src, large, largeCount, k % h.size, 0);
  }
  if (threadIdx.x == 0) *ok = fine ? 1 : 0;
}

TEST(GpuColl, DeviceCallableMixesProtocolsOnAChannel) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no GPU workspace";
  const std::size_t smallCount = 37, largeCount = 50000;  // 148 B (LL) and 200 KB (Simple)
  const int calls = 30;
  DeviceArray src(DataType::Float32, largeCount), small(DataType::Float32, smallCount * calls),
      large(DataType::Float32, largeCount);
  src.fill([](std::size_t i) { return inputAt(me(), i); });
  int* ok = nullptr;
  CUDA_OK(cudaMallocManaged(&ok, sizeof(int)));
  *ok = -1;
  deviceMixedProtocols<<<1, 256>>>(axon::deviceCollHandle(axon::Team::world()), static_cast<float*>(src.ptr),
                                   static_cast<float*>(small.ptr), static_cast<float*>(large.ptr), smallCount,
                                   largeCount, calls, ok);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(*ok, 1);
  EXPECT_VALUES(small.read(), reducedAt(ReduceOp::Max, i % smallCount), "device LL allreduce");
  EXPECT_VALUES(large.read(), inputAt((calls - 1) % np(), i), "device Simple broadcast");
  cudaFree(ok);
}

// Channels' round counters pass 2^32, where the LL protocol's 32-bit flags wrap: the round that
// would have flag 0 runs as a Simple exchange and clears the LL slots first, so flags left from
// 2^32 rounds earlier are never taken for current ones. Every slot is seeded with such flags.
TEST(GpuColl, RoundCountersPastTwoToThe32) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no GPU workspace";
  const auto world = axon::Team::world();
  axon::Team team = world.splitStrided(0, 1, np());
  const axon::device::CollHandle h = axon::deviceCollHandle(team);
  char* mine = h.base + h.myIndex * h.stride;
  std::vector<unsigned long long> rounds(h.channels * axon::device::kCollLine / 8, 0);
  for (int c = 0; c < h.channels; ++c) rounds[c * axon::device::kCollLine / 8] = (1ull << 32) - 3;
  CUDA_OK(cudaMemcpy(mine + h.roundsOffset, rounds.data(), rounds.size() * 8, cudaMemcpyHostToDevice));
  // Units {garbage, flag, garbage, flag} with the flags of rounds 2^32 + 1 .. 2^32 + 8.
  const std::size_t units = h.channels * 2ull * h.size * h.llSlotBytes / 16;
  std::vector<unsigned> stale(units * 4);
  for (std::size_t u = 0; u < units; ++u) {
    const unsigned flag = 1 + u % 8;
    stale[4 * u] = stale[4 * u + 2] = 0x7fc00bad;  // a NaN as float
    stale[4 * u + 1] = stale[4 * u + 3] = flag;
  }
  CUDA_OK(cudaMemcpy(mine + h.llOffset, stale.data(), stale.size() * 4, cudaMemcpyHostToDevice));
  CUDA_OK(cudaDeviceSynchronize());
  world.barrier();  // every PE seeded its workspace before any call
  Stream stream;
  const std::size_t count = 3000;  // 12 KB: LL on several channels, where LL is on
  DeviceArray src(DataType::Float32, count);
  src.fill([](std::size_t i) { return inputAt(me(), i); });
  for (int k = 0; k < 12; ++k) {
    DeviceArray sum(DataType::Float32, count), gathered(DataType::Float32, count * np());
    axon::allreduceOnStream(team, src.ptr, sum.ptr, count, DataType::Float32, ReduceOp::Sum, stream);
    axon::allgatherOnStream(team, src.ptr, gathered.ptr, count, DataType::Float32, stream);
    CUDA_OK(cudaStreamSynchronize(stream));
    EXPECT_VALUES(sum.read(), reducedAt(ReduceOp::Sum, i), "allreduce " + std::to_string(k) + " across the wrap");
    EXPECT_VALUES(gathered.read(), inputAt(static_cast<int>(i / count), i % count),
                  "allgather " + std::to_string(k) + " across the wrap");
  }
  CUDA_OK(cudaMemcpy(rounds.data(), mine + h.roundsOffset, rounds.size() * 8, cudaMemcpyDeviceToHost));
  EXPECT_GT(rounds[0], 1ull << 32) << "channel 0 did not pass the wrap";
  team.destroy();
}

TEST(GpuColl, TwoTeamsOnTwoStreamsAtOnce) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no GPU workspace";
  const auto world = axon::Team::world();
  axon::Team twin = world.splitStrided(0, 1, np());  // the same members, its own workspace
  const std::size_t count = 3000;
  Stream a, b;
  DeviceArray srcA(DataType::Int64, count), srcB(DataType::Int64, count);
  srcA.fill([](std::size_t i) { return inputAt(me(), i); });
  srcB.fill([](std::size_t i) { return 10 * inputAt(me(), i); });
  std::vector<std::unique_ptr<DeviceArray>> outA, outB;
  for (int k = 0; k < 50; ++k) {
    outA.push_back(std::make_unique<DeviceArray>(DataType::Int64, count));
    outB.push_back(std::make_unique<DeviceArray>(DataType::Int64, count));
    axon::allreduceOnStream(world, srcA.ptr, outA.back()->ptr, count, DataType::Int64, ReduceOp::Sum, a);
    axon::allreduceOnStream(twin, srcB.ptr, outB.back()->ptr, count, DataType::Int64, ReduceOp::Max, b);
  }
  CUDA_OK(cudaStreamSynchronize(a));
  CUDA_OK(cudaStreamSynchronize(b));
  for (int k = 0; k < 50; ++k) {
    EXPECT_VALUES(outA[k]->read(), reducedAt(ReduceOp::Sum, i), "team world call " + std::to_string(k));
    EXPECT_VALUES(outB[k]->read(), 10 * reducedAt(ReduceOp::Max, i), "twin team call " + std::to_string(k));
  }
  twin.destroy();
}

TEST(GpuColl, ThousandMixedCallsBackToBack) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no GPU workspace";
  const auto world = axon::Team::world();
  Stream stream;
  constexpr int kCalls = 1000;
  constexpr std::size_t kMax = 97;
  DeviceArray src(DataType::Float32, kMax * np());
  src.fill([](std::size_t i) { return inputAt(me(), i); });
  DeviceArray out(DataType::Float32, kCalls * kMax * np());
  for (int k = 0; k < kCalls; ++k) {
    const std::size_t count = 1 + (k * 31) % kMax;
    char* o = out.at(k * kMax * np());
    switch (k % 5) {
      case 0: axon::allreduceOnStream(world, src.ptr, o, count, DataType::Float32, ReduceOp::Sum, stream); break;
      case 1: axon::broadcastOnStream(world, src.ptr, o, count, DataType::Float32, k % np(), stream); break;
      case 2: axon::allgatherOnStream(world, src.ptr, o, count, DataType::Float32, stream); break;
      case 3: axon::reduceScatterOnStream(world, src.ptr, o, count, DataType::Float32, ReduceOp::Max, stream); break;
      case 4: axon::alltoallOnStream(world, src.ptr, o, count, DataType::Float32, stream); break;
    }
  }
  CUDA_OK(cudaStreamSynchronize(stream));
  const auto all = out.read();
  for (int k = 0; k < kCalls; ++k) {
    const std::size_t count = 1 + (k * 31) % kMax;
    const double* o = all.data() + k * kMax * np();
    for (std::size_t i = 0; i < count * (k % 5 == 2 || k % 5 == 4 ? np() : 1); ++i) {
      double want = 0;
      switch (k % 5) {
        case 0: want = reducedAt(ReduceOp::Sum, i); break;
        case 1: want = inputAt(k % np(), i); break;
        case 2: want = inputAt(static_cast<int>(i / count), i % count); break;
        case 3: want = reducedAt(ReduceOp::Max, me() * count + i); break;
        case 4: want = inputAt(static_cast<int>(i / count), me() * count + i % count); break;
      }
      ASSERT_EQ(o[i], want) << "call " << k << " (kind " << k % 5 << ", count " << count << ") element " << i;
    }
  }
}

TEST(GpuColl, BadArgumentsAreRefused) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no GPU workspace";
  const auto world = axon::Team::world();
  std::vector<float> host(16);
  DeviceArray dev(DataType::Float32, 16);
  Stream stream;
  try {
    axon::allreduceOnStream(world, host.data(), dev.ptr, 16, DataType::Float32, ReduceOp::Sum, stream);
    FAIL() << "a host buffer on a stream was accepted";
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("not GPU memory"), std::string::npos) << e.what();
  }
  try {
    axon::broadcastOnStream(world, dev.ptr, dev.ptr, 16, DataType::Float32, np(), stream);
    FAIL() << "a root outside the team was accepted";
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::InvalidPe);
  }
}

TEST(GpuColl, MismatchedCallsAreReportedOnEveryPe) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no GPU workspace";
  const auto world = axon::Team::world();
  axon::Team team = world.splitStrided(0, 1, np());
  // PE 0 passes one element more than the others: every PE fails naming both calls.
  const std::size_t count = 10 + (me() == 0 ? 1 : 0);
  DeviceArray src(DataType::Float32, 11), dst(DataType::Float32, 11);
  try {
    axon::allreduce(team, src.ptr, dst.ptr, count, DataType::Float32, ReduceOp::Sum);
    FAIL() << "a mismatched allreduce completed";
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::CollectiveMismatch) << e.what();
    const std::string text = e.what();
    EXPECT_NE(text.find("allreduce(count 11"), std::string::npos) << text;
    EXPECT_NE(text.find("allreduce(count 10"), std::string::npos) << text;
  }
  // The team refuses from then on; the world is untouched.
  try {
    axon::barrier(team);
    FAIL() << "a failed team ran another collective";
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::CollectiveMismatch) << e.what();
    EXPECT_NE(std::string(e.what()).find("destroy the team"), std::string::npos) << e.what();
  }
  float x = 1, y = 0;
  axon::allreduce(world, &x, &y, 1, DataType::Float32, ReduceOp::Sum);
  EXPECT_EQ(y, static_cast<float>(np()));
  team.destroy();
}

TEST(GpuColl, MismatchedProtocolsAreReportedOnEveryPe) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no GPU workspace";
  axon::Team team = axon::Team::world().splitStrided(0, 1, np());
  // PE 0's call is small (LL where AXON_COLL_GPU_LL_MAX turns it on), the others' large (Simple):
  // each side recognizes the other's protocol in the round instead of waiting for its signal.
  const std::size_t count = me() == 0 ? 10 : 100000;
  DeviceArray src(DataType::Float32, 100000), dst(DataType::Float32, 100000);
  try {
    axon::allreduce(team, src.ptr, dst.ptr, count, DataType::Float32, ReduceOp::Sum);
    FAIL() << "a mismatched allreduce completed";
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::CollectiveMismatch) << e.what();
    const std::string text = e.what();
    EXPECT_NE(text.find("allreduce(count 10,"), std::string::npos) << text;
    EXPECT_NE(text.find("allreduce(count 100000,"), std::string::npos) << text;
  }
  team.destroy();
}

// Runs `call` on a fresh team of every PE, half of which call one thing and half another: every
// PE must get CollectiveMismatch naming each of `names`, from its blocking call or (stream forms)
// from the next host call on the team once the stream is done; none completes normally.
void expectGpuMismatch(const std::string& what, const std::vector<std::string>& names,
                       const std::function<void(const axon::Team&, cudaStream_t)>& call, bool onStream) {
  axon::Team team = axon::Team::world().splitStrided(0, 1, np());
  Stream stream;
  std::string text;
  try {
    call(team, onStream ? static_cast<cudaStream_t>(stream) : nullptr);
    if (onStream) {
      CUDA_OK(cudaStreamSynchronize(stream));
      axon::barrier(team);
    }
    ADD_FAILURE() << what << ": PE " << me() << "'s call completed normally";
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::CollectiveMismatch) << what << ": " << e.what();
    text = e.what();
  }
  for (const std::string& name : names) {
    EXPECT_NE(text.find(name), std::string::npos) << what << ": '" << name << "' is not named in '" << text << "'";
  }
  team.destroy();
}

// The pairs that returned wrong data on the host path (roots that agree within each half, a
// collective against another), in the blocking and the stream-ordered form, small (LL) and large
// (Simple or Direct, two-shot on more than 2 GPUs).
TEST(GpuColl, MismatchedRootsAndCollectivesFailOnEveryPe) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no GPU workspace";
  const std::size_t big = std::size_t{1} << 20;
  DeviceArray src(DataType::Float32, big), dst(DataType::Float32, big * np());
  const bool lower = me() < np() / 2;
  const int other = np() / 2;
  const std::string r0 = "root 0", r1 = "root " + std::to_string(other);
  for (bool onStream : {false, true}) {
    const std::string form = onStream ? " on a stream" : "";
    for (std::size_t count : {std::size_t{64}, big}) {
      expectGpuMismatch("broadcast roots" + form, {r0, r1}, [&](const axon::Team& t, cudaStream_t s) {
        const int root = lower ? 0 : other;
        if (s) axon::broadcastOnStream(t, src.ptr, dst.ptr, count, DataType::Float32, root, s);
        else axon::broadcast(t, src.ptr, dst.ptr, count, DataType::Float32, root);
      }, onStream);
      expectGpuMismatch("allreduce against broadcast" + form, {"allreduce(", "broadcast("},
                        [&](const axon::Team& t, cudaStream_t s) {
                          if (lower && s) axon::allreduceOnStream(t, src.ptr, dst.ptr, count, DataType::Float32, ReduceOp::Sum, s);
                          else if (lower) axon::allreduce(t, src.ptr, dst.ptr, count, DataType::Float32, ReduceOp::Sum);
                          else if (s) axon::broadcastOnStream(t, src.ptr, dst.ptr, count, DataType::Float32, 0, s);
                          else axon::broadcast(t, src.ptr, dst.ptr, count, DataType::Float32, 0);
                        }, onStream);
    }
    expectGpuMismatch("reduce roots" + form, {r0, r1}, [&](const axon::Team& t, cudaStream_t s) {
      const int root = lower ? 0 : other;
      if (s) axon::reduceOnStream(t, src.ptr, dst.ptr, 64, DataType::Float32, ReduceOp::Sum, root, s);
      else axon::reduce(t, src.ptr, dst.ptr, 64, DataType::Float32, ReduceOp::Sum, root);
    }, onStream);
    // The last PE names root 0, the others the last PE. Chained (gpu_coll_chain), the last PE's
    // successor, PE 0, thinks itself the head and never opens to it: only the posted records
    // tell the mismatch there.
    const int last = np() - 1;
    expectGpuMismatch("reduce roots, the last PE's against the others'" + form, {r0, "root " + std::to_string(last)},
                      [&](const axon::Team& t, cudaStream_t s) {
                        const int root = me() == last ? 0 : last;
                        if (s) axon::reduceOnStream(t, src.ptr, dst.ptr, 64, DataType::Float32, ReduceOp::Sum, root, s);
                        else axon::reduce(t, src.ptr, dst.ptr, 64, DataType::Float32, ReduceOp::Sum, root);
                      }, onStream);
  }
}

__global__ void deviceBroadcastFromEitherRoot(axon::device::CollHandle h, const float* src, float* dst,
                                              std::size_t count, int root, int* ok) {
  namespace ad = axon::device;
  const bool fine = ad::broadcast<ad::Block>(h, src, dst, count, root);
  if (threadIdx.x == 0) *ok = fine ? 1 : 0;
}

// The device-callable form: each half broadcasts from its own root; every PE's call returns false,
// and the host calls on the team name both calls.
TEST(GpuColl, MismatchedDeviceRootsFailOnEveryPe) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no GPU workspace";
  axon::Team team = axon::Team::world().splitStrided(0, 1, np());
  DeviceArray src(DataType::Float32, 64), dst(DataType::Float32, 64);
  int* ok = nullptr;
  CUDA_OK(cudaMallocManaged(&ok, sizeof(int)));
  *ok = -1;
  const int root = me() < np() / 2 ? 0 : np() / 2;
  deviceBroadcastFromEitherRoot<<<1, 128>>>(axon::deviceCollHandle(team), static_cast<const float*>(src.ptr),
                                            static_cast<float*>(dst.ptr), 64, root, ok);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaDeviceSynchronize());
  EXPECT_EQ(*ok, 0) << "PE " << me() << "'s mismatched device broadcast completed";
  try {
    axon::barrier(team);
    FAIL() << "a failed team ran another collective";
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::CollectiveMismatch) << e.what();
    const std::string text = e.what();
    EXPECT_NE(text.find("root 0"), std::string::npos) << text;
    EXPECT_NE(text.find("root " + std::to_string(np() / 2)), std::string::npos) << text;
  }
  team.destroy();
  cudaFree(ok);
}

// A team's destroy on some PEs against a collective on the others: the destroy publishes its record
// through the GPU workspace (a barrier kernel tagged Team::destroy()), so both sides name both.
TEST(GpuColl, DestroyAgainstCollectiveFailsOnEveryPe) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no GPU workspace";
  axon::Team team = axon::Team::world().splitStrided(0, 1, np());
  DeviceArray src(DataType::Float32, 64), dst(DataType::Float32, 64 * np());
  std::string text;
  try {
    if (me() < np() / 2) team.destroy();
    else axon::allgather(team, src.ptr, dst.ptr, 16, DataType::Float32);
    ADD_FAILURE() << "PE " << me() << "'s call completed normally";
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::CollectiveMismatch) << e.what();
    text = e.what();
  }
  EXPECT_NE(text.find("Team::destroy()"), std::string::npos) << text;
  EXPECT_NE(text.find("allgather("), std::string::npos) << text;
  team.destroy();  // after the failure, without a record
  axon::barrierAll();
}

// A team barrier on some PEs against a GPU collective on the others: the barrier compares the GPU
// collectives each member's host issued before it (coll/gpu_call_order.hpp), so every PE fails
// naming both calls instead of waiting until AXON_TIMEOUT: the blocking form (whose kernel waits
// for the barrier's PEs and is stopped by their report) and the stream form followed by the same
// barrier (one more GPU collective before it on half the PEs).
TEST(GpuColl, TeamBarrierAgainstCollectiveFailsOnEveryPe) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no GPU workspace";
  DeviceArray src(DataType::Float32, 1024), dst(DataType::Float32, 1024);
  const bool lower = me() < np() / 2;
  for (bool onStream : {false, true}) {
    axon::Team team = axon::Team::world().splitStrided(0, 1, np());
    Stream stream;
    std::string text;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      if (lower) {
        team.barrier();
      } else if (onStream) {
        axon::allreduceOnStream(team, src.ptr, dst.ptr, 1024, DataType::Float32, ReduceOp::Sum, stream);
        team.barrier();
      } else {
        axon::allreduce(team, src.ptr, dst.ptr, 1024, DataType::Float32, ReduceOp::Sum);
      }
      ADD_FAILURE() << "PE " << me() << "'s call completed normally";
    } catch (const axon::Error& e) {
      EXPECT_EQ(e.code(), axon::ErrorCode::CollectiveMismatch) << e.what();
      text = e.what();
    }
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(sec, 5.0) << "found after " << sec << " s: " << text;
    EXPECT_NE(text.find("Team::barrier()"), std::string::npos) << text;
    // Blocking: the barrier's PEs saw the allreduce logged without an entry, and named it; on a
    // stream both sides entered the barrier, after different numbers of GPU collectives.
    if (!onStream) EXPECT_NE(text.find("allreduce("), std::string::npos) << text;
    // The stream's kernel was stopped by the report: the stream drains.
    CUDA_OK(cudaStreamSynchronize(stream));
    team.destroy();
  }
  axon::barrierAll();
}

// The same number of GPU collectives before a team barrier on every member passes, also with
// stream-ordered calls still pending when the barrier is called.
TEST(GpuColl, TeamBarrierAfterTheSameCollectivesPasses) {
  if (np() < 2) GTEST_SKIP() << "a team of one PE has no GPU workspace";
  axon::Team team = axon::Team::world().splitStrided(0, 1, np());
  DeviceArray src(DataType::Float32, 1 << 16), dst(DataType::Float32, 1 << 16);
  Stream stream;
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i <= round % 3; ++i) {
      axon::allreduceOnStream(team, src.ptr, dst.ptr, 1 << 16, DataType::Float32, ReduceOp::Sum, stream);
    }
    if (round % 2) {
      // A blocking call on a team with stream-ordered calls pending synchronizes the stream first
      // (docs/architecture.md): the kernels of both would otherwise race for the team's rounds.
      CUDA_OK(cudaStreamSynchronize(stream));
      axon::allreduce(team, src.ptr, dst.ptr, 64, DataType::Float32, ReduceOp::Sum);
    }
    team.barrier();  // in even rounds with the stream's calls still pending
  }
  CUDA_OK(cudaStreamSynchronize(stream));
  team.destroy();
  axon::barrierAll();
}

}  // namespace

namespace {

// After PE 0's collective on `team` timed out alone: the others wait past PE 0's bound (3 s), meet
// it at the world's barrier, and find the team stopped by PE 0.
void expectStoppedByPe0(const axon::Team& team) {
  if (me() != 0) usleep(3000000);
  axon::Team::world().barrier();
  if (me() == 0) return;
  try {
    axon::barrier(team);
    FAIL() << "a stopped team ran a collective";
  } catch (const axon::Error& e) {
    EXPECT_EQ(e.code(), axon::ErrorCode::Timeout) << e.what();
    EXPECT_NE(std::string(e.what()).find("stopped by PE 0"), std::string::npos) << e.what();
  }
}

// Runs only with a short AXON_TIMEOUT (its own ctest entry): PE 0 calls, PE 1 does not.
TEST(GpuCollTimeout, AMissingPeIsNamed) {
  const char* t = std::getenv("AXON_TIMEOUT");
  if (!t || std::atof(t) > 5) GTEST_SKIP() << "needs AXON_TIMEOUT <= 5";
  const auto world = axon::Team::world();
  axon::Team team = world.splitStrided(0, 1, np());
  float x = 1, y = 0;
  if (me() == 0) {
    try {
      axon::allreduce(team, &x, &y, 1, DataType::Float32, ReduceOp::Sum);
      FAIL() << "an allreduce without its peers completed";
    } catch (const axon::Error& e) {
      EXPECT_EQ(e.code(), axon::ErrorCode::Timeout) << e.what();
      const std::string text = e.what();
      EXPECT_NE(text.find("waited past AXON_TIMEOUT"), std::string::npos) << text;
      EXPECT_NE(text.find("for PE 1"), std::string::npos) << text;
      // A one-element call takes LL (flag words) unless AXON_COLL_GPU_LL_MAX=0 turns it off, then
      // Simple (ready words).
      const char* llMax = std::getenv("AXON_COLL_GPU_LL_MAX");
      const bool ll = !(llMax && std::string(llMax) == "0");
      EXPECT_NE(text.find(ll ? "LL flag at 0x" : "ready word at 0x"), std::string::npos) << text;
      EXPECT_NE(text.find(ll ? "expected 1, seen 0" : "expected >= 1, seen 0"), std::string::npos) << text;
    }
  }
  // PE 0 gives up after AXON_TIMEOUT; the others wait longer than that before the barrier, which
  // AXON_TIMEOUT bounds too, and then find the team stopped.
  expectStoppedByPe0(team);
  team.destroy();
}

// A team's own timeout bounds its kernels' waits (AXON_TIMEOUT stays long): PE 0 calls, the
// others do not; PE 0's kernel gives up after the team's 1 s and the error names that bound.
TEST(GpuCollTimeout, TheTeamsOwnTimeoutBoundsItsKernels) {
  const char* t = std::getenv("AXON_TIMEOUT");
  if (t && std::atof(t) <= 5) GTEST_SKIP() << "the short-AXON_TIMEOUT entry runs the test above";
  if (np() < 2) GTEST_SKIP() << "needs a PE that does not call";
  const auto world = axon::Team::world();
  axon::Team team = world.splitStrided(0, 1, np());
  team.setTimeout(1.0);
  float x = 1, y = 0;
  if (me() == 0) {
    const auto start = std::chrono::steady_clock::now();
    try {
      axon::allreduce(team, &x, &y, 1, DataType::Float32, ReduceOp::Sum);
      FAIL() << "an allreduce without its peers completed";
    } catch (const axon::Error& e) {
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      EXPECT_EQ(e.code(), axon::ErrorCode::Timeout) << e.what();
      EXPECT_NE(std::string(e.what()).find("waited past the team's timeout (1 s)"), std::string::npos) << e.what();
      EXPECT_LT(seconds, 10.0) << "ended after " << seconds << " s, not the team's 1 s";
    }
  }
  expectStoppedByPe0(team);
  team.destroy();
}

}  // namespace
