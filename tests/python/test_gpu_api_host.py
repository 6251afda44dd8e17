"""The GPU-facing Python API where there is no GPU backend (AXON_BACKEND=host, or no GPU).

What can be checked without a GPU is: the errors that name why the GPU backend is off, the
stream-ordered calls refusing to run, the parsing of stream arguments and of CUDA Array Interface
buffers, and the SymmetricGpuArray logic (views, protocols, copies) over host heap memory, which
the host backend's transport moves like any other.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import axon
from axon.gpu import SymmetricGpuArray, _stream_handle, as_buffer
from axon.memory import address_of


@pytest.fixture
def host_world(single_pe):
    single_pe.setenv("AXON_BACKEND", "host")
    axon.init()
    yield


def _libcuda_loads() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


class FakeCudaArray:
    """A CUDA Array Interface producer over `array`'s memory (host memory stands in for device
    memory: on the host backend both sides of a copy are host memory)."""

    def __init__(self, array: np.ndarray, *, strides=None, shape=None, readonly=False, version=3,
                 stream=None, mask=None):
        self.array = array
        self.cai = {
            "shape": tuple(array.shape if shape is None else shape),
            "typestr": array.dtype.str,
            "data": (address_of(array), readonly),
            "strides": strides,
            "version": version,
        }
        if version >= 3:
            self.cai["stream"] = stream
        if mask is not None:
            self.cai["mask"] = mask

    @property
    def __cuda_array_interface__(self):
        return self.cai


def test_device_gpu_on_host_backend_names_the_reason(host_world):
    assert not axon.gpu_enabled()
    assert axon.gpu_unavailable_reason() == "AXON_BACKEND=host"
    with pytest.raises(axon.UnsupportedError, match=r"axon.empty: device='gpu' .*AXON_BACKEND=host"):
        axon.empty(16, np.float32, device="gpu")
    with pytest.raises(axon.UnsupportedError, match="AXON_BACKEND=host"):
        axon.zeros((2, 3), device="gpu")
    with pytest.raises(axon.UnsupportedError, match="gpu_device needs the GPU backend.*AXON_BACKEND=host"):
        axon.gpu_device()
    with pytest.raises(axon.UnsupportedError, match="AXON_BACKEND=host"):
        axon.gpu_peer_reachable(0)
    with pytest.raises(axon.InvalidArgumentError, match="device must be None, 'gpu' or 'host'"):
        axon.empty(4, device="tpu")
    # Nothing was allocated by the refused calls: the collective sequence is intact.
    assert axon.heap_stats()["allocations"] == 1


def test_auto_backend_without_a_gpu_says_why(single_pe):
    if _libcuda_loads():
        pytest.skip("this machine has a CUDA driver; the GPU tests cover it")
    single_pe.setenv("AXON_BACKEND", "auto")
    axon.init()
    assert not axon.gpu_enabled()
    assert "libcuda" in axon.gpu_unavailable_reason()
    assert isinstance(axon.zeros(4), np.ndarray)
    with pytest.raises(axon.UnsupportedError, match="libcuda"):
        axon.empty(4, device="gpu")


def test_default_and_host_devices_give_numpy_arrays(host_world):
    a = axon.zeros((3, 4), np.int16)
    b = axon.empty(5, np.float32, device="host")
    c = axon.zeros(2, np.uint8, device="cpu")
    for x in (a, b, c):
        assert isinstance(x, np.ndarray) and axon.is_symmetric(x)
    assert not a.any() and not c.any()
    assert axon.host_heap_stats() == axon.heap_stats()
    assert axon.host_heap_stats()["allocations"] == 4
    for x in (c, b, a):
        axon.free(x)


@pytest.mark.parametrize("call", [
    lambda a, s: axon.put_on_stream(a, np.ones(8, np.uint64), 0),
    lambda a, s: axon.get_on_stream(np.empty(8, np.uint64), a, 0, stream=7),
    lambda a, s: axon.put_signal_on_stream(a, np.ones(8, np.uint64), s, 1, "add", 0),
    lambda a, s: axon.signal_op_on_stream(s, 1, "set", 0),
    lambda a, s: axon.signal_wait_until_on_stream(s, "ge", 1),
    lambda a, s: axon.quiet_on_stream(),
    lambda a, s: axon.barrier_on_stream(axon.team_world()),
    lambda a, s: axon.barrier_all_on_stream(0),
], ids=["put", "get", "put_signal", "signal_op", "signal_wait_until", "quiet", "barrier",
        "barrier_all"])
def test_stream_calls_need_the_gpu_backend(host_world, call):
    a = axon.zeros(8, np.uint64)
    sig = axon.zeros(1, np.uint64)
    with pytest.raises(axon.UnsupportedError, match="_on_stream needs the GPU backend, which is off: AXON_BACKEND=host"):
        call(a, sig)


def test_stream_argument_is_checked_before_the_call(host_world):
    a = axon.zeros(8, np.uint64)
    with pytest.raises(axon.InvalidArgumentError, match="axon.put_on_stream: stream must be None, an int"):
        axon.put_on_stream(a, np.ones(8, np.uint64), 0, stream="default")
    with pytest.raises(axon.InvalidArgumentError, match="axon.quiet_on_stream: stream is an array"):
        axon.quiet_on_stream(a)
    with pytest.raises(axon.InvalidArgumentError, match="src must be C-contiguous"):
        axon.put_on_stream(a, np.ones(16, np.uint64)[::2], 0)


class TorchLikeStream:
    def __init__(self, handle):
        self.cuda_stream = handle


class CupyLikeStream:
    def __init__(self, handle):
        self.ptr = handle


class ProtocolStream:
    def __init__(self, result):
        self.result = result

    def __cuda_stream__(self):
        return self.result


def test_stream_handle_parsing():
    assert _stream_handle(None) == 0
    assert _stream_handle(0) == 0
    assert _stream_handle(0x7F00DEAD) == 0x7F00DEAD
    assert _stream_handle(np.uint64(42)) == 42
    assert _stream_handle(TorchLikeStream(11)) == 11
    assert _stream_handle(CupyLikeStream(13)) == 13
    assert _stream_handle(ProtocolStream((0, 17))) == 17
    # __cuda_stream__ wins over the attributes (it is the protocol).
    both = ProtocolStream((0, 19))
    both.cuda_stream = 5
    assert _stream_handle(both) == 19

    bad = [
        ("s", "stream must be None, an int CUstream handle, a torch.cuda.Stream, a CuPy stream or "
              "an object with __cuda_stream__\\(\\), not str"),
        (1.5, "not float"),
        (True, "not bool"),
        (object(), "not object"),
        (-1, "negative or too large"),
        (1 << 64, "negative or too large"),
        (TorchLikeStream(None), "stream.cuda_stream must be an int, not NoneType"),
        (CupyLikeStream("x"), "stream.ptr must be an int, not str"),
        (ProtocolStream(5), r"__cuda_stream__\(\) must return \(version, handle\)"),
        (ProtocolStream((0, "h")), r"__cuda_stream__\(\) must be an int"),
        (np.zeros(2), "stream is an array"),
        (FakeCudaArray(np.zeros(2)), "stream is an array"),
    ]
    for value, message in bad:
        with pytest.raises(axon.InvalidArgumentError, match=f"axon.barrier_on_stream: .*{message}"):
            _stream_handle(value, "barrier_on_stream")


def test_cuda_array_interface_buffers(host_world):
    x = axon.zeros(16, np.int32)
    src = np.arange(16, dtype=np.int32)
    axon.put(x, FakeCudaArray(src, stream=None), 0)
    assert np.array_equal(x, src)
    out = np.zeros(16, np.int32)
    axon.get(FakeCudaArray(out, version=2), x, 0)
    assert np.array_equal(out, src)
    # C-contiguous strides given explicitly, and odd strides of length-1 axes, are contiguous.
    axon.put(x, FakeCudaArray(src.reshape(4, 4), strides=(16, 4)), 0)
    axon.put(x, FakeCudaArray(src.reshape(1, 16), strides=(999, 4)), 0)
    assert axon.g(FakeCudaArray(x[5:6]), 0) == 5
    axon.p(FakeCudaArray(x[5:6]), -5, 0)
    assert x[5] == -5

    with pytest.raises(axon.InvalidArgumentError, match=r"axon.put: src must be C-contiguous \(strides \(8,\)\)"):
        axon.put(x, FakeCudaArray(src, shape=(8,), strides=(8,)), 0)
    with pytest.raises(axon.InvalidArgumentError, match="axon.get: dest is read-only"):
        axon.get(FakeCudaArray(out, readonly=True), x, 0)
    with pytest.raises(axon.InvalidArgumentError, match="masked"):
        axon.put(x, FakeCudaArray(src, mask=object()), 0)
    with pytest.raises(axon.InvalidArgumentError, match="dest is int32 but src is float32"):
        axon.put(x, FakeCudaArray(np.zeros(16, np.float32)), 0)
    with pytest.raises(axon.InvalidArgumentError, match="src has 17 elements but dest only 16"):
        axon.put(x, FakeCudaArray(np.zeros(17, np.int32)), 0)
    with pytest.raises(axon.InvalidArgumentError, match="dest has 17 elements but src only 16"):
        axon.get(np.zeros(17, np.int32), x, 0)
    with pytest.raises(axon.InvalidArgumentError,
                       match="src must be a NumPy array, an axon SymmetricGpuArray or a CUDA array.*not list"):
        axon.put(x, [1, 2, 3], 0)

    class Broken:
        @property
        def __cuda_array_interface__(self):
            raise RuntimeError("needs grad")

    with pytest.raises(axon.InvalidArgumentError, match="src: its __cuda_array_interface__ failed: needs grad"):
        axon.put(x, Broken(), 0)

    # A producer that names a stream is synchronized on it before a blocking call reads it.
    if not _libcuda_loads():
        with pytest.raises(axon.UnsupportedError, match="names CUDA stream 0x1 to synchronize on"):
            axon.put(x, FakeCudaArray(src, stream=1), 0)
    # ... but not when it is the very stream a stream-ordered call runs on.
    buf = as_buffer(FakeCudaArray(src, stream=1), "put_on_stream", "src", stream=0)
    assert buf.addr == address_of(src) and buf.nbytes == src.nbytes


def _host_backed_gpu_array(shape, dtype):
    """A SymmetricGpuArray over host heap memory: the class's logic, without a GPU."""
    backing = axon.zeros(shape, dtype)
    arr = SymmetricGpuArray(address_of(backing), backing.shape, backing.dtype, 0, backing, pe=axon.my_pe())
    return arr, backing


def test_symmetric_gpu_array_logic(host_world):
    arr, backing = _host_backed_gpu_array((6, 4), np.float32)
    assert (arr.shape, arr.ndim, arr.size, arr.nbytes, arr.itemsize, len(arr)) == ((6, 4), 2, 24, 96, 4, 6)
    assert arr.pe == 0 and arr.device == 0 and arr.symmetric_ptr == arr.ptr
    assert "SymmetricGpuArray(shape=(6, 4), dtype=float32" in repr(arr)

    cai = arr.__cuda_array_interface__
    assert cai == {"shape": (6, 4), "typestr": "<f4", "data": (arr.ptr, False), "strides": None,
                   "version": 3, "stream": None}
    assert arr.__dlpack_device__() == (2, 0)
    assert "dltensor_versioned" in repr(arr.__dlpack__(max_version=(1, 0)))
    assert '"dltensor"' in repr(arr.__dlpack__(stream=1))
    with pytest.raises(BufferError):
        arr.__dlpack__(copy=True)
    with pytest.raises(BufferError):
        arr.__dlpack__(dl_device=(2, 1))
    with pytest.raises(TypeError, match="to_numpy"):
        np.asarray(arr)

    arr.copy_from(np.arange(24).reshape(6, 4))
    assert np.array_equal(backing, np.arange(24, dtype=np.float32).reshape(6, 4))
    assert np.array_equal(arr.to_numpy(), backing)
    arr.copy_from(2.5)
    assert (backing == 2.5).all()
    arr.copy_from(FakeCudaArray(np.ones((6, 4), np.float32)))
    assert (backing == 1).all()
    with pytest.raises(axon.InvalidArgumentError, match="does not fit shape"):
        arr.copy_from(np.zeros(5))
    with pytest.raises(axon.InvalidArgumentError, match="src is float64 but the array is float32"):
        arr.copy_from(FakeCudaArray(np.zeros((6, 4))))

    row = arr[2]
    assert row.shape == (4,) and row.ptr == arr.ptr + 2 * 16
    rows = arr[1:3]
    assert rows.shape == (2, 4) and rows.ptr == arr.ptr + 16
    assert arr[-1].ptr == arr.ptr + 5 * 16 and arr[4:2].shape == (0, 4) and arr[(0,)].shape == (4,)
    with pytest.raises(axon.InvalidArgumentError, match="step 1"):
        arr[::2]
    with pytest.raises(axon.InvalidArgumentError, match="only an int or a slice"):
        arr[0, 1]
    with pytest.raises(IndexError):
        arr[6]

    # One-sided calls take it on either side; element views address single words.
    rows.copy_from([[7, 7, 7, 7], [8, 8, 8, 8]])
    assert (backing[1] == 7).all() and (backing[2] == 8).all()
    axon.p(arr[3][1:2], 42.0, 0)
    assert backing[3, 1] == 42.0 and axon.g(arr[3][1:2], 0) == 42.0
    local = np.zeros(4, np.float32)
    axon.get(local, arr[3], 0)
    assert local[1] == 42.0
    words, _ = _host_backed_gpu_array(4, np.uint64)
    assert axon.atomic_fetch_add(words[2:3], 5, 0) == 0 and axon.atomic_fetch(words[2:3], 0) == 5
    axon.signal_op(words, 3, "set", 0)
    assert axon.signal_fetch(words) == 3 and axon.signal_wait_until(words, "eq", 3) == 3

    view = arr.peer(0)  # a world of one: this PE's own copy
    assert view.ptr == arr.ptr and view.pe == 0 and view.shape == arr.shape
    assert axon.peer_view(arr, 0).ptr == arr.ptr and axon.ptr(arr, 0) == arr.ptr


def test_malloc_host_and_memset_bindings(host_world):
    addr = axon._axon.malloc_host(100, 16)
    assert addr % 64 == 0 and axon._axon.heap_kind(addr) == "host"
    assert axon._axon.heap_kind(address_of(np.zeros(4))) is None
    with pytest.raises(axon.InvalidArgumentError, match="alignment 128 is not a power of two up to 64"):
        axon._axon.malloc_host(100, 128)
    with pytest.raises(axon.InvalidArgumentError, match="alignment 48"):
        axon._axon.malloc_host(100, 48)
    view = axon._axon.heap_bytes(addr, 100)
    axon._axon.memset(addr, 0xAB, 100)
    assert (view == 0xAB).all()
    axon._axon.memset(addr + 10, 0, 20)
    assert (view[10:30] == 0).all() and view[9] == 0xAB and view[30] == 0xAB
    with pytest.raises(axon.OutOfBoundsError, match="runs 1 bytes past its allocation"):
        axon._axon.memset(addr, 0, 101)
    with pytest.raises(axon.OutOfBoundsError, match="not in the symmetric heap"):
        axon._axon.memset(address_of(np.zeros(4)), 0, 4)
    with pytest.raises(axon.InvalidArgumentError, match="is not a byte"):
        axon._axon.memset(addr, 256, 4)
    axon._axon.free(addr)


@pytest.mark.skipif(_libcuda_loads(), reason="a CUDA driver is present: the GPU backend may start")
def test_backend_gpu_without_a_gpu_fails_init_naming_why(single_pe):
    """AXON_BACKEND=gpu where no driver loads: init() refuses with the reason, and the runtime can
    still be started on the host backend afterwards."""
    single_pe.setenv("AXON_BACKEND", "gpu")
    with pytest.raises(axon.UnsupportedError, match=r"AXON_BACKEND=gpu but the GPU backend cannot start: .*libcuda"):
        axon.init()
    assert not axon.is_initialized()
    single_pe.setenv("AXON_BACKEND", "auto")
    axon.init()
    assert not axon.gpu_enabled()
    assert "libcuda" in axon.gpu_unavailable_reason()
    axon.finalize()


# -- stream-ordered collectives and the device handle without a GPU backend --------------------

_STREAM_COLLECTIVES = {
    "allreduce": lambda x, out, s: axon.allreduce_on_stream(x, out, "max", stream=s),
    "allreduce_in_place": lambda x, out, s: axon.allreduce_on_stream(x, stream=s),
    "reduce": lambda x, out, s: axon.reduce_on_stream(x, out, "sum", 0, stream=s),
    "broadcast": lambda x, out, s: axon.broadcast_on_stream(x, root=0, stream=s),
    "allgather": lambda x, out, s: axon.allgather_on_stream(x, out, stream=s),
    "reduce_scatter": lambda x, out, s: axon.reduce_scatter_on_stream(x, out, "min", stream=s),
    "alltoall": lambda x, out, s: axon.alltoall_on_stream(x, out, stream=s),
}


@pytest.mark.parametrize("stream", [None, 0x1234, TorchLikeStream(7)], ids=["none", "int", "torch-like"])
@pytest.mark.parametrize("name", list(_STREAM_COLLECTIVES))
def test_stream_collectives_need_the_gpu_backend(host_world, name, stream):
    # CUDA arrays stand in for device buffers: the arguments pass, the backend refuses.
    x = FakeCudaArray(np.arange(8, dtype=np.float32))
    out = FakeCudaArray(np.zeros(8, np.float32))
    api = name.replace("_in_place", "") + "_on_stream"
    with pytest.raises(axon.UnsupportedError,
                       match=rf"PE 0: {api}: stream-ordered collectives need the GPU backend, which is off "
                             r"\(AXON_BACKEND=host\)"):
        _STREAM_COLLECTIVES[name](x, out, stream)
    # Nothing ran: the blocking form still works on host arrays.
    assert np.array_equal(axon.allreduce(np.arange(4, dtype=np.int32)), np.arange(4))


def test_stream_collectives_check_arguments_first(host_world):
    x = FakeCudaArray(np.zeros(8, np.float32))
    host = np.zeros(8, np.float32)
    device_dtypes = "a torch CUDA tensor, a CuPy array or an axon.SymmetricGpuArray"
    with pytest.raises(axon.InvalidArgumentError,
                       match=rf"axon.allreduce_on_stream: src is a NumPy array \(host memory\); stream-ordered "
                             rf"collectives take GPU memory: {device_dtypes} \(axon.allreduce takes host arrays\)"):
        axon.allreduce_on_stream(host)
    with pytest.raises(axon.InvalidArgumentError, match="axon.broadcast_on_stream: dst is a NumPy array"):
        axon.broadcast_on_stream(x, host)
    with pytest.raises(axon.InvalidArgumentError, match="axon.alltoall_on_stream: src is list; stream-ordered"):
        axon.alltoall_on_stream([1, 2], x)
    with pytest.raises(axon.InvalidArgumentError, match="axon.allgather_on_stream: src is a NumPy array"):
        axon.allgather_on_stream(host)  # the host src is named before the missing dst
    for call, size in ((axon.allgather_on_stream, 8), (axon.reduce_scatter_on_stream, 8),
                       (axon.alltoall_on_stream, 8)):
        with pytest.raises(axon.InvalidArgumentError, match=rf"{call.__name__}: pass dst \(a device array of {size}"):
            call(x)
    with pytest.raises(axon.InvalidArgumentError, match="arrays of int16 are not supported"):
        axon.allreduce_on_stream(FakeCudaArray(np.zeros(4, np.int16)))
    with pytest.raises(axon.InvalidArgumentError, match="dtype bfloat16 does not match the array's 4-byte elements"):
        axon.allreduce_on_stream(x, dtype="bfloat16")
    with pytest.raises(axon.InvalidArgumentError, match="src \\(float32\\) and dst \\(int32\\) differ in dtype"):
        axon.allreduce_on_stream(x, FakeCudaArray(np.zeros(8, np.int32)))
    with pytest.raises(axon.InvalidArgumentError, match="src has 8 elements but dst has 4"):
        axon.reduce_on_stream(x, FakeCudaArray(np.zeros(4, np.float32)))
    with pytest.raises(axon.InvalidArgumentError, match="dst has 4 elements; 1 PEs x 8 need 8"):
        axon.allgather_on_stream(x, FakeCudaArray(np.zeros(4, np.float32)))
    with pytest.raises(axon.InvalidArgumentError, match="op 'mean' is not one of"):
        axon.allreduce_on_stream(x, op="mean")
    with pytest.raises(axon.InvalidArgumentError, match="axon.reduce_on_stream: stream must be None, an int"):
        axon.reduce_on_stream(x, stream="default")
    with pytest.raises(axon.InvalidArgumentError, match="dst is read-only but the call writes into it"):
        axon.allreduce_on_stream(x, FakeCudaArray(np.zeros(8, np.float32), readonly=True))
    # The C++ checks of the call come before the backend's refusal, as for the blocking forms.
    with pytest.raises(axon.InvalidPeError, match="broadcast_on_stream: root 1 is outside the team"):
        axon.broadcast_on_stream(x, root=1)
    with pytest.raises(axon.InvalidPeError, match="reduce_on_stream: root -1 is outside the team"):
        axon.reduce_on_stream(x, root=-1)


def test_device_coll_handle_needs_a_gpu_workspace(host_world):
    with pytest.raises(axon.UnsupportedError,
                       match=r"device_coll_handle: team \S+ has no GPU collective workspace "
                             r"\(the GPU backend is off\)"):
        axon.device_coll_handle()
    with pytest.raises(axon.UnsupportedError, match="no GPU collective workspace"):
        axon.device_coll_handle(axon.team_world())


def test_stream_collectives_are_exported():
    for name in ("allreduce", "reduce", "broadcast", "allgather", "reduce_scatter", "alltoall"):
        assert getattr(axon, f"{name}_on_stream") is getattr(axon.collectives, f"{name}_on_stream")
    assert axon.device_coll_handle is axon.collectives.device_coll_handle
