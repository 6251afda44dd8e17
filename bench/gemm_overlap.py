"""How much a collective running beside a GEMM slows it, through axon and through NCCL.

    axon run -n 4 python bench/gemm_overlap.py [--sizes 64M,512M] [--gemm 8192] [--json out.json]

Each rank runs bfloat16 matmuls (--gemm N: N x N by N x N, torch.matmul) on one CUDA stream while
a collective loops on another, as a training step overlaps its gradient allreduce with the next
layer's compute. Per collective, size and library:

* alone: the GEMMs by themselves, and the collective calls by themselves;
* together: the host queues GEMMs and calls interleaved in proportion, a few of each in flight
  (as a training loop does), each timed by CUDA events on its own stream.

The collective loop gets as many calls as last about as long as the GEMMs alone, so the two run
side by side for most of the time. GEMM slowdown = its time together / alone (1.00: not slowed);
collective slowdown likewise. axon's calls run on its symmetric heap (axon.empty(device="gpu"),
the buffers `axon bench -d D D` uses), NCCL's on torch tensors (as nccl-tests'), float32 both,
each through its stream-ordered calls; the SMs column is what axon.explain() says axon's kernel
occupies. The GEMMs leave --carveout SMs free. Best of --reps rounds, the libraries alternating.
Rank 0 prints the table; --json writes it. Set NCCL_NVLS_ENABLE=0 where multicast must stay off.
"""

from __future__ import annotations

import argparse
import faulthandler
import json

import torch
import torch.distributed as dist

import axon
from axon.tools.bench.sizes import parse_size, size_label
from axon.tools.cli_parser import UsageError
from torch_groups import axon_and_nccl  # bench/, beside this script

COLLS = ("allreduce", "allgather", "reduce_scatter", "broadcast", "alltoall")


class Library:
    """One library's stream-ordered call of `coll` on `nbytes` (a rank's largest buffer)."""

    def __init__(self, name: str, coll: str, nbytes: int, n: int, dev: torch.device, nccl):
        count = max(nbytes // 4, n)
        count -= count % n
        self.name, self.count = name, count
        if name == "axon":
            self.src = axon.empty(count, "float32", device="gpu")
            self.dst = axon.empty(count, "float32", device="gpu")
            torch.from_dlpack(self.src).fill_(1)
        else:
            self.src = torch.ones(count, dtype=torch.float32, device=dev)
            self.dst = torch.empty_like(self.src)
        # The call's arguments, chosen once: the timed loops pay only the call itself.
        part, out = self.src[:count // n], self.dst[:count // n]  # a member's block
        if name == "axon":
            fn, args = {"allreduce": (axon.allreduce_on_stream, (self.src, self.dst)),
                        "allgather": (axon.allgather_on_stream, (part, self.dst)),
                        "reduce_scatter": (axon.reduce_scatter_on_stream, (self.src, out)),
                        "broadcast": (axon.broadcast_on_stream, (self.src, self.dst)),
                        "alltoall": (axon.alltoall_on_stream, (self.src, self.dst))}[coll]
            self._issue = lambda stream: fn(*args, stream=stream)
        else:
            g = nccl
            self._issue = {"allreduce": lambda: dist.all_reduce(self.src, group=g),
                           "allgather": lambda: dist.all_gather_into_tensor(self.dst, part, group=g),
                           "reduce_scatter": lambda: dist.reduce_scatter_tensor(out, self.src, group=g),
                           "broadcast": lambda: dist.broadcast(self.src, src=0, group=g),
                           "alltoall": lambda: dist.all_to_all_single(self.dst, self.src, group=g)}[coll]

    def call(self, stream: torch.cuda.Stream) -> None:
        if self.name == "axon":
            self._issue(stream)
            return
        with torch.cuda.stream(stream):
            self._issue()

    def release(self) -> None:
        if self.name == "axon":
            axon.free(self.src)
            axon.free(self.dst)


class Overlap:
    def __init__(self, gemm: int, gemm_calls: int, dev: torch.device):
        self.a = torch.randn(gemm, gemm, dtype=torch.bfloat16, device=dev)
        self.b = torch.randn(gemm, gemm, dtype=torch.bfloat16, device=dev)
        self.c = torch.empty_like(self.a)
        self.gemm_calls = gemm_calls
        self.compute = torch.cuda.Stream(dev)
        # High priority, as frameworks give their communication: a call's blocks are scheduled
        # before the GEMM's as SMs come free.
        self.comm = torch.cuda.Stream(dev, priority=-1)

    def run(self, lib: Library | None, calls: int, gemms: bool) -> tuple[float, float]:
        """(GEMM ms, collective ms) of `calls` collectives beside the GEMMs (or without them).

        The host queues GEMMs and calls interleaved, in proportion, as a training step does, and
        keeps at most a few of each in flight (it waits for the oldest).
        """
        torch.cuda.synchronize()
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
        ev[0].record(self.compute)
        ev[2].record(self.comm)
        gemm_count = self.gemm_calls if gemms else 0
        order = sorted([(j / gemm_count, 0) for j in range(gemm_count)] + [(k / calls, 1) for k in range(calls)])
        in_flight: dict[int, list[torch.cuda.Event]] = {0: [], 1: []}
        for _, which in order:
            if which == 0:
                with torch.cuda.stream(self.compute):
                    torch.matmul(self.a, self.b, out=self.c)
                stream, depth = self.compute, 2
            else:
                lib.call(self.comm)
                stream, depth = self.comm, 4
            done = torch.cuda.Event()
            done.record(stream)
            in_flight[which].append(done)
            if len(in_flight[which]) > depth:
                in_flight[which].pop(0).synchronize()
        ev[1].record(self.compute)
        ev[3].record(self.comm)
        torch.cuda.synchronize()
        return ev[0].elapsed_time(ev[1]), ev[2].elapsed_time(ev[3])


def slowest(x: float, dev: torch.device, group, stall_after: float = 0) -> float:
    """The slowest rank's `x`. Each measurement ends here: the stall deadline starts again."""
    if stall_after > 0:
        faulthandler.dump_traceback_later(stall_after, exit=True)
    t = torch.tensor([x], device=dev)
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=group)
    return float(t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="64M,512M", help="a rank's largest buffer, comma-separated (default 64M,512M)")
    ap.add_argument("--colls", default="allreduce,allgather,reduce_scatter",
                    help="comma-separated subset of " + ", ".join(COLLS))
    ap.add_argument("--libs", default="axon,nccl", help="libraries, in the order each round runs them (default axon,nccl)")
    ap.add_argument("--gemm", type=int, default=8192, help="matrix side of the bfloat16 GEMM (default 8192)")
    ap.add_argument("--gemm-calls", type=int, default=40, help="GEMMs per measurement (default 40)")
    ap.add_argument("--carveout", type=int, default=32,
                    help="SMs the GEMM leaves free (cuBLASLt's SM count target, through torch); default 32")
    ap.add_argument("--reps", type=int, default=3, help="rounds, best kept (default 3)")
    ap.add_argument("--json", help="write the results here (rank 0)")
    ap.add_argument("--timeout", type=float, default=300,
                    help="seconds one measurement may take before each rank prints its Python stacks and exits "
                         "(default 300; 0: never)")
    args = ap.parse_args()
    if args.timeout > 0:
        faulthandler.dump_traceback_later(args.timeout, exit=True)
    colls = [c for c in args.colls.split(",") if c]
    if sorted(set(colls) - set(COLLS)):
        ap.error(f"unknown collectives {sorted(set(colls) - set(COLLS))}; choose from {', '.join(COLLS)}")
    try:
        sizes = [parse_size(s, "--sizes") for s in args.sizes.split(",") if s]
    except UsageError as e:
        ap.error(str(e))
    names = [x for x in args.libs.split(",") if x]
    if not names or sorted(set(names) - {"axon", "nccl"}) or len(set(names)) != len(names):
        ap.error(f"--libs {args.libs!r}: name axon and/or nccl, each once")
    if args.gemm < 1 or args.gemm_calls < 1 or args.reps < 1:
        ap.error("--gemm, --gemm-calls and --reps must be at least 1")

    dev, rank, n, nccl = axon_and_nccl()
    # Frameworks that overlap the two leave SMs to the communication (cuBLASLt's SM count target),
    # so that the GEMM's blocks do not hold every SM while a collective's blocks wait for theirs.
    if args.carveout:
        if not hasattr(torch._C, "_set_sm_carveout_experimental"):
            ap.error("--carveout needs torch._C._set_sm_carveout_experimental (torch 2.6 or later); pass --carveout 0")
        torch.backends.cuda.preferred_blas_library("cublaslt")
        torch._C._set_sm_carveout_experimental(args.carveout)
    ov = Overlap(args.gemm, args.gemm_calls, dev)
    # The first warms up. The slowest rank's time: every rank must make the same number of calls.
    gemm_alone = slowest(min(ov.run(None, 0, True)[0] for _ in range(args.reps + 1)), dev, nccl, args.timeout)
    tflops = 2 * args.gemm ** 3 * args.gemm_calls / (gemm_alone * 1e-3) / 1e12
    if rank == 0:
        print(f"# {n} ranks, {torch.cuda.get_device_name(dev)}; GEMM {args.gemm}^3 bfloat16 x {args.gemm_calls}, "
              f"{args.carveout} SMs left free: {gemm_alone:.2f} ms alone ({tflops:.0f} TFLOP/s)", flush=True)
        print(f"# {'collective':15s}{'size':>8s} {'library':>8s}{'call alone':>12s}{'GEMM slowed':>13s}"
              f"{'call slowed':>13s}  axon's SMs", flush=True)
    rows = []
    for coll in colls:
        for nbytes in sizes:
            libs = [Library(name, coll, nbytes, n, dev, nccl) for name in names]
            best = {lib.name: [float("inf")] * 3 for lib in libs}
            for lib in libs:  # warm-up, and the calls that fill the GEMMs' time
                ov.run(lib, 3, False)
            per_call = {lib.name: slowest(ov.run(lib, 10, False)[1] / 10, dev, nccl, args.timeout) for lib in libs}
            for _ in range(args.reps):
                for lib in libs:
                    calls = max(1, round(gemm_alone / per_call[lib.name]))
                    alone = slowest(ov.run(lib, calls, False)[1], dev, nccl, args.timeout)
                    g, c = ov.run(lib, calls, True)
                    g, c = slowest(g, dev, nccl, args.timeout), slowest(c, dev, nccl, args.timeout)
                    b = best[lib.name]
                    best[lib.name] = [min(b[0], alone / calls), min(b[1], g / gemm_alone), min(b[2], c / alone)]
            # explain() counts a member's block for these three, the whole buffer for the others.
            per_member = coll in ("allgather", "reduce_scatter", "alltoall")
            sm = axon.explain(coll, libs[0].count // (n if per_member else 1), "float32")  # every library's count
            for lib in libs:
                b = best[lib.name]
                row = {"collective": coll, "bytes": nbytes, "library": lib.name, "call_ms": b[0],
                       "gemm_slowdown": b[1], "call_slowdown": b[2]}
                if lib.name == "axon":
                    row.update(blocks=sm.blocks, threads_per_block=sm.threads_per_block,
                               blocks_per_sm=sm.blocks_per_sm, sms=sm.sms, device_sms=sm.device_sms)
                rows.append(row)
                if rank == 0:
                    sms = ""
                    if lib.name == "axon":
                        sms = (f"  {sm.sms:.3g} ({sm.blocks} x {sm.threads_per_block} threads)" if sm.blocks_per_sm
                               else f"  {sm.blocks} x {sm.threads_per_block} threads" if sm.blocks else "  no kernel")
                    print(f"  {coll:15s}{size_label(nbytes):>8s} {lib.name:>8s}{b[0]:10.3f}ms{b[1]:12.3f}x"
                          f"{b[2]:12.3f}x{sms}", flush=True)
            for lib in libs:
                lib.release()
    if rank == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump({"ranks": n, "device": torch.cuda.get_device_name(dev), "gemm": args.gemm, "carveout": args.carveout,
                       "gemm_ms_alone": gemm_alone, "gemm_tflops": tflops, "rows": rows}, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
