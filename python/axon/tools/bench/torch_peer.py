"""PyTorch as a comparison peer of ``axon bench --compare``: the same tests, sizes and conventions
as the axon driver, run through PyTorch on the same GPUs right after it.

Started on every PE by axon's launcher (``axon bench`` does this; by hand)::

    python -m axon run -n N --no-prefix python -m axon.tools.bench.torch_peer TEST --sizes 8,64,...
        --port PORT [-i ITERS] [-x WARMUP] [--dtype float32] [--op sum] [--root 0] [--no-validate]

Implementations (the ``impl`` of each result line):

* ``pytorch-nccl``: ``torch.distributed`` on its NCCL backend. Collectives as PyTorch users call
  them: ``all_reduce``, ``broadcast`` and ``reduce`` exist only in place (their out-of-place side is
  null); ``all_gather_into_tensor``, ``reduce_scatter_tensor`` and ``all_to_all_single`` both ways
  (in place = the input is this PE's slice of the output, as axon's convention). Point to point:
  ``latency`` and ``p2p-latency`` are a send/recv ping-pong between PE 0 and PE 1 (one way = round
  trip / 2), ``pingping`` and ``p2p-pingping`` a ``batch_isend_irecv`` exchange (time per
  exchange, bytes sent by one PE / time); ``p2p-bw`` a ``batch_isend_irecv`` of 64 isends (PE 0)
  and 64 irecvs (PE 1) then a one-byte ack, ``p2p-bibw`` both directions in one batch (time per
  message; bibw sums both directions).
* ``pytorch-symm-mem`` (allreduce, sum): ``torch.ops.symm_mem.one_shot_all_reduce_out`` out of
  place and ``two_shot_all_reduce_`` in place, on buffers from ``symm_mem.empty``. Multicast stays
  off (``TORCH_SYMM_MEM_DISABLE_MULTICAST=1``), as in every axon measurement.

Buffers are PyTorch's own tensors on the PE's GPU (symmetric memory for symm-mem), of the sizes
axon's driver used. Timing follows bench/coll_bench.cpp: ``iters`` calls enqueued back to back,
one synchronize, the slowest PE's average per call; sizes as nccl-tests count them. The
point-to-point tests are timed the same way: PyTorch queues its sends and receives on its stream
(each waits for the one before on the GPU), so its host overhead is hidden where axon's driver
waits on the host for every exchange; the comparison favours PyTorch. Validation uses the
driver's exact small-integer inputs. Output: one JSON object per line on PE 0 (``peer``,
``result``, ``note``, ``done`` or ``error``), read by :mod:`axon.tools.bench`.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from typing import Any, Callable

COLLECTIVES = ("allreduce", "broadcast", "reduce", "allgather", "reduce_scatter", "alltoall")
POINT_TO_POINT = ("latency", "pingping", "p2p-latency", "p2p-bw", "p2p-bibw", "p2p-pingping")
WINDOW = 64  # osu_bw's window (the p2p-bw and p2p-bibw tests)
TESTS = COLLECTIVES + POINT_TO_POINT

_BUS_FACTOR: dict[str, Callable[[int], float]] = {
    "allreduce": lambda n: 2.0 * (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
}


def emit(record: dict) -> None:
    print(json.dumps(record), flush=True)


def input_at(op: str, pe: int, i):
    """bench/coll_values.hpp's inputAt: exact small integers in every type (i: an index tensor)."""
    if op == "prod":
        return ((pe + i) % 2 == 0).double() + 1.0
    return ((i % 7) + 1).double() * (pe + 1)


def expected_at(op: str, n: int, i):
    acc = input_at(op, 0, i)
    for p in range(1, n):
        v = input_at(op, p, i)
        acc = acc + v if op == "sum" else acc * v if op == "prod" else \
            acc.minimum(v) if op == "min" else acc.maximum(v)
    return acc


class Peer:
    """One PE's PyTorch state: the process group, the device, the dtype and op."""

    def __init__(self, args: argparse.Namespace) -> None:
        os.environ["TORCH_SYMM_MEM_DISABLE_MULTICAST"] = "1"
        import torch
        import torch.distributed as dist
        self.torch, self.dist, self.args = torch, dist, args
        self.rank = int(os.environ["AXON_RANK"])
        self.n = int(os.environ["AXON_WORLD_SIZE"])
        local = int(os.environ.get("AXON_LOCAL_RANK", self.rank))
        if not torch.cuda.is_available():
            raise RuntimeError("PyTorch sees no CUDA device")
        # axon's choice of GPU (AXON_DEVICE, else the local rank modulo the GPUs seen).
        ordinal = int(os.environ.get("AXON_DEVICE") or local % torch.cuda.device_count())
        self.device = torch.device("cuda", ordinal)
        torch.cuda.set_device(self.device)
        # Bounded like every axon wait: a rank that fails cannot leave the others waiting for ever.
        timeout = datetime.timedelta(seconds=float(os.environ.get("AXON_TIMEOUT") or 300))
        dist.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{args.port}", rank=self.rank,
                                world_size=self.n, device_id=self.device, timeout=timeout)
        self.dtype = getattr(torch, args.dtype, None)
        if not isinstance(self.dtype, torch.dtype):
            raise ValueError(f"PyTorch has no dtype {args.dtype!r}")
        self.op = {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT, "min": dist.ReduceOp.MIN,
                   "max": dist.ReduceOp.MAX}[args.op]
        self.elem = torch.empty(0, dtype=self.dtype).element_size()

    # -- helpers -------------------------------------------------------------------------------

    def tensor(self, values) -> Any:
        return values.to(self.dtype).to(self.device)

    def slowest(self, seconds: float) -> float:
        t = self.torch.tensor([seconds], dtype=self.torch.float64, device=self.device)
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX)
        return float(t.item())

    def total(self, count: int) -> int:
        t = self.torch.tensor([count], dtype=self.torch.int64, device=self.device)
        self.dist.all_reduce(t)
        return int(t.item())

    def timed(self, call: Callable[[], None], iters: int, warmup: int) -> float:
        """Microseconds per call, the slowest PE's: iters calls back to back, then one sync."""
        for _ in range(warmup):
            call()
        self.torch.cuda.synchronize()
        self.dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            call()
        self.torch.cuda.synchronize()
        return self.slowest((time.perf_counter() - t0) / iters) * 1e6

    def wrong(self, got, want) -> int:
        """Elements of `got` that differ from `want` (summed over all PEs)."""
        return self.total(int((got.double().cpu() != want).sum().item()))

    # -- collectives ---------------------------------------------------------------------------

    def shape(self, test: str, size: int) -> tuple[int, int, int]:
        """(count per PE block, source elements, destination elements), as bench/coll_values.hpp's shapeOf."""
        total = size // self.elem
        block = total // self.n
        if test == "allgather":
            return block, block, block * self.n
        if test == "reduce_scatter":
            return block, block * self.n, block
        if test == "alltoall":
            return block, block * self.n, block * self.n
        return total, total, total

    def collective(self, test: str, size: int, impl: str, in_place: bool, iters: int, warmup: int):
        """(time_us, wrong) of one side of one implementation, or None where it has no such form."""
        torch, dist, n, me, a = self.torch, self.dist, self.n, self.rank, self.args
        block, nsrc, ndst = self.shape(test, size)
        if impl == "pytorch-symm-mem":
            return self.symm_mem(nsrc, in_place, iters, warmup)
        if in_place is False and test in ("allreduce", "broadcast", "reduce"):
            return None  # torch.distributed has these in place only
        buf = torch.empty(max(nsrc, ndst), dtype=self.dtype, device=self.device)
        out = torch.empty(ndst, dtype=self.dtype, device=self.device)
        src, dst = buf[:nsrc], out
        if in_place:
            dst = buf[:ndst]
            if test == "allgather":
                src = buf[me * block:(me + 1) * block]
            elif test == "reduce_scatter":
                dst = buf[me * block:(me + 1) * block]
            elif test == "alltoall":
                dst = out  # no in-place form: out of place again, as axon's driver does

        def call() -> None:
            if test == "allreduce":
                dist.all_reduce(src, op=self.op)
            elif test == "broadcast":
                dist.broadcast(src, src=a.root)
            elif test == "reduce":
                dist.reduce(src, dst=a.root, op=self.op)
            elif test == "allgather":
                dist.all_gather_into_tensor(dst, src)
            elif test == "reduce_scatter":
                dist.reduce_scatter_tensor(dst, src, op=self.op)
            else:
                dist.all_to_all_single(dst, src)

        us = self.timed(call, iters, warmup)
        if not a.validate:
            return us, None
        idx = torch.arange(nsrc, dtype=torch.int64)
        values = input_at(a.op, me, idx)
        if test == "broadcast" and me != a.root:
            values = values * 0  # only the root holds data (no input is zero)
        src.copy_(self.tensor(values))
        call()
        torch.cuda.synchronize()
        j = torch.arange(ndst, dtype=torch.int64)
        if test == "broadcast":
            want = input_at(a.op, a.root, j)
        elif test == "allgather":
            want = torch.cat([input_at(a.op, p, torch.arange(block)) for p in range(n)])
        elif test == "reduce_scatter":
            want = expected_at(a.op, n, me * block + j)
        elif test == "alltoall":
            want = torch.cat([input_at(a.op, p, me * block + torch.arange(block)) for p in range(n)])
        else:
            want = expected_at(a.op, n, j)
        got = src if test in ("allreduce", "broadcast", "reduce") else dst
        if test == "reduce" and me != a.root:
            return us, self.total(0)  # only the root's result is defined
        return us, self.wrong(got[:ndst], want)

    def symm_mem(self, count: int, in_place: bool, iters: int, warmup: int):
        import torch.distributed._symmetric_memory as symm_mem
        torch, a = self.torch, self.args
        group = self.dist.group.WORLD.group_name
        if hasattr(symm_mem, "enable_symm_mem_for_group"):
            symm_mem.enable_symm_mem_for_group(group)
        buf = symm_mem.empty(count, dtype=self.dtype, device=self.device)
        symm_mem.rendezvous(buf, group)
        out = torch.empty_like(buf)
        ops = torch.ops.symm_mem
        if in_place:
            def call() -> None:
                ops.two_shot_all_reduce_(buf, "sum", group)
        else:
            def call() -> None:
                ops.one_shot_all_reduce_out(buf, "sum", group, out)
        us = self.timed(call, iters, warmup)
        if not a.validate:
            return us, None
        idx = torch.arange(count, dtype=torch.int64)
        buf.copy_(self.tensor(input_at("sum", self.rank, idx)))
        self.dist.barrier()
        call()
        torch.cuda.synchronize()
        return us, self.wrong(buf if in_place else out, expected_at("sum", self.n, idx))

    # -- point to point (PE 0 and PE 1; the others wait at the barriers) ------------------------

    def point_to_point(self, test: str, size: int, iters: int, warmup: int):
        torch, dist, me = self.torch, self.dist, self.rank
        count = max(1, size)
        send = torch.empty(count, dtype=torch.uint8, device=self.device)
        recv = torch.zeros(count, dtype=torch.uint8, device=self.device)
        peer = 1 - me if me < 2 else None

        def pattern(sender: int):  # what `sender` sends at this size
            return (torch.arange(count, dtype=torch.int64) * 131 + size + sender * 17) % 251

        send.copy_(pattern(me).to(torch.uint8))

        ack = torch.zeros(1, dtype=torch.uint8, device=self.device)

        def call() -> None:
            if peer is None:
                return
            if test in ("p2p-bw", "p2p-bibw"):
                both = test == "p2p-bibw"
                ops = []
                if both or me == 1:
                    ops += [dist.P2POp(dist.irecv, recv, peer) for _ in range(WINDOW)]
                if both or me == 0:
                    ops += [dist.P2POp(dist.isend, send, peer) for _ in range(WINDOW)]
                for r in dist.batch_isend_irecv(ops):
                    r.wait()
                if not both:
                    if me == 0:
                        dist.recv(ack, 1)
                    else:
                        dist.send(ack, 0)
            elif test in ("pingping", "p2p-pingping"):
                for r in dist.batch_isend_irecv([dist.P2POp(dist.isend, send, peer),
                                                 dist.P2POp(dist.irecv, recv, peer)]):
                    r.wait()
            elif me == 0:
                dist.send(send, 1)
                dist.recv(recv, 1)
            else:
                dist.recv(recv, 0)
                dist.send(send, 0)

        us = self.timed(call, iters, warmup)
        wrong = 0
        if self.args.validate and peer is not None and (test != "p2p-bw" or me == 1):
            wrong = int((recv.cpu().to(torch.int64) != pattern(peer)).sum().item())
        wrong = self.total(wrong)
        if test in ("latency", "p2p-latency"):
            us /= 2  # one way, as osu_latency
        if test in ("p2p-bw", "p2p-bibw"):
            us /= WINDOW  # per message
        return us, wrong


def _side(time_us, wrong, size: int, factor: float) -> dict:
    if time_us is None:
        return {"time_us": None, "algbw_gbs": None, "busbw_gbs": None, "wrong": None}
    algbw = size / (time_us * 1e3)
    return {"time_us": time_us, "algbw_gbs": algbw, "busbw_gbs": algbw * factor, "wrong": wrong}


def default_iters(test: str, size: int) -> tuple[int, int]:
    """coll_bench's defaults for the collectives, OSU's for the point-to-point tests."""
    if test in COLLECTIVES:
        return (200, 20) if size <= 65536 else (20, 5)
    if test in ("p2p-bw", "p2p-bibw"):  # windows, capped as axon's driver caps them
        iters = min(100 if size <= 8192 else 20, max(2, int(4 * 2**30 / max(size * WINDOW, 1))))
        return iters, min(10 if size <= 8192 else 2, max(1, iters // 10))
    if test.startswith("p2p-"):
        iters = min(10000 if size <= 8192 else 1000, max(10, int(4 * 2**30 / max(size, 1))))
        return iters, min(100 if size <= 8192 else 10, max(1, iters // 10))
    return (10000, 100) if size <= 8192 else (1000, 10)


def run(args: argparse.Namespace) -> int:
    peer = Peer(args)
    torch, me, n = peer.torch, peer.rank, peer.n
    impls = ["pytorch-nccl"]
    if args.test == "allreduce" and args.op == "sum" and args.dtype in ("float32", "float16", "bfloat16"):
        impls.append("pytorch-symm-mem")
    if me == 0:
        nccl = ".".join(str(v) for v in torch.cuda.nccl.version())
        for impl in impls:
            emit({"type": "peer", "impl": impl, "version": f"torch {torch.__version__}, NCCL {nccl}"})
    factor = _BUS_FACTOR.get(args.test, lambda _: 1.0)(n)
    wrong_total = 0
    failed: set[tuple[str, bool]] = set()
    for size in args.sizes:
        iters, warmup = default_iters(args.test, size)
        iters, warmup = args.iters or iters, args.warmup if args.warmup is not None else warmup
        if args.test in POINT_TO_POINT:
            us, wrong = peer.point_to_point(args.test, size, iters, warmup)
            wrong_total += wrong or 0
            if me == 0:
                bw = size / (us * 1e3) * (2 if args.test == "p2p-bibw" else 1)
                emit({"type": "result", "impl": "pytorch-nccl", "test": args.test, "size": size,
                      "iters": iters, "warmup": warmup, "time_us": us, "bw_gbs": bw,
                      "wrong": wrong if args.validate else None})
            continue
        printed = max(peer.shape(args.test, size)[1:]) * peer.elem
        if printed == 0:
            continue  # smaller than one element per PE, as the driver skips it
        for impl in impls:
            sides = []
            for in_place in (False, True):
                r = None
                if (impl, in_place) not in failed:
                    why = ""
                    try:
                        r = peer.collective(args.test, size, impl, in_place, iters, warmup)
                    except Exception as exc:  # noqa: BLE001 - a form PyTorch lacks or rejects
                        why = f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}"
                    # All PEs agree before going on (one may fail alone, e.g. out of memory); a
                    # broken process group raises here, within the timeout, and ends the run.
                    if peer.total(1 if why else 0):
                        failed.add((impl, in_place))
                        r = None
                        if me == 0:
                            side = "in place" if in_place else "out of place"
                            emit({"type": "note", "impl": impl, "note": f"{impl} {side} stopped at "
                                  f"{size} B: {why or 'another PE failed'}"})
                sides.append(_side(*(r or (None, None)), printed, factor))
            if all(s["time_us"] is None for s in sides):
                continue
            wrong = sum(s["wrong"] or 0 for s in sides)
            wrong_total += wrong
            main = sides[0] if sides[0]["time_us"] is not None else sides[1]
            if me == 0:
                emit({"type": "result", "impl": impl, "size": printed, "count": printed // peer.elem,
                      "dtype": args.dtype, "redop": args.op, "root": args.root, "algorithm": impl,
                      "time_us": main["time_us"], "bw_gbs": main["busbw_gbs"],
                      "plotted": "out_of_place" if main is sides[0] else "in_place",
                      "wrong": wrong if args.validate else None,
                      "out_of_place": sides[0], "in_place": sides[1]})
    if me == 0:
        emit({"type": "done", "wrong": wrong_total})
    peer.dist.destroy_process_group()
    return 0 if wrong_total == 0 else 1


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m axon.tools.bench.torch_peer")
    p.add_argument("test", choices=TESTS)
    p.add_argument("--sizes", required=True, type=lambda s: [int(x) for x in s.split(",") if x])
    p.add_argument("--port", required=True, type=int)
    p.add_argument("-i", "--iters", type=int)
    p.add_argument("-x", "--warmup", type=int)
    p.add_argument("--dtype", default="float32")
    p.add_argument("--op", default="sum", choices=("sum", "prod", "min", "max"))
    p.add_argument("--root", type=int, default=0)
    p.add_argument("--no-validate", dest="validate", action="store_false")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    try:
        return run(args)
    except Exception as exc:  # noqa: BLE001 - one line for axon bench, then a non-zero exit
        if os.environ.get("AXON_RANK", "0") == "0":
            emit({"type": "error", "message": f"PyTorch peer: {type(exc).__name__}: {exc}"})
        else:
            print(f"torch_peer: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
