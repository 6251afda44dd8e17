"""The collectives of the Open MPI peer (``mpi_peer``): one rank's side, on host (NumPy) buffers,
with the conventions of axon's collective driver (bench/coll_bench.cpp, bench/coll_values.hpp),
so that both sides mean the same bytes and the same time:

* size is the bytes of a rank's largest buffer (allgather: the output; alltoall: either buffer),
  count its elements; a size smaller than one element per rank is skipped;
* time is the slowest rank's average per call: ``warmup`` untimed calls, a barrier, ``iters``
  calls back to back; algbw = size / time, busbw = algbw * 2(n-1)/n (allreduce), (n-1)/n
  (allgather, alltoall), 1 (broadcast);
* out of place, then in place (``MPI.IN_PLACE``; broadcast has one buffer in MPI, so its out-of-place
  call is the root's copy of the source into the destination, then ``Bcast`` of it; alltoall is out of
  place twice, as axon's driver does);
* one validated call of each form on the driver's exact small-integer inputs; #wrong counts the
  elements that differ from the expected values, summed over the ranks.

Kept apart from the launching side (``mpi_peer``): this module runs under mpirun, on every rank.
"""

from __future__ import annotations

from typing import Any, Callable

#: The collectives the peer runs (axon bench's names).
COLLECTIVES = ("allreduce", "allgather", "alltoall", "broadcast")

#: axon's datatypes that MPI has (float16 and bfloat16 have no standard MPI type in Open MPI 4).
DTYPES = ("int8", "uint8", "int32", "uint32", "int64", "uint64", "float32", "float64")
OPS = ("sum", "prod", "min", "max")


def bus_factor(test: str, n: int) -> float:
    """nccl-tests' bus-bandwidth factor (bench/coll_values.hpp's busFactor)."""
    if test == "allreduce":
        return 2.0 * (n - 1) / n
    if test in ("allgather", "alltoall"):
        return (n - 1) / n
    return 1.0


def shape(test: str, size: int, elem: int, n: int) -> tuple[int, int, int]:
    """(count argument, source elements, destination elements) of one call for `size` bytes
    (bench/coll_values.hpp's shapeOf); the printed size is the largest buffer's bytes."""
    total = size // elem
    block = total // n
    if test == "allgather":
        return block, block, block * n
    if test == "alltoall":
        return block, block * n, block * n
    return total, total, total


def default_iters(size: int) -> tuple[int, int]:
    """The driver's defaults: 200 timed and 20 untimed calls up to 64 KiB, 20 and 5 above."""
    return (200, 20) if size <= 65536 else (20, 5)


def input_at(op: str, pe: int, i):
    """bench/coll_values.hpp's inputAt on an index array: exact small integers in every type."""
    import numpy as np

    if op == "prod":
        return np.where((pe + i) % 2 == 0, 2.0, 1.0)
    return ((i % 7) + 1).astype(np.float64) * (pe + 1)


def expected_at(op: str, n: int, i):
    """What every rank's reduction of input_at over `n` ranks gives (applied in rank order)."""
    import numpy as np

    acc = input_at(op, 0, i)
    for p in range(1, n):
        v = input_at(op, p, i)
        acc = acc + v if op == "sum" else acc * v if op == "prod" else np.minimum(acc, v) if op == "min" \
            else np.maximum(acc, v)
    return acc


def wanted(test: str, op: str, n: int, me: int, root: int, block: int, ndst: int):
    """What this rank's destination holds after the validated call (coll_values.hpp's wantedAt)."""
    import numpy as np

    j = np.arange(ndst, dtype=np.int64)
    if test == "broadcast":
        return input_at(op, root, j)
    if test == "allgather":
        return input_at(op, j // block, j % block)
    if test == "alltoall":
        return input_at(op, j // block, me * block + j % block)
    return expected_at(op, n, j)


class Collective:
    """One collective on one rank: its buffers for one size, one call of either form, and the
    validation."""

    def __init__(self, comm, test: str, dtype: str, op: str, root: int) -> None:
        import numpy as np
        from mpi4py import MPI

        if test not in COLLECTIVES:
            raise ValueError(f"the Open MPI peer runs {', '.join(COLLECTIVES)}, not {test}")
        if dtype not in DTYPES:
            raise ValueError(f"--dtype {dtype}: Open MPI 4 has no MPI type for it (the peer takes {', '.join(DTYPES)})")
        if op not in OPS:
            raise ValueError(f"--op {op!r} is not one of {', '.join(OPS)}")
        self.np, self.MPI, self.comm = np, MPI, comm
        self.test, self.op, self.root = test, op, root
        self.dtype = np.dtype(dtype)
        self.mpi_op = {"sum": MPI.SUM, "prod": MPI.PROD, "min": MPI.MIN, "max": MPI.MAX}[op]
        self.n, self.me = comm.Get_size(), comm.Get_rank()
        if not 0 <= root < self.n:
            raise ValueError(f"--root {root} is not one of the {self.n} ranks")

    @property
    def elem(self) -> int:
        return self.dtype.itemsize

    def call_for(self, size: int, in_place: bool) -> tuple[Callable[[], None], Any, Any]:
        """(one call, its source, its destination) on fresh buffers of `size` bytes."""
        np, MPI, comm, me = self.np, self.MPI, self.comm, self.me
        block, nsrc, ndst = shape(self.test, size, self.elem, self.n)
        a = np.zeros(max(nsrc, ndst), self.dtype)
        b = np.zeros(ndst, self.dtype)
        src, dst = a[:nsrc], b
        test, op, root = self.test, self.mpi_op, self.root
        if in_place and test != "alltoall":  # alltoall: out of place again, as axon's driver does
            dst = a[:ndst]
            if test == "allgather":
                src = a[me * block:(me + 1) * block]
        if test == "allreduce":
            if in_place:
                return (lambda: comm.Allreduce(MPI.IN_PLACE, dst, op)), src, dst
            return (lambda: comm.Allreduce(src, dst, op)), src, dst
        if test == "allgather":
            if in_place:
                return (lambda: comm.Allgather(MPI.IN_PLACE, dst)), src, dst
            return (lambda: comm.Allgather(src, dst)), src, dst
        if test == "alltoall":
            return (lambda: comm.Alltoall(src, dst)), src, dst
        if in_place:
            return (lambda: comm.Bcast(dst, root)), src, dst

        def copy_then_bcast() -> None:
            if me == root:
                dst[...] = src
            comm.Bcast(dst, root)
        return copy_then_bcast, src, dst

    def measure(self, size: int, in_place: bool, iters: int, warmup: int, validate: bool) -> tuple[float, int | None]:
        """(the slowest rank's microseconds per call, wrong elements over all ranks or None)."""
        MPI, comm = self.MPI, self.comm
        call, src, dst = self.call_for(size, in_place)
        for _ in range(warmup):
            call()
        comm.Barrier()
        t0 = MPI.Wtime()
        for _ in range(iters):
            call()
        us = comm.allreduce((MPI.Wtime() - t0) / iters * 1e6, op=MPI.MAX)
        if not validate:
            return us, None
        np = self.np
        values = input_at(self.op, self.me, np.arange(src.size, dtype=np.int64))
        if self.test == "broadcast" and self.me != self.root:
            values = values * 0  # only the root holds data (no input is zero)
        dst[...] = 0
        src[...] = values.astype(self.dtype)
        call()
        block = shape(self.test, size, self.elem, self.n)[0]
        want = wanted(self.test, self.op, self.n, self.me, self.root, block, dst.size)
        wrong = int((dst.astype(np.float64) != want).sum())
        return us, comm.allreduce(wrong)


def _side(us: float, wrong: int | None, size: int, factor: float) -> dict:
    algbw = size / (us * 1e3)
    return {"time_us": us, "algbw_gbs": algbw, "busbw_gbs": algbw * factor, "wrong": wrong}


def run_collective(comm, test: str, sizes: list[int], iters: int | None, warmup: int | None, impl: str,
                   dtype: str, op: str, root: int, validate: bool, emit: Callable[[dict], None]) -> int:
    """Every size, both forms; rank 0 emits one result line per size (the driver's fields).
    Returns the wrong elements over all sizes."""
    c = Collective(comm, test, dtype, op, root)
    factor = bus_factor(test, c.n)
    wrong_total = 0
    for size in sizes:
        printed = max(shape(test, size, c.elem, c.n)[1:]) * c.elem
        if printed == 0:
            continue  # smaller than one element per rank, as the driver skips it
        n_iters, n_warmup = default_iters(size)
        n_iters, n_warmup = iters or n_iters, warmup if warmup is not None else n_warmup
        sides = [_side(*c.measure(size, in_place, n_iters, n_warmup, validate), printed, factor)
                 for in_place in (False, True)]
        wrong = sum(s["wrong"] or 0 for s in sides)
        wrong_total += wrong
        if c.me == 0:
            emit({"type": "result", "impl": impl, "test": test, "size": printed, "count": printed // c.elem,
                  "dtype": dtype, "redop": op, "root": root, "algorithm": impl, "iters": n_iters,
                  "warmup": n_warmup, "time_us": sides[0]["time_us"], "bw_gbs": sides[0]["busbw_gbs"],
                  "wrong": wrong if validate else None, "out_of_place": sides[0], "in_place": sides[1]})
    return wrong_total
