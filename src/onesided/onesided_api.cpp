// The host one-sided API: validate, resolve, hand to the transport that reaches the PE.
#include <cstring>

#include "axon/error.hpp"
#include "axon/onesided.hpp"
#include "core/pe_context.hpp"
#include "core/team_state.hpp"
#include "onesided/arg_checks.hpp"
#include "onesided/team_barrier.hpp"
#include "core/wait.hpp"
#include "gpu/gpu_backend.hpp"

namespace axon {

const char* cmpName(Cmp cmp) noexcept {
  switch (cmp) {
    case Cmp::Eq: return "==";
    case Cmp::Ne: return "!=";
    case Cmp::Gt: return ">";
    case Cmp::Ge: return ">=";
    case Cmp::Lt: return "<";
    case Cmp::Le: return "<=";
  }
  return "?";
}

namespace {

template <bool Nbi>
void doPut(void* dest, const void* src, std::size_t bytes, int pe, const char* api) {
  PeContext& rt = peContext(api);
  RemoteRef ref = rt.resolve(dest, bytes, pe, api, "dest");
  checkLocal(src, bytes, api, "src");
  if (bytes == 0) return;
  Transport& t = rt.transportFor(ref, src, api);
  if constexpr (Nbi) t.putNbi(ref, src, bytes);
  else t.put(ref, src, bytes);
}

template <bool Nbi>
void doGet(void* dest, const void* src, std::size_t bytes, int pe, const char* api) {
  PeContext& rt = peContext(api);
  RemoteRef ref = rt.resolve(src, bytes, pe, api, "src");
  checkLocal(dest, bytes, api, "dest");
  if (bytes == 0) return;
  Transport& t = rt.transportFor(ref, dest, api);
  if constexpr (Nbi) t.getNbi(dest, ref, bytes);
  else t.get(dest, ref, bytes);
}

template <bool Nbi>
void doPutSignal(void* dest, const void* src, std::size_t bytes, std::uint64_t* sig,
                 std::uint64_t value, SignalOp op, int pe, const char* api) {
  PeContext& rt = peContext(api);
  checkSignalOp(op, api);
  RemoteRef data = rt.resolve(dest, bytes, pe, api, "dest");
  RemoteRef flag = resolveSignal(rt, sig, pe, api);
  checkLocal(src, bytes, api, "src");
  Transport& t = rt.transportFor(data, bytes > 0 ? src : nullptr, api);
  Transport& ts = rt.transportFor(flag, nullptr, api);
  if (&t == &ts) {
    t.putSignal(data, src, bytes, flag, value, op, Nbi);
    return;
  }
  if (bytes > 0) {
    if constexpr (Nbi) t.putNbi(data, src, bytes);
    else t.put(data, src, bytes);
  }
  // The data must land before the signal: the transport orders them on its path to one PE, and
  // the signal itself is a release.
  t.fence();
  ts.fence();
  ts.signal(flag, value, op);
}

}  // namespace

void put(void* dest, const void* src, std::size_t bytes, int pe) { doPut<false>(dest, src, bytes, pe, "put"); }
void putNbi(void* dest, const void* src, std::size_t bytes, int pe) { doPut<true>(dest, src, bytes, pe, "put_nbi"); }
void get(void* dest, const void* src, std::size_t bytes, int pe) { doGet<false>(dest, src, bytes, pe, "get"); }
void getNbi(void* dest, const void* src, std::size_t bytes, int pe) { doGet<true>(dest, src, bytes, pe, "get_nbi"); }

void putSignal(void* dest, const void* src, std::size_t bytes, std::uint64_t* sig,
               std::uint64_t value, SignalOp op, int pe) {
  doPutSignal<false>(dest, src, bytes, sig, value, op, pe, "put_signal");
}

void putSignalNbi(void* dest, const void* src, std::size_t bytes, std::uint64_t* sig,
                  std::uint64_t value, SignalOp op, int pe) {
  doPutSignal<true>(dest, src, bytes, sig, value, op, pe, "put_signal_nbi");
}

void signalOp(std::uint64_t* sig, std::uint64_t value, SignalOp op, int pe) {
  PeContext& rt = peContext("signal_op");
  checkSignalOp(op, "signal_op");
  RemoteRef flag = resolveSignal(rt, sig, pe, "signal_op");
  rt.transportFor(flag, nullptr, "signal_op").signal(flag, value, op);
}

std::uint64_t signalFetch(const std::uint64_t* sig) {
  PeContext& rt = peContext("signal_fetch");
  RemoteRef ref = resolveSignal(rt, sig, rt.myPe(), "signal_fetch");
  if (ref.heap == HeapKind::Gpu) return rt.gpu()->readWord(sig);
  return std::atomic_ref<const std::uint64_t>(*sig).load(std::memory_order_acquire);
}

std::uint64_t signalWaitUntil(std::uint64_t* sig, Cmp cmp, std::uint64_t value) {
  PeContext& rt = peContext("signal_wait_until");
  checkCmp(cmp, "signal_wait_until");
  RemoteRef ref = resolveSignal(rt, sig, rt.myPe(), "signal_wait_until");
  if (ref.heap == HeapKind::Gpu) {
    // The host cannot load GPU memory: each look is a small copy from the GPU.
    GpuBackend* gpu = rt.gpu();
    return waitUntil(rt, sig, cmp, value, WaitSite{"signal_wait_until"},
                     [gpu](const std::uint64_t* w) { return gpu->readWord(w); });
  }
  return waitUntil(rt, sig, cmp, value, WaitSite{"signal_wait_until"});
}

namespace detail {

void atomic(AtomicOp op, void* dest, std::size_t width, const void* operand, const void* cond,
            void* result, int pe) {
  static const char* names[] = {"atomic_fetch", "atomic_set", "atomic_swap", "atomic_compare_swap",
                                "atomic_fetch_add", "atomic_add", "atomic_fetch_and",
                                "atomic_fetch_or", "atomic_fetch_xor"};
  const int index = static_cast<int>(op);
  if (index < 0 || index > static_cast<int>(AtomicOp::FetchXor)) {
    throw Error(ErrorCode::InvalidArgument, "axon: unknown atomic operation");
  }
  const char* api = names[index];
  PeContext& rt = peContext(api);
  if (width != 4 && width != 8) {
    throw Error(ErrorCode::InvalidArgument, std::string("axon: ") + api + ": atomics take 4- or 8-byte integers");
  }
  RemoteRef ref = rt.resolve(dest, width, pe, api, "dest");
  if (reinterpret_cast<std::uintptr_t>(dest) % width != 0) {
    throw Error(ErrorCode::InvalidArgument, std::string("axon: ") + api + ": dest " + rt.describe(dest) +
                                                " is not " + std::to_string(width) + "-byte aligned");
  }
  rt.transportFor(ref, nullptr, api).atomic(op, ref, width, operand, cond, result);
}

}  // namespace detail

void fence() {
  peContext("fence").fenceAll();
}

void quiet() {
  peContext("quiet").quietAll();
}

void barrierAll() {
  PeContext& rt = peContext("barrier_all");
  rt.quietAll();
  teamBarrier(rt, *Team::world().state(), "barrier_all");
}

void syncAll() {
  PeContext& rt = peContext("sync_all");
  teamBarrier(rt, *Team::world().state(), "sync_all");
}

}  // namespace axon
