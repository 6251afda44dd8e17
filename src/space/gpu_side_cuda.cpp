// The staging-space client's GPU work: the driver (loaded at run time), a stream of its own, a pool
// of device staging buffers, servers' arenas pinned chunk by chunk, and the fused reassembly
// kernel (space/space_kernels.cu).
#include <algorithm>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "gpu/driver.hpp"
#include "space/arena.hpp"
#include "space/gpu_side.hpp"

namespace axon::space {
namespace {

using gpu::cuCheck;

class CudaSide;

class PooledStaging final : public StagingBuffer {
 public:
  PooledStaging(CudaSide& owner, bool pinned, CUdeviceptr p, std::size_t bytes)
      : owner_(owner), pinned_(pinned), p_(p), bytes_(bytes) {}
  ~PooledStaging() override;
  unsigned char* data() const override { return reinterpret_cast<unsigned char*>(p_); }

 private:
  CudaSide& owner_;
  bool pinned_;  // page-locked host memory, else device memory
  CUdeviceptr p_;
  std::size_t bytes_;
};

class CudaSide final : public GpuSide {
 public:
  explicit CudaSide(const gpu::DriverApi& cu) : cu_(cu) {}

  ~CudaSide() override {
    if (!ctx_) return;
    cu_.cuCtxSetCurrent(ctx_);
    for (auto& [bytes, p] : free_) cu_.cuMemFree(p);
    for (auto& [bytes, p] : freePinned_) cu_.cuMemFreeHost(reinterpret_cast<void*>(p));
    for (CUdeviceptr t : tables_) cu_.cuMemFree(t);
    for (void* chunk : pinned_) cu_.cuMemHostUnregister(chunk);
    if (stream_) cu_.cuStreamDestroy(stream_);
  }

  bool isDevice(const void* p) override {
    CUmemorytype type{};
    if (cu_.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(p)) !=
            CUDA_SUCCESS ||
        type != CU_MEMORYTYPE_DEVICE) {
      return false;
    }
    std::lock_guard lock(mu_);
    if (!ctx_) {
      CUcontext ctx = nullptr;
      cuCheck(cu_.cuPointerGetAttribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, reinterpret_cast<CUdeviceptr>(p)),
              "staging space: the context of a device pointer");
      ctx_ = ctx;
      cu_.cuCtxSetCurrent(ctx_);
      cuCheck(cu_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "staging space: cuStreamCreate");
    }
    return true;
  }

  void addHostRange(void* base, std::size_t bytes) override {
    std::lock_guard lock(mu_);
    ranges_[static_cast<char*>(base)] = bytes;
  }

  void copy(void* dst, const void* src, std::size_t bytes) override {
    std::lock_guard lock(mu_);
    enter();
    enqueue(dst, src, bytes);
    cuCheck(cu_.cuStreamSynchronize(stream_), "staging space: a copy between host and GPU memory");
  }

  void copyAll(const std::vector<Span>& spans) override {
    std::lock_guard lock(mu_);
    enter();
    for (const Span& s : spans) enqueue(s.dst, s.src, s.bytes);
    cuCheck(cu_.cuStreamSynchronize(stream_), "staging space: copies of fragments into device staging");
  }

  std::unique_ptr<StagingBuffer> staging(std::size_t bytes) override { return take(false, bytes); }
  std::unique_ptr<StagingBuffer> pinnedStaging(std::size_t bytes) override { return take(true, bytes); }

  void giveBack(bool pinned, CUdeviceptr p, std::size_t bytes) {
    std::lock_guard lock(mu_);
    auto& pool = pinned ? freePinned_ : free_;
    pool.emplace(bytes, p);
    // Keep the pools small: the largest few buffers of each, and page-locked memory within a bound
    // (a get's landing buffer may be as large as the get).
    auto pooledBytes = [&] {
      std::size_t total = 0;
      for (const auto& [b, q] : pool) total += b;
      return total;
    };
    while (pool.size() > kPooled || (pinned && !pool.empty() && pooledBytes() > kPooledPinnedBytes)) {
      enter();
      const CUdeviceptr smallest = pool.begin()->second;
      if (pinned) {
        cu_.cuMemFreeHost(reinterpret_cast<void*>(smallest));
      } else {
        cu_.cuMemFree(smallest);
      }
      pool.erase(pool.begin());
    }
  }

  void reassemble(std::vector<kernels::RegionCopy> copies) override {
    std::lock_guard lock(mu_);
    enter();
    const kernels::RunSummary runs = kernels::numberRuns(copies.data(), static_cast<int>(copies.size()));
    const std::size_t tableBytes = copies.size() * sizeof(kernels::RegionCopy);
    if (tableBytes > tableCapacity_) {
      if (table_) tables_.push_back(table_);  // freed at the end: a launch may still read it
      cuCheck(cu_.cuMemAlloc(&table_, tableBytes), "staging space: the reassembly table");
      tableCapacity_ = tableBytes;
    }
    cuCheck(cu_.cuMemcpyAsync(table_, reinterpret_cast<CUdeviceptr>(copies.data()), tableBytes, stream_),
            "staging space: uploading the reassembly table");
    kernels::fusedRegionCopy(stream_, reinterpret_cast<const kernels::RegionCopy*>(table_),
                             static_cast<int>(copies.size()), runs);
    cuCheck(cu_.cuStreamSynchronize(stream_), "staging space: the reassembly kernel");
  }

 private:
  void enter() {
    if (!ctx_) {
      throw Error(ErrorCode::Internal, "staging space: GPU work before any device pointer was seen");
    }
    cu_.cuCtxSetCurrent(ctx_);
  }

  // A buffer of at least `bytes` from the pool, else a new one.
  std::unique_ptr<StagingBuffer> take(bool pinned, std::size_t bytes) {
    std::lock_guard lock(mu_);
    enter();
    auto& pool = pinned ? freePinned_ : free_;
    auto it = pool.lower_bound(bytes);
    // Not a buffer far larger than asked for: a pipeline's chunk must not take a get's landing.
    if (it != pool.end() && it->first <= std::max<std::size_t>(2 * bytes, bytes + (1u << 20))) {
      auto out = std::make_unique<PooledStaging>(*this, pinned, it->second, it->first);
      pool.erase(it);
      return out;
    }
    CUdeviceptr p = 0;
    if (pinned) {
      void* host = nullptr;
      cuCheck(cu_.cuMemHostAlloc(&host, bytes, CU_MEMHOSTALLOC_PORTABLE),
              "staging space: pinned host staging of " + std::to_string(bytes) + " bytes");
      p = reinterpret_cast<CUdeviceptr>(host);
    } else {
      cuCheck(cu_.cuMemAlloc(&p, bytes), "staging space: device staging of " + std::to_string(bytes) + " bytes");
    }
    return std::make_unique<PooledStaging>(*this, pinned, p, bytes);
  }

  // Enqueues one copy, pinning (once) and splitting at the arena chunks its host side touches.
  void enqueue(void* dst, const void* src, std::size_t bytes) {
    const char* hostSide = static_cast<const char*>(isDeviceUnlocked(dst) ? src : dst);
    std::size_t done = 0;
    while (done < bytes) {
      std::size_t piece = bytes - done;
      if (auto chunk = arenaChunk(hostSide + done)) {
        pin(chunk->first, chunk->second);
        piece = std::min<std::size_t>(piece, chunk->first + chunk->second - (hostSide + done));
      }
      cuCheck(cu_.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(static_cast<char*>(dst) + done),
                                reinterpret_cast<CUdeviceptr>(static_cast<const char*>(src) + done), piece, stream_),
              "staging space: cuMemcpyAsync of " + std::to_string(piece) + " bytes");
      done += piece;
    }
  }

  bool isDeviceUnlocked(const void* p) const {
    CUmemorytype type{};
    return cu_.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, reinterpret_cast<CUdeviceptr>(p)) ==
               CUDA_SUCCESS &&
           type == CU_MEMORYTYPE_DEVICE;
  }

  // The arena chunk holding host address p: (start, length), if p lies in an arena.
  std::optional<std::pair<char*, std::size_t>> arenaChunk(const char* p) const {
    auto it = ranges_.upper_bound(const_cast<char*>(p));
    if (it == ranges_.begin()) return std::nullopt;
    --it;
    char* base = it->first;
    if (p >= base + it->second) return std::nullopt;
    const std::uint64_t k = static_cast<std::uint64_t>(p - base) / kArenaChunk;
    char* start = base + k * kArenaChunk;
    const std::size_t len = std::min<std::uint64_t>(kArenaChunk, it->second - k * kArenaChunk);
    return std::make_pair(start, len);
  }

  void pin(char* start, std::size_t len) {
    if (pinned_.count(start)) return;
    cuCheck(cu_.cuMemHostRegister(start, len, CU_MEMHOSTREGISTER_PORTABLE),
            "staging space: pinning " + std::to_string(len) + " bytes of a server's mapped memory");
    pinned_.insert(start);
  }

  const gpu::DriverApi& cu_;
  std::mutex mu_;
  CUcontext ctx_ = nullptr;
  CUstream stream_ = nullptr;
  static constexpr std::size_t kPooled = 4;  // buffers kept per pool (a pipeline's slots)
  static constexpr std::size_t kPooledPinnedBytes = std::size_t{1} << 30;  // page-locked memory kept
  std::multimap<std::size_t, CUdeviceptr> free_;        // pooled device staging by size
  std::multimap<std::size_t, CUdeviceptr> freePinned_;  // pooled pinned host staging by size
  CUdeviceptr table_ = 0;
  std::size_t tableCapacity_ = 0;
  std::vector<CUdeviceptr> tables_;
  std::map<char*, std::size_t> ranges_;  // arenas mapped here
  std::set<char*> pinned_;               // arena chunks registered with the driver
};

PooledStaging::~PooledStaging() { owner_.giveBack(pinned_, p_, bytes_); }

}  // namespace

std::unique_ptr<GpuSide> makeGpuSide(std::string& whyNot) {
  const gpu::DriverApi* cu = gpu::driver();
  if (!cu) {
    whyNot = gpu::driverUnavailableReason();
    return nullptr;
  }
  return std::make_unique<CudaSide>(*cu);
}

}  // namespace axon::space
