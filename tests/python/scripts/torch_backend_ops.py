"""Every operation of the torch backend "axon", each checked against a reference computed here
from what every rank contributes (rank-dependent values, so a wrong order or a missed
contribution shows). Run under `axon run -n N` (argument: "axon"), or with torchrun's variables
set by hand (argument: "torchrun"); a second argument "cuda" puts every tensor on this rank's GPU
(the stream-ordered path). Prints "torch backend ops OK" on success."""

import os
import sys

import torch
import torch.distributed as dist

import axon.torch  # registers "axon"

if "no-backend" in sys.argv:  # the way of a torch without Python c10d Backends (2.11)
    axon.torch._group.PYTHON_BACKENDS = False

DEVICE = "cuda" if "cuda" in sys.argv[2:] else "cpu"
if DEVICE == "cuda":
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    torch.set_default_device("cuda")  # every tensor made below, references included
if sys.argv[1:2] == ["mpirun"]:
    # As a script under mpirun (or srun) starts torch: its own rank and size, a TCP rendezvous.
    dist.init_process_group("axon", init_method=os.environ["TEST_INIT_METHOD"],
                            rank=int(os.environ["OMPI_COMM_WORLD_RANK"]),
                            world_size=int(os.environ["OMPI_COMM_WORLD_SIZE"]))
elif DEVICE == "cuda":  # with the GPU named, as NCCL users write it
    dist.init_process_group("axon", device_id=torch.device("cuda", int(os.environ["LOCAL_RANK"])))
else:
    dist.init_process_group("axon")
rank, n = dist.get_rank(), dist.get_world_size()
assert dist.get_backend() == "axon", dist.get_backend()
if sys.argv[1:2] in (["torchrun"], ["mpirun"]):
    import axon
    want = {"torchrun": "torchrun", "mpirun": "openmpi"}[sys.argv[1]]
    assert axon.launcher_name() == want, axon.launcher_name()

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.uint8,
          torch.int8]


def value(r, shape, dtype, salt=0):
    """Rank r's contribution: small integers, exact in every dtype (also after sums of 4 ranks)."""
    k = torch.arange(int(torch.tensor(shape).prod()), dtype=torch.int64).reshape(shape)
    v = (k * 3 + r * 5 + salt) % 7 + 1
    return v.to(dtype)


def check(got, want, what):
    if not torch.equal(got, want):
        raise AssertionError(f"rank {rank}: {what}: got {got.flatten()[:8]} want {want.flatten()[:8]}")


# all_reduce: every op and dtype
ops = {dist.ReduceOp.SUM: lambda xs: sum(xs[1:], xs[0]), dist.ReduceOp.PRODUCT: lambda xs: torch.stack(xs).prod(0),
       dist.ReduceOp.MIN: lambda xs: torch.stack(xs).min(0).values,
       dist.ReduceOp.MAX: lambda xs: torch.stack(xs).max(0).values}
for dtype in DTYPES:
    for op, ref in ops.items():
        t = value(rank, (3, 5), dtype)
        dist.all_reduce(t, op=op)
        want = ref([value(r, (3, 5), torch.float64) for r in range(n)])
        if dtype in (torch.uint8, torch.int8, torch.int32):
            want = want.to(torch.int64).to(dtype)  # wraps like the dtype's own arithmetic
        check(t, want.to(dtype), f"all_reduce {op} {dtype}")
for dtype in (torch.float32, torch.float64, torch.bfloat16):
    t = value(rank, (8,), dtype) * n
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    check(t, sum(value(r, (8,), torch.float64) for r in range(n)).to(dtype), f"all_reduce AVG {dtype}")
    t = value(rank, (8,), dtype)
    dist.all_reduce(t, op=dist._make_nccl_premul_sum(2.0))
    check(t, (2 * sum(value(r, (8,), torch.float64) for r in range(n))).to(dtype), f"premul_sum {dtype}")
# bool through uint8 (sum: or), a non-contiguous tensor (written back in place), async
b = torch.tensor([rank == 0, False, True])
dist.all_reduce(b)
check(b, torch.tensor([True, False, True]), "all_reduce bool")
base = value(rank, (4, 6), torch.float32)
view = base.t()  # not contiguous
dist.all_reduce(view)
check(base, sum(value(r, (4, 6), torch.float32) for r in range(n)), "all_reduce of a non-contiguous view")
t = value(rank, (5,), torch.float32)
work = dist.all_reduce(t, async_op=True)
assert work.wait()
if DEVICE == "cuda":
    torch.cuda.synchronize()  # wait() orders torch's current stream, not the host (as NCCL's)
assert work.is_completed()
fut = work.get_future()
check(fut.wait()[0], sum(value(r, (5,), torch.float32) for r in range(n)), "async all_reduce's future")
# Refused clearly: a dtype axon cannot reduce, a bitwise op, AVG on integers.
# (complex SUM works: torch hands it over as its real view)
c = torch.full((3,), complex(rank, 1), dtype=torch.complex64)
dist.all_reduce(c)
check(c, torch.full((3,), complex(sum(range(n)), n), dtype=torch.complex64), "all_reduce complex64")
for bad, op in ((torch.zeros(3, dtype=torch.int16), dist.ReduceOp.SUM),
                (torch.zeros(3, dtype=torch.float8_e5m2), dist.ReduceOp.MAX),
                (torch.zeros(3, dtype=torch.int32), dist.ReduceOp.BXOR),
                (torch.zeros(3, dtype=torch.int32), dist.ReduceOp.AVG)):
    try:
        dist.all_reduce(bad, op=op)
        raise AssertionError(f"all_reduce of {bad.dtype} with {op} did not fail")
    except ValueError as e:
        assert "all_reduce" in str(e) and str(bad.dtype).replace("torch.", "") in str(e), e

# broadcast and reduce from every root, float8 by bytes
for root in range(n):
    for dtype in DTYPES + [torch.complex64] + ([torch.float8_e4m3fn] if hasattr(torch, "float8_e4m3fn") else []):
        t = value(rank, (7,), torch.float32).to(dtype)
        dist.broadcast(t, src=root)
        check(t.view(torch.uint8), value(root, (7,), torch.float32).to(dtype).view(torch.uint8),
              f"broadcast {dtype} from {root}")
    t = value(rank, (6,), torch.int64)
    dist.reduce(t, dst=root, op=dist.ReduceOp.SUM)
    if rank == root:
        check(t, sum(value(r, (6,), torch.int64) for r in range(n)), f"reduce to {root}")
    else:
        check(t, value(rank, (6,), torch.int64), f"reduce leaves rank {rank}'s tensor")

# all_gather, all_gather_into_tensor
for dtype in DTYPES:
    outs = [torch.empty(2, 3, dtype=dtype) for _ in range(n)]
    dist.all_gather(outs, value(rank, (2, 3), dtype))
    for r in range(n):
        check(outs[r], value(r, (2, 3), dtype), f"all_gather {dtype} block {r}")
    out = torch.empty(n * 4, dtype=dtype)
    dist.all_gather_into_tensor(out, value(rank, (4,), dtype))
    check(out, torch.cat([value(r, (4,), dtype) for r in range(n)]), f"all_gather_into_tensor {dtype}")
    out = torch.zeros(n * 4, dtype=dtype)
    out[4 * rank:4 * rank + 4] = value(rank, (4,), dtype)
    dist.all_gather_into_tensor(out, out[4 * rank:4 * rank + 4])  # in place: the input is this rank's block
    check(out, torch.cat([value(r, (4,), dtype) for r in range(n)]), f"all_gather_into_tensor in place {dtype}")

# reduce_scatter, reduce_scatter_tensor
for dtype in (torch.float32, torch.bfloat16, torch.int64):
    ins = [value(rank, (3,), dtype, salt=j) for j in range(n)]
    out = torch.empty(3, dtype=dtype)
    dist.reduce_scatter(out, ins)
    check(out, sum(value(r, (3,), torch.float64, salt=rank) for r in range(n)).to(dtype), f"reduce_scatter {dtype}")
    out = torch.empty(2, dtype=dtype)
    dist.reduce_scatter_tensor(out, value(rank, (2 * n,), dtype), op=dist.ReduceOp.MAX)
    want = torch.stack([value(r, (2 * n,), torch.float64) for r in range(n)]).max(0).values[2 * rank:2 * rank + 2]
    check(out, want.to(dtype), f"reduce_scatter_tensor MAX {dtype}")

# torch's coalescing manager, without and with a device (then torch brackets the calls with
# _start/_end_coalescing): the calls inside run as one coalesced call, in order.
for device in (None, torch.device(DEVICE)):
    a, b = value(rank, (3,), torch.float32), value(rank, (5,), torch.float32, salt=1)
    with dist._coalescing_manager(device=device, async_ops=True) as cm:
        dist.all_reduce(a)
        dist.all_reduce(b)
    cm.wait()
    check(a, sum(value(r, (3,), torch.float32) for r in range(n)), f"coalesced all_reduce (device {device})")
    check(b, sum(value(r, (5,), torch.float32, salt=1) for r in range(n)), f"coalesced all_reduce 2 (device {device})")
    outs = [torch.empty(2 * n), torch.empty(3 * n)]
    with dist._coalescing_manager(device=device):
        dist.all_gather_into_tensor(outs[0], value(rank, (2,), torch.float32))
        dist.all_gather_into_tensor(outs[1], value(rank, (3,), torch.float32, salt=2))
    check(outs[0], torch.cat([value(r, (2,), torch.float32) for r in range(n)]), f"coalesced all_gather ({device})")
    check(outs[1], torch.cat([value(r, (3,), torch.float32, salt=2) for r in range(n)]), f"coalesced all_gather 2 ({device})")
    outs = [torch.empty(2), torch.empty(1)]
    with dist._coalescing_manager(device=device):
        dist.reduce_scatter_tensor(outs[0], value(rank, (2 * n,), torch.float32))
        dist.reduce_scatter_tensor(outs[1], value(rank, (n,), torch.float32, salt=3))
    check(outs[0], sum(value(r, (2 * n,), torch.float32) for r in range(n))[2 * rank:2 * rank + 2],
          f"coalesced reduce_scatter ({device})")
    check(outs[1], sum(value(r, (n,), torch.float32, salt=3) for r in range(n))[rank:rank + 1],
          f"coalesced reduce_scatter 2 ({device})")

# all_to_all_single: even, and uneven splits (rank r sends r + j + 1 rows to rank j)
t = torch.arange(n * 2, dtype=torch.float32) + 100 * rank
out = torch.empty(n * 2)
dist.all_to_all_single(out, t)
check(out, torch.cat([torch.arange(2 * rank, 2 * rank + 2, dtype=torch.float32) + 100 * r for r in range(n)]),
      "all_to_all_single even")
send = [rank + j + 1 for j in range(n)]
recv = [r + rank + 1 for r in range(n)]
rows = [torch.full((k, 3), float(100 * rank + j)) for j, k in enumerate(send)]
out = torch.empty(sum(recv), 3)
dist.all_to_all_single(out, torch.cat(rows), output_split_sizes=recv, input_split_sizes=send)
check(out, torch.cat([torch.full((k, 3), float(100 * r + rank)) for r, k in enumerate(recv)]),
      "all_to_all_single uneven")
# all_to_all of lists with different sizes per peer
ins = [torch.full((rank + j + 1,), rank * 10 + j, dtype=torch.int32) for j in range(n)]
outs = [torch.empty(r + rank + 1, dtype=torch.int32) for r in range(n)]
dist.all_to_all(outs, ins)
for r in range(n):
    check(outs[r], torch.full((r + rank + 1,), r * 10 + rank, dtype=torch.int32), f"all_to_all from {r}")

# send/recv with tags (two messages, received in the other order), isend/irecv, batch_isend_irecv
nxt, prv = (rank + 1) % n, (rank - 1) % n
if rank % 2 == 0:
    dist.send(torch.full((4,), float(rank)), dst=nxt, tag=1)
    dist.send(torch.full((4,), float(rank) + 0.5), dst=nxt, tag=2)
    a, b2 = torch.empty(4), torch.empty(4)
    dist.recv(b2, src=prv, tag=2)
    dist.recv(a, src=prv, tag=1)
else:
    a, b2 = torch.empty(4), torch.empty(4)
    dist.recv(b2, src=prv, tag=2)
    dist.recv(a, src=prv, tag=1)
    dist.send(torch.full((4,), float(rank)), dst=nxt, tag=1)
    dist.send(torch.full((4,), float(rank) + 0.5), dst=nxt, tag=2)
check(a, torch.full((4,), float(prv)), "recv tag 1")
check(b2, torch.full((4,), float(prv) + 0.5), "recv tag 2")
big = torch.arange(1 << 18, dtype=torch.float32) + rank  # 1 MiB: a rendezvous message
got = torch.empty_like(big)
reqs = [dist.irecv(got, src=prv), dist.isend(big, dst=nxt)]
for w in reqs:
    w.wait()
check(got, torch.arange(1 << 18, dtype=torch.float32) + prv, "isend/irecv 1 MiB ring")
ops_list = [dist.P2POp(dist.isend, torch.full((3,), rank, dtype=torch.int64), nxt),
            dist.P2POp(dist.irecv, torch.empty(3, dtype=torch.int64), prv)]
for w in dist.batch_isend_irecv(ops_list):
    w.wait()
check(ops_list[1].tensor, torch.full((3,), prv, dtype=torch.int64), "batch_isend_irecv")
if rank == 0:
    srcs = set()
    for _ in range(n - 1):
        t = torch.empty(1, dtype=torch.int64)
        src = dist.recv(t, tag=5)  # any source: torch returns the sender
        assert int(t) == 1000 + src, (int(t), src)
        srcs.add(src)
    assert srcs == set(range(1, n)), srcs
else:
    dist.send(torch.tensor([1000 + rank]), dst=0, tag=5)

# gather and scatter from every root (list and single-tensor forms), and their object forms
for root in range(n):
    for dtype in (torch.float32, torch.bfloat16, torch.int64):
        outs = [torch.empty(3, 2, dtype=dtype) for _ in range(n)] if rank == root else None
        dist.gather(value(rank, (3, 2), dtype), gather_list=outs, dst=root)
        if rank == root:
            for r in range(n):
                check(outs[r], value(r, (3, 2), dtype), f"gather {dtype} to {root}: block {r}")
        out = torch.empty(5, dtype=dtype)
        ins = [value(r, (5,), dtype, salt=root) for r in range(n)] if rank == root else None
        dist.scatter(out, scatter_list=ins, src=root)
        check(out, value(rank, (5,), dtype, salt=root), f"scatter {dtype} from {root}")
    gathered = [None] * n if rank == root else None
    dist.gather_object({"rank": rank}, gathered, dst=root)
    if rank == root:
        assert gathered == [{"rank": r} for r in range(n)], gathered
    got = [None]
    dist.scatter_object_list(got, [f"to {r}" for r in range(n)] if rank == root else None, src=root)
    assert got == [f"to {rank}"], got
# A root whose list has the wrong length is refused on the root, before anything moves.
if n > 1:
    if rank == 0:
        try:
            dist.gather(torch.zeros(2), gather_list=[torch.zeros(2) for _ in range(n + 1)], dst=0)
            raise AssertionError("a gather list of n + 1 tensors was taken")
        except ValueError as e:
            assert "gather" in str(e) and f"needs {n} tensors" in str(e), e
        # The other ranks' blocks wait for the root's receives: a correct call takes them.
        outs = [torch.empty(2) for _ in range(n)]
        dist.gather(torch.full((2,), 0.0), gather_list=outs, dst=0)
        check(torch.stack(outs), torch.stack([torch.full((2,), float(r)) for r in range(n)]), "gather after a refusal")
    else:
        dist.gather(torch.full((2,), float(rank)), dst=0)

# Non-contiguous tensors (a column of a matrix): inputs are read and outputs written back through
# the view, and the matrix's other column is left alone.
def column(k, dtype=torch.float32, fill=None):
    m = torch.full((k, 2), -1, dtype=dtype)
    if fill is not None:
        m[:, 0] = fill
    return m, m[:, 0]


def check_column(m, want, what):
    check(m[:, 0], want, what)
    check(m[:, 1], torch.full_like(m[:, 1], -1), what + " (the other column)")


m, v = column(6, fill=value(rank, (6,), torch.float32))
dist.broadcast(v, src=n - 1)
check_column(m, value(n - 1, (6,), torch.float32), "broadcast into a column")
m, v = column(6, fill=value(rank, (6,), torch.float32))
dist.reduce(v, dst=0)
check_column(m, sum(value(r, (6,), torch.float32) for r in range(n)) if rank == 0 else value(rank, (6,), torch.float32),
             "reduce of a column")
m, v = column(4 * n)
dist.all_gather_into_tensor(v, column(4, fill=value(rank, (4,), torch.float32))[1])
check_column(m, torch.cat([value(r, (4,), torch.float32) for r in range(n)]), "all_gather_into_tensor into a column")
m, v = column(3)
dist.reduce_scatter_tensor(v, column(3 * n, fill=value(rank, (3 * n,), torch.float32))[1])
check_column(m, sum(value(r, (3 * n,), torch.float32) for r in range(n))[3 * rank:3 * rank + 3],
             "reduce_scatter_tensor into a column")
m, v = column(2 * n)
dist.all_to_all_single(v, column(2 * n, fill=torch.arange(2 * n, dtype=torch.float32) + 100 * rank)[1])
check_column(m, torch.cat([torch.arange(2 * rank, 2 * rank + 2, dtype=torch.float32) + 100 * r for r in range(n)]),
             "all_to_all_single into a column")
m, v = column(5)
reqs = [dist.irecv(v, src=prv), dist.isend(column(5, fill=value(rank, (5,), torch.float32))[1], dst=nxt)]
for w in reqs:
    w.wait()
check_column(m, value(prv, (5,), torch.float32), "irecv into a column")
m, v = column(5)
dist.scatter(v, scatter_list=[value(r, (5,), torch.float32) for r in range(n)] if rank == 0 else None, src=0)
check_column(m, value(rank, (5,), torch.float32), "scatter into a column")

# objects, barrier
objs = [None] * n
dist.all_gather_object(objs, {"rank": rank, "name": f"r{rank}"})
assert objs == [{"rank": r, "name": f"r{r}"} for r in range(n)], objs
lst = [f"from {rank}", rank] if rank == 1 % n else [None, None]
dist.broadcast_object_list(lst, src=1 % n)
assert lst == [f"from {1 % n}", 1 % n], lst
dist.barrier()

# subgroups: the even ranks, and the group of the last two in torch's order; world ranks are
# translated to group ranks for roots and peers.
evens = list(range(0, n, 2))
g = dist.new_group(evens, backend="axon")
last = dist.new_group([n - 1, n - 2], backend="axon") if n > 2 else None
if rank in evens:
    t = torch.tensor([float(rank)])
    dist.all_reduce(t, group=g)
    check(t, torch.tensor([float(sum(evens))]), "all_reduce on the even ranks")
    t = torch.tensor([rank])
    dist.broadcast(t, src=evens[-1], group=g)
    check(t, torch.tensor([evens[-1]]), "broadcast from the last even rank (a global rank)")
    outs = [torch.empty(1, dtype=torch.int64) for _ in evens]
    dist.all_gather(outs, torch.tensor([rank]), group=g)
    check(torch.cat(outs), torch.tensor(evens), "all_gather on the even ranks")
if last is not None and rank >= n - 2:
    peer = (n - 1) if rank == n - 2 else (n - 2)
    out = torch.empty(1, dtype=torch.int64)
    reqs = [dist.isend(torch.tensor([rank]), dst=peer, group=last), dist.irecv(out, src=peer, group=last)]
    for w in reqs:
        w.wait()
    check(out, torch.tensor([peer]), "isend/irecv in a subgroup by global ranks")
dist.barrier()
# split_group: two halves of the world, the second in reverse order (older torch sorts each list:
# torch's own rank mapping of the group says which order it kept), and a split that leaves the
# last rank out.
# (torch 2.11 splits only a group it bound to a GPU itself, which a backend's own group is not.)
if hasattr(dist, "split_group") and n >= 2 and axon.torch._group.PYTHON_BACKENDS:
    half = n // 2
    halves = [list(range(half)), list(range(n - 1, half - 1, -1))]
    sg = dist.split_group(split_ranks=halves)
    mine = halves[0] if rank < half else halves[1]
    order = dist.get_process_group_ranks(sg)
    assert sorted(order) == sorted(mine) and sg.size() == len(mine), (order, mine)
    assert dist.get_group_rank(sg, rank) == order.index(rank) == sg.rank(), (order, sg.rank())
    t = torch.tensor([float(rank)])
    dist.all_reduce(t, group=sg)
    check(t, torch.tensor([float(sum(mine))]), "all_reduce on a split")
    t = torch.tensor([rank])
    dist.broadcast(t, src=order[0], group=sg)
    check(t, torch.tensor([order[0]]), "broadcast from a split's group rank 0")
    outs = [torch.empty(1, dtype=torch.int64) for _ in order]
    dist.all_gather(outs, torch.tensor([rank]), group=sg)
    check(torch.cat(outs), torch.tensor(order), "all_gather on a split, in its rank order")
    dist.destroy_process_group(sg)
    partial = dist.split_group(split_ranks=[list(range(n - 1))])
    assert (partial is None or partial == dist.GroupMember.NON_GROUP_MEMBER) == (rank == n - 1), partial
    if partial not in (None, dist.GroupMember.NON_GROUP_MEMBER):
        t = torch.ones(1)
        dist.all_reduce(t, group=partial)
        check(t, torch.tensor([float(n - 1)]), "all_reduce on a split without the last rank")
        dist.destroy_process_group(partial)
    # A list naming a rank the group does not have fails on the ranks that hold it, at once; the
    # others get their group (they do not wait for the failing ranks' part of the split).
    try:
        bad = dist.split_group(split_ranks=[list(range(n - 1)), [n - 1, n]])
        assert rank < n - 1, f"rank {rank} got a group from a list naming rank {n}"
        t = torch.ones(1)
        dist.all_reduce(t, group=bad)
        check(t, torch.tensor([float(n - 1)]), "all_reduce on the valid part of a bad split")
        dist.destroy_process_group(bad)
    except ValueError as e:
        assert rank == n - 1 and f"[{n - 1}, {n}]" in str(e), e
    # Ranks 0 and 1 ask for the same pair in different orders (the others each for themselves):
    # both are told, none gets a group of the wrong order or hangs.
    ask = [0, 1] if rank == 0 else [1, 0] if rank == 1 else [rank]
    try:
        alone = dist.group.WORLD.split_group(ask)
        assert rank > 1, f"rank {rank} got a group from a mismatched split"
        alone.shutdown()
    except ValueError as e:
        assert rank <= 1 and "same split" in str(e), e
dist.barrier()
# init_process_group(device_id=...) naming another GPU than axon's is refused (torch calls this
# at init where it has Python Backends; axon's GPU faked here, as the CPU tests have none).
real_gpu = axon.gpu_device
axon.gpu_device = lambda: 0
try:
    dist.group.WORLD.eager_connect_single_device(torch.device("cuda", 0))
    try:
        dist.group.WORLD.eager_connect_single_device(torch.device("cuda", 1))
        raise AssertionError("device_id cuda:1 was taken for axon's cuda:0")
    except ValueError as e:
        assert "cuda:0" in str(e) and "device_id" in str(e), e
finally:
    axon.gpu_device = real_gpu
# A destroyed group refuses a call that still reaches it (a DeviceMesh's reference, say) rather
# than run it on axon's world team.
gone = dist.new_group(list(range(n)), backend="axon")
gone_pg = gone
dist.destroy_process_group(gone)
try:
    gone_pg.allreduce([torch.ones(2)])
    raise AssertionError("a destroyed group ran an all_reduce")
except axon.NotInitializedError as e:
    assert "destroyed" in str(e), e

# functional collectives (what torch.compile, DeviceMesh and DTensor use): torch's dispatcher
# reaches the group's registered backend; a compiled function through them (aot_eager: traced
# by dynamo and AOT autograd, no C++ compile on the CI machines).
import warnings  # noqa: E402

import torch.distributed._functional_collectives as funcol  # noqa: E402
from torch.distributed.device_mesh import init_device_mesh  # noqa: E402

warnings.filterwarnings("ignore", category=FutureWarning)  # torch 2.15 renamed some of them
x = value(rank, (4 * n,), torch.float32)
check(funcol.all_reduce(x, "sum", dist.group.WORLD), sum(value(r, (4 * n,), torch.float32) for r in range(n)),
      "funcol.all_reduce")
check(funcol.all_gather_tensor(x, 0, dist.group.WORLD), torch.cat([value(r, (4 * n,), torch.float32) for r in range(n)]),
      "funcol.all_gather_tensor")
check(funcol.reduce_scatter_tensor(x, "sum", 0, dist.group.WORLD),
      sum(value(r, (4 * n,), torch.float32) for r in range(n))[4 * rank:4 * rank + 4], "funcol.reduce_scatter_tensor")
mesh = init_device_mesh(DEVICE, (n,))
assert mesh.get_group().group_name == dist.group.WORLD.group_name, mesh
if "compile" in sys.argv:  # seconds of tracing a process: one variant of the test runs it
    compiled = torch.compile(lambda v: funcol.all_reduce(v * 2, "sum", dist.group.WORLD) + 1, backend="aot_eager")
    check(compiled(x), 2 * sum(value(r, (4 * n,), torch.float32) for r in range(n)) + 1, "compiled funcol.all_reduce")
dist.destroy_process_group()
print("torch backend ops OK", flush=True)
