// The staging space on raw addresses; axon/space.py checks arrays and passes addresses here.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include "axon/error.hpp"
#include "axon/space.hpp"
#include "axon/space_server.hpp"
#include "bindings.hpp"

namespace nb = nanobind;

namespace axon::py {
namespace {

void* ptrOf(std::uintptr_t a) { return reinterpret_cast<void*>(a); }

nb::dict statsDict(const space::Stats& s) {
  nb::list servers;
  for (const auto& v : s.servers) {
    nb::dict d;
    d["address"] = v.address;
    d["policy"] = v.policy;
    d["pinned"] = v.pinned;
    d["capacity"] = v.capacity;
    d["bytes_in_use"] = v.bytesInUse;
    d["high_water"] = v.highWater;
    d["pieces"] = v.pieces;
    d["versions"] = v.versions;
    d["variables"] = v.variables;
    d["puts_committed"] = v.putsCommitted;
    d["puts_aborted"] = v.putsAborted;
    d["bytes_put"] = v.bytesPut;
    d["lookups"] = v.lookups;
    d["bytes_served"] = v.bytesServed;
    d["versions_dropped"] = v.versionsDropped;
    d["versions_evicted"] = v.versionsEvicted;
    d["puts_rejected_full"] = v.putsRejectedFull;
    servers.append(d);
  }
  const space::ClientStats& c = s.client;
  nb::dict client;
  client["puts"] = c.puts;
  client["bytes_put"] = c.bytesPut;
  client["gets"] = c.gets;
  client["bytes_got"] = c.bytesGot;
  client["batches"] = c.batches;
  client["batched_puts"] = c.batchedPuts;
  client["shared_memory_puts"] = c.sharedMemoryPuts;
  client["ucx_puts"] = c.ucxPuts;
  client["shared_memory_gets"] = c.sharedMemoryGets;
  client["ucx_gets"] = c.ucxGets;
  client["host_staged_copies"] = c.hostStagedCopies;
  client["pipelined_puts"] = c.pipelinedPuts;
  client["pipeline_chunks"] = c.pipelineChunks;
  client["fragments"] = c.fragments;
  client["fused_kernels"] = c.fusedKernels;
  client["host_copy_threads"] = c.hostCopyThreads;
  client["last_path"] = c.lastPath;
  nb::dict out;
  out["servers"] = servers;
  out["client"] = client;
  return out;
}

}  // namespace

void bindSpace(nb::module_& m) {
  auto release = nb::call_guard<nb::gil_scoped_release>();
  using space::Client;
  using space::ServerStats;
  nb::class_<space::Request>(m, "SpaceRequest")
      .def("wait", &space::Request::wait, release)
      .def("test", &space::Request::test, release);
  nb::class_<Client>(m, "SpaceClient")
      .def("__init__",
           [](Client* self, const std::string& address, const std::string& contactFile, double timeout,
              int gpuPath, bool sharedMemory, std::int64_t batchBytes, const std::string& key) {
             space::ConnectOptions o;
             o.address = address;
             o.contactFile = contactFile;
             o.key = key;
             o.timeoutSec = timeout;
             if (gpuPath < 0 || gpuPath > static_cast<int>(space::GpuPath::HostStaged)) {
               throw Error(ErrorCode::InvalidArgument, "space client: gpu path " + std::to_string(gpuPath) +
                                                           " is not one of 0..2");
             }
             o.gpuPath = static_cast<space::GpuPath>(gpuPath);  // index into axon.space._GPU_PATHS
             o.sharedMemory = sharedMemory;
             o.batchBytes = batchBytes;
             nb::gil_scoped_release unlocked;
             new (self) Client(o);
           })
      .def("define",
           [](Client& c, const std::string& name, const space::Index& shape, int dtype, int keep) {
             c.define(name, shape, static_cast<DataType>(dtype), keep);
           },
           release)
      .def("put",
           [](Client& c, const std::string& name, std::int64_t version, const space::Index& offset,
              const space::Index& count, std::uintptr_t data, double timeout) {
             c.put(name, version, offset, count, ptrOf(data), timeout);
           },
           release)
      .def("iput",
           [](Client& c, const std::string& name, std::int64_t version, const space::Index& offset,
              const space::Index& count, std::uintptr_t data, double timeout) {
             return c.iput(name, version, offset, count, ptrOf(data), timeout);
           },
           release)
      .def("get",
           [](Client& c, const std::string& name, std::int64_t version, const space::Index& lo, const space::Index& hi,
              std::uintptr_t out, std::size_t bytes, double timeout) {
             c.get(name, version, lo, hi, ptrOf(out), bytes, timeout);
           },
           release)
      .def("iget",
           [](Client& c, const std::string& name, std::int64_t version, const space::Index& lo, const space::Index& hi,
              std::uintptr_t out, std::size_t bytes, double timeout) {
             return c.iget(name, version, lo, hi, ptrOf(out), bytes, timeout);
           },
           release)
      .def("wait_version", &Client::waitVersion, release)
      .def("release", &Client::release, release)
      .def("remove", &Client::remove, release)
      .def("stats", [](Client& c) {
        space::Stats s;
        {
          nb::gil_scoped_release unlocked;
          s = c.stats();
        }
        return statsDict(s);
      })
      .def("close", &Client::close, release)
      .def("servers", &Client::servers)
      .def("dtype_of", [](Client& c, const std::string& name) { return static_cast<int>(c.dtypeOf(name)); }, release)
      .def("shape_of", &Client::shapeOf, release);

  nb::class_<space::Server>(m, "SpaceServer")
      .def("__init__",
           [](space::Server* self, const std::string& listen, std::uint64_t mem, const std::string& policy,
              const std::string& contactFile, int servers, const std::string& join, double timeout,
              const std::string& key, const std::string& keyFile, int maxHolds) {
             space::ServerOptions o;
             o.key = key;
             o.keyFile = keyFile;
             o.maxHolds = maxHolds;
             o.listen = listen;
             o.memBytes = mem;
             o.policy = space::parsePolicy(policy);
             o.contactFile = contactFile;
             o.servers = servers;
             o.join = join;
             o.timeoutSec = timeout;
             nb::gil_scoped_release unlocked;
             new (self) space::Server(o);
           })
      .def_prop_ro("address", &space::Server::address)
      .def_prop_ro("epoch", &space::Server::epoch)
      .def_prop_ro("key", &space::Server::key)
      .def_prop_ro("key_origin", &space::Server::keyOrigin)
      .def_prop_ro("index", &space::Server::index)
      .def("start", &space::Server::start, release)
      .def("stop", &space::Server::stop, nb::arg("drain") = 5.0, release)
      .def("stats", [](const space::Server& s) {
        const ServerStats st = s.stats();
        nb::dict d;
        d["capacity"] = st.capacity;
        d["bytes_in_use"] = st.bytesInUse;
        d["high_water"] = st.highWater;
        d["pieces"] = st.pieces;
        d["versions"] = st.versions;
        d["puts_committed"] = st.putsCommitted;
        d["puts_aborted"] = st.putsAborted;
        d["versions_dropped"] = st.versionsDropped;
        d["versions_evicted"] = st.versionsEvicted;
        return d;
      });
}

}  // namespace axon::py
