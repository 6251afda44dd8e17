"""Stream-ordered collectives from Python against NumPy: `axon run -n N python gpu_coll_streams.py torch|cupy`.

Every PE draws every PE's input from the same seeded generator, so each checks its own results
against NumPy. The inputs are small integers, so every sum, product, min and max is exact in
every type (float16 and bfloat16 included) whatever the order of the reduction. The calls run on
a torch or CuPy stream (most of them), on the stream's int handle, and on the legacy default
stream (stream=None); buffers are the framework's arrays and axon.SymmetricGpuArrays. Then the
device handle, and the errors of bad arguments on the GPU backend.
"""

import re
import struct
import sys

import numpy as np

import axon

FRAMEWORK = sys.argv[1]
axon.init()
me, n = axon.my_pe(), axon.n_pes()
rng = np.random.default_rng(2024)  # the same on every PE
failures = []
checked = 0

if FRAMEWORK == "torch":
    import torch

    dev = torch.device("cuda", axon.gpu_device())
    torch.cuda.set_device(dev)
    stream = torch.cuda.Stream(device=dev)

    def on_stream():
        return torch.cuda.stream(stream)

    def to_device(a):
        # torch's unsigned types beyond uint8 are partial (no __cuda_array_interface__ for them):
        # such data travels as the signed type of its width, the call names the type (dtype=).
        if a.dtype.kind == "u" and a.dtype.itemsize > 1:
            a = a.view(f"i{a.dtype.itemsize}")
        return torch.from_numpy(a).to(dev)

    def empty(size, like):
        return torch.empty(size, dtype=like.dtype, device=dev)

    def to_host(t, dtype):
        return t.cpu().numpy().view(dtype)

    def handle(s):
        return s.cuda_stream

elif FRAMEWORK == "cupy":
    import cupy

    cupy.cuda.Device(axon.gpu_device()).use()
    stream = cupy.cuda.Stream(non_blocking=True)

    def on_stream():
        return stream

    def to_device(a):
        return cupy.asarray(a)

    def empty(size, like):
        return cupy.empty(size, dtype=like.dtype)

    def to_host(t, dtype):
        return cupy.asnumpy(t).view(dtype)

    def handle(s):
        return s.ptr

else:
    raise SystemExit(f"usage: gpu_coll_streams.py torch|cupy, not {FRAMEWORK!r}")


def bf16_bits(v):
    """Small integers as bfloat16 bits (exact: the low 16 bits of their float32 are zero)."""
    return (np.asarray(v, np.float32).view(np.uint32) >> 16).astype(np.uint16)


def from_bf16(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


DTYPES = ("int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "bfloat16", "float32", "float64")


def storage(dtype):
    return np.dtype(np.uint16) if dtype == "bfloat16" else np.dtype(dtype)


def inputs(dtype, op, shape):
    """Every PE's input (n, *shape) as stored, and as float64 values."""
    unsigned = dtype.startswith("uint")
    if op == "prod":
        vals = rng.choice([1.0, 2.0] if unsigned else [-2.0, -1.0, 1.0, 2.0], (n, *shape))
    else:
        vals = rng.integers(0 if unsigned else -10, 11, (n, *shape)).astype(np.float64)
    stored = bf16_bits(vals) if dtype == "bfloat16" else vals.astype(dtype)
    return stored, vals


def values(got, dtype):
    return from_bf16(got).astype(np.float64) if dtype == "bfloat16" else got.astype(np.float64)


def expect(what, got, dtype, ref):
    global checked
    checked += 1
    if got.shape != ref.shape or not np.array_equal(values(got, dtype), ref):
        failures.append(f"{what} {dtype}: got {values(got, dtype)[:6]}, expected {ref[:6]}")


REDUCE = {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max}

# Reductions: every type and op, on the framework's stream, alternately in place.
for dtype in DTYPES:
    for op in ("sum", "prod", "min", "max"):
        size = int(rng.choice([1, 5, 4099, 70000]))
        stored, vals = inputs(dtype, op, (size,))
        ref = REDUCE[op](vals, axis=0)
        root = int(rng.integers(n))
        with on_stream():
            x = to_device(stored[me].copy())
            if rng.integers(2):
                axon.allreduce_on_stream(x, op=op, stream=stream, dtype=dtype)
                out = x
            else:
                out = empty(size, x)
                assert axon.allreduce_on_stream(x, out, op, stream=stream, dtype=dtype) is out
            r = empty(size, x)
            axon.reduce_on_stream(to_device(stored[me].copy()), r, op, root, stream=stream, dtype=dtype)
            block = int(rng.integers(1, 3000))
            rs_stored, rs_vals = inputs(dtype, op, (n * block,))
            rs = empty(block, x)
            axon.reduce_scatter_on_stream(to_device(rs_stored[me].copy()), rs, op, stream=stream, dtype=dtype)
            got, got_r, got_rs = (to_host(t, storage(dtype)) for t in (out, r, rs))
        expect(f"allreduce {op} size {size}", got, dtype, ref)
        if me == root:
            expect(f"reduce {op} to {root} size {size}", got_r, dtype, ref)
        expect(f"reduce_scatter {op} block {block}", got_rs, dtype,
               REDUCE[op](rs_vals, axis=0)[me * block:(me + 1) * block])

# Data movement: broadcast (in place), allgather, alltoall, on the stream's int handle.
for dtype in DTYPES:
    size = int(rng.integers(1, 20000))
    stored, vals = inputs(dtype, "max", (size,))
    root = int(rng.integers(n))
    block = int(rng.integers(1, 3000))
    moved, moved_vals = inputs(dtype, "max", (n * block,))
    with on_stream():
        b = to_device(stored[me].copy())
        axon.broadcast_on_stream(b, root=root, stream=handle(stream), dtype=dtype)
        src = to_device(moved[me][:block].copy())
        gathered = axon.allgather_on_stream(src, empty(n * block, src), stream=handle(stream), dtype=dtype)
        a2a_src = to_device(moved[me].copy())
        exchanged = axon.alltoall_on_stream(a2a_src, empty(n * block, a2a_src), stream=handle(stream), dtype=dtype)
        got_b, got_g, got_a = (to_host(t, storage(dtype)) for t in (b, gathered, exchanged))
    expect(f"broadcast from {root} size {size}", got_b, dtype, vals[root])
    expect(f"allgather block {block}", got_g, dtype, moved_vals[:, :block].reshape(-1))
    expect(f"alltoall block {block}", got_a, dtype,
           np.concatenate([moved_vals[p][me * block:(me + 1) * block] for p in range(n)]))

# SymmetricGpuArrays on both sides, in-place allgather (src is this PE's block of dst), on the
# legacy default stream: stream=None must order the call on it, not run it on a stream of axon's.
block = 1000
heap = axon.zeros(n * block, np.float32)
if FRAMEWORK == "torch":
    t = torch.from_dlpack(heap)
    t[me * block:(me + 1) * block] = float(me + 1)  # on torch's default (legacy) stream
    axon.allgather_on_stream(t[me * block:(me + 1) * block], heap)  # stream=None: the legacy stream
    total = torch.empty(n * block, device=dev)
    axon.allreduce_on_stream(heap, total)                           # still the legacy stream
    host = total.cpu().numpy()                                      # .cpu() waits for it too
else:
    c = cupy.asarray(heap)
    null = cupy.cuda.Stream.null
    with null:
        c[me * block:(me + 1) * block] = me + 1
        axon.allgather_on_stream(c[me * block:(me + 1) * block], heap, stream=null)
        total = cupy.empty(n * block, np.float32)
        axon.allreduce_on_stream(heap, total, stream=None)
        host = cupy.asnumpy(total)
gathered_ref = np.repeat(np.arange(1, n + 1, dtype=np.float64), block)
expect("in-place allgather on the legacy stream", heap.to_numpy(), "float32", gathered_ref)
expect("allreduce of a SymmetricGpuArray on the legacy stream", host, "float32", n * gathered_ref)

# The device handle: this process's view of the world team's GPU workspace.
h = axon.device_coll_handle()
# Its size is sizeof(axon::device::CollHandle); its first fields are laid out as unpacked here.
assert isinstance(h, bytes) and len(h) >= struct.calcsize("=Qq6i"), (type(h), len(h))
base, stride, size, my_index, my_pe, team_start, team_stride, channels = struct.unpack_from("=Qq6i", h)
assert base and stride > 0 and (size, my_index, my_pe, team_start, team_stride) == (n, me, me, 0, 1), \
    (base, stride, size, my_index, my_pe, team_start, team_stride)
assert channels >= 1, channels
assert axon.device_coll_handle(axon.team_world()) == h

# Bad arguments on the GPU backend: named, never enqueued (every PE refuses alike).
host_array = np.zeros(8, np.float32)
pinned = axon.zeros(8, np.float32, device="host")
x = to_device(np.zeros(8, np.float32))
for call, exc, match in [
    (lambda: axon.allreduce_on_stream(host_array, stream=stream), axon.InvalidArgumentError,
     "src is a NumPy array \\(host memory\\); stream-ordered collectives take GPU memory"),
    (lambda: axon.broadcast_on_stream(x, pinned, stream=stream), axon.InvalidArgumentError, "dst is a NumPy array"),
    (lambda: axon.allgather_on_stream(x, stream=stream), axon.InvalidArgumentError, "pass dst"),
    (lambda: axon.reduce_on_stream(x, root=n, stream=stream), axon.InvalidPeError, f"root {n} is outside the team"),
    (lambda: axon.allreduce_on_stream(x, op="mean", stream=stream), axon.InvalidArgumentError, "op 'mean'"),
    (lambda: axon.allreduce_on_stream(x, stream="s"), axon.InvalidArgumentError, "stream must be None, an int"),
]:
    try:
        call()
        failures.append(f"no {exc.__name__} raised for {match}")
    except exc as e:
        if not re.search(match, str(e)):
            failures.append(f"{type(e).__name__}: {e} does not match {match!r}")

axon.barrier_all()
axon.free(pinned)
axon.free(heap)
axon.finalize()
assert not failures, f"PE {me}: {len(failures)} of {checked} checks failed: {failures[:10]}"
print(f"PE {me}: ok ({checked} stream collective results match NumPy)")
