"""axon: symmetric memory, one-sided communication and collectives for GPU clusters.

    import axon, numpy as np
    axon.init()
    x = axon.zeros(1024, np.float32)          # same offset on every PE
    axon.put(x, np.ones(1024, np.float32), pe=(axon.my_pe() + 1) % axon.n_pes())
    axon.barrier_all()
    axon.finalize()

With a GPU (the GPU backend), axon.zeros/empty return an axon.SymmetricGpuArray in GPU memory,
which torch.from_dlpack / cupy.asarray view without a copy; device="host" still gives NumPy
arrays. The *_on_stream calls order one-sided work and collectives on a CUDA stream.

Start several PEs with `axon run -n 4 python script.py`.

The calls, by family (each has its own docstring):

* runtime: init, finalize, is_initialized, my_pe, n_pes, launcher_name, path_to, team_world,
  team_node, Team
* symmetric memory: zeros, empty, free, is_symmetric, ptr, peer_view, heap_stats,
  host_heap_stats, SymmetricGpuArray
* one-sided: put, get, put_nbi, get_nbi, p, g, put_signal, signal_op, signal_fetch,
  signal_wait_until, the atomics (atomic_fetch, atomic_set, atomic_swap, atomic_compare_swap,
  atomic_add, atomic_fetch_add, atomic_fetch_and, atomic_fetch_or, atomic_fetch_xor), fence,
  quiet, barrier_all, sync_all, and the *_on_stream forms
* collectives: barrier, broadcast, reduce, allreduce, allgather, reduce_scatter, alltoall, explain,
  and the *_on_stream forms
* two-sided: send, recv, isend, irecv, probe, iprobe, wait_all, wait_any, group,
  send_on_stream, recv_on_stream
* staging space: axon.space.connect, axon.space.Server
* errors: axon.Error and its subclasses (TimeoutError, PeerDeadError, InvalidArgumentError, ...)
"""

from . import _axon
from . import _types  # noqa: F401  (the aliases that the API's type hints name)
from .errors import (  # noqa: F401
    AlreadyInitializedError, BootstrapError, CollectiveMismatchError, CudaError, Error, InternalError,
    InvalidArgumentError, InvalidPeError, NotInitializedError, OutOfBoundsError, OutOfMemoryError,
    PeerDeadError, SystemError, TimeoutError, TruncatedError, UcxError, UnsupportedError, FullError, EvictedError,
    IncompleteError, ServerLostError, PermissionDeniedError, ServerUnreachableError,
)
from .collectives import (  # noqa: F401
    Collective, Explanation, ReduceOp, allgather, allgather_on_stream, allreduce, allreduce_on_stream, alltoall,
    alltoall_on_stream, barrier, broadcast, broadcast_on_stream, device_coll_handle, explain, reduce,
    reduce_on_stream, reduce_scatter, reduce_scatter_on_stream,
)
from .errors import BY_CODE as _BY_CODE
from .gpu import (  # noqa: F401
    SymmetricGpuArray, gpu_device, gpu_enabled, gpu_peer_reachable, gpu_unavailable_reason,
)
from .memory import (  # noqa: F401
    empty, free, heap_stats, host_heap_stats, is_symmetric, peer_view, ptr, zeros,
)
from .p2p import (  # noqa: F401
    ANY_SOURCE, ANY_TAG, MAX_TAG, Request, Status, explain_message, group, group_end, group_start, iprobe, irecv,
    isend, message_stats, probe, recv, recv_on_stream, send, send_on_stream, wait_all, wait_any,
)
from .onesided import (  # noqa: F401
    Cmp, SignalOp, atomic_add, atomic_compare_swap, atomic_fetch, atomic_fetch_add,
    atomic_fetch_and, atomic_fetch_or, atomic_fetch_xor, atomic_set, atomic_swap, barrier_all,
    barrier_all_on_stream, barrier_on_stream, fence, g, get, get_nbi, get_on_stream, p, put,
    put_nbi, put_on_stream, put_signal, put_signal_on_stream, quiet, quiet_on_stream,
    signal_fetch, signal_op, signal_op_on_stream, signal_wait_until, signal_wait_until_on_stream,
    stream_synchronize, sync_all,
)

from .runtime import (  # noqa: F401
    Team, finalize, init, is_initialized, launcher_name, my_pe, n_pes, path_to, team_node, team_world,
)

from . import space  # noqa: F401,E402  (axon.space.connect after `import axon`)

_axon.set_error_classes(_BY_CODE)

__version__ = "0.1.0"

# What `from axon import *` gives and help(axon) lists: the union of the API modules' __all__
# (tests/python/test_package_api.py checks that the two agree).
__all__ = [
    # runtime
    "Team", "finalize", "init", "is_initialized", "launcher_name", "my_pe", "n_pes", "path_to", "team_node",
    "team_world",
    # symmetric memory
    "SymmetricGpuArray", "empty", "free", "gpu_device", "gpu_enabled", "gpu_peer_reachable",
    "gpu_unavailable_reason", "heap_stats", "host_heap_stats", "is_symmetric", "peer_view", "ptr", "zeros",
    # one-sided
    "Cmp", "SignalOp", "atomic_add", "atomic_compare_swap", "atomic_fetch", "atomic_fetch_add", "atomic_fetch_and",
    "atomic_fetch_or", "atomic_fetch_xor", "atomic_set", "atomic_swap", "barrier_all", "barrier_all_on_stream",
    "barrier_on_stream", "fence", "g", "get", "get_nbi", "get_on_stream", "p", "put", "put_nbi", "put_on_stream",
    "put_signal", "put_signal_on_stream", "quiet", "quiet_on_stream", "signal_fetch", "signal_op",
    "signal_op_on_stream", "signal_wait_until", "signal_wait_until_on_stream", "stream_synchronize", "sync_all",
    # collectives
    "Collective", "Explanation", "ReduceOp", "allgather", "allgather_on_stream", "allreduce", "allreduce_on_stream",
    "alltoall", "alltoall_on_stream", "barrier", "broadcast", "broadcast_on_stream", "device_coll_handle", "explain",
    "reduce", "reduce_on_stream", "reduce_scatter", "reduce_scatter_on_stream",
    # two-sided
    "ANY_SOURCE", "ANY_TAG", "MAX_TAG", "Request", "Status", "explain_message", "group", "group_end", "group_start",
    "iprobe", "irecv", "isend", "message_stats", "probe", "recv", "recv_on_stream", "send", "send_on_stream",
    "wait_all", "wait_any",
    # errors (axon.TimeoutError and axon.SystemError too: see errors.__all__)
    "Error", "InvalidArgumentError", "InvalidPeError", "OutOfBoundsError", "NotInitializedError",
    "AlreadyInitializedError", "PeerDeadError", "BootstrapError", "CollectiveMismatchError",
    "OutOfMemoryError", "UnsupportedError", "InternalError", "CudaError", "UcxError",
    "TruncatedError", "FullError", "EvictedError", "IncompleteError", "ServerLostError", "PermissionDeniedError",
    "ServerUnreachableError",
    # the staging space (a module: axon.space.connect, ...)
    "space",
]
