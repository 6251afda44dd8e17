"""GPU heap arrays with PyTorch across PEs: `axon run -n N python gpu_torch_ring.py` (AXON_BACKEND=gpu).

Blocking one-sided calls with torch CUDA tensors on the local side and SymmetricGpuArrays on the
symmetric side; torch views of the heap through DLPack and the CUDA Array Interface; atomics,
p/g and put_signal on GPU memory; direct stores into a peer's copy; zeros that really are zero.
"""

import numpy as np
import torch

import axon

axon.init()
me, n = axon.my_pe(), axon.n_pes()
right, left = (me + 1) % n, (me - 1) % n
assert axon.gpu_enabled(), axon.gpu_unavailable_reason()
dev = torch.device("cuda", axon.gpu_device())
torch.cuda.set_device(dev)

# put from a torch tensor into a symmetric GPU array, seen by torch on the receiver
x = axon.zeros((4, 256), np.float32)
assert isinstance(x, axon.SymmetricGpuArray) and x.device == axon.gpu_device()
tx = torch.from_dlpack(x)
assert tx.data_ptr() == x.ptr and tx.device == dev and tuple(tx.shape) == (4, 256)
assert torch.as_tensor(x, device=dev).data_ptr() == x.ptr  # CUDA Array Interface, no copy
assert not tx.any()
base = torch.arange(1024, dtype=torch.float32, device=dev).reshape(4, 256)
mine = base + 10000 * me
torch.cuda.synchronize()  # blocking calls do not wait for torch's stream
axon.put(x, mine, right)
axon.barrier_all()
assert torch.equal(tx, base + 10000 * left), tx[0, :4]
got = torch.empty_like(mine)
axon.get(got, x, right)
assert torch.equal(got, mine)
assert np.array_equal(x.to_numpy(), (base + 10000 * left).cpu().numpy())
axon.barrier_all()

# put_signal: data then a signal in the GPU heap; the host waits for it
sig = axon.zeros(1, np.uint64)
payload = axon.zeros(512, np.int32)
src = torch.full((512,), me, dtype=torch.int32, device=dev)
torch.cuda.synchronize()
axon.put_signal(payload, src, sig, 1, axon.SignalOp.ADD, right)
assert axon.signal_wait_until(sig, "ge", 1) == 1
assert (torch.from_dlpack(payload) == left).all()
assert axon.signal_fetch(sig) == 1
axon.barrier_all()

# p / g on one element of a GPU array
cells = axon.zeros(n, np.int64)
axon.p(cells[me], 7 * me + 1, right)
axon.barrier_all()
assert cells.to_numpy()[left] == 7 * left + 1
assert axon.g(cells[left], me) == 7 * left + 1

# atomics on GPU memory: everyone adds on PE 0; compare_swap has exactly one winner
counter = axon.zeros(2, np.int64)
axon.atomic_add(counter, me + 1, 0)
axon.atomic_compare_swap(counter[1:], 0, me + 1, 0)
axon.barrier_all()
assert axon.atomic_fetch(counter, 0) == n * (n + 1) // 2
if me == 0:
    c = counter.to_numpy()
    assert c[0] == n * (n + 1) // 2 and 1 <= c[1] <= n, c
w32 = axon.zeros(1, np.int32)
axon.atomic_set(w32, -3, right)
axon.barrier_all()
assert axon.atomic_fetch_add(w32, -4, me) == -3
assert axon.atomic_swap(w32, 0b1100, me) == -7
assert axon.atomic_fetch_and(w32, 0b0110, me) == 0b1100
assert axon.atomic_fetch_or(w32, 0b0001, me) == 0b0100
assert axon.atomic_fetch_xor(w32, 0b0101, me) == 0b0101
assert torch.from_dlpack(w32).item() == 0
axon.barrier_all()

# direct stores by torch into the right neighbour's copy, through peer()
reachable = axon.gpu_peer_reachable(right)
if torch.cuda.device_count() == 1:
    assert reachable, "PEs sharing one GPU must reach each other's heaps"
wrote = axon.zeros(1, np.int64, device="host")  # pinned host heap: did the left PE write?
assert isinstance(wrote, np.ndarray) and axon.is_symmetric(wrote)
if reachable:
    view = x.peer(right)
    assert view is not None and view.pe == right and view.ptr != x.ptr
    torch.from_dlpack(view)[0, 0] = -1.0 - me
    torch.cuda.synchronize()
    axon.p(wrote, 1, right)
axon.barrier_all()
if wrote[0]:
    assert tx[0, 0].item() == -1.0 - left, tx[0, 0]
print(f"PE {me}: peer reachable: {reachable}")

# zeros really are zero, also where freed memory was dirty
junk = axon.empty(1 << 20, np.uint8)
torch.from_dlpack(junk).fill_(0xAB)
torch.cuda.synchronize()
axon.free(junk)
z = axon.zeros(1 << 20, np.uint8)
print(f"PE {me}: zeros reused the dirty block: {z.ptr == junk.ptr}")
assert not torch.from_dlpack(z).any()
axon.barrier_all()

for a in (z, wrote, w32, counter, cells, payload, sig, x):
    axon.free(a)
axon.finalize()
print(f"PE {me}: ok")
