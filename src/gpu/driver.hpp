// The CUDA driver API, loaded at run time with dlopen: the library links no CUDA library, so the
// same build runs on the host backend where there is no GPU or no driver.
//
// Only files under src/gpu, src/transport/cuda_ipc and src/kernels include this (and cuda.h).
#pragma once

#include <cuda.h>

#include <string>

#include "axon/error.hpp"

namespace axon::gpu {

// One member per driver function we call, typed from cuda.h and resolved (dlsym) by the exact
// ABI symbol that declaration names, so the two always agree.
struct DriverApi {
#define AXON_CU_FN(name) decltype(&::name) name = nullptr;
#include "gpu/driver_functions.inc"
#undef AXON_CU_FN
  // Added in CUDA 11.7, after the oldest driver axon starts on (11.3): null where it is missing.
  decltype(&::cuModuleGetLoadingMode) cuModuleGetLoadingMode = nullptr;
  int version = 0;  // cuDriverGetVersion, e.g. 13000
};

// The loaded driver, or nullptr when there is none (no libcuda.so.1, cuInit fails, no device).
// Loads once; later calls return the same answer.
const DriverApi* driver();
// Why driver() is null, for messages ("libcuda.so.1 not found: ...").
const std::string& driverUnavailableReason();

// A CUDA driver call failed.
class CudaError : public Error {
 public:
  CudaError(const std::string& what, CUresult result);
  CUresult result() const noexcept { return result_; }

 private:
  CUresult result_;
};

// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)"
std::string cuResultText(CUresult r);

// Throws CudaError "<what>: <name> (<text>)" unless r is CUDA_SUCCESS.
inline void cuCheck(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) throw CudaError(what, r);
}
inline void cuCheck(CUresult r, const std::string& what) {
  if (r != CUDA_SUCCESS) throw CudaError(what, r);
}

// For a thread that runs the library's work alone (the progress engine's), for good: `ctx`
// current, and the relaxed stream-capture mode (see LibraryCudaCalls below).
inline void adoptLibraryThread(const DriverApi& cu, CUcontext ctx) {
  cu.cuCtxSetCurrent(ctx);
  CUstreamCaptureMode relaxed = CU_STREAM_CAPTURE_MODE_RELAXED;
  cu.cuThreadExchangeStreamCaptureMode(&relaxed);
}

// Readies the calling thread for CUDA calls made on the library's behalf: `ctx` current, and for
// the guard's life the relaxed stream-capture mode, so that the calls are not refused while the
// program captures a graph in global mode on another thread (the default mode restricts every
// thread). The thread's own mode comes back at the end.
class LibraryCudaCalls {
 public:
  LibraryCudaCalls(const DriverApi& cu, CUcontext ctx) : cu_(cu) {
    CUcontext current = nullptr;
    if (cu_.cuCtxGetCurrent(&current) != CUDA_SUCCESS || current != ctx) cu_.cuCtxSetCurrent(ctx);
    cu_.cuThreadExchangeStreamCaptureMode(&mode_);
  }
  ~LibraryCudaCalls() { cu_.cuThreadExchangeStreamCaptureMode(&mode_); }
  LibraryCudaCalls(const LibraryCudaCalls&) = delete;
  LibraryCudaCalls& operator=(const LibraryCudaCalls&) = delete;

 private:
  const DriverApi& cu_;
  CUstreamCaptureMode mode_ = CU_STREAM_CAPTURE_MODE_RELAXED;
};

}  // namespace axon::gpu
