#include "axon/runtime.hpp"

#include "bindings.hpp"
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
}

}  // namespace axon::py
