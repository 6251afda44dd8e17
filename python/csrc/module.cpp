#include "bindings.hpp"

NB_MODULE(_axon, m) {
  m.doc() = "axon raw bindings; use the axon package instead";
  axon::py::bindErrors(m);
  axon::py::bindRuntime(m);
  axon::py::bindMemory(m);
  axon::py::bindOnesided(m);
  axon::py::bindTeams(m);
  axon::py::bindGpu(m);
  axon::py::bindCollectives(m);
  axon::py::bindP2p(m);
  axon::py::bindSpace(m);
}
