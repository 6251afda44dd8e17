"""Joining the job: torch's variables under `axon run`, and axon's start from torch's creator.

`axon run` gives every PE torchrun's variables (RANK, ..., MASTER_ADDR, MASTER_PORT: a port it
found free beside axon's store), so torch's default env:// rendezvous works there as under
torchrun; for processes given only AXON_* variables (by hand, or by another tool) the ranks are
derived from them here, and MASTER_PORT must be set. Under torchrun (or RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT set by hand), axon's own launcher detection already reads torch's variables; the job key, which no launcher but `axon run` hands
out, travels through torch's store (rank 0 makes it, the others read it): every process that can
read that store is already trusted by the job. Under Slurm or an MPI launcher (srun, mpirun), a
script passes rank= and world_size= to init_process_group as with any backend; axon takes its rank
from the launcher's variables and checks that it is torch's.
"""

from __future__ import annotations

import os
import secrets
from datetime import timedelta

import axon

from ..errors import InvalidArgumentError
from ..tools.run_checks import exported

# Where rank 0 publishes the job key in torch's store (under the default group's prefix).
_KEY_KEY = "axon/job_key"

# The rank variables of the launchers axon detects besides torchrun (docs/configuration.md):
# under them axon takes its rank from the launcher, and the check after init compares it with the
# rank torch was given (a script under srun or mpirun passes rank= and world_size= itself).
_OTHER_LAUNCHERS = ("SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK")


def torch_vars_from_axon(environ=os.environ) -> dict[str, str]:
    """The variables torch's env:// rendezvous needs, derived from axon's; only those not set.

    Empty when the process has no AXON_RANK and AXON_STORE_ADDR (not started as an axon PE)."""
    if "AXON_RANK" not in environ or "AXON_STORE_ADDR" not in environ:
        return {}
    host, _, port = environ["AXON_STORE_ADDR"].rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InvalidArgumentError(f"axon.torch: AXON_STORE_ADDR={environ['AXON_STORE_ADDR']!r} is not host:port")
    derived = {
        "RANK": environ["AXON_RANK"],
        "WORLD_SIZE": environ.get("AXON_WORLD_SIZE", "1"),
        "LOCAL_RANK": environ.get("AXON_LOCAL_RANK", environ["AXON_RANK"]),
        "LOCAL_WORLD_SIZE": environ.get("AXON_LOCAL_SIZE", environ.get("AXON_WORLD_SIZE", "1")),
        "MASTER_ADDR": host.strip("[]"),
    }
    return {k: v for k, v in derived.items() if k not in environ}


def _job_key_through(store, rank: int) -> str:
    """Rank 0 makes a key and publishes it in torch's store; the others wait for it there (bounded
    by the store's timeout, the group's)."""
    if rank == 0:
        key = secrets.token_hex(32)
        store.set(_KEY_KEY, key)
        return key
    return store.get(_KEY_KEY).decode()


def ensure_axon(store, rank: int, size: int, timeout: timedelta) -> None:
    """Initializes axon for the default group of `size` ranks unless it runs already; checks that
    axon's world is torch's."""
    if not axon.is_initialized():
        env: dict[str, str] = {}
        if "AXON_TIMEOUT" not in os.environ:
            # The group's timeout bounds every wait of axon (axon has one bound, read at init).
            env["AXON_TIMEOUT"] = f"{max(timeout.total_seconds(), 1.0):g}"
        own_launch = "AXON_RANK" in os.environ
        other_launcher = "RANK" not in os.environ and any(v in os.environ for v in _OTHER_LAUNCHERS)
        if not own_launch and not other_launcher:
            for name, want in (("RANK", rank), ("WORLD_SIZE", size)):
                seen = os.environ.get(name)
                if seen is None or seen != str(want):
                    raise InvalidArgumentError(
                        f"axon.torch: init_process_group(rank={rank}, world_size={size}) but {name}="
                        f"{seen!r} in the environment; axon joins the job by the launcher's variables: start "
                        f"the script with `axon run -n N`, torchrun, srun or mpirun (or set RANK, WORLD_SIZE, "
                        f"MASTER_ADDR, MASTER_PORT as torchrun does)")
        if not own_launch and "AXON_JOB_KEY" not in os.environ and "AXON_JOB_KEY_FILE" not in os.environ:
            env["AXON_JOB_KEY"] = _job_key_through(store, rank)
        # Set for axon.init() to read (it reads the variables once), then taken out again, so that
        # processes the script starts later do not inherit them.
        with exported(env):
            axon.init()
    if axon.n_pes() != size or axon.my_pe() != rank:
        raise InvalidArgumentError(
            f"axon.torch: torch's default group has rank {rank} of {size}, but axon runs as PE {axon.my_pe()} of "
            f"{axon.n_pes()}; start both from the same launcher")
