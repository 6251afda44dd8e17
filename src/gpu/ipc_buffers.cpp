#include "gpu/ipc_buffers.hpp"

#include <algorithm>
#include <cstring>

#include "axon/error.hpp"
#include "core/log.hpp"
#include "gpu/close_failures.hpp"

namespace axon::gpu {

static_assert(sizeof(CUipcMemHandle) == sizeof(IpcBuffer::handle));
static_assert(CloseFailures::kDriverShutDown == CUDA_ERROR_DEINITIALIZED);

namespace {

// One warning per peer whose mappings could not be closed (gpu/close_failures.hpp says why).
void report(const CloseFailures& failures, int myPe) {
  for (const std::string& line : failures.lines()) log(LogLevel::Warn, myPe, "cuIpcCloseMemHandle: " + line);
}

}  // namespace

IpcBuffers::~IpcBuffers() {
  CloseFailures failures;
  for (const Entry& e : open_) close(e, failures);
  report(failures, myPe_);
  if (failures.driverShutDown()) {
    log(LogLevel::Debug, myPe_, "the CUDA driver shut down before axon's runtime was destroyed (no finalize): the " +
                                    std::to_string(open_.size()) + " mappings of peers' buffers went with it");
  }
}

bool IpcBuffers::describe(const void* p, IpcBuffer& out) const {
  const auto at = reinterpret_cast<CUdeviceptr>(p);
  unsigned long long legacy = 0;  // the driver writes a bool
  if (cu_.cuPointerGetAttribute(&legacy, CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE, at) != CUDA_SUCCESS ||
      legacy == 0) {
    return false;
  }
  CUdeviceptr base = 0;
  std::size_t size = 0;
  unsigned long long id = 0;
  CUipcMemHandle handle;
  if (cu_.cuMemGetAddressRange(&base, &size, at) != CUDA_SUCCESS ||
      cu_.cuPointerGetAttribute(&id, CU_POINTER_ATTRIBUTE_BUFFER_ID, at) != CUDA_SUCCESS ||
      cu_.cuIpcGetMemHandle(&handle, base) != CUDA_SUCCESS) {
    return false;
  }
  std::memcpy(out.handle, &handle, sizeof handle);
  out.base = base;
  out.bufferId = id;
  return true;
}

void* IpcBuffers::open(int pe, const IpcBuffer& b) {
  std::lock_guard lock(mutex_);
  ++uses_;
  for (Entry& e : open_) {
    if (e.pe == pe && e.bufferId == b.bufferId) {
      e.lastUse = uses_;
      return reinterpret_cast<void*>(e.mapped);
    }
  }
  // The same address under a new id: the old allocation was freed; its mapping goes.
  CloseFailures failures;
  auto stale = [&](const Entry& e) { return e.pe == pe && e.base == b.base; };
  for (const Entry& e : open_) {
    if (stale(e)) close(e, failures);
  }
  std::erase_if(open_, stale);
  if (open_.size() >= kMaxOpen) {
    auto oldest = std::min_element(open_.begin(), open_.end(),
                                   [](const Entry& x, const Entry& y) { return x.lastUse < y.lastUse; });
    close(*oldest, failures);
    open_.erase(oldest);
  }
  CUipcMemHandle handle;
  std::memcpy(&handle, b.handle, sizeof handle);
  CUdeviceptr mapped = 0;
  CUresult r = cu_.cuIpcOpenMemHandle(&mapped, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
  if (r == CUDA_ERROR_ALREADY_MAPPED) {
    // A mapping still open here covers part of this allocation: PE `pe` freed an allocation we
    // hold and made this one in its place at another base (seen on the H100 with many small
    // cudaMalloc buffers). The cache's mappings of that PE are dropped and the open tried again.
    std::erase_if(open_, [&](const Entry& e) {
      if (e.pe == pe) close(e, failures);
      return e.pe == pe;
    });
    r = cu_.cuIpcOpenMemHandle(&mapped, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
  }
  report(failures, myPe_);
  if (r == CUDA_ERROR_ALREADY_MAPPED) {
    log(LogLevel::Debug, myPe_, "cuIpcOpenMemHandle of PE " + std::to_string(pe) + "'s buffer: " + cuResultText(r) +
                                    "; its data moves through the message ring instead");
    return nullptr;
  }
  cuCheck(r, "PE " + std::to_string(myPe_) + ": cuIpcOpenMemHandle of PE " + std::to_string(pe) + "'s buffer");
  open_.push_back(Entry{pe, b.bufferId, b.base, mapped, uses_});
  return reinterpret_cast<void*>(mapped);
}

void IpcBuffers::close(const Entry& e, CloseFailures& failures) {
  // Once the driver has shut down it has released every mapping itself; each further call would
  // only fail the same way.
  if (failures.driverShutDown()) return;
  const CUresult r = cu_.cuIpcCloseMemHandle(e.mapped);
  const bool failed = r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED;
  failures.add(e.pe, static_cast<int>(r), failed ? cuResultText(r) : std::string());
}

}  // namespace axon::gpu
