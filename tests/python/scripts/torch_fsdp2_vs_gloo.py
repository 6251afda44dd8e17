"""FSDP2 (fully_shard) and DTensor through the backend "axon" on CPU tensors, against the same
through gloo in the same processes: 10 training steps whose full weights must be equal, and a
DTensor sharded, redistributed and reduced. Argument "no-backend": groups register no c10d
Backend (as on a torch without Python ones). Run under `axon run -n N`; prints "fsdp2 and dtensor
match gloo"."""

import sys

import torch
import torch.distributed as dist

import axon.torch  # registers "axon"

if "no-backend" in sys.argv:  # the way of a torch without Python c10d Backends (2.11)
    axon.torch._group.PYTHON_BACKENDS = False

dist.init_process_group("axon")

from torch.distributed.device_mesh import DeviceMesh  # noqa: E402
from torch.distributed.fsdp import fully_shard  # noqa: E402
from torch.distributed.tensor import Replicate, Shard, distribute_tensor  # noqa: E402

rank, n = dist.get_rank(), dist.get_world_size()
gloo = dist.new_group(backend="gloo")


def train(group, steps=10):
    torch.manual_seed(0)
    model = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.GELU()) for _ in range(3)])
    mesh = DeviceMesh.from_group(group, "cpu")
    for layer in model:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = torch.Generator().manual_seed(200 + rank)
    for _ in range(steps):
        x = torch.randn(8, 32, generator=data)
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()
    return [p.full_tensor().detach().clone() for p in model.parameters()]


def dtensor(group):
    mesh = DeviceMesh.from_group(group, "cpu")
    full = torch.arange(4.0 * n * 3).reshape(4 * n, 3)
    d = distribute_tensor(full, mesh, [Shard(0)])
    assert d.to_local().shape == (4, 3), d.to_local().shape
    back = d.redistribute(mesh, [Replicate()]).to_local()  # an all_gather
    total = (d * (rank + 1)).sum()  # a partial sum reduced across the mesh
    return back, total.full_tensor()


mine, ref = train(dist.group.WORLD), train(gloo)
moved = max((a - b).abs().max().item() for a, b in zip(mine, train(gloo, steps=0)))
assert moved > 1e-3, f"the training did not change the weights ({moved})"
for a, b in zip(mine, ref):
    assert torch.allclose(a, b, rtol=1e-6, atol=1e-7), f"FSDP2 weights differ from gloo's by {(a - b).abs().max()}"
(back, total), (back_ref, total_ref) = dtensor(dist.group.WORLD), dtensor(gloo)
assert torch.equal(back, torch.arange(4.0 * n * 3).reshape(4 * n, 3)), back
assert torch.equal(back, back_ref) and torch.equal(total, total_ref), (total, total_ref)
dist.destroy_process_group()
print(f"fsdp2 and dtensor match gloo (weights moved {moved:.3g})", flush=True)
