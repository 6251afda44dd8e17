"""Two-sided messages between torch GPU tensors and host arrays, then a staging server in PE 0.

`axon run -n N python gpu_p2p_then_space_server.py CONTACT_FILE` (AXON_BACKEND=gpu). Issue 45
found PE 0 dying with SIGSEGV in `Server(...)` after this exact sequence on 4 GPUs: every pair
exchanges messages of 0 B to 3 MiB with specific tags (GPU to host and host to GPU), then every PE
receives from ANY_SOURCE into GPU memory; then PE 0 starts an in-process server, and a client
puts and gets through it.
"""

import sys

import numpy as np
import torch

import axon
from axon import p2p, space

axon.init()
me, n = axon.my_pe(), axon.n_pes()
assert axon.gpu_enabled(), axon.gpu_unavailable_reason()
dev = torch.device("cuda", axon.gpu_device())
torch.cuda.set_device(dev)
SIZES = [0, 1, 1000, 65536, 1 << 20, 3 << 20]


def payload(src, dst, size):
    return (np.arange(size, dtype=np.uint64) * 7 + src * 131 + dst * 17 + size) % 251


for size in SIZES:
    for other in range(n):
        if other == me:
            continue
        # GPU tensor to a host array (tag names the direction), and host array to a GPU tensor.
        send_gpu = torch.from_numpy(payload(me, other, size).astype(np.uint8)).to(dev)
        send_host = payload(me, other, size).astype(np.uint8) ^ 0x5A
        recv_host = np.zeros(size, np.uint8)
        recv_gpu = torch.zeros(size, dtype=torch.uint8, device=dev)
        torch.cuda.synchronize()
        reqs = [p2p.irecv(recv_host, other, tag=1000 + size % 997), p2p.irecv(recv_gpu, other, tag=2000 + size % 991),
                p2p.isend(send_gpu, other, tag=1000 + size % 997), p2p.isend(send_host, other, tag=2000 + size % 991)]
        p2p.wait_all(reqs)
        expect = payload(other, me, size).astype(np.uint8)
        assert np.array_equal(recv_host, expect), (me, other, size)
        assert np.array_equal(recv_gpu.cpu().numpy(), expect ^ 0x5A), (me, other, size)
    axon.barrier_all()

# Every PE sends one message to each other PE; receives come from ANY_SOURCE into GPU memory.
size = 3 << 20
sends = [p2p.isend(torch.full((size,), other * 10 + me, dtype=torch.uint8, device=dev), other, tag=7)
         for other in range(n) if other != me]
torch.cuda.synchronize()
seen = set()
for _ in range(n - 1):
    buf = torch.zeros(size, dtype=torch.uint8, device=dev)
    status = p2p.recv(buf, p2p.ANY_SOURCE, tag=7)
    assert status.source != me and status.source not in seen, status
    seen.add(status.source)
    assert bool((buf == me * 10 + status.source).all()), status
p2p.wait_all(sends)
axon.barrier_all()

if me == 0:
    server = space.Server(mem="512M", contact_file=sys.argv[1])
    with space.connect(contact_file=sys.argv[1]) as client:  # the file holds the space's key
        field = np.arange(4096, dtype=np.float32)
        client.define("field", [4096], np.float32)
        client.put("field", 1, [0], field)
        got = client.get("field", 1, [0], [4096])
        assert np.array_equal(got, field)
    server.stop()
axon.barrier_all()
print(f"PE {me}: p2p then space server ok")
axon.finalize()
