// One-sided calls on raw addresses; axon/onesided.py checks arrays and passes addresses here.
#include <cstdint>

#include "axon/error.hpp"
#include "axon/onesided.hpp"
#include "bindings.hpp"

namespace nb = nanobind;

namespace axon::py {
namespace {

void* ptrOf(std::uintptr_t a) { return reinterpret_cast<void*>(a); }
std::uint64_t* sigOf(std::uintptr_t a) { return reinterpret_cast<std::uint64_t*>(a); }

// Atomics on a word of `width` bytes; values travel as Python ints and are truncated/extended
// to the word's type by the caller (axon/onesided.py knows the dtype).
std::uint64_t atomicRaw(int op, std::uintptr_t dest, std::size_t width, std::uint64_t operand,
                        std::uint64_t cond, int pe) {
  std::uint64_t result = 0;
  if (width == 4) {
    std::uint32_t o = static_cast<std::uint32_t>(operand), c = static_cast<std::uint32_t>(cond), r = 0;
    detail::atomic(static_cast<AtomicOp>(op), ptrOf(dest), 4, &o, &c, &r, pe);
    result = r;
  } else {
    detail::atomic(static_cast<AtomicOp>(op), ptrOf(dest), width, &operand, &cond, &result, pe);
  }
  return result;
}

}  // namespace

void bindOnesided(nb::module_& m) {
  using nb::arg;
  auto release = nb::call_guard<nb::gil_scoped_release>();
  m.def("put", [](std::uintptr_t d, std::uintptr_t s, std::size_t n, int pe) { put(ptrOf(d), ptrOf(s), n, pe); }, release);
  m.def("get", [](std::uintptr_t d, std::uintptr_t s, std::size_t n, int pe) { get(ptrOf(d), ptrOf(s), n, pe); }, release);
  m.def("put_nbi", [](std::uintptr_t d, std::uintptr_t s, std::size_t n, int pe) { putNbi(ptrOf(d), ptrOf(s), n, pe); }, release);
  m.def("get_nbi", [](std::uintptr_t d, std::uintptr_t s, std::size_t n, int pe) { getNbi(ptrOf(d), ptrOf(s), n, pe); }, release);
  m.def(
      "put_signal",
      [](std::uintptr_t d, std::uintptr_t s, std::size_t n, std::uintptr_t sig, std::uint64_t v, int op, int pe, bool nbi) {
        if (nbi) putSignalNbi(ptrOf(d), ptrOf(s), n, sigOf(sig), v, static_cast<SignalOp>(op), pe);
        else putSignal(ptrOf(d), ptrOf(s), n, sigOf(sig), v, static_cast<SignalOp>(op), pe);
      },
      release);
  m.def("signal_op", [](std::uintptr_t sig, std::uint64_t v, int op, int pe) { signalOp(sigOf(sig), v, static_cast<SignalOp>(op), pe); }, release);
  m.def("signal_fetch", [](std::uintptr_t sig) { return signalFetch(sigOf(sig)); });
  m.def("signal_wait_until", [](std::uintptr_t sig, int cmp, std::uint64_t v) { return signalWaitUntil(sigOf(sig), static_cast<Cmp>(cmp), v); }, release);
  m.def("atomic", &atomicRaw, arg("op"), arg("dest"), arg("width"), arg("operand"), arg("cond"), arg("pe"), release);
  m.def("fence", &fence, release);
  m.def("quiet", &quiet, release);
  m.def("barrier_all", &barrierAll, release);
  m.def("sync_all", &syncAll, release);
}

}  // namespace axon::py
