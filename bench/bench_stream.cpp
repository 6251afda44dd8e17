#include "bench_stream.hpp"

#include <dlfcn.h>

#include <stdexcept>
#include <string>

namespace axon::bench {

BenchStream::BenchStream() {
  lib_ = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib_) throw std::runtime_error("cannot load libcuda.so.1 for the benchmark's stream");
  auto create = reinterpret_cast<int (*)(Stream*, unsigned)>(::dlsym(lib_, "cuStreamCreate"));
  destroy_ = reinterpret_cast<int (*)(Stream)>(::dlsym(lib_, "cuStreamDestroy_v2"));
  if (!create || !destroy_) throw std::runtime_error("the CUDA driver lacks cuStreamCreate / cuStreamDestroy_v2");
  // axon's GPU context is current on this thread since init(); 1 = CU_STREAM_NON_BLOCKING.
  const int r = create(&stream_, 1u);
  if (r != 0) throw std::runtime_error("cuStreamCreate failed with CUresult " + std::to_string(r));
}

BenchStream::~BenchStream() {
  if (stream_) destroy_(stream_);
  if (lib_) ::dlclose(lib_);
}

}  // namespace axon::bench
