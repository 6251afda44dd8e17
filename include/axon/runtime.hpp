// Start and stop the runtime; who am I.
#pragma once

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

}  // namespace axon
