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
  // Each member is typed from cuda.h, where a name may be a macro for a versioned ABI symbol
  // (cuMemHostRegister -> cuMemHostRegister_v2). We look up exactly the symbol the declaration
  // names, the macro expanded, so the pointer's type and the function's ABI always agree.
  // (cuGetProcAddress at CUDA_VERSION would hand out the newest ABI, e.g. the two-argument
  // cuCtxGetDevice_v2 of CUDA 13, for names cuda.h still binds to the old one.)
#define AXON_CU_FN(name) AXON_CU_LOOKUP(name, AXON_CU_SYMBOL(name))
#define AXON_CU_SYMBOL(name) AXON_CU_STRINGIFY(name)
#define AXON_CU_STRINGIFY(name) #name
#define AXON_CU_LOOKUP(member, symbol)                                                        \
  {                                                                                           \
    void* fn = ::dlsym(lib, symbol);                                                          \
    if (!fn) {                                                                                \
      g_reason = std::string("the CUDA driver lacks ") + symbol + " (driver older than the CUDA " + \
                 std::to_string(CUDA_VERSION / 1000) + "." + std::to_string(CUDA_VERSION % 1000 / 10) + \
                 " headers axon was built with?)";                                            \
      return;                                                                                 \
    }                                                                                         \
    g_api.member = reinterpret_cast<decltype(g_api.member)>(fn);                              \
  }
#include "gpu/driver_functions.inc"
  g_api.cuModuleGetLoadingMode =
      reinterpret_cast<decltype(g_api.cuModuleGetLoadingMode)>(::dlsym(lib, "cuModuleGetLoadingMode"));
#undef AXON_CU_LOOKUP
#undef AXON_CU_STRINGIFY
#undef AXON_CU_SYMBOL
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

std::string cuResultText(CUresult r) { return describeResult(g_api, r); }

CudaError::CudaError(const std::string& what, CUresult result)
    : Error(ErrorCode::Cuda, what + ": " + cuResultText(result)), result_(result) {}

}  // namespace axon::gpu
