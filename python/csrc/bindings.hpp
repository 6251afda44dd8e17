// Declarations shared by the binding files: one registration function per public header.
#pragma once

#include <nanobind/nanobind.h>

namespace axon::py {

void bindErrors(nanobind::module_& m);
void bindRuntime(nanobind::module_& m);
void bindMemory(nanobind::module_& m);
void bindOnesided(nanobind::module_& m);
void bindTeams(nanobind::module_& m);
void bindGpu(nanobind::module_& m);
void bindCollectives(nanobind::module_& m);
void bindP2p(nanobind::module_& m);
void bindSpace(nanobind::module_& m);

}  // namespace axon::py
