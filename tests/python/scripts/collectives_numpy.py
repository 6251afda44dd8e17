"""Collectives against a NumPy reference: run as `axon run -n N python collectives_numpy.py [SEED]`.

Every PE draws every PE's input from the same seeded generator, so each checks its own output
against NumPy's reduction of all inputs: random sizes, every dtype and op, in place and out of
place. Integers must match exactly (sums and products wrap, as NumPy's do); float results must
lie within the rounding bound of n - 1 operations; min and max must match exactly.
"""

import sys

import numpy as np

import axon

axon.init()
me, n = axon.my_pe(), axon.n_pes()
seed = int(sys.argv[1]) if len(sys.argv) > 1 else 0
rng = np.random.default_rng(seed)
failures = []
checked = 0

EPS = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8, "float32": 2.0 ** -24, "float64": 2.0 ** -53}


def to_bf16_bits(x):
    """float32 -> bfloat16 bits (uint16), round to nearest even."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16_bits(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def inputs(dtype, op, shape):
    """Every PE's input (n, *shape) as stored, and as float64 values (floats only)."""
    if dtype in ("float16", "bfloat16", "float32", "float64"):
        if op == "prod":
            vals = rng.uniform(0.5, 1.5, (n, *shape))
        else:
            vals = rng.uniform(-100, 100, (n, *shape))
        if dtype == "bfloat16":
            stored = to_bf16_bits(vals)
            return stored, from_bf16_bits(stored).astype(np.float64)
        stored = vals.astype(dtype)
        return stored, stored.astype(np.float64)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, (n, *shape), dtype=dtype, endpoint=True), None


def reference(dtype, op, stored, vals):
    fn = {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max}[op]
    if vals is None:
        return fn(stored, axis=0, dtype=stored.dtype) if op in ("sum", "prod") else fn(stored, axis=0)
    return fn(vals, axis=0)


def check(what, dtype, op, got, stored, vals, select=slice(None)):
    global checked
    checked += 1
    ref = reference(dtype, op, stored, vals)[select]
    if vals is None:
        ok = np.array_equal(got, ref)
    else:
        g = from_bf16_bits(got).astype(np.float64) if dtype == "bfloat16" else got.astype(np.float64)
        if op in ("min", "max"):
            ok = np.array_equal(g, ref)
        else:
            # Each of the n - 1 operations rounds once (relative EPS) on top of rounding the inputs.
            scale = np.sum(np.abs(vals), axis=0)[select] if op == "sum" else np.abs(ref) * 2
            ok = bool(np.all(np.abs(g - ref) <= 2 * n * EPS[dtype] * scale + 1e-300))
    if not ok:
        failures.append(f"{what} {dtype} {op} size {got.size}")


for dtype in axon.collectives.DTYPES:
    np_dtype = np.uint16 if dtype == "bfloat16" else np.dtype(dtype)
    for op in ("sum", "prod", "min", "max"):
        size = int(rng.choice([0, 1, 3, int(rng.integers(2, 5000)), int(rng.integers(5000, 70000))]))
        stored, vals = inputs(dtype, op, (size,))
        # allreduce, alternately in place
        mine = stored[me].copy()
        if rng.integers(2):
            axon.allreduce(mine, op=op, dtype=dtype)
            check("allreduce in place", dtype, op, mine, stored, vals)
        else:
            out = np.zeros_like(mine)
            axon.allreduce(mine, out, op=op, dtype=dtype)
            check("allreduce", dtype, op, out, stored, vals)
        # reduce to a random root
        root = int(rng.integers(n))
        out = np.zeros_like(mine)
        axon.reduce(stored[me].copy(), out, op=op, root=root, dtype=dtype)
        if me == root:
            check(f"reduce to {root}", dtype, op, out, stored, vals)
        # reduce_scatter of n blocks
        block = int(rng.integers(0, 2000))
        stored, vals = inputs(dtype, op, (n * block,))
        got = axon.reduce_scatter(stored[me].copy(), op=op, dtype=dtype)
        check("reduce_scatter", dtype, op, got, stored, vals, slice(me * block, (me + 1) * block))
    # data movement: broadcast, allgather, alltoall
    size = int(rng.integers(0, 20000))
    stored, _ = inputs(dtype, "max", (size,))
    root = int(rng.integers(n))
    buf = stored[me].copy()
    axon.broadcast(buf, root=root, dtype=dtype)
    checked += 1
    if not np.array_equal(buf, stored[root]):
        failures.append(f"broadcast {dtype} from {root} size {size}")
    block = int(rng.integers(0, 3000))
    stored, _ = inputs(dtype, "max", (n * block,))
    gathered = axon.allgather(stored[me][:block].copy(), dtype=dtype)
    checked += 1
    if not np.array_equal(gathered, stored[:, :block].reshape(-1)):
        failures.append(f"allgather {dtype} block {block}")
    exchanged = axon.alltoall(stored[me].copy(), dtype=dtype)
    expect = np.concatenate([stored[p][me * block:(me + 1) * block] for p in range(n)]) if n else None
    checked += 1
    if not np.array_equal(exchanged, expect.astype(np_dtype)):
        failures.append(f"alltoall {dtype} block {block}")

axon.barrier()
axon.finalize()
assert not failures, f"PE {me}: {len(failures)} of {checked} checks failed: {failures[:10]}"
print(f"PE {me}: {checked} collective results match NumPy")
