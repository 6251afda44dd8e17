"""The backend "axon" on CUDA tensors, beside ProcessGroupNCCL in the same processes: every
collective's result equal to NCCL's (small integers, exact in every dtype whatever the order of
the sums), ProcessGroupNCCL's stream semantics (the call returns before the stream's earlier work
is done; wait() orders the current stream, not the host), capture in a CUDA graph, DDP and FSDP2
training whose weights match the same training through NCCL, a 2-D DeviceMesh with HSDP over it,
and functional collectives.

Run under `axon run -n N` on N GPUs; each part prints "OK <part>", failures print "FAILED <part>:
<why>", and the last line is "torch cuda semantics OK" when every part passed."""

import os
import sys
import time
import traceback

import torch
import torch.distributed as dist

import axon.torch  # registers "axon"

local = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local)
dev = torch.device("cuda", local)
dist.init_process_group("axon", device_id=dev)  # the GPU named, as NCCL users write it
rank, n = dist.get_rank(), dist.get_world_size()
nccl = dist.new_group(backend="nccl")


def small_ints(count, dtype, salt=0):
    g = torch.Generator(device=dev).manual_seed(1000 * salt + rank)
    return torch.randint(-8, 9, (count,), generator=g, device=dev).to(dtype)


def equal(got, want, what):
    if not torch.equal(got, want):
        bad = (got != want).nonzero()
        i = int(bad[0]) if bad.numel() else -1
        raise AssertionError(f"{what}: {bad.numel()} elements differ from NCCL's, first at {i}: "
                             f"{got.flatten()[i].item()} vs {want.flatten()[i].item()}")


def against_nccl():
    """Each collective, in place and out of place, three dtypes, sizes from one element to 64 MiB."""
    for count in (1, 1000, (1 << 16) + 4 * 3, 1 << 22, 1 << 24):
        for dtype in (torch.float32, torch.bfloat16, torch.int32):
            if count == 1 << 24 and dtype != torch.float32:
                continue
            what = f"{count} x {dtype}"
            x = small_ints(count, dtype)
            for op in (dist.ReduceOp.SUM, dist.ReduceOp.MAX):
                a, b = x.clone(), x.clone()
                dist.all_reduce(a, op=op)
                dist.all_reduce(b, op=op, group=nccl)
                equal(a, b, f"all_reduce {op} {what}")
            a, b = x.clone(), x.clone()
            dist.broadcast(a, src=n - 1)
            dist.broadcast(b, src=n - 1, group=nccl)
            equal(a, b, f"broadcast {what}")
            a, b = x.clone(), x.clone()
            dist.reduce(a, dst=n - 1)
            dist.reduce(b, dst=n - 1, group=nccl)
            equal(a, b, f"reduce {what}")
            a, b = torch.empty(n * count, dtype=dtype, device=dev), torch.empty(n * count, dtype=dtype, device=dev)
            dist.all_gather_into_tensor(a, x)
            dist.all_gather_into_tensor(b, x, group=nccl)
            equal(a, b, f"all_gather_into_tensor {what}")
            inplace = small_ints(n * count, dtype, salt=1)
            dist.all_gather_into_tensor(inplace, inplace[rank * count:(rank + 1) * count])  # in place
            equal(inplace, _gathered(count, dtype), f"all_gather_into_tensor in place {what}")
            y = small_ints(n * count, dtype, salt=2)
            a, b = torch.empty(count, dtype=dtype, device=dev), torch.empty(count, dtype=dtype, device=dev)
            dist.reduce_scatter_tensor(a, y)
            dist.reduce_scatter_tensor(b, y, group=nccl)
            equal(a, b, f"reduce_scatter_tensor {what}")
            a, b = torch.empty_like(y), torch.empty_like(y)
            dist.all_to_all_single(a, y)
            dist.all_to_all_single(b, y, group=nccl)
            equal(a, b, f"all_to_all_single {what}")


def _gathered(count, dtype):
    """What an in-place all_gather of each rank's block of `t` gives, through NCCL."""
    out = torch.empty(n * count, dtype=dtype, device=dev)
    dist.all_gather_into_tensor(out, small_ints(n * count, dtype, salt=1)[rank * count:(rank + 1) * count].clone(),
                                group=nccl)
    return out


def stream_semantics():
    """The call returns while the stream's earlier work runs; wait() makes another stream wait.
    Every rank makes every call before any check fails, so that one rank's failure does not
    leave the others' calls unmatched."""
    problems = []
    returned, done_early, query_s, waited, y, completed = _behind_a_slow_stream(None)
    ref = _behind_a_slow_stream(nccl)
    print(f"rank {rank}: behind a {waited:.3f} s stream: axon's call returned in {returned * 1e6:.0f} us, "
          f"is_completed() {done_early} in {query_s * 1e6:.0f} us; NCCL's in {ref[0] * 1e6:.0f} us, "
          f"is_completed() {ref[1]} in {ref[2] * 1e6:.0f} us", flush=True)
    want = 2.0 * n * (n + 1) / 2
    if done_early and not ref[1]:
        problems.append(f"the all_reduce reported completion before the stream's earlier work ran "
                        f"(is_completed() took {query_s:.3f} s)")
    if returned > 0.1:
        problems.append(f"all_reduce(async_op=True) took {returned:.3f} s on the host: it waited for the GPU")
    if not torch.all(y == want):
        problems.append(f"after wait(): {y[:4].tolist()} want {want}")
    if not completed:
        problems.append("not completed after torch.cuda.synchronize()")
    # A synchronous call on the current stream after a slow kernel: ordered, no host wait needed.
    z = torch.full((4096,), 1.0, device=dev)
    torch.cuda._sleep(100_000_000)
    z.add_(rank)
    dist.all_reduce(z)
    if not torch.all(z.cpu() == n + n * (n - 1) / 2):
        problems.append(f"all_reduce after a slow kernel: {z[:4].tolist()}")
    # The future: a callback's work is ordered after the collective.
    w = torch.full((1000,), float(rank), device=dev)
    fut = dist.all_reduce(w, async_op=True).get_future()
    doubled = fut.then(lambda f: f.value()[0] * 2).wait()
    if not torch.all(doubled.cpu() == n * (n - 1)):
        problems.append(f"future's callback: {doubled[:4].tolist()}")
    assert not problems, "; ".join(problems)


def _behind_a_slow_stream(group):
    """An async all_reduce on a side stream behind half a second of GPU work, waited for from
    the default stream: (host time of the call, is_completed() right after, the time that query
    took, the whole time, the result read on the default stream, is_completed() at the end)."""
    side = torch.cuda.Stream()
    x = torch.full((1 << 20,), float(rank + 1), device=dev)
    # The first launch of a kernel loads its module (CUDA's lazy loading), which waits for the
    # device: a first sleep, or a first kernel behind it, would let the sleep end before the call.
    torch.cuda._sleep(1000)
    x.mul_(1)  # the same for the kernel queued behind the sleep
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        t0 = time.perf_counter()
        torch.cuda._sleep(1_000_000_000)  # about half a second of GPU time before x gets its value
        x.mul_(2)
        t1 = time.perf_counter()
        work = dist.all_reduce(x, async_op=True, group=group)
        returned = time.perf_counter() - t1
    t2 = time.perf_counter()
    done_early = work.is_completed()
    query_s = time.perf_counter() - t2
    work.wait()  # the current (default) stream waits for it; the host does not
    y = x.clone()
    torch.cuda.synchronize()
    return returned, done_early, query_s, time.perf_counter() - t0, y, work.is_completed()


def graph_capture():
    x = torch.zeros(1 << 16, device=dev)
    dist.all_reduce(x)  # warm the team outside the capture, as torch advises for any library
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        dist.all_reduce(x)
        x.mul_(2)
        dist.all_reduce(x, op=dist.ReduceOp.MAX)
    problems = []
    for i in range(5):
        x.fill_(rank + i)
        g.replay()
        got = x.cpu()
        want = 2.0 * sum(r + i for r in range(n))
        if not torch.all(got == want):
            problems.append(f"replay {i}: {got[:4].tolist()} want {want}")
    assert not problems, "; ".join(problems)


def _train_ddp(group, steps=20):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8)).to(dev)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local], process_group=group)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    data = torch.Generator(device=dev).manual_seed(100 + rank)
    for _ in range(steps):
        x = torch.randn(32, 64, generator=data, device=dev)
        y = torch.randn(32, 8, generator=data, device=dev)
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


def ddp():
    mine, ref = _train_ddp(None), _train_ddp(nccl)
    for a, b in zip(mine, ref):
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-6), f"DDP weights differ from NCCL's by {(a - b).abs().max()}"


def _train_fsdp2(group, steps=10, mesh=None):
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.fsdp import fully_shard
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(128, 128), torch.nn.GELU())
                                  for _ in range(4)]).to(dev)
    mesh = mesh if mesh is not None else DeviceMesh.from_group(group, "cuda")
    for layer in model:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.Generator(device=dev).manual_seed(200 + rank)
    for _ in range(steps):
        x = torch.randn(16, 128, generator=data, device=dev)
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()
    return [p.full_tensor().detach().clone() for p in model.parameters()]


def fsdp2():
    mine, ref = _train_fsdp2(dist.group.WORLD), _train_fsdp2(nccl)
    for a, b in zip(mine, ref):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-5), f"FSDP2 weights differ from NCCL's by {(a - b).abs().max()}"


def mesh_2d():
    """A 2-D DeviceMesh: each dimension's group reduces over its ranks, and HSDP over the mesh
    trains to FSDP2's weights over the world."""
    if n < 4 or n % 2:
        print(f"rank {rank}: mesh_2d needs an even number of ranks >= 4, not {n}", flush=True)
        return
    from torch.distributed.device_mesh import init_device_mesh
    mesh = init_device_mesh("cuda", (2, n // 2), mesh_dim_names=("replicate", "shard"))
    for dim in ("replicate", "shard"):
        g = mesh.get_group(dim)
        ranks = dist.get_process_group_ranks(g)
        assert rank in ranks and len(ranks) == mesh.size(mesh.mesh_dim_names.index(dim)), (dim, ranks)
        t = torch.tensor([float(rank)], device=dev)
        dist.all_reduce(t, group=g)
        equal(t, torch.tensor([float(sum(ranks))], device=dev), f"all_reduce on the mesh's {dim} group")
        if rank == 0:
            print(f"mesh_2d: the {dim} group is a {type(g).__name__} of ranks {ranks}", flush=True)
    mine, ref = _train_fsdp2(None, mesh=mesh), _train_fsdp2(dist.group.WORLD)
    for a, b in zip(mine, ref):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-5), f"HSDP weights differ from FSDP2's by {(a - b).abs().max()}"


def functional():
    import warnings

    import torch.distributed._functional_collectives as funcol
    warnings.filterwarnings("ignore", category=FutureWarning)  # torch 2.15 renamed some of them
    x = small_ints(4096, torch.float32)
    want = x.clone()
    dist.all_reduce(want, group=nccl)
    equal(funcol.all_reduce(x, "sum", dist.group.WORLD), want, "funcol.all_reduce")
    g = funcol.all_gather_tensor(x, 0, dist.group.WORLD)
    ref = torch.empty(n * 4096, device=dev)
    dist.all_gather_into_tensor(ref, x, group=nccl)
    equal(g, ref, "funcol.all_gather_tensor")
    # Compiled by inductor: the collective is a node of the graph, run by this backend.
    compiled = torch.compile(lambda v: funcol.all_reduce(v * 2, "sum", dist.group.WORLD) + 1, fullgraph=True)
    equal(compiled(x), want * 2 + 1, "torch.compile'd funcol.all_reduce")


failed = []
for part in (against_nccl, stream_semantics, graph_capture, ddp, fsdp2, mesh_2d, functional):
    try:
        part()
        torch.cuda.synchronize()
        print(f"OK {part.__name__} (rank {rank})", flush=True)
    except Exception as e:  # noqa: BLE001 - every part is tried and reported
        failed.append(part.__name__)
        print(f"FAILED {part.__name__} (rank {rank}): {type(e).__name__}: {e}", flush=True)
        traceback.print_exc()
        if isinstance(e, dist.DistBackendError):
            break  # the group is broken: the later parts cannot run
dist.destroy_process_group()
if failed:
    sys.exit(1)
print("torch cuda semantics OK", flush=True)
