#include "gpu/driver.hpp"

#include <dlfcn.h>

#include <mutex>

namespace axon::gpu {
namespace {

DriverApi g_api;
const DriverApi* g_loaded = nullptr;
std::string g_reason;
std::once_flag g_once;

std::string describeResult(const DriverApi& api, CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName) api.cuGetErrorName(r, &name);
  if (api.cuGetErrorString) api.cuGetErrorString(r, &text);
  return std::string(name ? name : "CUDA error " + std::to_string(static_cast<int>(r))) +
         (text ? std::string(" (") + text + ")" : "");
}

void load() {
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = ::dlerror();
    g_reason = std::string("the CUDA driver (libcuda.so.1) could not be loaded: ") + (err ? err : "unknown reason");
    return;
  }
  using GetProc = CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  auto getProc = reinterpret_cast<GetProc>(::dlsym(lib, "cuGetProcAddress_v2"));
  if (!getProc) {
    g_reason = "the CUDA driver is older than CUDA 12 (no cuGetProcAddress_v2); axon needs a driver for CUDA 12 or newer";
    return;
  }
  // Each symbol is asked for at the CUDA version of our headers, so its ABI is the one the
  // typed member expects. The macro argument is expanded for the member (cuMemHostRegister_v2)
  // but stringified unexpanded for the lookup ("cuMemHostRegister").
#define AXON_CU_FN(name) AXON_CU_LOOKUP(name, #name)
#define AXON_CU_LOOKUP(member, text)                                                         \
  {                                                                                          \
    void* fn = nullptr;                                                                      \
    CUdriverProcAddressQueryResult found{};                                                  \
    if (getProc(text, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS || \
        !fn) {                                                                               \
      g_reason = std::string("the CUDA driver lacks ") + text + " (driver too old for CUDA " + \
                 std::to_string(CUDA_VERSION / 1000) + "." + std::to_string(CUDA_VERSION % 1000 / 10) + "?)"; \
      return;                                                                                \
    }                                                                                        \
    g_api.member = reinterpret_cast<decltype(g_api.member)>(fn);                             \
  }
#include "gpu/driver_functions.inc"
#undef AXON_CU_LOOKUP
#undef AXON_CU_FN

  CUresult r = g_api.cuInit(0);
  if (r != CUDA_SUCCESS) {
    g_reason = "cuInit failed: " + describeResult(g_api, r);
    return;
  }
  g_api.cuDriverGetVersion(&g_api.version);
  int count = 0;
  r = g_api.cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS || count == 0) {
    g_reason = r != CUDA_SUCCESS ? "cuDeviceGetCount failed: " + describeResult(g_api, r)
                                 : std::string("the CUDA driver sees no GPU");
    return;
  }
  g_loaded = &g_api;
}

}  // namespace

const DriverApi* driver() {
  std::call_once(g_once, load);
  return g_loaded;
}

const std::string& driverUnavailableReason() {
  driver();
  return g_reason;
}

const DriverApi& requireDriver(const char* api) {
  if (const DriverApi* d = driver()) return *d;
  throw Error(ErrorCode::Unsupported, std::string("axon: ") + api + " needs a GPU: " + g_reason);
}

std::string cuResultText(CUresult r) { return describeResult(g_api, r); }

CudaError::CudaError(const std::string& what, CUresult result)
    : Error(ErrorCode::Cuda, what + ": " + cuResultText(result)), result_(result) {}

}  // namespace axon::gpu
