// The GPU backend: one PE per GPU, its device, its GPU heap and its peers' mappings, IPC, the stream
// host worker and the device kernels' services (barriers, waits, the device proxy's requests).
// The transports that move GPU memory (transport/gpu_transports.hpp) and the device proxy
// (onesided/device_proxy.hpp) are built beside it, from its resources (gpu/cuda_resources.hpp).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <cstdint>
#include <cstring>
#include <optional>
#include <sstream>

#include "bootstrap/blob.hpp"
#include "bootstrap/setup_step.hpp"
#include "core/log.hpp"
#include "core/pe_context.hpp"
#include "gpu/copy_async.hpp"
#include "gpu/cuda_resources.hpp"
#include "gpu/device_requests.hpp"
#include "gpu/driver.hpp"
#include "gpu/gpu_backend.hpp"
#include "gpu/gpu_coll_workspace.hpp"
#include "gpu/gpu_heap.hpp"
#include "gpu/ipc_buffers.hpp"
#include "gpu/stream_host_work.hpp"
#include "gpu/nvml.hpp"
#include "memory/peer_growth.hpp"
#include "kernels/coll_kernels.hpp"
#include "kernels/kernels.hpp"
#include "bootstrap/bootstrap.hpp"
#include "core/env.hpp"

namespace axon {
namespace gpu {
namespace {

std::string pe(int p) { return "PE " + std::to_string(p); }

// Picks the GPU: AXON_DEVICE, else the one the program made current, else local rank mod count.
CUdevice chooseDevice(const DriverApi& cu, const Env& env, int myPe) {
  int count = 0;
  cuCheck(cu.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (env.device >= 0) {
    if (env.device >= count) {
      throw Error(ErrorCode::InvalidArgument, pe(myPe) + ": AXON_DEVICE=" + std::to_string(env.device) +
                                                  " but this process sees " + std::to_string(count) +
                                                  " GPU(s) (check CUDA_VISIBLE_DEVICES)");
    }
    CUdevice d;
    cuCheck(cu.cuDeviceGet(&d, env.device), "cuDeviceGet");
    return d;
  }
  CUcontext current = nullptr;
  if (cu.cuCtxGetCurrent(&current) == CUDA_SUCCESS && current) {
    CUdevice d;
    if (cu.cuCtxGetDevice(&d) == CUDA_SUCCESS) return d;
  }
  if (env.launch.localSize > count) {
    log(LogLevel::Warn, myPe, std::to_string(env.launch.localSize) + " PEs on this node share " +
                                  std::to_string(count) + " GPU(s); PEs on one GPU work but compete for it");
  }
  CUdevice d;
  cuCheck(cu.cuDeviceGet(&d, env.launch.localRank % count), "cuDeviceGet");
  return d;
}

class CudaBackend final : public GpuBackend {
 public:
  CudaBackend(const DriverApi& cu, PeContext& rt) : cu_(cu), myPe_(rt.myPe()), nPes_(rt.nPes()), nodeLocal_(rt.nodeLocal()) {
    device_ = chooseDevice(cu, rt.env(), myPe_);
    cuCheck(cu.cuDevicePrimaryCtxRetain(&ctx_, device_), "cuDevicePrimaryCtxRetain");
    cuCheck(cu.cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
    char name[256] = {0};
    cu.cuDeviceGetName(name, sizeof(name) - 1, device_);
    char bus[64] = {0};
    cu.cuDeviceGetPCIBusId(bus, sizeof(bus) - 1, device_);
    name_ = name;
    busId_ = bus;
    // A failure below (the heap cannot reserve its range, ...) leaves init with an error and the
    // program running: the handles made so far go back, as the destructor will not run.
    try {
      cuCheck(cu.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
      cuCheck(cu.cuStreamCreate(&pollStream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
      cuCheck(cu.cuMemHostAlloc(&scratch_, 4096, CU_MEMHOSTALLOC_PORTABLE), "cuMemHostAlloc");
      heap_ = std::make_shared<GpuHeap>(cu, device_, myPe_, rt.nodeLocal(), rt.env().gpuHeapMax, rt.env().gpuHeapChunk);
      timeoutNs_ = static_cast<unsigned long long>(rt.env().timeoutSec * 1e9);
      kernels::warmUp();
      kernels::warmUpCollectives();
    } catch (...) {
      heap_.reset();
      releaseHandles();
      throw;
    }
  }

  ~CudaBackend() override {
    // finalize has synchronized the GPU, and the progress engine's thread, which served the proxy
    // and the stream ops until the runtime's last barrier had passed, has stopped: stream ops
    // still queued are waited for here (bounded).
    deviceProxy_.reset();
    stagedStream_.reset();
    releaseHandles();
    // The primary context stays retained: heap mappings held by language bindings may outlive
    // the runtime, and the program's own CUDA code shares the context.
  }

  void releaseHandles() noexcept {
    if (scratch_) cu_.cuMemFreeHost(scratch_);
    if (pollStream_) cu_.cuStreamDestroy(pollStream_);
    if (stream_) cu_.cuStreamDestroy(stream_);
    scratch_ = nullptr;
    pollStream_ = stream_ = nullptr;
  }

  void connect(const GpuSetup& setup) override {
    PeContext& rt = setup.pe;
    Bootstrap& boot = rt.bootstrap();
    // Every PE publishes where it receives memory handles and which GPU it drives.
    wire::BlobWriter mine(wire::BlobKind::GpuCard);
    mine.str(heap_->channel().address()).str(busId_);
    SetupStep introduce(boot, "gpu-card", boot.worldRanks(), "the GPU backend's start-up");
    auto cards = introduce.finish(mine.take());
    HeapPeers peers;
    peers.channelAddress.assign(nPes_, "");
    peers.tryMap.assign(nPes_, false);
    busIds_.assign(nPes_, "");
    whyUnreachable_.assign(nPes_, "");
    for (int p = 0; p < nPes_; ++p) {
      auto [address, bus] = wire::decodeBlob(cards[p], wire::BlobKind::GpuCard, introduce.originOf(p),
                                             [](wire::ByteReader& in) {
                                               std::string a = in.str();
                                               return std::pair{a, in.str()};
                                             });
      busIds_[p] = bus;
      if (!rt.nodeLocal()[p] || p == myPe_) continue;
      peers.channelAddress[p] = address;
      peers.tryMap[p] = rt.env().p2p;
    }
    peers.timeoutSec = rt.env().timeoutSec;
    peers.findDeadPe = [&rt] { return rt.findDeadPe(); };
    heap_->connect(std::move(peers));

    // The control words are the GPU heap's first allocation: offset 0 on every PE.
    SetupStep grow(boot, "gpu-heap", boot.worldRanks(), "the GPU heap's control words");
    try {
      auto offset = heap_->allocator().allocate(sizeof(device::ControlWords), 4096);
      if (!offset || *offset != 0) throw Error(ErrorCode::Internal, pe(myPe_) + ": the GPU control words are not at offset 0");
      heap_->growLocal(heap_->allocator().top());
      memsetLocal(heap_->base(), 0, sizeof(device::ControlWords));
    } catch (const Error& e) {
      grow.fail(e);
    }
    auto sizes = grow.finish(wire::wordBlob(heap_->mapped()));
    mapPeerGrowth(boot, *heap_, mappedSizesOf(sizes, grow), "gpu-heap-map", "mapping the PEs' GPU heaps");
    reportPeers(rt);
    // Stream-ordered work the host does (the staged path's operations, collectives across nodes,
    // two-sided messages) runs in stream order on the worker, which every PE has.
    stagedStream_ = std::make_unique<StreamHostWork>(cu_, ctx_, myPe_, timeoutNs_);
    rt.progressEngine().add(stagedStream_.get());
    startDeviceProxy(setup);
    rt_ = &rt;
  }

  void stopHostWork() override {
    deviceProxy_.reset();
    stagedStream_.reset();
  }

  void finishConnect(bool stagedPath) override {
    warnIfKernelsLoadLazily(*rt_, stagedPath);
    buildContext();
    // No PE may signal a peer's control words before that peer has zeroed and mapped them.
    rt_->bootstrap().barrierWorld("gpu-ready");
  }

  // What kernels get from axon::deviceContext(): nothing in it changes after start-up.
  void buildContext() {
    context_ = device::Context{};
    context_.myPe = myPe_;
    context_.nPes = nPes_;
    context_.heapBase = heap_->base();
    context_.heapStride = static_cast<long long>(heap_->capacity());
    context_.peStride = heap_->slots().peStride;
    context_.timeoutNs = timeoutNs_;
    for (int p = 0; p < nPes_ && p < device::kMaxPeers; ++p) {
      if (heap_->reachable(p)) context_.reachable[p / 32] |= 1u << (p % 32);
    }
    context_.world = device::Team{0, 1, nPes_, 0, myPe_, nullptr};
    if (deviceProxy_) context_.proxy = deviceProxy_->channel();
  }

  // Kernels reach the PEs on other nodes through the host proxy. Node-local PEs they reach by
  // load/store only (the proxy refuses a node-local GPU it cannot map; the stream-ordered calls
  // take the staged path to it).
  void startDeviceProxy(const GpuSetup& setup) {
    if (!spansNodes()) return;
    deviceProxy_ = setup.makeDeviceProxy(*this);
    setup.pe.progressEngine().add(deviceProxy_.get());
    log(LogLevel::Info, myPe_, "device proxy on: kernels reach the PEs they cannot map through the host");
  }

  // Host threads serve kernels here (the device proxy, the staged stream ops): a kernel can wait
  // for one of them. With CUDA's lazy loading, the first launch of any other kernel meanwhile
  // loads it while holding the context's lock and waiting for the GPU to be idle, and the serving
  // thread's next CUDA call waits for that lock: neither kernel ends until the device wait gives
  // up (seen on the H100: a stream put to another node, then a kernel launched for the first
  // time). axon loads its own kernels at start-up; the program's own need CUDA_MODULE_LOADING=EAGER
  // or one load each (cudaFuncGetAttributes) before such a wait. Said once per node.
  // Stream-ordered messages make kernels wait for the host too, on one node as well: said at the
  // first one, once per PE, when the start-up warning was not given.
  void warnIfKernelsLoadLazily(PeContext& rt, bool stagedPath) {
    if (!deviceProxy_ && !stagedPath && !spansNodes()) return;
    const auto& local = rt.nodeLocal();
    if (std::find(local.begin(), local.end(), true) - local.begin() != myPe_) {
      lazyWarned_ = true;  // another PE of this node says it
      return;
    }
    warnOnceIfKernelsLoadLazily("PEs on other nodes, or the staged path");
  }

  void warnOnceIfKernelsLoadLazily(const std::string& why) {
    if (lazyWarned_.exchange(true)) return;
    CUmoduleLoadingMode mode = CU_MODULE_EAGER_LOADING;
    // A driver without the query (before CUDA 11.7) has no lazy loading.
    if (!cu_.cuModuleGetLoadingMode || cu_.cuModuleGetLoadingMode(&mode) != CUDA_SUCCESS ||
        mode != CU_MODULE_LAZY_LOADING) {
      return;
    }
    log(LogLevel::Warn, myPe_,
        "CUDA loads kernels lazily (CUDA_MODULE_LOADING is not EAGER), and kernels here can wait for a host "
        "thread (" + why + "): a kernel launched for the first time while another waits for one deadlocks both "
        "until AXON_TIMEOUT. Set CUDA_MODULE_LOADING=EAGER, or load each of your kernels once "
        "(cudaFuncGetAttributes) before such a wait (docs/architecture.md, \"The device proxy\")");
  }

  // One line per node-local peer at AXON_LOG=info: the link between the GPUs (NVML) and the path
  // axon takes, so a slow transfer can be traced to a missing NVLink or peer mapping.
  void reportPeers(PeContext& rt) {
    for (int p = 0; p < nPes_; ++p) {
      if (p == myPe_ || !rt.nodeLocal()[p]) continue;
      std::string link = gpuLink(busId_, busIds_[p]);
      if (!heap_->reachable(p)) {
        whyUnreachable_[p] = heap_->unreachableReason(p) + "; GPU link: " + link;
      }
      log(LogLevel::Info, myPe_,
          "PE " + std::to_string(p) + " on PCI " + busIds_[p] + ", link " + link + ": " +
              (heap_->reachable(p) ? "GPU heap mapped (copy engines, load/store)"
                                   : "not mapped, staged path (" + heap_->unreachableReason(p) + ")"));
    }
  }

  void synchronize(const char* api) override {
    makeCurrent();
    cuCheck(cu_.cuCtxSynchronize(), std::string(api) + ": waiting for the GPU");
    throwStreamError();
  }

  int deviceOrdinal() const override { return static_cast<int>(device_); }
  std::string description() const override {
    return "GPU " + std::to_string(device_) + " (" + name_ + ", PCI " + busId_ + ")";
  }
  HeapSpace& heap() override { return *heap_; }
  std::shared_ptr<HeapSpace> heapOwner() override { return heap_; }
  bool peerReachable(int p) const override { return heap_->reachable(p); }
  bool deviceReaches(int p) const override {
    return heap_->reachable(p) || (deviceProxy_ != nullptr && !nodeLocal_[p]);
  }
  std::string unreachableReason(int p) const override {
    return whyUnreachable_.empty() || whyUnreachable_[p].empty() ? heap_->unreachableReason(p) : whyUnreachable_[p];
  }
  bool isDeviceMemory(const void* p) const override {
    if (heap_->contains(p)) return true;
    unsigned int type = 0;
    CUresult r = cu_.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                           reinterpret_cast<CUdeviceptr>(p));
    return r == CUDA_SUCCESS && type == CU_MEMORYTYPE_DEVICE;
  }

  bool exportBuffer(const void* p, IpcBuffer& out) override {
    makeCurrent();
    return ipcBuffers_.describe(p, out);
  }

  void* importBuffer(int pe, const IpcBuffer& b) override {
    makeCurrent();
    return ipcBuffers_.open(pe, b);
  }

  std::size_t deviceBytesFrom(const void* p) const override {
    makeCurrent();
    CUdeviceptr base = 0;
    std::size_t size = 0;
    const auto at = reinterpret_cast<CUdeviceptr>(p);
    // Only plain allocations (cudaMalloc, cuMemAlloc: legacy-IPC capable). For VMM mappings and
    // pool memory the driver's range is one physical piece, and a buffer may span several
    // contiguous ones (PyTorch's expandable segments): no answer rather than a false error.
    unsigned long long legacy = 0;  // the driver writes a bool
    if (cu_.cuPointerGetAttribute(&legacy, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, at) != CUDA_SUCCESS ||
        legacy == 0) {
      return 0;
    }
    if (cu_.cuMemGetAddressRange(&base, &size, at) != CUDA_SUCCESS) return 0;
    return at >= base && at - base < size ? static_cast<std::size_t>(base + size - at) : 0;
  }

  unsigned long long symmetricOffset(const void* p, std::size_t bytes, const std::vector<int>& pes) const override {
    if (!p || !heap_->contains(p)) return device::kCollNoOffset;
    const std::size_t offset = heap_->offsetOf(p);
    if (bytes > heap_->capacity() - offset) return device::kCollNoOffset;
    for (int pe : pes) {
      if (!heap_->peerRange(pe, offset, bytes)) return device::kCollNoOffset;
    }
    return offset;
  }

  std::uint64_t readWord(const std::uint64_t* p) override {
    makeCurrent();
    // Host waits on GPU words may run on several threads: one reader of the scratch word at a time.
    std::lock_guard lock(readWordMutex_);
    cuCheck(cu_.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(scratch_) + 64, reinterpret_cast<CUdeviceptr>(p), 8,
                              pollStream_),
            "reading a GPU word");
    cuCheck(cu_.cuStreamSynchronize(pollStream_), "reading a GPU word");
    std::uint64_t v;
    std::memcpy(&v, static_cast<char*>(scratch_) + 64, 8);
    return v;
  }

  void pinHost(void* p, std::size_t bytes) override {
    makeCurrent();
    CUresult r = cu_.cuMemHostRegister(p, bytes, CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP);
    // Split copies at its edges even where it failed: a copy may still cross into a pinned neighbour.
    processPinnedRanges().add(p, bytes);
    if (r != CUDA_SUCCESS) {
      log(LogLevel::Warn, myPe_, "cannot pin " + std::to_string(bytes) + " bytes of the host heap for the GPU (" +
                                     cuResultText(r) + "); copies to it will be slower (check ulimit -l)");
    }
  }

  void unpinHost(void* p) override {
    cu_.cuMemHostUnregister(p);
    processPinnedRanges().remove(p);
  }

  void memsetLocal(void* p, int value, std::size_t bytes) override {
    makeCurrent();
    cuCheck(cu_.cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(p), static_cast<unsigned char>(value), bytes, stream_),
            "cuMemsetD8Async");
    cuCheck(cu_.cuStreamSynchronize(stream_), "cuMemsetD8Async");
  }

  void synchronizeStream(void* stream) override {
    makeCurrent();
    cuCheck(cu_.cuStreamSynchronize(static_cast<CUstream>(stream)), "stream_synchronize");
    throwStreamError();  // what the host worker met on the way (a stream-ordered message's failure)
  }

  void copyLocalOnStream(void* dst, const void* src, std::size_t bytes, void* stream) override {
    if (bytes == 0) return;
    makeCurrent();
    cuCheck(copyAsync(cu_, dst, src, bytes, static_cast<CUstream>(stream)),
            "cuMemcpyAsync (collective on a team of one)");
  }

  void copyLocal(void* dst, const void* src, std::size_t bytes) override {
    makeCurrent();
    cuCheck(copyAsync(cu_, dst, src, bytes, stream_), "cuMemcpyAsync");
    cuCheck(cu_.cuStreamSynchronize(stream_), "cuMemcpyAsync");
  }

  const device::Context& deviceContext() const override { return context_; }

  void proxyPutOnStream(int pe, std::size_t offset, const void* src, std::size_t bytes, void* stream) override {
    requireProxy("put_on_stream", pe);
    kernels::devicePut(stream, context_, heap_->base() + offset, src, bytes, pe);
  }

  void proxyGetOnStream(void* dst, int pe, std::size_t offset, std::size_t bytes, void* stream) override {
    requireProxy("get_on_stream", pe);
    kernels::deviceGet(stream, context_, dst, heap_->base() + offset, bytes, pe);
  }

  void proxySignalOnStream(int pe, std::size_t offset, std::uint64_t value, SignalOp op, void* stream) override {
    requireProxy("signal_op_on_stream", pe);
    kernels::deviceSignal(stream, context_, reinterpret_cast<std::uint64_t*>(heap_->base() + offset), value, op, pe);
  }

  void waitOnStream(std::uint64_t* sig, Cmp cmp, std::uint64_t value, void* stream) override {
    makeCurrent();
    kernels::waitUntil(stream, context_, sig, cmp, value);
  }

  void quietProxyOnStream(void* stream) override {
    makeCurrent();
    // What kernels and stream calls posted to the proxy before completes (nothing to wait for when
    // its last quiet covers it).
    if (deviceProxy_) kernels::quiet(stream, context_);
  }

  void enqueueHostWork(void* stream, std::function<void()> work, std::string what) override {
    makeCurrent();
    throwStreamError();
    stagedStream_->enqueue(static_cast<CUstream>(stream), std::move(work), std::move(what));
  }

  void enqueueHostOp(void* stream, std::function<HostCompletion()> start, std::string what) override {
    makeCurrent();
    throwStreamError();
    warnOnceIfKernelsLoadLazily(what);
    stagedStream_->enqueueAsync(static_cast<CUstream>(stream), std::move(start), std::move(what));
  }

  void barrierOnStream(const device::Team& team, void* stream) override {
    makeCurrent();
    kernels::barrier(stream, context_, team);
  }

  std::shared_ptr<GpuTeamWorkspace> createTeamWorkspace(PeContext& rt, const detail::TeamState& team,
                                                        std::string& whyNot) override {
    makeCurrent();
    const CollWorkspaceConfig config{rt.env().collGpuChannels, rt.env().collGpuChunk, rt.env().collGpuLlChunk,
                                     rt.env().collGpuLlMax, timeoutNs_, heap_->base(),
                                     static_cast<long long>(heap_->capacity()), heap_->slots().peStride};
    return createCollWorkspace(cu_, device_, ctx_, rt, team, config, whyNot);
  }

  void resetTeamSlot(int slot) override {
    auto* words = reinterpret_cast<device::ControlWords*>(heap_->base());
    memsetLocal(&words->barrier[slot][0], 0, sizeof(words->barrier[slot]));
    memsetLocal(&words->epoch[slot], 0, sizeof(words->epoch[slot]));
    if (deviceProxy_) deviceProxy_->forgetTeam(slot);
  }

  CudaResources resources() {
    return CudaResources{&cu_, ctx_, heap_.get(), stream_, static_cast<char*>(scratch_), timeoutNs_};
  }

  bool serveTeamCollectives(const Team& team, int slot, device::CollHandle& h) override {
    if (!deviceProxy_) return false;
    deviceProxy_->serveTeam(team, slot);
    h.proxyTeam = static_cast<unsigned>(slot) + 1;
    h.proxy = deviceProxy_->channel();
    return true;
  }

 private:
  // A stream-ordered staged operation that failed on the worker (its stream was released, not
  // left hanging) is reported by the next call into the backend.
  void throwStreamError() override {
    if (stagedStream_) {
      if (auto e = stagedStream_->takeError()) throw Error(e->code(), pe(myPe_) + ": an earlier " + e->what());
    }
    if (deviceProxy_) {
      if (auto e = deviceProxy_->takeError()) throw Error(e->code(), pe(myPe_) + ": an earlier " + e->what());
    }
  }

  // The device proxy serves PEs on other nodes; every PE has one when the job spans nodes. (The
  // router has made the context current.)
  void requireProxy(const char* api, int pe) const {
    if (!deviceProxy_ || nodeLocal_[pe]) {
      throw Error(ErrorCode::Internal, std::string("axon: ") + api + ": no device proxy serves PE " + std::to_string(pe));
    }
  }

  void makeCurrent() const override {
    CUcontext current = nullptr;
    if (cu_.cuCtxGetCurrent(&current) != CUDA_SUCCESS || current != ctx_) cu_.cuCtxSetCurrent(ctx_);
  }

  bool spansNodes() const { return std::count(nodeLocal_.begin(), nodeLocal_.end(), true) < nPes_; }

  const DriverApi& cu_;
  int myPe_, nPes_;
  std::vector<bool> nodeLocal_;  // [pe]: shares this node
  CUdevice device_ = 0;
  CUcontext ctx_ = nullptr;
  std::string name_, busId_;
  std::vector<std::string> busIds_;
  std::vector<std::string> whyUnreachable_;  // with the GPU link, once reportPeers ran
  CUstream stream_ = nullptr, pollStream_ = nullptr;
  // Pinned scratch, one 64-byte line per user: [0] cuda_ipc atomic results, [64] readWord,
  // [128] the staging proxy's atomic results (served by one thread at a time).
  void* scratch_ = nullptr;
  std::mutex readWordMutex_;
  std::shared_ptr<GpuHeap> heap_;
  std::unique_ptr<StreamHostWork> stagedStream_;
  std::unique_ptr<DeviceRequests> deviceProxy_;
  PeContext* rt_ = nullptr;  // from connect() on
  std::atomic<bool> lazyWarned_{false};  // the lazy-loading warning was given (or another PE gives it)
  unsigned long long timeoutNs_ = 0;
  device::Context context_{};
  IpcBuffers ipcBuffers_{cu_, myPe_};  // closes its mappings while the context lives
};

}  // namespace

CudaResources cudaResourcesOf(GpuBackend& gpu) {
  auto* cuda = dynamic_cast<CudaBackend*>(&gpu);
  if (!cuda) throw Error(ErrorCode::Internal, "axon: the GPU transports need the CUDA backend");
  return cuda->resources();
}

}  // namespace gpu

std::unique_ptr<GpuBackend> makeGpuBackend(PeContext& rt, std::string& whyNot) {
  const gpu::DriverApi* cu = gpu::driver();
  if (!cu) {
    whyNot = gpu::driverUnavailableReason();
    return nullptr;
  }
  return std::make_unique<gpu::CudaBackend>(*cu, rt);
}

}  // namespace axon
