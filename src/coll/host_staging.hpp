// Host memory through which a team's host-path collectives read and write GPU buffers (across
// nodes, or on a node whose GPUs do not map each other), kept from one call to the next.
//
// A fresh buffer per call cost more than the copies themselves: zeroing a 16 MiB vector and the
// first touch of its pages took longer than moving the frame, and made axon's broadcast of GPU
// frames across emulated nodes 3 to 7 times slower than a loop of sends (docs/performance.md,
// "Applications"). The buffers grow to the largest call the team has made and are freed with the
// team. A team runs one collective at a time (collectives.hpp), so one pair serves every call.
#pragma once

#include <cstddef>
#include <memory>

namespace axon::coll {

class HostStaging {
 public:
  // At least `bytes` of host memory; what an earlier call left there stays until written.
  char* source(std::size_t bytes) { return reserve(source_, sourceBytes_, bytes); }
  char* destination(std::size_t bytes) { return reserve(destination_, destinationBytes_, bytes); }

 private:
  static char* reserve(std::unique_ptr<char[]>& buffer, std::size_t& have, std::size_t bytes) {
    if (bytes > have) {
      buffer.reset();  // the old one goes first: both at once may not fit
      buffer.reset(new char[bytes]);  // default-initialized: the copy into it writes every byte
      have = bytes;
    }
    return buffer.get();
  }

  std::unique_ptr<char[]> source_, destination_;
  std::size_t sourceBytes_ = 0, destinationBytes_ = 0;
};

}  // namespace axon::coll
