"""GPU cases for a world of one, each in a fresh process: `python gpu_single_pe.py CASE`.

test_gpu.py runs every case in its own process (AXON_BACKEND=gpu): a case that loses its CUDA
context, or crashes, cannot take the others with it, and each starts from axon's first init.
Prints "ok CASE" on success; exits with 3 after "SKIP: why" when a package it needs is missing.
"""

from __future__ import annotations

import contextlib
import re
import sys

import numpy as np

import axon


@contextlib.contextmanager
def raises(exc, match):
    try:
        yield
    except exc as e:
        assert re.search(match, str(e)), f"{type(e).__name__}: {e!r} does not match {match!r}"
        return
    raise AssertionError(f"no {exc.__name__} raised (expected one matching {match!r})")


def need(module):
    try:
        return __import__(module)
    except ImportError as e:
        print(f"SKIP: {module} is not installed ({e})")
        sys.exit(3)


def torch_on_axon_device():
    torch = need("torch")
    dev = torch.device("cuda", axon.gpu_device())
    torch.cuda.set_device(dev)
    return torch, dev


def case_queries():
    assert axon.gpu_enabled() and axon.gpu_unavailable_reason() == ""
    assert axon.gpu_device() >= 0
    assert axon.gpu_peer_reachable(0)
    x = axon.empty((3, 5), np.float16)
    h = axon.empty(7, np.int8, device="host")
    assert isinstance(x, axon.SymmetricGpuArray) and isinstance(h, np.ndarray)
    assert (x.shape, x.dtype, x.size, x.nbytes, x.device) == ((3, 5), np.float16, 15, 30, axon.gpu_device())
    assert axon.is_symmetric(x) and axon.is_symmetric(h)
    assert axon._axon.heap_kind(x.ptr) == "gpu"
    assert axon._axon.heap_kind(h.__array_interface__["data"][0]) == "host"
    gpu_stats, host_stats = axon.heap_stats(), axon.host_heap_stats()
    assert gpu_stats["allocations"] >= 2 and host_stats["allocations"] >= 2, (gpu_stats, host_stats)
    assert gpu_stats["in_use_bytes"] >= 30 and host_stats["in_use_bytes"] >= 7
    assert x.__dlpack_device__() == (2, axon.gpu_device())
    axon.free(h)
    axon.free(x)


def case_torch_views():
    torch, dev = torch_on_axon_device()
    x = axon.zeros((64, 33), np.float32)
    t = torch.from_dlpack(x)
    assert t.data_ptr() == x.ptr and t.device == dev and tuple(t.shape) == (64, 33)
    assert t.dtype == torch.float32 and t.is_contiguous()
    c = torch.as_tensor(x, device=dev)  # CUDA Array Interface
    assert c.data_ptr() == x.ptr
    assert not t.any()
    t.copy_(torch.arange(64 * 33, dtype=torch.float32, device=dev).reshape(64, 33))
    torch.cuda.synchronize()
    assert np.array_equal(x.to_numpy(), np.arange(64 * 33, dtype=np.float32).reshape(64, 33))
    x.copy_from(np.full((64, 33), 3.0))
    assert bool((c == 3).all())
    assert torch.from_dlpack(x[10]).data_ptr() == x.ptr + 10 * 33 * 4
    assert "dltensor_versioned" in repr(x.__dlpack__(max_version=(1, 0)))
    for dtype, tdtype in ((np.bool_, torch.bool), (np.uint8, torch.uint8), (np.int16, torch.int16),
                          (np.float16, torch.float16), (np.float64, torch.float64),
                          (np.complex64, torch.complex64), (np.int64, torch.int64)):
        y = axon.zeros(5, dtype)
        assert torch.from_dlpack(y).dtype == tdtype, dtype
        axon.free(y)
    del t, c
    axon.free(x)


def case_cupy_views():
    cupy = need("cupy")
    cupy.cuda.Device(axon.gpu_device()).use()
    x = axon.zeros(1000, np.int64)
    a = cupy.asarray(x)
    b = cupy.from_dlpack(x)
    assert a.data.ptr == x.ptr and b.data.ptr == x.ptr and a.dtype == np.int64
    a[:] = cupy.arange(1000)
    cupy.cuda.Device().synchronize()
    assert np.array_equal(x.to_numpy(), np.arange(1000))
    out = cupy.zeros(1000, dtype=cupy.int64)
    axon.get(out, x, 0)
    assert bool((out == cupy.arange(1000)).all())
    del a, b
    axon.free(x)


def case_zeros_after_dirty_reuse():
    torch, _ = torch_on_axon_device()
    junk = axon.empty(3 << 20, np.uint8)
    torch.from_dlpack(junk).fill_(0xFF)
    torch.cuda.synchronize()
    axon.free(junk)
    z = axon.zeros(3 << 20, np.uint8)
    assert not torch.from_dlpack(z).any()
    assert not z.to_numpy().any()
    axon.free(z)


def case_local_buffers_and_scalars():
    torch, dev = torch_on_axon_device()
    x = axon.zeros(256, np.int32)
    src = torch.arange(256, dtype=torch.int32, device=dev)
    torch.cuda.synchronize()
    axon.put(x, src, 0)
    out = torch.zeros(256, dtype=torch.int32, device=dev)
    axon.get(out, x, 0)
    assert torch.equal(out, src)
    # A host heap (pinned) array as the local side, and as the symmetric side.
    h = axon.zeros(256, np.int32, device="host")
    axon.get(h, x, 0)
    assert np.array_equal(h, np.arange(256))
    h[:] = 0
    axon.put(h, x, 0)
    assert np.array_equal(h, np.arange(256))
    axon.p(x[7], -7, 0)
    assert axon.g(x[7], 0) == -7 and isinstance(axon.g(x[7], 0), np.int32)
    # A torch view of the heap is a symmetric argument too.
    tv = torch.from_dlpack(x)[100:110]
    axon.put(tv, torch.full((10,), 9, dtype=torch.int32, device=dev), 0)
    assert (x.to_numpy()[100:110] == 9).all()
    w = axon.zeros(2, np.uint64)
    assert axon.atomic_fetch_add(w, 5, 0) == 0 and axon.atomic_compare_swap(w[1:], 0, 3, 0) == 0
    assert list(w.to_numpy()) == [5, 3]
    axon.signal_op(w, 11, "set", 0)
    assert axon.signal_wait_until(w, "eq", 11) == 11 and axon.signal_fetch(w) == 11
    for a in (w, h, x):
        axon.free(a)


def case_bad_inputs():
    torch, dev = torch_on_axon_device()
    x = axon.zeros((8, 8), np.float32)
    t = torch.zeros((8, 16), device=dev)
    with raises(axon.InvalidArgumentError, "axon.put: src must be C-contiguous"):
        axon.put(x, t[:, ::2], 0)
    with raises(axon.InvalidArgumentError, "axon.get: dest must be C-contiguous"):
        axon.get(t.t(), x, 0)
    with raises(axon.InvalidArgumentError, "__cuda_array_interface__ failed"):
        axon.put(x, torch.zeros((8, 8), device=dev, requires_grad=True), 0)
    with raises(axon.InvalidArgumentError, "dest is float32 but src is float64"):
        axon.put(x, torch.zeros((8, 8), dtype=torch.float64, device=dev), 0)
    with raises(axon.InvalidArgumentError, "axon.put_on_stream: stream must be None, an int"):
        axon.put_on_stream(x, torch.zeros((8, 8), device=dev), 0, stream="default")
    with raises(axon.InvalidArgumentError, "stream is an array"):
        axon.quiet_on_stream(torch.zeros(1, device=dev))
    host_sig = axon.zeros(1, np.uint64, device="host")
    with raises(axon.InvalidArgumentError, "GPU heap"):
        axon.signal_wait_until_on_stream(host_sig, "ge", 1)
    with raises(axon.InvalidArgumentError, "cannot live on the GPU heap"):
        axon.empty(4, np.dtype(">f4"))
    with raises(axon.OutOfBoundsError, "not in the symmetric heap"):
        axon.put(torch.zeros((8, 8), device=dev), x, 0)
    with raises(TypeError, "to_numpy"):
        np.asarray(x)
    axon.free(host_sig)
    axon.free(x)


def case_stream_calls():
    torch, dev = torch_on_axon_device()
    s = torch.cuda.Stream(device=dev)
    data = axon.zeros(4096, np.float32)
    sig = axon.zeros(1, np.uint64)
    with torch.cuda.stream(s):
        src = torch.full((4096,), 2.0, device=dev)
        axon.put_signal_on_stream(data, src, sig, 1, "add", 0, stream=s)
        axon.signal_wait_until_on_stream(sig, "ge", 1, stream=s)
        out = torch.from_dlpack(data) + 1
        back = torch.empty(4096, device=dev)
        axon.get_on_stream(back, data, 0, stream=s)
        axon.quiet_on_stream(s)
        axon.barrier_all_on_stream(s)
    s.synchronize()
    assert bool((out == 3).all()) and bool((back == 2).all())
    assert axon.signal_fetch(sig) == 1
    axon.free(sig)
    axon.free(data)


def case_outlives_finalize():
    torch, dev = torch_on_axon_device()
    x = axon.zeros(10000, np.int32)
    x.copy_from(np.arange(10000))
    early = torch.from_dlpack(x)
    axon.finalize()
    # The GPU heap stays mapped for the array and every tensor made from it.
    expect = torch.arange(10000, dtype=torch.int32, device=dev)
    assert torch.equal(early, expect)
    assert torch.equal(torch.from_dlpack(x), expect)
    assert torch.equal(torch.as_tensor(x, device=dev), expect)
    del x
    early += 1  # the tensor alone keeps the memory alive now
    assert torch.equal(early.cpu(), torch.arange(1, 10001, dtype=torch.int32))


def case_cuda_current_before_init():
    # Not a world-of-one case like the others: torch makes a CUDA context current before axon
    # starts (init() then takes that device), and axon starts a second time after finalize().
    axon.finalize()
    torch = need("torch")
    torch.zeros(1, device="cuda")
    for _ in range(2):
        axon.init()
        assert axon.gpu_device() == torch.cuda.current_device()
        x = axon.zeros(4, np.float32)
        assert torch.from_dlpack(x).device.index == axon.gpu_device()
        axon.free(x)
        axon.finalize()


CASES = {name[len("case_"):]: fn for name, fn in globals().items() if name.startswith("case_")}

if __name__ == "__main__":
    name = sys.argv[1]
    if name not in CASES:
        raise SystemExit(f"unknown case {name!r}; cases: {', '.join(CASES)}")
    axon.init()
    CASES[name]()
    if axon.is_initialized():
        axon.finalize()
    print(f"ok {name}")
