// A CUDA stream of the benchmark's own, made with the driver (loaded at run time, so axon_bench
// builds without CUDA). Collectives are timed on it, not on the legacy default stream: there each
// launch waits for the stream's implicit synchronization (measured on 2 x H200: about 15 us per
// call, against 8 us on a stream of its own), which would measure the legacy stream, not the
// collective. nccl-tests also times on streams it creates.
#pragma once

#include <axon/axon.hpp>

namespace axon::bench {

class BenchStream {
 public:
  BenchStream();  // throws std::runtime_error when the driver or the call fails
  ~BenchStream();
  BenchStream(const BenchStream&) = delete;
  BenchStream& operator=(const BenchStream&) = delete;
  Stream get() const { return stream_; }

 private:
  void* lib_ = nullptr;
  Stream stream_ = nullptr;
  int (*destroy_)(Stream) = nullptr;
};

}  // namespace axon::bench
