// What a staging-space client does with GPU memory, behind an interface so that the client
// itself needs no CUDA: gpu_side_cuda.cpp (the driver, loaded at run time, and the fused
// reassembly kernel) where the build has CUDA, gpu_side_none.cpp otherwise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "space/space_kernels.hpp"

namespace axon::space {

// Device or pinned host memory from the client's pools, returned to its pool on destruction.
class StagingBuffer {
 public:
  virtual ~StagingBuffer() = default;
  virtual unsigned char* data() const = 0;
};

class GpuSide {
 public:
  virtual ~GpuSide() = default;
  // Is `p` GPU memory? (The first device pointer seen fixes the client's CUDA context.)
  virtual bool isDevice(const void* p) = 0;
  // A host range the GPU copies to and from (a server's arena mapped here): pinned in chunks on
  // first use, so that those copies are single DMAs.
  virtual void addHostRange(void* base, std::size_t bytes) = 0;
  // Copies between host and device memory (either direction); returns when done.
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  // Several host-to-device copies, enqueued back to back, waited for once.
  struct Span {
    void* dst;
    const void* src;
    std::size_t bytes;
  };
  virtual void copyAll(const std::vector<Span>& spans) = 0;
  // Device memory: where fragments land before the reassembly kernel.
  virtual std::unique_ptr<StagingBuffer> staging(std::size_t bytes) = 0;
  // Page-locked host memory: where GPU data waits for UCX when it goes through host memory (the
  // chunks of a pipelined put, fragments for a GPU destination), so that its copies are DMAs.
  virtual std::unique_ptr<StagingBuffer> pinnedStaging(std::size_t bytes) = 0;
  // Every copy in ONE kernel launch; returns when done.
  virtual void reassemble(std::vector<kernels::RegionCopy> copies) = 0;
};

// nullptr, with `whyNot`, where there is no GPU (build, driver or device).
std::unique_ptr<GpuSide> makeGpuSide(std::string& whyNot);

}  // namespace axon::space
