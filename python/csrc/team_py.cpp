#include "axon/team.hpp"

#include "bindings.hpp"
#include "nanobind/stl/optional.h"

namespace nb = nanobind;

namespace axon::py {

void bindTeams(nb::module_& m) {
  auto release = nb::call_guard<nb::gil_scoped_release>();
  nb::class_<Team>(m, "Team")
      .def_prop_ro("valid", &Team::valid)
      .def("my_pe", &Team::myPe)
      .def("n_pes", &Team::nPes)
      .def("world_pe", &Team::worldPe)
      .def("translate", &Team::translate)
      .def(
          "split_strided",
          [](const Team& t, int start, int stride, int size) -> std::optional<Team> {
            Team out;
            {
              nb::gil_scoped_release r;
              out = t.splitStrided(start, stride, size);
            }
            if (!out.valid()) return std::nullopt;
            return out;
          })
      .def(
          "split",
          [](const Team& t, int colour, int key) -> std::optional<Team> {
            Team out;
            {
              nb::gil_scoped_release r;
              out = t.split(colour, key);
            }
            if (!out.valid()) return std::nullopt;
            return out;
          },
          nb::arg("colour"), nb::arg("key") = 0)
      .def("barrier", &Team::barrier, release)
      .def("sync", &Team::sync, release)
      .def("destroy", &Team::destroy, release);
  m.def("team_world", &Team::world);
  m.def("team_node", &Team::node);
}

}  // namespace axon::py
