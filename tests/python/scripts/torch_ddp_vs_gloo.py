"""DDP training, 20 steps of a small MLP, once through the backend "axon" and once through gloo in
the same processes (same seeds, same data): the final weights must agree. Run under
`axon run -n 2`; prints "ddp weights match gloo" with the largest difference."""

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import axon.torch  # noqa: F401

dist.init_process_group("axon")
rank, n = dist.get_rank(), dist.get_world_size()
gloo = dist.new_group(backend="gloo")
assert isinstance(dist.group.WORLD, axon.torch.AxonProcessGroup), type(dist.group.WORLD)


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))


def train(group):
    model = mlp()
    ddp = DDP(model, process_group=group)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    data = torch.Generator().manual_seed(100 + rank)  # each rank its own batches
    for _ in range(20):
        x = torch.randn(8, 16, generator=data)
        y = torch.randn(8, 4, generator=data)
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x), y).backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


mine = train(None)  # the default group: axon
ref = train(gloo)
diff = max((a - b).abs().max().item() for a, b in zip(mine, ref))
moved = max((a - b).abs().max().item() for a, b in zip(mine, mlp().parameters()))
assert moved > 1e-3, f"the training did not change the weights ({moved})"
for a, b in zip(mine, ref):
    assert torch.allclose(a, b, rtol=1e-6, atol=1e-7), (a - b).abs().max()
# Both ranks hold the same weights (DDP kept them in step).
w = torch.cat([p.reshape(-1) for p in mine])
other = torch.empty_like(w)
dist.broadcast(other.copy_(w), src=0)
assert torch.equal(other, w), "ranks disagree on the weights"
dist.destroy_process_group()
print(f"ddp weights match gloo (max difference {diff:.3g}, moved {moved:.3g})", flush=True)
