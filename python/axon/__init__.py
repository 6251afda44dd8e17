"""axon: symmetric memory, one-sided communication and (later) collectives for GPU clusters.

    import axon, numpy as np
    axon.init()
    x = axon.zeros(1024, np.float32)          # same offset on every PE
    axon.put(x, np.ones(1024, np.float32), pe=(axon.my_pe() + 1) % axon.n_pes())
    axon.barrier_all()
    axon.finalize()

Start several PEs with `axon run -n 4 python script.py`.
"""

from . import _axon
from .errors import (  # noqa: F401
    AlreadyInitializedError, BootstrapError, CollectiveMismatchError, CudaError, Error, InternalError,
    InvalidArgumentError, InvalidPeError, NotInitializedError, OutOfBoundsError, OutOfMemoryError,
    PeerDeadError, SystemError, TimeoutError, UnsupportedError,
)
from .errors import BY_CODE as _BY_CODE
from .memory import empty, free, heap_stats, is_symmetric, peer_view, ptr, zeros  # noqa: F401
from .onesided import (  # noqa: F401
    Cmp, SignalOp, atomic_add, atomic_compare_swap, atomic_fetch, atomic_fetch_add,
    atomic_fetch_and, atomic_fetch_or, atomic_fetch_xor, atomic_set, atomic_swap, barrier_all,
    fence, g, get, get_nbi, p, put, put_nbi, put_signal, quiet, signal_fetch, signal_op,
    signal_wait_until, sync_all,
)

_axon.set_error_classes(_BY_CODE)

__version__ = "0.1.0"

init = _axon.init
finalize = _axon.finalize
is_initialized = _axon.is_initialized
my_pe = _axon.my_pe
n_pes = _axon.n_pes
launcher_name = _axon.launcher_name
Team = _axon.Team
team_world = _axon.team_world
team_node = _axon.team_node
