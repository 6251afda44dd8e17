"""The GPU backend from Python: arrays on the symmetric GPU heap, device buffers, CUDA streams.

With the GPU backend on (a GPU was found and AXON_BACKEND is not ``host``), ``axon.empty`` and
``axon.zeros`` return a :class:`SymmetricGpuArray`: device memory at the same heap offset on every
PE. It is no compute array itself; hand it to PyTorch, CuPy or any other DLPack / CUDA Array
Interface consumer, which see the same memory without a copy::

    x = axon.zeros((4, 256), np.float32)        # SymmetricGpuArray
    t = torch.from_dlpack(x)                    # or torch.as_tensor(x, device="cuda")
    c = cupy.asarray(x)                         # or cupy.from_dlpack(x)

Blocking one-sided calls (``axon.put``, ...) do not wait for work queued on your streams:
synchronize the stream that wrote a buffer before passing it (``torch.cuda.synchronize()``), or
use the stream-ordered calls (``axon.put_on_stream``, ...). A local buffer whose
``__cuda_array_interface__`` names a stream (version 3, as CuPy's does) is synchronized on that
stream first, as the interface asks of a consumer.
"""

from __future__ import annotations

import ctypes
import math

import numpy as np

from . import _axon
from ._types import ArrayLike
from .errors import CudaError, InvalidArgumentError, UnsupportedError

__all__ = ["SymmetricGpuArray", "gpu_device", "gpu_enabled", "gpu_peer_reachable", "gpu_unavailable_reason"]

# DLPack device type of CUDA memory (DLDeviceType kDLCUDA).
KDL_CUDA = 2
# DLPack type codes by NumPy dtype kind (DLDataTypeCode).
_DLPACK_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}
# Stream handles of the CUDA Array Interface v3 and of the driver (CU_STREAM_LEGACY).
_LEGACY_STREAM = 1


def gpu_enabled() -> bool:
    """Whether this PE runs the GPU backend (then axon.empty/zeros allocate GPU memory)."""
    return _axon.gpu_enabled()


def gpu_device() -> int:
    """The CUDA ordinal of this PE's GPU. Raises axon.UnsupportedError on the host backend."""
    return _axon.gpu_device()


def gpu_unavailable_reason() -> str:
    """Why the GPU backend is off ("AXON_BACKEND=host", "libcuda.so.1 not found...", ...), or ""."""
    return _axon.gpu_unavailable_reason()


def gpu_peer_reachable(pe: int) -> bool:
    """Whether PE `pe`'s GPU heap is mapped for load/store by this PE's GPU (peer access).

    When it is, SymmetricGpuArray.peer(pe) gives a view that kernels can read and write.
    Raises axon.UnsupportedError on the host backend.
    """
    return _axon.gpu_peer_reachable(pe)


def check_gpu_dtype(dtype: np.dtype, api: str) -> None:
    """Raises unless `dtype` is a native-order bool, integer, float or complex type (DLPack's)."""
    if dtype.kind not in _DLPACK_CODES or not dtype.isnative:
        raise InvalidArgumentError(
            f"axon.{api}: dtype {dtype} cannot live on the GPU heap (bool, integer, float or "
            "complex types in native byte order only)")


class SymmetricGpuArray:
    """A C-contiguous n-d array in the symmetric GPU heap (or a view of a peer's copy of one).

    Made by ``axon.empty(..., device="gpu")`` / ``axon.zeros`` (the default device when the GPU
    backend is on) and released with ``axon.free`` (collectively, like the allocation). It holds
    the address, shape and dtype and exports them without copies:

    * ``__dlpack__`` / ``__dlpack_device__`` for ``torch.from_dlpack``, ``cupy.from_dlpack``, ...
    * ``__cuda_array_interface__`` (v3) for ``torch.as_tensor(x, device="cuda")``,
      ``cupy.asarray``, Numba, ...

    Every one-sided call accepts it, as a symmetric argument or as the local side. The heap's
    mappings stay alive as long as this object or any tensor made from it does, even past
    ``axon.finalize()``; after ``axon.free`` the memory may be handed out again, as with NumPy
    arrays on the host heap.
    """

    __slots__ = ("_ptr", "_shape", "_dtype", "_device", "_pe", "_symmetric", "_owner", "__weakref__")

    def __init__(self, ptr: int, shape, dtype, device: int, owner, *, pe: int, symmetric_ptr: int | None = None):
        """Internal: axon.empty/zeros, views and peer() make these.

        `ptr` is where this process's GPU loads and stores the data; `symmetric_ptr` the address
        of the same data in this PE's heap (differs for a view of a peer's copy); `pe` whose copy
        it is; `owner` keeps the heap mapped.
        """
        self._ptr = int(ptr)
        self._shape = tuple(int(s) for s in shape)
        self._dtype = np.dtype(dtype)
        self._device = int(device)
        self._owner = owner
        self._pe = int(pe)
        self._symmetric = self._ptr if symmetric_ptr is None else int(symmetric_ptr)

    # -- description -----------------------------------------------------------------------

    @property
    def ptr(self) -> int:
        """Address of the first element, as this process's GPU loads and stores it."""
        return self._ptr

    @property
    def shape(self) -> tuple[int, ...]:
        """The array's shape, as NumPy's."""
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        """The element type (a NumPy dtype)."""
        return self._dtype

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self._shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        return math.prod(self._shape)

    @property
    def itemsize(self) -> int:
        """The bytes of one element."""
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        """The bytes of the whole array."""
        return self.size * self._dtype.itemsize

    @property
    def device(self) -> int:
        """The CUDA ordinal of the GPU that holds (or, for a peer view, reaches) the memory."""
        return self._device

    @property
    def pe(self) -> int:
        """Whose copy this is: this PE's for arrays from axon.empty/zeros, PE p's for peer(p)."""
        return self._pe

    @property
    def symmetric_ptr(self) -> int:
        """The address of this data in this PE's heap (what one-sided calls take)."""
        return self._symmetric

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d SymmetricGpuArray")
        return self._shape[0]

    def __repr__(self) -> str:
        where = "" if self._pe == _my_pe_or(self._pe) else f", peer view of PE {self._pe}"
        return (f"SymmetricGpuArray(shape={self._shape}, dtype={self._dtype}, device={self._device}, "
                f"ptr={self._ptr:#x}{where})")

    def __array__(self, *args, **kwargs):
        # An implicit host copy would hide a transfer (and NumPy would otherwise build an object
        # array): say what to call instead, as CuPy does.
        raise TypeError("a SymmetricGpuArray lives in GPU memory: copy it to the host with "
                        ".to_numpy(), or view it with torch.from_dlpack() / cupy.asarray()")

    # -- exchange protocols ----------------------------------------------------------------

    @property
    def __cuda_array_interface__(self) -> dict:
        """CUDA Array Interface v3. "stream" is None: axon's calls on the heap are synchronous
        (or ordered on streams you pass), so a consumer has nothing to wait for."""
        return {
            "shape": self._shape,
            "typestr": self._dtype.str,
            "data": (self._ptr, False),
            "strides": None,
            "version": 3,
            "stream": None,
        }

    def __dlpack_device__(self) -> tuple:
        return (KDL_CUDA, self._device)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule over this memory (no copy); versioned when max_version >= (1, 0).

        `stream` is accepted and needs no action: no work of axon's is pending on this memory
        when the call returns. copy=True and other devices raise BufferError.
        """
        if stream is not None and not isinstance(stream, int):
            raise TypeError(f"__dlpack__: stream must be an int or None, not {type(stream).__name__}")
        kwargs = {}
        if max_version is not None:
            kwargs["max_version"] = tuple(max_version)
        if dl_device is not None:
            kwargs["dl_device"] = tuple(int(v) for v in dl_device)
        if copy is not None:
            kwargs["copy"] = copy
        return self._dlpack_producer().__dlpack__(**kwargs)

    def _dlpack_producer(self):
        code = _DLPACK_CODES[self._dtype.kind]
        return _axon.dlpack_array(self._ptr, list(self._shape), code, self._dtype.itemsize * 8,
                                  self._device, self._owner)

    # -- views -----------------------------------------------------------------------------

    def _view(self, offset: int, shape, pe: int | None = None, ptr: int | None = None,
              symmetric_ptr: int | None = None) -> SymmetricGpuArray:
        return SymmetricGpuArray(
            (self._ptr if ptr is None else ptr) + offset, shape, self._dtype, self._device, self._owner,
            pe=self._pe if pe is None else pe,
            symmetric_ptr=(self._symmetric if symmetric_ptr is None else symmetric_ptr) + offset)

    def __getitem__(self, key) -> SymmetricGpuArray:
        """A view of rows along the first axis: ``x[i]`` or ``x[i:j]`` (step 1).

        Enough to address parts of an array in one-sided calls (``axon.p(x[3], ...)``, a signal
        word ``sig[k:k+1]``); for anything else use torch.from_dlpack(x) or cupy.asarray(x).
        """
        if isinstance(key, tuple) and len(key) == 1:
            key = key[0]
        if not self._shape:
            raise InvalidArgumentError("axon.SymmetricGpuArray: a 0-d array cannot be indexed")
        n = self._shape[0]
        row = math.prod(self._shape[1:]) * self._dtype.itemsize
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            i = int(key)
            if i < 0:
                i += n
            if not 0 <= i < n:
                raise IndexError(f"index {int(key)} is out of bounds for axis 0 with size {n}")
            return self._view(i * row, self._shape[1:])
        if isinstance(key, slice):
            start, stop, step = key.indices(n)
            if step != 1:
                raise InvalidArgumentError(
                    "axon.SymmetricGpuArray: slices must have step 1 (the view must stay contiguous)")
            stop = max(start, stop)
            return self._view(start * row, (stop - start,) + self._shape[1:])
        raise InvalidArgumentError(
            f"axon.SymmetricGpuArray: only an int or a slice of the first axis can index it, not "
            f"{key!r}; use torch.from_dlpack(x) or cupy.asarray(x) for other indexing")

    def peer(self, pe: int) -> SymmetricGpuArray | None:
        """A view of PE `pe`'s copy that this PE's GPU can load and store (kernels, torch, cupy).

        None when that heap is not mapped here (no peer access: see axon.gpu_peer_reachable).
        Writes through it are plain stores: order them with a barrier or a signal, as with
        direct access to host memory.
        """
        if self.nbytes == 0:
            raise InvalidArgumentError("axon.SymmetricGpuArray.peer: the array is empty")
        addr = _axon.ptr(self._symmetric, pe)
        if not addr:
            return None
        if self.nbytes > 1:
            _axon.ptr(self._symmetric + self.nbytes - 1, pe)  # the end must be in the heap too
        return self._view(0, self._shape, pe=pe, ptr=addr, symmetric_ptr=self._symmetric)

    # -- host copies -----------------------------------------------------------------------

    def to_numpy(self) -> np.ndarray:
        """A NumPy copy of the data (of PE `pe`'s copy, for a peer view). Needs axon initialised."""
        out = np.empty(self._shape, self._dtype)
        if out.nbytes:
            _axon.get(out.__array_interface__["data"][0], self._symmetric, out.nbytes, self._pe)
        return out

    def copy_from(self, src: ArrayLike) -> SymmetricGpuArray:
        """Overwrite the data (PE `pe`'s copy, for a peer view) with `src`; returns self.

        `src` may be host data (anything numpy.asarray takes; it is converted to this dtype and
        broadcast to this shape, so a scalar fills), or a device buffer of the same dtype and
        size (a SymmetricGpuArray, a torch CUDA tensor, a CuPy array). Returns when done.
        """
        if isinstance(src, SymmetricGpuArray) or _cuda_array_interface(src, "copy_from", "src") is not None:
            buf = as_buffer(src, "copy_from", "src")
            if buf.dtype != self._dtype:
                raise InvalidArgumentError(f"axon.copy_from: src is {buf.dtype} but the array is {self._dtype}")
            if buf.size != self.size:
                raise InvalidArgumentError(
                    f"axon.copy_from: src has {buf.size} elements but the array {self.size}")
            addr, nbytes = buf.addr, buf.nbytes
        else:
            try:
                host = np.ascontiguousarray(np.broadcast_to(np.asarray(src, dtype=self._dtype), self._shape))
            except (ValueError, TypeError) as e:
                raise InvalidArgumentError(f"axon.copy_from: src does not fit shape {self._shape}: {e}") from None
            addr, nbytes = host.__array_interface__["data"][0], host.nbytes
        if nbytes:
            _axon.put(self._symmetric, addr, nbytes, self._pe)
        return self


def _my_pe_or(default: int) -> int:
    try:
        return _axon.my_pe()
    except Exception:  # noqa: BLE001 - repr must work before init and after finalize
        return default


# -- buffers: what one-sided calls accept -----------------------------------------------------


class Buffer:
    """A contiguous buffer as one-sided calls see it: address, dtype, element count, bytes."""

    __slots__ = ("addr", "dtype", "size", "nbytes")

    def __init__(self, addr: int, dtype: np.dtype, size: int):
        self.addr = addr
        self.dtype = dtype
        self.size = size
        self.nbytes = size * dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize


def _cuda_array_interface(obj, api: str, role: str):
    """obj.__cuda_array_interface__, or None when it has none (a torch CPU tensor has none)."""
    if isinstance(obj, np.ndarray):
        return None
    try:
        return obj.__cuda_array_interface__
    except AttributeError:
        return None
    except Exception as e:  # noqa: BLE001 - torch raises RuntimeError for tensors that need grad
        raise InvalidArgumentError(f"axon.{api}: {role}: its __cuda_array_interface__ failed: {e}") from None


def _c_contiguous(shape, strides, itemsize: int) -> bool:
    if strides is None or math.prod(shape) == 0:
        return True
    expected = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expected:
            return False
        expected *= n
    return True


def as_buffer(obj, api: str, role: str, *, writable: bool = False, stream: int | None = None) -> Buffer:
    """The contiguous buffer behind a one-sided call's argument, with clear errors.

    Takes a NumPy array, a SymmetricGpuArray, or any object with __cuda_array_interface__ (torch
    CUDA tensors, CuPy arrays). `writable`: the call writes into it. `stream`: the handle of the
    call's stream, or None for a blocking call; a CUDA Array Interface stream other than it is
    synchronized first (the interface's rule for consumers).
    """
    if isinstance(obj, SymmetricGpuArray):
        return Buffer(obj.ptr, obj.dtype, obj.size)
    if isinstance(obj, np.ndarray):
        if not obj.flags.c_contiguous:
            raise InvalidArgumentError(f"axon.{api}: {role} must be C-contiguous")
        if writable and not obj.flags.writeable:
            raise InvalidArgumentError(f"axon.{api}: {role} is read-only but the call writes into it")
        return Buffer(obj.__array_interface__["data"][0], obj.dtype, obj.size)
    cai = _cuda_array_interface(obj, api, role)
    if cai is None:
        raise InvalidArgumentError(
            f"axon.{api}: {role} must be a NumPy array, an axon SymmetricGpuArray or a CUDA array "
            f"(__cuda_array_interface__: a torch CUDA tensor, a CuPy array), not {type(obj).__name__}")
    try:
        shape = tuple(int(s) for s in cai["shape"])
        dtype = np.dtype(cai["typestr"])
        data = cai["data"]
        addr, readonly = (0, False) if data is None else data  # None: allowed for zero-size arrays
        addr = int(addr or 0)
        strides = cai.get("strides")
    except (KeyError, TypeError, ValueError) as e:
        raise InvalidArgumentError(f"axon.{api}: {role} has a malformed __cuda_array_interface__: {e!r}") from None
    if cai.get("mask") is not None:
        raise InvalidArgumentError(f"axon.{api}: {role} is a masked CUDA array; masks are not supported")
    if not _c_contiguous(shape, strides, dtype.itemsize):
        raise InvalidArgumentError(f"axon.{api}: {role} must be C-contiguous (strides {tuple(strides)})")
    if writable and readonly:
        raise InvalidArgumentError(f"axon.{api}: {role} is read-only but the call writes into it")
    producer_stream = cai.get("stream") if cai.get("version", 0) >= 3 else None
    if producer_stream is not None:
        producer_stream = int(producer_stream) or _LEGACY_STREAM  # 0 is ambiguous: take the legacy one
        mine = None if stream is None else (stream or _LEGACY_STREAM)
        if producer_stream != mine:
            _synchronize_stream(producer_stream, api, role)
    return Buffer(addr, dtype, math.prod(shape))


# -- CUDA streams ------------------------------------------------------------------------------

_cuda = None


def _synchronize_stream(handle: int, api: str, role: str) -> None:
    """Waits for the work queued on CUDA stream `handle` (cuStreamSynchronize of the driver)."""
    global _cuda
    if _cuda is None:
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as e:
            raise UnsupportedError(
                f"axon.{api}: {role} names CUDA stream {handle:#x} to synchronize on, but the CUDA "
                f"driver cannot be loaded: {e}") from None
        lib.cuStreamSynchronize.argtypes = [ctypes.c_void_p]
        lib.cuStreamSynchronize.restype = ctypes.c_int
        _cuda = lib
    rc = _cuda.cuStreamSynchronize(ctypes.c_void_p(handle))
    if rc != 0:
        raise CudaError(f"axon.{api}: cuStreamSynchronize on the stream of {role} ({handle:#x}) failed: "
                        f"CUresult {rc}")


def _stream_handle(stream, api: str = "stream") -> int:
    """The CUstream handle (an int) of a stream argument.

    None is 0, the legacy default stream. An int is taken as the handle itself. A
    torch.cuda.Stream gives its `cuda_stream`, a CuPy stream its `ptr`, and any object of the
    CUDA stream protocol its `__cuda_stream__()` -> (version, handle).
    """
    if stream is None:
        return 0
    if isinstance(stream, (SymmetricGpuArray, np.ndarray)) or hasattr(type(stream), "__cuda_array_interface__"):
        raise InvalidArgumentError(f"axon.{api}: stream is an array ({type(stream).__name__}), not a CUDA stream")
    source = "the handle"
    if isinstance(stream, bool):
        handle = None
    elif isinstance(stream, (int, np.integer)):
        handle = int(stream)
    elif hasattr(stream, "__cuda_stream__"):
        source = "__cuda_stream__()"
        proto = stream.__cuda_stream__
        proto = proto() if callable(proto) else proto
        if not (isinstance(proto, tuple) and len(proto) == 2):
            raise InvalidArgumentError(
                f"axon.{api}: stream.__cuda_stream__() must return (version, handle), not {proto!r}")
        handle = proto[1]
    elif hasattr(stream, "cuda_stream"):
        source, handle = "stream.cuda_stream", stream.cuda_stream
    elif hasattr(stream, "ptr"):
        source, handle = "stream.ptr", stream.ptr
    else:
        handle = None
    if handle is None or isinstance(handle, bool) or not isinstance(handle, (int, np.integer)):
        if source == "the handle":
            raise InvalidArgumentError(
                f"axon.{api}: stream must be None, an int CUstream handle, a torch.cuda.Stream, a CuPy "
                f"stream or an object with __cuda_stream__(), not {type(stream).__name__}")
        raise InvalidArgumentError(f"axon.{api}: {source} must be an int, not {type(handle).__name__}")
    handle = int(handle)
    if not 0 <= handle < 1 << 64:
        raise InvalidArgumentError(f"axon.{api}: stream handle {handle} is not a CUstream (negative or too large)")
    return handle
