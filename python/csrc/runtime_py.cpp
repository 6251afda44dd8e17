#include "axon/runtime.hpp"

#include "bindings.hpp"
#include "nanobind/stl/map.h"
#include "nanobind/stl/string.h"

namespace nb = nanobind;

namespace axon::py {

void bindRuntime(nb::module_& m) {
  // init may wait for peers (bounded): let other Python threads run meanwhile.
  m.def("init", [] { axon::init(); }, nb::call_guard<nb::gil_scoped_release>());
  m.def("finalize", [] { axon::finalize(); }, nb::call_guard<nb::gil_scoped_release>());
  m.def("is_initialized", &axon::isInitialized);
  m.def("my_pe", &axon::myPe);
  m.def("n_pes", &axon::nPes);
  m.def("launcher_name", &axon::launcherName);
  m.def("path_to", &axon::pathTo, nb::arg("pe"));
  // The network library init would load (axon doctor, axon topo): loads it into this process.
  m.def("network_library", [] {
    const NetworkLibrary lib = networkLibrary();
    nb::dict d;
    d["available"] = lib.available;
    d["name"] = lib.name;
    d["version"] = lib.version;
    d["path"] = lib.path;
    d["why_not"] = lib.whyNot;
    return d;
  });
  // The runtime's own launcher detection (a pure function of the variables), for tools that
  // must say where init() would look for the store without joining a job (axon doctor).
  m.def("detect_launch", [](const std::map<std::string, std::string>& vars) {
    LaunchInfo info = detectLaunch(vars);
    nb::dict d;
    d["rank"] = info.rank;
    d["world_size"] = info.worldSize;
    d["local_rank"] = info.localRank;
    d["local_size"] = info.localSize;
    d["store_addr"] = info.storeAddr;
    d["source"] = info.source;
    d["store_hint"] = info.storeHint;
    return d;
  });
}

}  // namespace axon::py
