// The doorbell ring between the GPU and the staged path's stream worker. A stream-ordered staged
// operation is one kernel on the program's stream: it takes a ticket, writes its request number
// into the ring slot of that ticket, and waits until the worker thread marks the ticket done.
// There is no host node: a CUDA graph holding host nodes can make cuGraphLaunch wait inside the
// driver while holding a lock that every other thread's kernel launch needs, and the staging
// proxies launch kernels (docs/architecture.md, "staged stream ops").
//
// Tickets count from 0 and every word below holds ticket + 1, so that 0 means "never written".
// Slot = ticket % kStreamOpRingSlots. Plain C++ (no CUDA headers): the kernel and the worker both
// include it.
#pragma once

#include <cstdint>

namespace axon::kernels {

constexpr std::uint64_t kStreamOpRingSlots = 4096;

struct StreamOpRing {
  struct Entry {
    std::uint64_t request;  // which request to run (written first)
    std::uint64_t ticket;   // ticket + 1, stored with release once `request` is in place
  };
  Entry entries[kStreamOpRingSlots];       // GPU writes, worker reads
  std::uint64_t done[kStreamOpRingSlots];  // worker: ticket + 1 once the work is complete (only grows)
  // Worker: how many tickets it has read. A kernel writes slot t % kStreamOpRingSlots only once
  // the ticket that used it before (t - kStreamOpRingSlots) has been read.
  std::uint64_t taken;
};

}  // namespace axon::kernels
