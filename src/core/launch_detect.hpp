// Who started us: axon's own variables, torchrun, Slurm, Open MPI or MPICH/Hydra, or nobody
// (a world of one). Pure functions of the environment, so they are unit-tested without a launcher.
#pragma once

#include <map>
#include <string>

namespace axon {

struct LaunchInfo {
  int rank = 0;
  int worldSize = 1;
  int localRank = 0;
  int localSize = 1;
  std::string storeAddr;   // host:port of the key-value store; empty means "choose one" (world of one)
  std::string source;      // "axon", "torchrun", "slurm", "openmpi", "pmi" or "single"
  std::string storeHint;   // how storeAddr was derived, for error messages
  std::string rankVar;     // the variables rank and size came from, for error messages
  std::string sizeVar;
};

// Throws axon::Error(InvalidArgument) naming the variable when a value is malformed or inconsistent
// (rank >= size, a missing size, ...), or Bootstrap when a multi-process launch gives no way to find
// the store.
LaunchInfo detectLaunch(const std::map<std::string, std::string>& vars);

// First host of a Slurm host list: "gpu[07-09,11],cpu1" -> "gpu07".
std::string firstSlurmHost(const std::string& nodelist);

// A deterministic port in [20000, 40000) for jobs whose launcher gives no store address.
int derivedStorePort(const std::string& jobKey);

}  // namespace axon
