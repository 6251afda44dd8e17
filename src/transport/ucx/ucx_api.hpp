// UCX, loaded at run time with dlopen: the library links no UCX, so a machine without it still
// runs one node, and a process that already holds a libucp (Open MPI's, say) keeps that one:
// never two UCX builds in one process.
//
// Only files under src/transport/ucx include this (and ucp.h).
#pragma once

#include <ucp/api/ucp.h>

#include <string>

#include "axon/error.hpp"

namespace axon::ucx {

// One member per UCX function we call, typed from ucp.h and resolved by name.
struct UcxApi {
#define AXON_UCX_FN(name) decltype(&::name) name = nullptr;
#define AXON_UCX_OPTIONAL_FN(name) AXON_UCX_FN(name)
#include "transport/ucx/ucx_functions.inc"
#undef AXON_UCX_OPTIONAL_FN
#undef AXON_UCX_FN
  unsigned major = 0, minor = 0, release = 0;  // of the library loaded
  std::string path;                            // the libucp.so file loaded
  std::string version() const;                 // "1.22.0"
};

// The loaded UCX, or nullptr when it cannot be loaded (why: ucxUnavailableReason()). Loads once.
const UcxApi* ucxApi();
const std::string& ucxUnavailableReason();

// A UCX call failed.
class UcxError : public Error {
 public:
  UcxError(const std::string& what, ucs_status_t status);
  ucs_status_t status() const noexcept { return status_; }

 private:
  ucs_status_t status_;
};

// "Destination is unreachable (-6)"
std::string statusText(ucs_status_t status);

inline void ucxCheck(ucs_status_t status, const std::string& what) {
  if (status != UCS_OK) throw UcxError(what, status);
}

}  // namespace axon::ucx
