// Start and stop the runtime; who am I.
#pragma once

#include <map>
#include <string>

namespace axon {

// Joins the job. Rank, size and the store address come from AXON_* variables, else from the
// launcher that started the process (torchrun, Slurm, Open MPI, MPICH/Hydra), else the process is
// a world of one. Collective over the world. Throws AlreadyInitialized when called twice.
void init();
// Leaves the job: waits for every PE (bounded by AXON_TIMEOUT), then unmaps the heap. Every
// pointer into the symmetric heap is invalid afterwards. init() may be called again later.
void finalize();
bool isInitialized() noexcept;

int myPe();   // rank in the world team
int nPes();   // size of the world team

// Where the rank, size and store address came from ("axon", "torchrun", "slurm", ...).
std::string launcherName();

// How this PE reaches PE `pe`'s default heap: "self", "shm" (shared memory, same node),
// "cuda_ipc" (its GPU heap mapped), "staged" (through pinned host memory), or "ucx:<transports>"
// for a PE on another node ("ucx:tcp", "ucx:rc_mlx5"). Throws InvalidPe for a PE outside the world.
std::string pathTo(int pe);

// What init() would find, asked without joining a job (axon doctor, axon topo, the launcher).

// The launcher's answer: this process's rank and size, and where the job's key-value store is.
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
  std::string jobId;       // the launcher's id of this job or step, where it gives one (names rank 0's key file)
};
// The launcher that set `vars` (a process environment), as init() reads it. Throws
// InvalidArgument naming the variable when a value is malformed or inconsistent (rank >= size, a
// missing size, ...), or Bootstrap when a multi-process launch gives no way to find the store.
LaunchInfo detectLaunch(const std::map<std::string, std::string>& vars);

// The network library this build uses across nodes, found (and loaded) the way init() would.
struct NetworkLibrary {
  bool available = false;
  std::string name;     // "UCX"
  std::string version;  // "1.22.0"
  std::string path;     // the library file loaded
  std::string whyNot;   // when not available
};
NetworkLibrary networkLibrary();

}  // namespace axon
