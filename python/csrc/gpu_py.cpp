// The GPU backend for Python: device queries, the pinned host heap, filling heap memory, DLPack
// export of GPU heap arrays, and the stream-ordered one-sided calls on integer stream handles.
// axon/gpu.py builds the Pythonic layer (SymmetricGpuArray, stream parsing) on these.
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "axon/error.hpp"
#include "axon/gpu.hpp"
#include "axon/memory.hpp"
#include "axon/onesided.hpp"
#include "axon/runtime.hpp"
#include "axon/team.hpp"
#include "bindings.hpp"
#include "nanobind/ndarray.h"
#include "nanobind/stl/string.h"
#include "nanobind/stl/vector.h"

namespace nb = nanobind;

namespace axon::py {
namespace {

using HeapOwner = std::shared_ptr<const void>;

void* ptrOf(std::uintptr_t a) { return reinterpret_cast<void*>(a); }
std::uint64_t* sigOf(std::uintptr_t a) { return reinterpret_cast<std::uint64_t*>(a); }
Stream streamOf(std::uintptr_t s) { return reinterpret_cast<Stream>(s); }

// A capsule holding the GPU heap's mappings: arrays and DLPack tensors over the GPU heap keep one,
// so that memory stays mapped past finalize() for as long as Python code can reach it.
nb::capsule gpuHeapOwner() {
  if (!axon::gpuEnabled()) {
    throw Error(ErrorCode::Unsupported, "PE " + std::to_string(axon::myPe()) +
                                            ": axon: gpu_heap_owner: the GPU backend is off (" +
                                            axon::gpuUnavailableReason() + ")");
  }
  auto* keep = new HeapOwner(axon::heapMappings(HeapKind::Gpu));
  return nb::capsule(keep, "axon.gpu_heap_owner", [](void* p) noexcept { delete static_cast<HeapOwner*>(p); });
}

// Collective: `bytes` of the host heap (pinned for the GPU when the GPU backend is on). The host
// heap hands out 64-byte granules; larger alignments cannot be promised, so they are refused
// before the collective call (every PE passes the same alignment, so every PE refuses alike).
std::uintptr_t mallocHostAligned(std::size_t bytes, std::size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > kHostHeapGranule) {
    throw Error(ErrorCode::InvalidArgument,
                "axon: malloc_host: alignment " + std::to_string(alignment) + " is not a power of two up to " +
                    std::to_string(kHostHeapGranule) + " (the host heap's granule)");
  }
  void* p;
  {
    nb::gil_scoped_release release;
    p = axon::mallocHost(bytes);
  }
  auto addr = reinterpret_cast<std::uintptr_t>(p);
  if (addr % alignment != 0) {
    // Every PE got the same offset, so every PE sees this alike and frees together.
    {
      nb::gil_scoped_release release;
      axon::free(p);
    }
    throw Error(ErrorCode::Internal, "axon: malloc_host returned " + std::to_string(addr) +
                                         ", which is not " + std::to_string(alignment) + "-byte aligned");
  }
  return addr;
}

// A DLPack producer (an object with __dlpack__ and __dlpack_device__) over C-contiguous CUDA
// memory at `addr`, kept alive by `owner`. The element type is DLPack's (code, bits).
nb::object dlpackArray(std::uintptr_t addr, const std::vector<std::int64_t>& shape, int code, int bits,
                       int device, nb::handle owner) {
  if (code < 0 || code > 255 || bits <= 0 || bits > 255) {
    throw Error(ErrorCode::InvalidArgument, "axon: dlpack: unsupported element type (code " + std::to_string(code) +
                                                ", " + std::to_string(bits) + " bits)");
  }
  std::vector<std::size_t> dims;
  dims.reserve(shape.size());
  for (std::int64_t s : shape) {
    if (s < 0) throw Error(ErrorCode::InvalidArgument, "axon: dlpack: negative dimension");
    dims.push_back(static_cast<std::size_t>(s));
  }
  nb::dlpack::dtype dt{static_cast<std::uint8_t>(code), static_cast<std::uint8_t>(bits), 1};
  nb::ndarray<nb::array_api> array(ptrOf(addr), dims.size(), dims.data(), owner, nullptr, dt,
                                   nb::device::cuda::value, device, 'C');
  return nb::cast(array, nb::rv_policy::reference);
}

}  // namespace

void bindGpu(nb::module_& m) {
  using nb::arg;
  auto release = nb::call_guard<nb::gil_scoped_release>();
  m.def("gpu_enabled", &axon::gpuEnabled);
  m.def("gpu_device", &axon::gpuDevice);
  m.def("gpu_unavailable_reason", [] { return std::string(axon::gpuUnavailableReason()); });
  m.def("gpu_peer_reachable", &axon::gpuPeerReachable, arg("pe"));
  m.def("gpu_heap_owner", &gpuHeapOwner);
  m.def("malloc_host", &mallocHostAligned, arg("bytes"), arg("alignment") = 64);
  // Fills this PE's heap memory (either kind); GPU heap memory is filled by the GPU.
  m.def(
      "memset",
      [](std::uintptr_t addr, int value, std::size_t bytes) {
        if (value < 0 || value > 255) {
          throw Error(ErrorCode::InvalidArgument,
                      "axon: memset: value " + std::to_string(value) + " is not a byte (0..255)");
        }
        if (bytes > 0) memsetSymmetric(ptrOf(addr), value, bytes);
      },
      arg("addr"), arg("value"), arg("bytes"), release);
  // Which heap of this PE holds `addr`: "gpu", "host", or None.
  m.def("heap_kind", [](std::uintptr_t addr) -> nb::object {
    const std::optional<HeapKind> kind = heapKindOf(ptrOf(addr));
    if (!kind) return nb::none();
    return nb::str(*kind == HeapKind::Gpu ? "gpu" : "host");
  });
  m.def("dlpack_array", &dlpackArray, arg("addr"), arg("shape"), arg("code"), arg("bits"), arg("device"),
        arg("owner"));

  m.def(
      "put_on_stream",
      [](std::uintptr_t d, std::uintptr_t s, std::size_t n, int pe, std::uintptr_t stream) {
        putOnStream(ptrOf(d), ptrOf(s), n, pe, streamOf(stream));
      },
      arg("dest"), arg("src"), arg("bytes"), arg("pe"), arg("stream"), release);
  m.def(
      "get_on_stream",
      [](std::uintptr_t d, std::uintptr_t s, std::size_t n, int pe, std::uintptr_t stream) {
        getOnStream(ptrOf(d), ptrOf(s), n, pe, streamOf(stream));
      },
      arg("dest"), arg("src"), arg("bytes"), arg("pe"), arg("stream"), release);
  m.def(
      "put_signal_on_stream",
      [](std::uintptr_t d, std::uintptr_t s, std::size_t n, std::uintptr_t sig, std::uint64_t v, int op, int pe,
         std::uintptr_t stream) {
        putSignalOnStream(ptrOf(d), ptrOf(s), n, sigOf(sig), v, static_cast<SignalOp>(op), pe, streamOf(stream));
      },
      arg("dest"), arg("src"), arg("bytes"), arg("sig"), arg("value"), arg("op"), arg("pe"), arg("stream"),
      release);
  m.def(
      "signal_op_on_stream",
      [](std::uintptr_t sig, std::uint64_t v, int op, int pe, std::uintptr_t stream) {
        signalOpOnStream(sigOf(sig), v, static_cast<SignalOp>(op), pe, streamOf(stream));
      },
      arg("sig"), arg("value"), arg("op"), arg("pe"), arg("stream"), release);
  m.def(
      "signal_wait_until_on_stream",
      [](std::uintptr_t sig, int cmp, std::uint64_t v, std::uintptr_t stream) {
        signalWaitUntilOnStream(sigOf(sig), static_cast<Cmp>(cmp), v, streamOf(stream));
      },
      arg("sig"), arg("cmp"), arg("value"), arg("stream"), release);
  m.def(
      "quiet_on_stream", [](std::uintptr_t stream) { quietOnStream(streamOf(stream)); }, arg("stream"), release);
  m.def(
      "stream_synchronize", [](std::uintptr_t stream) { streamSynchronize(streamOf(stream)); }, arg("stream"), release);
  m.def(
      "barrier_on_stream", [](const Team& team, std::uintptr_t stream) { barrierOnStream(team, streamOf(stream)); },
      arg("team"), arg("stream"), release);
  m.def(
      "barrier_all_on_stream", [](std::uintptr_t stream) { barrierAllOnStream(streamOf(stream)); }, arg("stream"),
      release);
}

}  // namespace axon::py
