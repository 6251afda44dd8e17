#include "gpu/nvml.hpp"

#include <dlfcn.h>

#include <cctype>
#include <mutex>

namespace axon::gpu {
namespace {

// The few NVML entry points we call, declared from the NVML API reference (their C ABI); there is
// no nvml.h in the CUDA toolkit we build with.
using NvmlReturn = int;
using NvmlDevice = struct NvmlDeviceOpaque*;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr int kP2pCapsNvlink = 2;  // NVML_P2P_CAPS_INDEX_NVLINK (0 read, 1 write, 2 NVLink, 3 atomics)
constexpr int kP2pStatusOk = 0;    // NVML_P2P_STATUS_OK

struct Nvml {
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*byBusId)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*p2pStatus)(NvmlDevice, NvmlDevice, int, int*) = nullptr;
  NvmlReturn (*commonAncestor)(NvmlDevice, NvmlDevice, int*) = nullptr;
  const char* (*errorString)(NvmlReturn) = nullptr;
};

Nvml g_nvml;
bool g_loaded = false;
std::string g_reason;
std::once_flag g_once;

void load() {
  void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = ::dlerror();
    g_reason = std::string("NVML (libnvidia-ml.so.1) could not be loaded: ") + (e ? e : "unknown reason");
    return;
  }
  g_nvml.init = reinterpret_cast<decltype(g_nvml.init)>(::dlsym(lib, "nvmlInit_v2"));
  g_nvml.byBusId = reinterpret_cast<decltype(g_nvml.byBusId)>(::dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
  g_nvml.p2pStatus = reinterpret_cast<decltype(g_nvml.p2pStatus)>(::dlsym(lib, "nvmlDeviceGetP2PStatus"));
  g_nvml.commonAncestor =
      reinterpret_cast<decltype(g_nvml.commonAncestor)>(::dlsym(lib, "nvmlDeviceGetTopologyCommonAncestor"));
  g_nvml.errorString = reinterpret_cast<decltype(g_nvml.errorString)>(::dlsym(lib, "nvmlErrorString"));
  if (!g_nvml.init || !g_nvml.byBusId || !g_nvml.p2pStatus || !g_nvml.commonAncestor || !g_nvml.errorString) {
    g_reason = "NVML lacks a function axon uses (driver too old?)";
    return;
  }
  NvmlReturn r = g_nvml.init();
  if (r != kNvmlSuccess) {
    g_reason = std::string("nvmlInit failed: ") + g_nvml.errorString(r);
    return;
  }
  g_loaded = true;
}

// NVML wants the bus id in its own spelling; the CUDA driver's is upper-case hex. Both accept
// either case in practice, but normalise to be safe.
std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

const std::string& nvmlUnavailableReason() {
  std::call_once(g_once, load);
  return g_reason;
}

std::string gpuLink(const std::string& busA, const std::string& busB) {
  if (lower(busA) == lower(busB)) return "same GPU";
  if (!nvmlUnavailableReason().empty()) return "unknown (" + g_reason + ")";
  NvmlDevice a = nullptr, b = nullptr;
  NvmlReturn r = g_nvml.byBusId(busA.c_str(), &a);
  if (r == kNvmlSuccess) r = g_nvml.byBusId(busB.c_str(), &b);
  if (r != kNvmlSuccess) return std::string("unknown (") + g_nvml.errorString(r) + ")";
  int status = -1;
  if (g_nvml.p2pStatus(a, b, kP2pCapsNvlink, &status) == kNvmlSuccess && status == kP2pStatusOk) return "NV";
  int level = -1;
  if (g_nvml.commonAncestor(a, b, &level) != kNvmlSuccess) return "unknown (no topology)";
  // nvmlGpuTopologyLevel_t: 0 internal, 10 single switch, 20 multiple switches, 30 host bridge,
  // 40 NUMA node, 50 system.
  switch (level) {
    case 0: return "same board";
    case 10: return "PIX";
    case 20: return "PXB";
    case 30: return "PHB";
    case 40: return "NODE";
    case 50: return "SYS";
  }
  return "unknown (level " + std::to_string(level) + ")";
}

}  // namespace axon::gpu
