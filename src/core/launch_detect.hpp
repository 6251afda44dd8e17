// Who started us: axon's own variables, torchrun, Slurm, Open MPI or MPICH/Hydra, or nobody
// (a world of one). Pure functions of the environment, so they are unit-tested without a launcher.
#pragma once

#include <map>
#include <string>

#include "axon/runtime.hpp"

namespace axon {

// LaunchInfo and detectLaunch(vars) are public (axon/runtime.hpp): tools ask them without joining
// a job. What follows is how they are worked out.

// First host of a Slurm host list: "gpu[07-09,11],cpu1" -> "gpu07".
std::string firstSlurmHost(const std::string& nodelist);

// A deterministic port in [20000, 40000) for jobs whose launcher gives no store address.
int derivedStorePort(const std::string& jobKey);

}  // namespace axon
