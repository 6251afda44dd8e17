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
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from . import _axon
from .errors import InvalidArgumentError
from .gpu import as_buffer


class ReduceOp(enum.IntEnum):
    SUM = 0
    PROD = 1
    MIN = 2
    MAX = 3


class Collective(enum.IntEnum):
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


def _buffers(src, dst, api):
    s = as_buffer(src, api, "src")
    d = as_buffer(dst, api, "dst", writable=True)
    if s.dtype.itemsize != d.dtype.itemsize or (s.dtype != d.dtype and s.dtype.kind != "V" and d.dtype.kind != "V"):
        raise InvalidArgumentError(f"axon.{api}: src ({s.dtype}) and dst ({d.dtype}) differ in dtype")
    return s, d


def _result_like(src, size, api):
    if not isinstance(src, np.ndarray):
        raise InvalidArgumentError(f"axon.{api}: pass dst for non-NumPy arrays (the result size is {size})")
    return np.empty(size, dtype=src.dtype)


def barrier(team=None) -> None:
    """Synchronize the team through its collective workspace (a mismatch with another collective
    is reported). Completes no puts: use Team.barrier() or barrier_all() for that."""
    _axon.coll_barrier(_team(team))


def allreduce(src, dst=None, op="sum", *, team=None, dtype=None):
    """dst = the element-wise reduction of every member's src. dst=None: in place."""
    dst = src if dst is None else dst
    s, d = _buffers(src, dst, "allreduce")
    if s.size != d.size:
        raise InvalidArgumentError(f"axon.allreduce: src has {s.size} elements but dst has {d.size}")
    _axon.allreduce(_team(team), s.addr, d.addr, s.size, _dtype_code(s.dtype, dtype, "allreduce"),
                    _op_code(op, "allreduce"))
    return dst


def reduce(src, dst=None, op="sum", root: int = 0, *, team=None, dtype=None):
    """The root's dst = the element-wise reduction of every member's src (other PEs' dst is
    untouched). dst=None: in place on the root."""
    dst = src if dst is None else dst
    s, d = _buffers(src, dst, "reduce")
    if s.size != d.size:
        raise InvalidArgumentError(f"axon.reduce: src has {s.size} elements but dst has {d.size}")
    _axon.reduce(_team(team), s.addr, d.addr, s.size, _dtype_code(s.dtype, dtype, "reduce"), _op_code(op, "reduce"),
                 root)
    return dst


def broadcast(src, dst=None, root: int = 0, *, team=None, dtype=None):
    """Every member's dst = the root's src. dst=None: in place (src is the receive buffer on the
    other PEs)."""
    dst = src if dst is None else dst
    s, d = _buffers(src, dst, "broadcast")
    if s.size != d.size:
        raise InvalidArgumentError(f"axon.broadcast: src has {s.size} elements but dst has {d.size}")
    _axon.broadcast(_team(team), s.addr, d.addr, s.size, _dtype_code(s.dtype, dtype, "broadcast"), root)
    return dst


def allgather(src, dst=None, *, team=None, dtype=None):
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


def reduce_scatter(src, dst=None, op="sum", *, team=None, dtype=None):
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


def alltoall(src, dst=None, *, team=None, dtype=None):
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

    def __str__(self) -> str:
        return self.text


def explain(collective, count: int, dtype="float32", *, team=None) -> Explanation:
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
    algo, path, reason, chunk, rounds, text = _axon.explain(int(code), _team(team), int(count),
                                                            _dtype_code(None, str(np.dtype(dtype))
                                                                        if dtype != "bfloat16" else dtype, "explain"))
    return Explanation(code.name.lower(), algo, path, reason, chunk, rounds, text)
