// Heap allocation for Python. Arrays on the heap are NumPy arrays whose owner keeps the heap's
// mappings alive, so an array that outlives finalize() stays valid memory.
#include <cstdint>
#include <memory>

#include "axon/memory.hpp"
#include "bindings.hpp"
#include "nanobind/ndarray.h"

namespace nb = nanobind;

namespace axon::py {
namespace {

using HeapOwner = std::shared_ptr<const void>;

// A uint8 NumPy array over [addr, addr+bytes) whose base object holds the heap.
nb::object byteArray(std::uintptr_t addr, std::size_t bytes, HeapOwner owner) {
  auto* keep = new HeapOwner(std::move(owner));
  nb::capsule holder(keep, [](void* p) noexcept { delete static_cast<HeapOwner*>(p); });
  std::size_t shape[1] = {bytes};
  return nb::cast(nb::ndarray<nb::numpy, std::uint8_t, nb::ndim<1>>(
      reinterpret_cast<std::uint8_t*>(addr), 1, shape, holder));
}

nb::dict statsDict(const HeapStats& s) {
  nb::dict d;
  d["mapped_bytes"] = s.mappedBytes;
  d["capacity_bytes"] = s.capacityBytes;
  d["in_use_bytes"] = s.inUseBytes;
  d["allocations"] = s.allocations;
  return d;
}

}  // namespace

void bindMemory(nb::module_& m) {
  m.def(
      "malloc",
      [](std::size_t bytes, std::size_t alignment) {
        void* p;
        {
          nb::gil_scoped_release release;
          p = axon::alignedAlloc(alignment, bytes);
        }
        return reinterpret_cast<std::uintptr_t>(p);
      },
      nb::arg("bytes"), nb::arg("alignment") = 64);
  m.def(
      "free", [](std::uintptr_t addr) { axon::free(reinterpret_cast<void*>(addr)); },
      nb::call_guard<nb::gil_scoped_release>());
  m.def("heap_bytes", [](std::uintptr_t addr, std::size_t bytes) {
    return byteArray(addr, bytes, heapMappings(HeapKind::Host));
  });
  m.def("ptr", [](std::uintptr_t addr, int pe) {
    return reinterpret_cast<std::uintptr_t>(axon::ptr(reinterpret_cast<void*>(addr), pe));
  });
  m.def("is_symmetric", [](std::uintptr_t addr) { return axon::isSymmetric(reinterpret_cast<void*>(addr)); });
  m.def("heap_stats", [] { return statsDict(axon::heapStats()); });
  m.def("host_heap_stats", [] { return statsDict(axon::hostHeapStats()); });
}

}  // namespace axon::py
