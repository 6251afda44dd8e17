"""Start and stop the runtime; who am I; teams.

Thin typed wrappers over the extension, so that help(axon) and type checkers see what each call
takes and returns (the extension's own functions carry neither).
"""

from __future__ import annotations

from . import _axon

__all__ = ["Team", "finalize", "init", "is_initialized", "launcher_name", "my_pe", "n_pes", "path_to",
           "team_node", "team_world"]

#: A group of PEs: collectives and barriers run over one. team_world() and team_node() give the
#: built-in ones; Team.split / Team.split_strided make others (collective over the parent team).
Team = _axon.Team


def init() -> None:
    """Join the job (collective over the world).

    The rank, size and store address come from AXON_* variables, else from the launcher that
    started the process (axon run, torchrun, Slurm, Open MPI, MPICH/Hydra), else the process is a
    world of one. Waits for the other PEs at most AXON_TIMEOUT seconds. Raises
    axon.AlreadyInitializedError when called twice, axon.BootstrapError when the job's store
    cannot be reached, axon.InvalidArgumentError for a malformed launcher variable.
    """
    _axon.init()


def finalize() -> None:
    """Leave the job: wait for every PE (bounded by AXON_TIMEOUT), then unmap the heap.

    Symmetric arrays must not be used for communication afterwards. init() may be called again
    later.
    """
    _axon.finalize()


def is_initialized() -> bool:
    """True between init() and finalize()."""
    return _axon.is_initialized()


def my_pe() -> int:
    """This PE's rank in the world team (0 .. n_pes() - 1)."""
    return _axon.my_pe()


def n_pes() -> int:
    """The number of PEs in the world team."""
    return _axon.n_pes()


def launcher_name() -> str:
    """Where the rank, size and store address came from: "axon", "torchrun", "slurm", ..."""
    return _axon.launcher_name()


def path_to(pe: int) -> str:
    """How this PE reaches PE `pe`'s heap.

    "self", "shm" (shared memory, same node), "cuda_ipc" (its GPU heap mapped), "staged" (through
    pinned host memory) or "ucx:<transports>" for a PE on another node ("ucx:tcp", ...). Raises
    axon.InvalidPeError for a PE outside the world.
    """
    return _axon.path_to(pe)


def team_world() -> Team:
    """The team of every PE (ranks as my_pe())."""
    return _axon.team_world()


def team_node() -> Team:
    """The team of the PEs that share memory with this one (the same node)."""
    return _axon.team_node()
