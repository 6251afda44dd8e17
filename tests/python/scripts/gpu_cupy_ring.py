"""GPU heap arrays with CuPy across PEs: `axon run -n N python gpu_cupy_ring.py` (AXON_BACKEND=gpu).

CuPy arrays as the local side of blocking calls (their __cuda_array_interface__ names CuPy's
current stream, which axon synchronizes before reading), CuPy views of the heap, and the
stream-ordered calls on a CuPy stream.
"""

import cupy
import numpy as np

import axon

axon.init()
me, n = axon.my_pe(), axon.n_pes()
right, left = (me + 1) % n, (me - 1) % n
cupy.cuda.Device(axon.gpu_device()).use()

x = axon.zeros(4096, np.float64)
cx = cupy.asarray(x)
assert cx.data.ptr == x.ptr and cx.shape == (4096,) and cx.dtype == np.float64
assert cupy.from_dlpack(x).data.ptr == x.ptr
assert not cx.any()

# Produced on a non-blocking stream, put while that stream is current: the put waits for it.
producer = cupy.cuda.Stream(non_blocking=True)
with producer:
    mine = cupy.arange(4096, dtype=cupy.float64) * (me + 1)
    axon.put(x, mine, right)
axon.barrier_all()
expect = cupy.arange(4096, dtype=cupy.float64) * (left + 1)
assert bool((cx == expect).all()), cx[:4]
back = cupy.empty_like(mine)
axon.get(back, x, right)
assert bool((back == mine).all())
axon.barrier_all()

# Stream-ordered: data + signal on a CuPy stream, the wait and the consumer on the same stream.
s = cupy.cuda.Stream(non_blocking=True)
data = axon.zeros((8, 128), np.int32)
sig = axon.zeros(1, np.uint64)
with s:
    src = cupy.full((8, 128), 100 + me, dtype=cupy.int32)
    axon.put_signal_on_stream(data, src, sig, 1, "add", right, stream=s)
    axon.signal_wait_until_on_stream(sig, "ge", 1, stream=s)
    doubled = cupy.asarray(data) * 2
    axon.quiet_on_stream(stream=s)
    axon.barrier_all_on_stream(stream=s)
s.synchronize()
assert bool((doubled == 2 * (100 + left)).all()), doubled[0, :4]
assert axon.signal_fetch(sig) == 1
axon.barrier_all()

for a in (sig, data, x):
    axon.free(a)
axon.finalize()
print(f"PE {me}: ok")
