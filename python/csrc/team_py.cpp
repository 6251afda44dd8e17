#include "axon/team.hpp"

#include "bindings.hpp"
#include "nanobind/stl/optional.h"
#include "nanobind/stl/vector.h"

namespace nb = nanobind;

namespace axon::py {

void bindTeams(nb::module_& m) {
  auto release = nb::call_guard<nb::gil_scoped_release>();
  // The docstrings are what help(axon.Team) shows (include/axon/team.hpp says the same).
  nb::class_<Team>(m, "Team",
                   "A group of PEs that collectives and barriers run over: axon.team_world(), "
                   "axon.team_node(), or a split of another team.")
      .def_prop_ro("valid", &Team::valid,
                   "False for the team a split gives to PEs outside the new team, and after destroy().")
      .def("my_pe", &Team::myPe, "This PE's index in the team.")
      .def("n_pes", &Team::nPes, "The number of PEs in the team.")
      .def("world_pe", &Team::worldPe, nb::arg("pe"), "The world rank of this team's PE `pe`.")
      .def("translate", &Team::translate, nb::arg("pe"), nb::arg("other"),
           "The index in team `other` of this team's PE `pe`, or -1 when that PE is not in `other`.")
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
          },
          nb::arg("start"), nb::arg("stride"), nb::arg("size"),
          "Collective over this team: PEs start, start + stride, ... (size of them) form a new team; "
          "the others get None. Raises InvalidArgumentError when the triple leaves the team, "
          "CollectiveMismatchError when PEs pass different triples.")
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
          nb::arg("colour"), nb::arg("key") = 0,
          "Collective over this team (as MPI_Comm_split): PEs passing the same colour form a new "
          "team, ordered by key; a PE passing a negative colour joins none and gets None.")
      .def_static(
          "of_world_pes",
          [](const std::vector<int>& pes) {
            nb::gil_scoped_release r;
            return Team::ofWorldPes(pes);
          },
          nb::arg("pes"),
          "Collective over the listed world PEs only (the others take no part): they form a team in "
          "the list's order. Every listed PE calls it with the same list; this PE must be listed. "
          "Raises InvalidArgumentError for an empty list, a PE outside the world or listed twice, or "
          "a list without this PE.")
      .def("set_timeout", &Team::setTimeout, nb::arg("seconds"),
           "This PE's bound, in seconds, on every wait of the team's collectives (host and stream "
           "forms), barriers and two-sided messages; 0 restores AXON_TIMEOUT. Local to this PE; "
           "bounds the waits that start after it. A wait past it raises TimeoutError naming the "
           "team's timeout.")
      .def_prop_ro("timeout", &Team::timeout, "The bound in force on this PE, in seconds: the team's own, else AXON_TIMEOUT.")
      .def("barrier", &Team::barrier, release,
           "Complete this PE's outstanding puts (quiet), then synchronize the team.")
      .def("sync", &Team::sync, release, "Synchronize the team, without completing outstanding puts.")
      .def("destroy", &Team::destroy, release,
           "Collective over the team; the team becomes invalid on every PE.");
  m.def("team_world", &Team::world);
  m.def("team_node", &Team::node);
}

}  // namespace axon::py
