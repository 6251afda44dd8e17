// NCCL as a comparison peer of the collective benchmarks: libnccl loaded at run time (dlopen), a
// communicator over the world made from a unique id that PE 0 broadcasts through axon, and each
// collective on the same device buffers and stream as axon's. No NCCL header is needed to build.
#pragma once

#include <axon/axon.hpp>
#include <axon/collectives.hpp>

#include <memory>
#include <string>

namespace axon::bench {

class NcclPeer {
 public:
  // Collective over the world. Throws std::runtime_error naming the library or call that failed.
  static std::unique_ptr<NcclPeer> open(const std::string& library);
  ~NcclPeer();
  std::string version() const { return version_; }
  // The same argument conventions as axon's collectives (count per PE block where axon has one).
  void run(Collective c, const void* src, void* dst, std::size_t count, DataType type, ReduceOp op, int root,
           Stream stream);

 private:
  NcclPeer() = default;
  struct Api;
  std::unique_ptr<Api> api_;
  void* comm_ = nullptr;
  std::string version_;
};

}  // namespace axon::bench
