// Collectives on raw addresses; axon/collectives.py checks arrays and passes addresses here.
#include <cstdint>
#include <string>
#include <tuple>

#include "axon/collectives.hpp"
#include "bindings.hpp"
#include "nanobind/stl/string.h"
#include "nanobind/stl/tuple.h"

namespace nb = nanobind;

namespace axon::py {
namespace {

const void* in(std::uintptr_t a) { return reinterpret_cast<const void*>(a); }
void* out(std::uintptr_t a) { return reinterpret_cast<void*>(a); }
DataType type(int t) { return static_cast<DataType>(t); }
ReduceOp rop(int op) { return static_cast<ReduceOp>(op); }
Stream streamOf(std::uintptr_t s) { return reinterpret_cast<Stream>(s); }

// The team's device::CollHandle as bytes: Python hands them to kernels it launches itself.
nb::bytes collHandleBytes(const Team& t) {
  device::CollHandle h;
  {
    nb::gil_scoped_release release;
    h = deviceCollHandle(t);
  }
  return nb::bytes(reinterpret_cast<const char*>(&h), sizeof h);
}

}  // namespace

void bindCollectives(nb::module_& m) {
  auto release = nb::call_guard<nb::gil_scoped_release>();
  m.def("coll_barrier", [](const Team& t) { barrier(t); }, release);
  m.def("broadcast", [](const Team& t, std::uintptr_t s, std::uintptr_t d, std::size_t n, int ty, int root) {
    broadcast(t, in(s), out(d), n, type(ty), root);
  }, release);
  m.def("reduce", [](const Team& t, std::uintptr_t s, std::uintptr_t d, std::size_t n, int ty, int op, int root) {
    reduce(t, in(s), out(d), n, type(ty), rop(op), root);
  }, release);
  m.def("allreduce", [](const Team& t, std::uintptr_t s, std::uintptr_t d, std::size_t n, int ty, int op) {
    allreduce(t, in(s), out(d), n, type(ty), rop(op));
  }, release);
  m.def("allgather", [](const Team& t, std::uintptr_t s, std::uintptr_t d, std::size_t n, int ty) {
    allgather(t, in(s), out(d), n, type(ty));
  }, release);
  m.def("reduce_scatter", [](const Team& t, std::uintptr_t s, std::uintptr_t d, std::size_t n, int ty, int op) {
    reduceScatter(t, in(s), out(d), n, type(ty), rop(op));
  }, release);
  m.def("alltoall", [](const Team& t, std::uintptr_t s, std::uintptr_t d, std::size_t n, int ty) {
    alltoall(t, in(s), out(d), n, type(ty));
  }, release);

  // Stream-ordered forms: `stream` is a CUstream handle as an int (0: the legacy default stream).
  using nb::arg;
  m.def(
      "broadcast_on_stream",
      [](const Team& t, std::uintptr_t s, std::uintptr_t d, std::size_t n, int ty, int root, std::uintptr_t stream) {
        broadcastOnStream(t, in(s), out(d), n, type(ty), root, streamOf(stream));
      },
      arg("team"), arg("src"), arg("dst"), arg("count"), arg("type"), arg("root"), arg("stream"), release);
  m.def(
      "reduce_on_stream",
      [](const Team& t, std::uintptr_t s, std::uintptr_t d, std::size_t n, int ty, int op, int root,
         std::uintptr_t stream) { reduceOnStream(t, in(s), out(d), n, type(ty), rop(op), root, streamOf(stream)); },
      arg("team"), arg("src"), arg("dst"), arg("count"), arg("type"), arg("op"), arg("root"), arg("stream"), release);
  m.def(
      "allreduce_on_stream",
      [](const Team& t, std::uintptr_t s, std::uintptr_t d, std::size_t n, int ty, int op, std::uintptr_t stream) {
        allreduceOnStream(t, in(s), out(d), n, type(ty), rop(op), streamOf(stream));
      },
      arg("team"), arg("src"), arg("dst"), arg("count"), arg("type"), arg("op"), arg("stream"), release);
  m.def(
      "allgather_on_stream",
      [](const Team& t, std::uintptr_t s, std::uintptr_t d, std::size_t n, int ty, std::uintptr_t stream) {
        allgatherOnStream(t, in(s), out(d), n, type(ty), streamOf(stream));
      },
      arg("team"), arg("src"), arg("dst"), arg("count"), arg("type"), arg("stream"), release);
  m.def(
      "reduce_scatter_on_stream",
      [](const Team& t, std::uintptr_t s, std::uintptr_t d, std::size_t n, int ty, int op, std::uintptr_t stream) {
        reduceScatterOnStream(t, in(s), out(d), n, type(ty), rop(op), streamOf(stream));
      },
      arg("team"), arg("src"), arg("dst"), arg("count"), arg("type"), arg("op"), arg("stream"), release);
  m.def(
      "alltoall_on_stream",
      [](const Team& t, std::uintptr_t s, std::uintptr_t d, std::size_t n, int ty, std::uintptr_t stream) {
        alltoallOnStream(t, in(s), out(d), n, type(ty), streamOf(stream));
      },
      arg("team"), arg("src"), arg("dst"), arg("count"), arg("type"), arg("stream"), release);
  m.def("device_coll_handle", &collHandleBytes, arg("team"));

  // (algorithm, path, reason, chunk bytes, rounds, one-line text, blocks, threads per block, blocks an
  // SM holds, SMs, the GPU's SMs)
  m.def("explain", [](int collective, const Team& t, std::size_t n, int ty) {
    Explanation e = explain(static_cast<Collective>(collective), t, n, type(ty));
    return std::make_tuple(e.algorithm, e.path, e.reason, e.chunkBytes, e.rounds, toString(e), e.blocks,
                           e.threadsPerBlock, e.blocksPerSm, e.sms, e.deviceSms);
  });
}

}  // namespace axon::py
