"""torch.distributed through axon beside ProcessGroupNCCL, in the same processes on the same GPUs.

    axon run -n 4 python bench/torch_backend.py [--max 512M] [--ddp-steps 10] [--json out.json]

1. The collectives through torch.distributed (all_reduce, all_gather_into_tensor,
   reduce_scatter_tensor, broadcast, all_to_all_single), sizes 8 B to --max: the time of one call
   (back-to-back calls on the current stream, the host synchronized at the end, the slowest rank's
   time; best of --reps rounds, axon and NCCL alternating), so the small sizes show each backend's
   per-call cost through Python and torch's dispatcher. ratio = NCCL's time / axon's.
2. One DDP training step of a GPT-2-small-sized transformer (plain torch.nn: 12 layers, width
   768, 12 heads, vocabulary 50,257, sequence 512, batch 4 a rank, bfloat16 autocast, synthetic
   tokens) in steps per second, through each backend: --ddp-steps timed steps after 3 untimed,
   --reps rounds alternating the backends, the best round of each.

Rank 0 prints the tables; --json writes them. Set NCCL_NVLS_ENABLE=0 where multicast must stay off.
"""

from __future__ import annotations

import argparse
import gc
import json
import time

import torch
import torch.distributed as dist

from axon.tools.bench.sizes import parse_size, size_label
from axon.tools.cli_parser import UsageError
from torch_groups import axon_and_nccl  # bench/, beside this script

COLLS = ("all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "broadcast", "all_to_all_single")


class Sweep:
    def __init__(self, nccl, n: int, dev: torch.device):
        self.groups = {"axon": dist.group.WORLD, "nccl": nccl}
        self.n = n
        self.dev = dev

    def call(self, coll: str, nbytes: int, group):
        """A function running `coll` of `nbytes` (a rank's buffer) once on `group`."""
        count = max(nbytes // 4, self.n)
        count -= count % self.n
        x = torch.ones(count, device=self.dev)
        if coll == "all_reduce":
            return lambda: dist.all_reduce(x, group=group)
        if coll == "broadcast":
            return lambda: dist.broadcast(x, src=0, group=group)
        if coll == "all_to_all_single":
            y = torch.empty_like(x)
            return lambda: dist.all_to_all_single(y, x, group=group)
        if coll == "all_gather_into_tensor":
            chunk = count // self.n  # in place: this rank's block of the output
            part = x[dist.get_rank() * chunk:(dist.get_rank() + 1) * chunk]
            return lambda: dist.all_gather_into_tensor(x, part, group=group)
        out = torch.empty(count // self.n, device=self.dev)
        return lambda: dist.reduce_scatter_tensor(out, x, group=group)

    def seconds(self, fn, iters: int) -> float:
        """The slowest rank's time per call over `iters` back-to-back calls."""
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        dist.barrier(group=self.groups["nccl"])
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
        t = torch.tensor([(time.perf_counter() - t0) / iters], device=self.dev)
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.groups["nccl"])
        return float(t)

    def row(self, coll: str, nbytes: int, reps: int) -> dict:
        iters = max(5, min(2000, int(2e9 // max(nbytes, 1)) // 50))  # 2000 calls to 20 KB, then 40 MB a round
        fns = {name: self.call(coll, nbytes, g) for name, g in self.groups.items()}
        best = {name: float("inf") for name in fns}
        for _ in range(reps):
            for name, fn in fns.items():
                best[name] = min(best[name], self.seconds(fn, iters))
        return {"collective": coll, "bytes": nbytes, "axon_us": best["axon"] * 1e6, "nccl_us": best["nccl"] * 1e6,
                "ratio": best["nccl"] / best["axon"]}


class Gpt2Small(torch.nn.Module):
    def __init__(self, vocab=50257, width=768, layers=12, heads=12, seq=512):
        super().__init__()
        self.tokens = torch.nn.Embedding(vocab, width)
        self.positions = torch.nn.Embedding(seq, width)
        layer = torch.nn.TransformerEncoderLayer(width, heads, 4 * width, dropout=0.0, activation="gelu",
                                                 batch_first=True, norm_first=True)
        self.blocks = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(width)
        self.head = torch.nn.Linear(width, vocab, bias=False)
        self.head.weight = self.tokens.weight  # tied, as GPT-2
        self.register_buffer("mask", torch.nn.Transformer.generate_square_subsequent_mask(seq), persistent=False)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device)
        h = self.tokens(ids) + self.positions(pos)
        h = self.blocks(h, mask=self.mask[:ids.shape[1], :ids.shape[1]], is_causal=True)
        return self.head(self.norm(h))


def ddp_steps_per_second(group, dev, local, steps: int, rank: int) -> tuple[float, int]:
    torch.manual_seed(0)
    model = Gpt2Small().to(dev)
    params = sum(p.numel() for p in model.parameters())
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local], process_group=group)
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-4, fused=True)
    g = torch.Generator(device=dev).manual_seed(rank)
    ids = torch.randint(0, 50257, (4, 512), generator=g, device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = ddp(ids)
        loss = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), ids.flatten())
        loss.backward()
        opt.step()

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return steps / (time.perf_counter() - t0), params


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--min", default="8", help="smallest buffer a rank holds (default 8)")
    ap.add_argument("--max", default="512M", help="largest buffer a rank holds (default 512M)")
    ap.add_argument("--factor", type=int, default=8, help="size step (default 8)")
    ap.add_argument("--reps", type=int, default=3, help="rounds per size, best kept (default 3)")
    ap.add_argument("--colls", default=",".join(COLLS), help="comma-separated subset of " + ", ".join(COLLS))
    ap.add_argument("--ddp-steps", type=int, default=10, help="timed DDP steps per backend; 0 skips (default 10)")
    ap.add_argument("--json", help="write the results here (rank 0)")
    args = ap.parse_args()
    colls = [c for c in args.colls.split(",") if c]
    unknown = sorted(set(colls) - set(COLLS))
    if unknown:
        ap.error(f"unknown collectives {unknown}; choose from {', '.join(COLLS)}")
    try:
        s, largest = parse_size(args.min, "--min"), parse_size(args.max, "--max")
    except UsageError as e:
        ap.error(str(e))
    if args.factor < 2 or args.reps < 1 or args.ddp_steps < 0:
        ap.error(f"--factor must be at least 2 ({args.factor}), --reps at least 1 ({args.reps}), --ddp-steps not "
                 f"negative ({args.ddp_steps})")
    sizes = []
    while s <= largest:
        sizes.append(s)
        s *= args.factor

    dev, rank, n, nccl = axon_and_nccl()
    sweep = Sweep(nccl, n, dev)
    rows = []
    for coll in colls:
        for nbytes in sizes:
            r = sweep.row(coll, nbytes, args.reps)
            rows.append(r)
            if rank == 0:
                print(f"{coll:24s} {size_label(nbytes):>8s}  axon {r['axon_us']:10.1f} us  nccl {r['nccl_us']:10.1f} us  "
                      f"ratio {r['ratio']:5.2f}", flush=True)
    ddp = {}
    if args.ddp_steps:
        # Alternating rounds, the best of each kept: one backend's round does not get the GPU's
        # warm clocks and the allocator's cache that the other's left behind.
        ddp = {"axon": 0.0, "nccl": 0.0}
        for _ in range(args.reps):
            for name, group in (("axon", None), ("nccl", nccl)):
                sps, params = ddp_steps_per_second(group, dev, dev.index, args.ddp_steps, rank)
                gc.collect()  # the round's model, DDP and optimizer, before the next round allocates its own
                torch.cuda.empty_cache()
                ddp[name] = max(ddp[name], sps)
        ddp["ratio"] = ddp["axon"] / ddp["nccl"]
        ddp["params"] = params
        if rank == 0:
            print(f"DDP step, GPT-2-small-sized ({params / 1e6:.0f} M parameters, batch 4 x 512 a rank, {n} ranks): "
                  f"axon {ddp['axon']:.2f} steps/s, nccl {ddp['nccl']:.2f} steps/s, ratio {ddp['ratio']:.3f}",
                  flush=True)
    if rank == 0 and args.json:
        with open(args.json, "w") as f:
            json.dump({"ranks": n, "device": torch.cuda.get_device_name(dev), "torch": torch.__version__,
                       "nccl": ".".join(map(str, torch.cuda.nccl.version())), "rows": rows, "ddp": ddp}, f, indent=1)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
