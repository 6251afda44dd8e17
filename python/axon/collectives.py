"""Collectives over a team: barrier, broadcast, reduce, allreduce, allgather, reduce_scatter and
alltoall.

Buffers may be NumPy arrays, axon.SymmetricGpuArray or CUDA arrays (torch, CuPy); they need not
be symmetric. Every member of the team makes the same calls in the same order with the same
sizes, dtype, op and root; a PE that differs gets axon.CollectiveMismatchError, and so does every
PE that waits on it. The dtype comes from the arrays: int8, uint8, int32, uint32, int64, uint64,
float16, bfloat16 (pass dtype="bfloat16" for 2-byte arrays that hold bfloat16 bits, e.g. a
NumPy uint16 view), float32 and float64. Ops: "sum", "prod", "min", "max".

With dst=None, allreduce, reduce and broadcast work in place and allgather, reduce_scatter and
alltoall allocate a NumPy result (for NumPy inputs). Every call returns its result array.

    x = np.arange(4, dtype=np.float32) * axon.my_pe()
    axon.allreduce(x)                       # in place, over the world team
    g = axon.allgather(np.array([axon.my_pe()]))
    print(axon.explain("allreduce", 1 << 20, "float32"))

On the GPU backend, the *_on_stream forms (allreduce_on_stream, ...) enqueue the collective on a
CUDA stream as a kernel and return at once; they take device buffers only (torch CUDA tensors,
CuPy arrays, axon.SymmetricGpuArray) and `stream=` as put_on_stream does. device_coll_handle()
gives the bytes that kernels of your own pass to the device-callable collectives.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from . import _axon
from ._types import ArrayLike, DTypeLike, EnumLike, StreamLike
from .errors import InvalidArgumentError
from .gpu import SymmetricGpuArray, _cuda_array_interface, _stream_handle, as_buffer

__all__ = [
    "Collective", "Explanation", "ReduceOp", "allgather", "allgather_on_stream", "allreduce", "allreduce_on_stream",
    "alltoall", "alltoall_on_stream", "barrier", "broadcast", "broadcast_on_stream", "device_coll_handle", "explain",
    "reduce", "reduce_on_stream", "reduce_scatter", "reduce_scatter_on_stream",
]


class ReduceOp(enum.IntEnum):
    """How a reduction combines the PEs' elements; calls also take "sum", "prod", "min", "max"."""

    SUM = 0
    PROD = 1
    MIN = 2
    MAX = 3


class Collective(enum.IntEnum):
    """The collectives that explain() describes; it also takes their names ("allreduce", ...)."""

    BARRIER = 0
    BROADCAST = 1
    REDUCE = 2
    ALLREDUCE = 3
    ALLGATHER = 4
    REDUCE_SCATTER = 5
    ALLTOALL = 6


# axon::DataType, in order.
DTYPES = ("int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32", "float64")


def _team(team):
    return _axon.team_world() if team is None else team


def _dtype_code(buffer_dtype, dtype, api):
    """The axon::DataType of an array (or of an explicit dtype name, checked against the array)."""
    if dtype is not None:
        name = str(dtype).replace("torch.", "")
        if name not in DTYPES:
            raise InvalidArgumentError(f"axon.{api}: dtype {dtype!r} is not one of {', '.join(DTYPES)}")
        if buffer_dtype is not None and buffer_dtype.itemsize != (2 if name in ("float16", "bfloat16")
                                                                  else np.dtype(name).itemsize):
            raise InvalidArgumentError(
                f"axon.{api}: dtype {name} does not match the array's {buffer_dtype.itemsize}-byte elements")
        return DTYPES.index(name)
    name = np.dtype(buffer_dtype).name
    if name not in DTYPES:
        raise InvalidArgumentError(
            f"axon.{api}: arrays of {name} are not supported; use one of {', '.join(DTYPES)} "
            f"(dtype='bfloat16' for 2-byte bfloat16 data)")
    return DTYPES.index(name)


def _op_code(op, api):
    if isinstance(op, str):
        try:
            return int(ReduceOp[op.upper()])
        except KeyError:
            raise InvalidArgumentError(f"axon.{api}: op {op!r} is not one of sum, prod, min, max") from None
    return int(ReduceOp(op))


def _device_buffer(obj, api, role, *, writable=False, stream=0):
    """as_buffer for the stream-ordered forms, which take device memory only: host arrays are
    refused here, naming what to pass instead, before anything is enqueued."""
    if isinstance(obj, np.ndarray) or (not isinstance(obj, SymmetricGpuArray)
                                       and _cuda_array_interface(obj, api, role) is None):
        what = "a NumPy array (host memory)" if isinstance(obj, np.ndarray) else type(obj).__name__
        blocking = api[:-len("_on_stream")]
        raise InvalidArgumentError(
            f"axon.{api}: {role} is {what}; stream-ordered collectives take GPU memory: a torch CUDA "
            f"tensor, a CuPy array or an axon.SymmetricGpuArray (axon.{blocking} takes host arrays)")
    return as_buffer(obj, api, role, writable=writable, stream=stream)


def _buffers(src, dst, api, stream=None):
    """The buffers of a call: any kind for a blocking call (stream None), device buffers for a
    stream-ordered one (stream: its handle)."""
    if stream is None:
        s = as_buffer(src, api, "src")
        d = as_buffer(dst, api, "dst", writable=True)
    else:
        s = _device_buffer(src, api, "src", stream=stream)
        d = _device_buffer(dst, api, "dst", writable=True, stream=stream)
    if s.dtype.itemsize != d.dtype.itemsize or (s.dtype != d.dtype and s.dtype.kind != "V" and d.dtype.kind != "V"):
        raise InvalidArgumentError(f"axon.{api}: src ({s.dtype}) and dst ({d.dtype}) differ in dtype")
    return s, d


def _result_like(src, size, api):
    if not isinstance(src, np.ndarray):
        raise InvalidArgumentError(f"axon.{api}: pass dst for non-NumPy arrays (the result size is {size})")
    return np.empty(size, dtype=src.dtype)


def barrier(team: _axon.Team | None = None) -> None:
    """Synchronize the team through its collective workspace (a mismatch with another collective
    is reported). Completes no puts: use Team.barrier() or barrier_all() for that."""
    _axon.coll_barrier(_team(team))


def allreduce(src: ArrayLike, dst: ArrayLike | None = None, op: EnumLike = "sum", *,
              team: _axon.Team | None = None, dtype: DTypeLike = None) -> ArrayLike:
    """dst = the element-wise reduction of every member's src. dst=None: in place."""
    dst = src if dst is None else dst
    s, d = _buffers(src, dst, "allreduce")
    if s.size != d.size:
        raise InvalidArgumentError(f"axon.allreduce: src has {s.size} elements but dst has {d.size}")
    _axon.allreduce(_team(team), s.addr, d.addr, s.size, _dtype_code(s.dtype, dtype, "allreduce"),
                    _op_code(op, "allreduce"))
    return dst


def reduce(src: ArrayLike, dst: ArrayLike | None = None, op: EnumLike = "sum", root: int = 0, *,
           team: _axon.Team | None = None, dtype: DTypeLike = None) -> ArrayLike:
    """The root's dst = the element-wise reduction of every member's src (other PEs' dst is
    untouched). dst=None: in place on the root."""
    dst = src if dst is None else dst
    s, d = _buffers(src, dst, "reduce")
    if s.size != d.size:
        raise InvalidArgumentError(f"axon.reduce: src has {s.size} elements but dst has {d.size}")
    _axon.reduce(_team(team), s.addr, d.addr, s.size, _dtype_code(s.dtype, dtype, "reduce"), _op_code(op, "reduce"),
                 root)
    return dst


def broadcast(src: ArrayLike, dst: ArrayLike | None = None, root: int = 0, *, team: _axon.Team | None = None,
              dtype: DTypeLike = None) -> ArrayLike:
    """Every member's dst = the root's src. dst=None: in place (src is the receive buffer on the
    other PEs)."""
    dst = src if dst is None else dst
    s, d = _buffers(src, dst, "broadcast")
    if s.size != d.size:
        raise InvalidArgumentError(f"axon.broadcast: src has {s.size} elements but dst has {d.size}")
    _axon.broadcast(_team(team), s.addr, d.addr, s.size, _dtype_code(s.dtype, dtype, "broadcast"), root)
    return dst


def allgather(src: ArrayLike, dst: ArrayLike | None = None, *, team: _axon.Team | None = None,
              dtype: DTypeLike = None) -> ArrayLike:
    """dst (n_pes * src.size elements) = every member's src, in team order."""
    t = _team(team)
    n = t.n_pes()
    s = as_buffer(src, "allgather", "src")
    dst = _result_like(src, n * s.size, "allgather") if dst is None else dst
    s, d = _buffers(src, dst, "allgather")
    if d.size != n * s.size:
        raise InvalidArgumentError(f"axon.allgather: dst has {d.size} elements; {n} PEs x {s.size} need {n * s.size}")
    _axon.allgather(t, s.addr, d.addr, s.size, _dtype_code(s.dtype, dtype, "allgather"))
    return dst


def reduce_scatter(src: ArrayLike, dst: ArrayLike | None = None, op: EnumLike = "sum", *,
                   team: _axon.Team | None = None, dtype: DTypeLike = None) -> ArrayLike:
    """src holds n_pes blocks; member i's dst = the reduction of block i of every member's src."""
    t = _team(team)
    n = t.n_pes()
    s = as_buffer(src, "reduce_scatter", "src")
    if s.size % n:
        raise InvalidArgumentError(f"axon.reduce_scatter: src has {s.size} elements, not a multiple of {n} PEs")
    dst = _result_like(src, s.size // n, "reduce_scatter") if dst is None else dst
    s, d = _buffers(src, dst, "reduce_scatter")
    if d.size * n != s.size:
        raise InvalidArgumentError(f"axon.reduce_scatter: dst has {d.size} elements; src's {s.size} over {n} PEs "
                                   f"need {s.size // n}")
    _axon.reduce_scatter(t, s.addr, d.addr, d.size, _dtype_code(s.dtype, dtype, "reduce_scatter"),
                         _op_code(op, "reduce_scatter"))
    return dst


def alltoall(src: ArrayLike, dst: ArrayLike | None = None, *, team: _axon.Team | None = None,
             dtype: DTypeLike = None) -> ArrayLike:
    """src holds n_pes blocks; block j goes to member j, which keeps it as block i (i = sender)."""
    t = _team(team)
    n = t.n_pes()
    s = as_buffer(src, "alltoall", "src")
    if s.size % n:
        raise InvalidArgumentError(f"axon.alltoall: src has {s.size} elements, not a multiple of {n} PEs")
    dst = _result_like(src, s.size, "alltoall") if dst is None else dst
    s, d = _buffers(src, dst, "alltoall")
    if d.size != s.size:
        raise InvalidArgumentError(f"axon.alltoall: src has {s.size} elements but dst has {d.size}")
    _axon.alltoall(t, s.addr, d.addr, s.size // n, _dtype_code(s.dtype, dtype, "alltoall"))
    return dst


# -- stream-ordered forms (GPU backend) ---------------------------------------------------------
#
# Each enqueues the collective on `stream` as a kernel on the team's GPU workspace and returns at
# once; work enqueued after it on `stream` sees the result. `stream` is None (the legacy default
# stream), an int CUstream handle, a torch.cuda.Stream, a CuPy stream or any object with
# __cuda_stream__(). The buffers must be GPU memory and stay alive and unchanged until the stream
# has run the call; the calls can be captured into a CUDA graph. Issue a team's collectives in the same
# order on every member and one at a time per team (one stream per team). A kernel that meets a
# mismatch or a timeout prints it and stops the team's collectives; the team's next call raises it.
# Without the GPU backend, and on teams whose GPUs cannot map each other's memory, they raise
# axon.UnsupportedError (the blocking forms take the host path there).


def allreduce_on_stream(src: ArrayLike, dst: ArrayLike | None = None, op: EnumLike = "sum", *,
                        stream: StreamLike = None, team: _axon.Team | None = None,
                        dtype: DTypeLike = None) -> ArrayLike:
    """On `stream`: dst = the element-wise reduction of every member's src. dst=None: in place."""
    api = "allreduce_on_stream"
    h = _stream_handle(stream, api)
    dst = src if dst is None else dst
    s, d = _buffers(src, dst, api, h)
    if s.size != d.size:
        raise InvalidArgumentError(f"axon.{api}: src has {s.size} elements but dst has {d.size}")
    _axon.allreduce_on_stream(_team(team), s.addr, d.addr, s.size, _dtype_code(s.dtype, dtype, api),
                              _op_code(op, api), h)
    return dst


def reduce_on_stream(src: ArrayLike, dst: ArrayLike | None = None, op: EnumLike = "sum", root: int = 0, *,
                     stream: StreamLike = None, team: _axon.Team | None = None, dtype: DTypeLike = None) -> ArrayLike:
    """On `stream`: the root's dst = the element-wise reduction of every member's src (other PEs'
    dst is untouched). dst=None: in place on the root."""
    api = "reduce_on_stream"
    h = _stream_handle(stream, api)
    dst = src if dst is None else dst
    s, d = _buffers(src, dst, api, h)
    if s.size != d.size:
        raise InvalidArgumentError(f"axon.{api}: src has {s.size} elements but dst has {d.size}")
    _axon.reduce_on_stream(_team(team), s.addr, d.addr, s.size, _dtype_code(s.dtype, dtype, api), _op_code(op, api),
                           root, h)
    return dst


def broadcast_on_stream(src: ArrayLike, dst: ArrayLike | None = None, root: int = 0, *,
                        stream: StreamLike = None, team: _axon.Team | None = None,
                        dtype: DTypeLike = None) -> ArrayLike:
    """On `stream`: every member's dst = the root's src. dst=None: in place."""
    api = "broadcast_on_stream"
    h = _stream_handle(stream, api)
    dst = src if dst is None else dst
    s, d = _buffers(src, dst, api, h)
    if s.size != d.size:
        raise InvalidArgumentError(f"axon.{api}: src has {s.size} elements but dst has {d.size}")
    _axon.broadcast_on_stream(_team(team), s.addr, d.addr, s.size, _dtype_code(s.dtype, dtype, api), root, h)
    return dst


def _stream_result(dst, size, api):
    """The stream forms allocate nothing (the result would have to live on the caller's device
    and stream, in the caller's framework): dst is required, as for the blocking forms' device
    arrays."""
    if dst is None:
        raise InvalidArgumentError(f"axon.{api}: pass dst (a device array of {size} elements)")
    return dst


def allgather_on_stream(src: ArrayLike, dst: ArrayLike | None = None, *, stream: StreamLike = None,
                        team: _axon.Team | None = None, dtype: DTypeLike = None) -> ArrayLike:
    """On `stream`: dst (n_pes * src.size elements) = every member's src, in team order."""
    api = "allgather_on_stream"
    h = _stream_handle(stream, api)
    t = _team(team)
    n = t.n_pes()
    s = _device_buffer(src, api, "src", stream=h)
    dst = _stream_result(dst, n * s.size, api)
    s, d = _buffers(src, dst, api, h)
    if d.size != n * s.size:
        raise InvalidArgumentError(f"axon.{api}: dst has {d.size} elements; {n} PEs x {s.size} need {n * s.size}")
    _axon.allgather_on_stream(t, s.addr, d.addr, s.size, _dtype_code(s.dtype, dtype, api), h)
    return dst


def reduce_scatter_on_stream(src: ArrayLike, dst: ArrayLike | None = None, op: EnumLike = "sum", *,
                             stream: StreamLike = None, team: _axon.Team | None = None,
                             dtype: DTypeLike = None) -> ArrayLike:
    """On `stream`: src holds n_pes blocks; member i's dst = the reduction of block i of every
    member's src."""
    api = "reduce_scatter_on_stream"
    h = _stream_handle(stream, api)
    t = _team(team)
    n = t.n_pes()
    s = _device_buffer(src, api, "src", stream=h)
    if s.size % n:
        raise InvalidArgumentError(f"axon.{api}: src has {s.size} elements, not a multiple of {n} PEs")
    dst = _stream_result(dst, s.size // n, api)
    s, d = _buffers(src, dst, api, h)
    if d.size * n != s.size:
        raise InvalidArgumentError(f"axon.{api}: dst has {d.size} elements; src's {s.size} over {n} PEs "
                                   f"need {s.size // n}")
    _axon.reduce_scatter_on_stream(t, s.addr, d.addr, d.size, _dtype_code(s.dtype, dtype, api), _op_code(op, api), h)
    return dst


def alltoall_on_stream(src: ArrayLike, dst: ArrayLike | None = None, *, stream: StreamLike = None,
                       team: _axon.Team | None = None, dtype: DTypeLike = None) -> ArrayLike:
    """On `stream`: src holds n_pes blocks; block j goes to member j, which keeps it as block i
    (i = sender). dst must be another array of src's size (alltoall has no in-place form)."""
    api = "alltoall_on_stream"
    h = _stream_handle(stream, api)
    t = _team(team)
    n = t.n_pes()
    s = _device_buffer(src, api, "src", stream=h)
    if s.size % n:
        raise InvalidArgumentError(f"axon.{api}: src has {s.size} elements, not a multiple of {n} PEs")
    dst = _stream_result(dst, s.size, api)
    s, d = _buffers(src, dst, api, h)
    if d.size != s.size:
        raise InvalidArgumentError(f"axon.{api}: src has {s.size} elements but dst has {d.size}")
    _axon.alltoall_on_stream(t, s.addr, d.addr, s.size // n, _dtype_code(s.dtype, dtype, api), h)
    return dst


def device_coll_handle(team: _axon.Team | None = None) -> bytes:
    """The team's handle for the device-callable collectives, as raw bytes.

    It is an axon::device::CollHandle (include/axon/device/coll_types.hpp; the headers ship under
    axon/include): a trivially copyable struct of this process's mappings of the team's GPU
    workspace, which a kernel of your own (CuPy's RawKernel, ...) passes to
    axon::device::allreduce<Block>(handle, ...) etc. Pass the bytes to the kernel by value as that
    struct, or copy them to device memory (cupy.asarray(np.frombuffer(h, np.uint8))) and pass a
    pointer. They hold this process's mappings: meaningful only in this process, and valid until
    the team is destroyed.
    On a team across nodes the handle sends each call to this PE's device proxy, which runs the
    host's collective on the team (one call at a time; docs/architecture.md, "The device proxy").
    Raises axon.UnsupportedError where the team has no GPU workspace and does not span nodes (no
    GPU backend, a team of one PE, GPUs that cannot map each other's memory).
    """
    return _axon.device_coll_handle(_team(team))


@dataclass(frozen=True)
class Explanation:
    """What a call would do: the same choice the call itself makes."""

    collective: str
    algorithm: str
    path: str
    reason: str
    chunk_bytes: int
    rounds: int
    text: str
    # The GPU path only (0 elsewhere): the kernel's blocks and their threads, how many blocks one
    # SM holds at once (CUDA's occupancy calculator), so the SMs' worth the call occupies
    # (blocks / blocks_per_sm) of the GPU's device_sms.
    blocks: int = 0
    threads_per_block: int = 0
    blocks_per_sm: int = 0
    sms: float = 0.0
    device_sms: int = 0

    def __str__(self) -> str:
        return self.text


def explain(collective: EnumLike, count: int, dtype: DTypeLike = "float32", *,
            team: _axon.Team | None = None) -> Explanation:
    """Which algorithm and path `collective` on `count` elements of `dtype` would use, and why."""
    if isinstance(collective, str):
        try:
            code = Collective[collective.upper()]
        except KeyError:
            names = ", ".join(c.name.lower() for c in Collective)
            raise InvalidArgumentError(f"axon.explain: {collective!r} is not one of {names}") from None
    else:
        code = Collective(collective)
    if count < 0:
        raise InvalidArgumentError(f"axon.explain: count {count} is negative")
    algo, path, reason, chunk, rounds, text, blocks, threads, per_sm, sms, device_sms = _axon.explain(
        int(code), _team(team), int(count),
        _dtype_code(None, str(np.dtype(dtype)) if dtype != "bfloat16" else dtype, "explain"))
    return Explanation(code.name.lower(), algo, path, reason, chunk, rounds, text, blocks, threads, per_sm, sms,
                       device_sms)
