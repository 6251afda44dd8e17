// Shared-memory transport: peers on this node whose heaps are mapped into this process.
// Puts and gets are memcpy, signals and atomics are CPU atomics on the mapping.
#pragma once

#include <vector>

#include "transport/route.hpp"
#include "transport/transport.hpp"

namespace axon {

class ShmTransport final : public Transport {
 public:
  // reachable[pe] says which PEs' heaps this process maps.
  explicit ShmTransport(std::vector<bool> reachable) : reachable_(std::move(reachable)) {}

  const char* name() const noexcept override { return routeName(Route::Shm); }

  bool reaches(int pe) const noexcept override;

  void put(const RemoteRef& dst, const void* src, std::size_t bytes) override;
  void get(void* dst, const RemoteRef& src, std::size_t bytes) override;
  void signal(const RemoteRef& sig, std::uint64_t value, SignalOp op) override;
  void atomic(AtomicOp op, const RemoteRef& dst, std::size_t width, const void* operand,
              const void* cond, void* result) override;
  void fence() override;
  void quiet() override;

 private:
  std::vector<bool> reachable_;
};

}  // namespace axon
