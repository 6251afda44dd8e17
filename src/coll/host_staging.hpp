// Host memory through which a team's host-path collectives read and write GPU buffers (across
// nodes, or on a node whose GPUs do not map each other), kept from one call to the next.
//
// A fresh buffer per call cost more than the copies themselves: zeroing a 16 MiB vector and the
// first touch of its pages took longer than moving the frame, and made axon's broadcast of GPU
// frames across emulated nodes 3 times slower (docs/performance.md, "Applications"). The buffers
// grow to the largest call the team has made and are freed with the team. A stream's host worker
// and the device proxy run a team's calls beside the program's own threads, so a call holds the
// staging's lock from its first copy to its last.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <string>

#include "axon/error.hpp"

namespace axon::coll {

class HostStaging {
 public:
  // Held by a call for as long as it uses source() and destination().
  std::unique_lock<std::mutex> lock() { return std::unique_lock<std::mutex>(mutex_); }
  // At least `bytes` of host memory; what an earlier call left there stays until written.
  // Throws OutOfMemory naming `who` and the size.
  char* source(std::size_t bytes, const std::string& who) { return reserve(source_, sourceBytes_, bytes, who); }
  char* destination(std::size_t bytes, const std::string& who) {
    return reserve(destination_, destinationBytes_, bytes, who);
  }

 private:
  static char* reserve(std::unique_ptr<char[]>& buffer, std::size_t& have, std::size_t bytes, const std::string& who) {
    if (bytes <= have) return buffer.get();
    buffer.reset();  // the old one goes first: both at once may not fit
    have = 0;
    try {
      buffer.reset(new char[bytes]);  // default-initialized: the copy into it writes every byte
    } catch (const std::bad_alloc&) {
      throw Error(ErrorCode::OutOfMemory,
                  who + ": no host memory for a " + std::to_string(bytes) + "-byte copy of a GPU buffer");
    }
    have = bytes;
    return buffer.get();
  }

  std::mutex mutex_;
  std::unique_ptr<char[]> source_, destination_;
  std::size_t sourceBytes_ = 0, destinationBytes_ = 0;
};

}  // namespace axon::coll
