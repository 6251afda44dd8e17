#include "gpu/gpu_coll_workspace.hpp"

#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <vector>

#include "bootstrap/setup_step.hpp"
#include "core/fd_channel.hpp"
#include "core/log.hpp"
#include "core/pe_context.hpp"
#include "core/team_state.hpp"
#include "gpu/copy_async.hpp"
#include "gpu/gpu_heap.hpp"
#include "core/env.hpp"

namespace axon::gpu {
namespace {

class CollWorkspace final : public GpuTeamWorkspace {
 public:
  CollWorkspace(const DriverApi& cu, CUdevice device, CUcontext ctx, int members)
      : cu_(cu), device_(device), ctx_(ctx), peers_(members) {}
  ~CollWorkspace() override { release(); }

  const device::CollHandle& handle() const override { return handle_; }
  void setTimeoutNs(unsigned long long ns) override { handle_.timeoutNs = ns; }

  void enqueue(const kernels::CollLaunch& launch, void* stream) override {
    makeCurrent();
    kernels::collective(stream, handle_, launch);
  }

  void run(const kernels::CollLaunch& launch) override {
    makeCurrent();
    kernels::collective(stream_, handle_, launch);
    // The kernel's waits are bounded (AXON_TIMEOUT), so this returns.
    cuCheck(cu_.cuStreamSynchronize(stream_), "waiting for a collective kernel");
  }

  kernels::CollOccupancy occupancy(const kernels::CollLaunch& launch) const override {
    makeCurrent();
    return kernels::collOccupancy(launch);
  }

  void* scratch(int which, std::size_t bytes) override {
    makeCurrent();
    Scratch& s = scratch_[which];
    if (s.bytes < bytes) {
      if (s.ptr) cu_.cuMemFree(s.ptr);
      s.ptr = 0;
      s.bytes = 0;
      cuCheck(cu_.cuMemAlloc(&s.ptr, bytes), "cuMemAlloc of " + std::to_string(bytes) +
                                                   " bytes to stage host buffers of a collective");
      s.bytes = bytes;
    }
    return reinterpret_cast<void*>(s.ptr);
  }

  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
    makeCurrent();
    cuCheck(copyAsync(cu_, dst, src, bytes, stream_), "cuMemcpyAsync (collective staging)");
    cuCheck(cu_.cuStreamSynchronize(stream_), "waiting for a collective's staging copy");
  }

  const device::CollError* error() const override {
    if (!report_) return nullptr;
    auto state = std::atomic_ref<unsigned long long>(report_->state).load(std::memory_order_acquire);
    return state == 2 ? report_ : nullptr;
  }

  void raise(const device::CollError& e) override {
    makeCurrent();
    kernels::raiseCollError(stream_, handle_, e);
    cuCheck(cu_.cuStreamSynchronize(stream_), "waiting for a collective error report");
  }

  // Creation, step by step (createCollWorkspace drives it).
  void createOwn(std::size_t bytes, int me) {
    prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop_.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop_.location.id = device_;
    prop_.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    std::size_t granularity = 0;
    cuCheck(cu_.cuMemGetAllocationGranularity(&granularity, &prop_, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
            "cuMemGetAllocationGranularity");
    size_ = roundUp(bytes, granularity);
    std::size_t total = 0;
    if (__builtin_mul_overflow(size_, peers_.size(), &total)) {
      throw Error(ErrorCode::InvalidArgument, "a GPU collective workspace of " + std::to_string(size_) + " bytes for " +
                                                  std::to_string(peers_.size()) + " members overflows the address space "
                                                  "(lower AXON_COLL_GPU_CHUNK or AXON_COLL_GPU_CHANNELS)");
    }
    cuCheck(cu_.cuMemAddressReserve(&reservation_, total, granularity, 0, 0),
            "reserving address space for a collective workspace");
    cuCheck(cu_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    void* host = nullptr;
    cuCheck(cu_.cuMemHostAlloc(&host, sizeof(device::CollError), CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP),
            "cuMemHostAlloc (collective error report)");
    report_ = static_cast<device::CollError*>(host);
    std::memset(report_, 0, sizeof(*report_));
    CUresult r = cu_.cuMemCreate(&own_, size_, &prop_, 0);
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      throw Error(ErrorCode::OutOfMemory, "GPU " + std::to_string(device_) + " has no room for a collective workspace of " +
                                              std::to_string(size_) + " bytes (AXON_COLL_GPU_CHUNK x AXON_COLL_GPU_CHANNELS)");
    }
    cuCheck(r, "cuMemCreate of a collective workspace");
    map(me, own_);
    cuCheck(cu_.cuMemsetD8Async(at(me), 0, size_, stream_), "zeroing the collective workspace");
    cuCheck(cu_.cuStreamSynchronize(stream_), "zeroing the collective workspace");
  }

  int exportOwn() {
    int fd = -1;
    cuCheck(cu_.cuMemExportToShareableHandle(&fd, own_, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
            "cuMemExportToShareableHandle (collective workspace)");
    return fd;
  }

  // Maps member m's workspace; a message instead of an exception when this GPU cannot reach it.
  std::string mapPeer(int m, int fd) {
    CUmemGenericAllocationHandle h{};
    CUresult r = cu_.cuMemImportFromShareableHandle(&h, reinterpret_cast<void*>(static_cast<std::uintptr_t>(fd)),
                                                    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    if (r != CUDA_SUCCESS) return "importing its handle: " + cuResultText(r);
    try {
      map(m, h);
    } catch (const Error& e) {
      cu_.cuMemRelease(h);
      return e.what();
    }
    peers_[m] = h;
    return "";
  }

  void buildHandle(PeContext& rt, const detail::TeamState& team, const CollWorkspaceConfig& config,
                   const device::CollLayout& layout) {
    handle_.base = reinterpret_cast<char*>(reservation_);
    handle_.stride = static_cast<long long>(size_);
    handle_.size = static_cast<int>(team.members.size());
    handle_.myIndex = team.myIndex;
    handle_.myPe = rt.myPe();
    handle_.teamStart = team.members[0];
    handle_.teamStride = team.members.size() > 1 ? team.members[1] - team.members[0] : 1;
    // A team split by colour into any grouping carries its members in a table (GPU memory).
    bool strided = true;
    for (std::size_t i = 0; i < team.members.size(); ++i) {
      strided = strided && team.members[i] == handle_.teamStart + static_cast<int>(i) * handle_.teamStride;
    }
    if (!strided) {
      makeCurrent();
      const std::size_t bytes = team.members.size() * sizeof(int);
      cuCheck(cu_.cuMemAlloc(&members_, bytes), "cuMemAlloc of a team's member table");
      cuCheck(copyAsync(cu_, reinterpret_cast<void*>(members_), team.members.data(), bytes, stream_),
              "copying a team's member table");
      cuCheck(cu_.cuStreamSynchronize(stream_), "copying a team's member table");
      handle_.members = reinterpret_cast<const int*>(members_);
    }
    handle_.channels = config.channels;
    handle_.chunkBytes = config.chunkBytes;
    handle_.llChunkBytes = config.llChunkBytes;
    handle_.llSlotBytes = layout.llSlotBytes;
    handle_.llMaxBytes = config.llMaxBytes;
    handle_.roundsOffset = layout.rounds;
    handle_.readyOffset = layout.ready;
    handle_.recordsOffset = layout.records;
    handle_.llOffset = layout.ll;
    handle_.dataOffset = layout.data;
    handle_.timeoutNs = config.timeoutNs;
    handle_.heapBase = config.heapBase;
    handle_.heapStride = config.heapStride;
    handle_.heapPeStride = config.heapPeStride;
    handle_.error = report_;
  }

 private:
  struct Scratch {
    CUdeviceptr ptr = 0;
    std::size_t bytes = 0;
  };

  // The calling thread may be one the program started after init (a second team's thread).
  void makeCurrent() const {
    CUcontext current = nullptr;
    if (cu_.cuCtxGetCurrent(&current) != CUDA_SUCCESS || current != ctx_) cu_.cuCtxSetCurrent(ctx_);
  }

  CUdeviceptr at(int m) const { return reservation_ + static_cast<CUdeviceptr>(m) * size_; }

  void map(int m, CUmemGenericAllocationHandle h) {
    cuCheck(cu_.cuMemMap(at(m), size_, 0, h, 0), "cuMemMap of a collective workspace");
    mapped_.push_back(m);
    CUmemAccessDesc access{};
    access.location = prop_.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    cuCheck(cu_.cuMemSetAccess(at(m), size_, &access, 1), "cuMemSetAccess on a collective workspace");
  }

  void release() noexcept {
    makeCurrent();
    if (stream_) cu_.cuStreamSynchronize(stream_);
    for (int m : mapped_) cu_.cuMemUnmap(at(m), size_);
    for (auto h : peers_) {
      if (h) cu_.cuMemRelease(h);
    }
    if (own_) cu_.cuMemRelease(own_);
    if (reservation_) cu_.cuMemAddressFree(reservation_, size_ * peers_.size());
    for (auto& s : scratch_) {
      if (s.ptr) cu_.cuMemFree(s.ptr);
    }
    if (report_) cu_.cuMemFreeHost(report_);
    if (members_) cu_.cuMemFree(members_);
    if (stream_) cu_.cuStreamDestroy(stream_);
  }

  const DriverApi& cu_;
  CUdevice device_;
  CUcontext ctx_;
  CUmemAllocationProp prop_{};
  std::size_t size_ = 0;
  CUdeviceptr reservation_ = 0;
  CUmemGenericAllocationHandle own_{};
  std::vector<CUmemGenericAllocationHandle> peers_;  // [member], imported handles
  std::vector<int> mapped_;
  CUstream stream_ = nullptr;
  device::CollError* report_ = nullptr;
  CUdeviceptr members_ = 0;  // the member table of a team that is not strided
  Scratch scratch_[2];
  device::CollHandle handle_{};
};

// A failed step of the workspace's creation: the team keeps the host path, and says why.
std::string fallbackReason(const SetupStep::Outcome& out) { return out.failure ? out.failure->text() : ""; }

}  // namespace

std::shared_ptr<GpuTeamWorkspace> createCollWorkspace(const DriverApi& cu, CUdevice device, CUcontext ctx, PeContext& rt,
                                                      const detail::TeamState& team,
                                                      const CollWorkspaceConfig& config, std::string& whyNot) {
  const int n = static_cast<int>(team.members.size());
  const int me = team.myIndex;
  const device::CollLayout layout = device::collLayout(n, config.channels, config.chunkBytes, config.llChunkBytes);
  auto ws = std::make_shared<CollWorkspace>(cu, device, ctx, n);
  FdChannel channel;
  const std::string what = "the GPU collective workspace of team " + team.name;
  SetupStep create(rt.bootstrap(), "gpu-ws-" + team.name, team.members, what);
  try {
    ws->createOwn(layout.total, me);
  } catch (const Error& e) {
    create.fail(e);
  }
  auto created = create.settle(channel.address());
  whyNot = fallbackReason(created);
  if (!whyNot.empty()) return nullptr;
  const std::vector<std::string>& addresses = created.payloads;

  // Every member sends its handle to every other, and maps what it receives. A member whose part
  // fails posts it, so the others stop waiting for its handle at their next check.
  SetupStep mapped(rt.bootstrap(), "gpu-ws-mapped-" + team.name, team.members, what);
  std::deque<FdChannel::Message> inbox;
  const double timeout = rt.env().timeoutSec;
  std::string problem;
  try {
    UniqueFd fd(ws->exportOwn());
    const std::int32_t from = me;
    for (int m = 0; m < n; ++m) {
      if (m == me) continue;
      channel.send(addresses[m], std::string(reinterpret_cast<const char*>(&from), sizeof(from)), fd.get(), timeout,
                   [&] {
                     while (auto msg = channel.receive(0)) inbox.push_back(std::move(*msg));
                   });
    }
    using Clock = std::chrono::steady_clock;
    const auto deadline = Clock::now() + std::chrono::duration<double>(timeout);
    for (int got = 0; got < n - 1;) {
      std::optional<FdChannel::Message> msg;
      if (!inbox.empty()) {
        msg = std::move(inbox.front());
        inbox.pop_front();
      } else {
        msg = channel.receive(0.05);
      }
      if (!msg) {
        mapped.checkPeers();
        const int dead = rt.findDeadPe();
        if (dead >= 0) {
          throw Error(ErrorCode::PeerDead, "PE " + std::to_string(rt.myPe()) + ": " + rt.deathOf(dead) +
                                               " while team " + team.name + " exchanged its GPU collective workspaces");
        }
        if (Clock::now() > deadline) {
          throw Error(ErrorCode::Timeout, "PE " + std::to_string(rt.myPe()) + ": waited " + secondsText(timeout) +
                                              " (AXON_TIMEOUT) for the GPU collective workspaces of team " + team.name +
                                              " (" + std::to_string(got) + " of " + std::to_string(n - 1) + " received)");
        }
        continue;
      }
      std::int32_t from = -1;
      if (msg->header.size() != sizeof(from) || !msg->fd) {
        throw Error(ErrorCode::Internal, "PE " + std::to_string(rt.myPe()) + ": a malformed collective workspace message");
      }
      std::memcpy(&from, msg->header.data(), sizeof(from));
      if (from < 0 || from >= n || from == me) {
        throw Error(ErrorCode::Internal, "PE " + std::to_string(rt.myPe()) + ": a collective workspace message from member " +
                                             std::to_string(from));
      }
      std::string why = ws->mapPeer(from, msg->fd.get());
      if (!why.empty() && problem.empty()) {
        problem = "PE " + std::to_string(rt.myPe()) + ": cannot map the workspace of PE " +
                  std::to_string(team.members[from]) + ": " + why;
      }
      ++got;
    }
    // This GPU cannot reach some member's memory: a fallback to the host path, not an error.
    if (!problem.empty()) mapped.fail(ErrorCode::Unsupported, problem);
  } catch (const Error& e) {
    mapped.fail(e);
  }
  auto outcome = mapped.settle();
  whyNot = fallbackReason(outcome);
  if (!whyNot.empty()) {
    // A fault (a dead member, a timeout) is an error on every member; a GPU that cannot map
    // another's memory only means the host path.
    if (outcome.failure->code != ErrorCode::Unsupported) mapped.raise(*outcome.failure);
    return nullptr;
  }
  ws->buildHandle(rt, team, config, layout);
  return ws;
}

}  // namespace axon::gpu
