// Two-sided messages on raw addresses; axon/p2p.py checks arrays and passes addresses here.
#include <cstdint>
#include <tuple>
#include <vector>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "axon/p2p.hpp"
#include "bindings.hpp"

namespace nb = nanobind;

namespace axon::py {
namespace {

void* ptrOf(std::uintptr_t a) { return reinterpret_cast<void*>(a); }
using StatusTuple = std::tuple<int, int, std::size_t>;
StatusTuple tupleOf(const Status& s) { return {s.source, s.tag, s.bytes}; }

}  // namespace

void bindP2p(nb::module_& m) {
  auto release = nb::call_guard<nb::gil_scoped_release>();
  m.attr("ANY_SOURCE") = kAnySource;
  m.attr("ANY_TAG") = kAnyTag;
  m.attr("MAX_TAG") = kMaxTag;
  nb::class_<Request>(m, "Request")
      .def("wait", [](Request& r) { return tupleOf(r.wait()); }, release)
      .def("test",
           [](Request& r) -> std::optional<StatusTuple> {
             Status s;
             if (!r.test(&s)) return std::nullopt;
             return tupleOf(s);
           },
           release);
  m.def("send", [](std::uintptr_t buf, std::size_t n, int dest, int tag, const Team& t) { send(ptrOf(buf), n, dest, tag, t); },
        release);
  m.def("recv", [](std::uintptr_t buf, std::size_t n, int source, int tag, const Team& t) {
        return tupleOf(recv(ptrOf(buf), n, source, tag, t));
      }, release);
  m.def("isend", [](std::uintptr_t buf, std::size_t n, int dest, int tag, const Team& t) { return isend(ptrOf(buf), n, dest, tag, t); },
        release);
  m.def("irecv", [](std::uintptr_t buf, std::size_t n, int source, int tag, const Team& t) { return irecv(ptrOf(buf), n, source, tag, t); },
        release);
  m.def("wait_any", [](std::vector<Request*> requests) {
        std::vector<Request> copies;
        for (Request* r : requests) copies.push_back(r ? *r : Request());
        Status s;
        const std::size_t i = waitAny(copies.data(), copies.size(), &s);
        return std::make_tuple(i, tupleOf(s));
      }, release);
  // Stream-ordered forms: `stream` is a CUstream handle as an int (0: the legacy default stream).
  m.def("send_on_stream", [](std::uintptr_t buf, std::size_t n, int dest, const Team& t, std::uintptr_t stream) {
        sendOnStream(ptrOf(buf), n, dest, reinterpret_cast<Stream>(stream), t);
      }, release);
  m.def("recv_on_stream", [](std::uintptr_t buf, std::size_t n, int source, const Team& t, std::uintptr_t stream) {
        recvOnStream(ptrOf(buf), n, source, reinterpret_cast<Stream>(stream), t);
      }, release);
  m.def("group_start", [] { groupStart(); });
  m.def("group_end", [] { groupEnd(); }, release);
  m.def("probe", [](int source, int tag, const Team& t) { return tupleOf(probe(source, tag, t)); }, release);
  m.def("iprobe", [](int source, int tag, const Team& t) -> std::optional<StatusTuple> {
        auto s = iprobe(source, tag, t);
        if (!s) return std::nullopt;
        return tupleOf(*s);
      }, release);
  m.def("explain_message", [](std::size_t n, int dest, bool onDevice, const Team& t) { return explainMessage(n, dest, onDevice, t); });
  m.def("message_stats", [] {
    const MessageStats s = messageStats();
    return std::make_tuple(s.eagerSent, s.rendezvousSent, s.received, s.waitingMessages, s.waitingBytes,
                           s.waitingBytesPeak, s.bound, s.postedSent);
  });
}

}  // namespace axon::py
