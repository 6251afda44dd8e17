#include "transport/ucx/ucx_api.hpp"

#include <dlfcn.h>

#include <mutex>

namespace axon::ucx {
namespace {

UcxApi g_api;
const UcxApi* g_loaded = nullptr;
std::string g_reason;
std::once_flag g_once;

constexpr const char* kLibrary = "libucp.so.0";

// The libucp to use: one already in the process, else the one this build was configured with,
// else whatever the loader finds.
void* openLibrary(std::string& tried) {
  if (void* lib = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD)) return lib;
#ifdef AXON_UCX_LIBDIR
  const std::string configured = std::string(AXON_UCX_LIBDIR) + "/" + kLibrary;
  if (void* lib = ::dlopen(configured.c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
  const char* err = ::dlerror();
  tried = configured + " (" + (err ? err : "not loadable") + "), then ";
#endif
  void* lib = ::dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* err = ::dlerror();
    tried += std::string(kLibrary) + " on the loader's path (" + (err ? err : "not found") + ")";
  }
  return lib;
}

void load() {
#ifndef AXON_HAVE_UCX
  g_reason = "this build of axon has no UCX (CMake found none: set UCX_HOME, install libucx-dev, or "
             "pip install libucx-cu13, and rebuild)";
#else
  std::string tried;
  void* lib = openLibrary(tried);
  if (!lib) {
    g_reason = "UCX could not be loaded: tried " + tried;
    return;
  }
#define AXON_UCX_RESOLVE(name, required)                                                              \
  g_api.name = reinterpret_cast<decltype(g_api.name)>(::dlsym(lib, #name));                           \
  if (!g_api.name && (required)) {                                                                    \
    g_reason = std::string("the UCX library loaded lacks ") + #name + " (UCX older than " +           \
               std::to_string(UCP_API_MAJOR) + "." + std::to_string(UCP_API_MINOR) +                  \
               ", the version axon was built with?)";                                                \
    return;                                                                                           \
  }
#define AXON_UCX_FN(name) AXON_UCX_RESOLVE(name, true)
#define AXON_UCX_OPTIONAL_FN(name) AXON_UCX_RESOLVE(name, false)
#include "transport/ucx/ucx_functions.inc"
#undef AXON_UCX_OPTIONAL_FN
#undef AXON_UCX_FN
#undef AXON_UCX_RESOLVE
  g_api.ucp_get_version(&g_api.major, &g_api.minor, &g_api.release);
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(g_api.ucp_init_version), &info) && info.dli_fname) g_api.path = info.dli_fname;
  // Structures grow with field masks, so a newer library serves older headers, not the reverse.
  if (UCP_VERSION(g_api.major, g_api.minor) < UCP_VERSION(UCP_API_MAJOR, UCP_API_MINOR)) {
    g_reason = "the UCX library loaded (" + g_api.path + ") is " + g_api.version() + ", older than the " +
               std::to_string(UCP_API_MAJOR) + "." + std::to_string(UCP_API_MINOR) + " headers axon was built with";
    return;
  }
  g_loaded = &g_api;
#endif
}

}  // namespace

std::string UcxApi::version() const {
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

const UcxApi* ucxApi() {
  std::call_once(g_once, load);
  return g_loaded;
}

const std::string& ucxUnavailableReason() {
  ucxApi();
  return g_reason;
}

std::string statusText(ucs_status_t status) {
  const UcxApi* api = ucxApi();
  const char* text = api ? api->ucs_status_string(status) : nullptr;
  return std::string(text ? text : "UCX error") + " (" + std::to_string(static_cast<int>(status)) + ")";
}

UcxError::UcxError(const std::string& what, ucs_status_t status)
    : Error(ErrorCode::Ucx, what + ": " + statusText(status)), status_(status) {}

}  // namespace axon::ucx
