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
  // (algorithm, path, reason, chunk bytes, rounds, one-line text)
  m.def("explain", [](int collective, const Team& t, std::size_t n, int ty) {
    Explanation e = explain(static_cast<Collective>(collective), t, n, type(ty));
    return std::make_tuple(e.algorithm, e.path, e.reason, e.chunkBytes, e.rounds, toString(e));
  });
}

}  // namespace axon::py
