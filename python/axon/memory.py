"""Symmetric heap arrays: memory with the same offset on every PE.

On the host backend these are NumPy arrays. With the GPU backend on, axon.empty/zeros allocate on
the GPU heap by default and return an axon.SymmetricGpuArray (see axon.gpu); device="host" still
gives a NumPy array, on the host heap, pinned for the GPU.
"""

from __future__ import annotations

import math

import numpy as np

from . import _axon
from ._types import ArrayLike, DTypeLike, Shape
from .errors import InvalidArgumentError, UnsupportedError
from .gpu import SymmetricGpuArray, check_gpu_dtype

__all__ = ["empty", "free", "heap_stats", "host_heap_stats", "is_symmetric", "peer_view", "ptr", "zeros"]

_ALIGNMENT = 64
_DEVICES = {"gpu": "gpu", "cuda": "gpu", "host": "host", "cpu": "host"}


def address_of(array) -> int:
    """The address of the first element of `array` (a NumPy array or a SymmetricGpuArray)."""
    if isinstance(array, SymmetricGpuArray):
        return array.ptr
    return array.__array_interface__["data"][0]


def _device(device, api: str) -> str:
    """"gpu" or "host" for a device argument; None picks the GPU heap when the GPU backend is on."""
    if device is None:
        # Before init, take the host path: its call raises the usual NotInitializedError.
        return "gpu" if _axon.is_initialized() and _axon.gpu_enabled() else "host"
    if not isinstance(device, str) or device.lower() not in _DEVICES:
        raise InvalidArgumentError(f"axon.{api}: device must be None, 'gpu' or 'host', not {device!r}")
    where = _DEVICES[device.lower()]
    if where == "gpu" and _axon.is_initialized() and not _axon.gpu_enabled():
        raise UnsupportedError(f"axon.{api}: device='gpu' needs the GPU backend, which is off: "
                               f"{_axon.gpu_unavailable_reason()}")
    return where


def _shape(shape, api: str) -> tuple:
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise InvalidArgumentError(f"axon.{api}: negative dimension in shape {shape}")
    return tuple(int(s) for s in shape)


def empty(shape: Shape, dtype: DTypeLike = np.float64, device: str | None = None) -> np.ndarray | SymmetricGpuArray:
    """Collective: an uninitialised array on the symmetric heap of every PE.

    device: None (the GPU heap when the GPU backend is on, else the host heap), "gpu" (a
    SymmetricGpuArray; raises axon.UnsupportedError on the host backend, with the reason) or
    "host" (a NumPy array; pinned for the GPU when the GPU backend is on).
    Every PE must pass the same shape, dtype and device (the byte count is checked across PEs).
    Release it with axon.free(array), collectively; dropping the last reference does not free it.
    """
    api = "empty"
    dtype = np.dtype(dtype)
    shape = _shape(shape, api)
    where = _device(device, api)
    nbytes = math.prod(shape) * dtype.itemsize
    alignment = max(_ALIGNMENT, dtype.alignment)
    if where == "gpu":
        check_gpu_dtype(dtype, api)
        addr = _axon.malloc(nbytes, alignment)  # the GPU heap: malloc's heap on the GPU backend
        return SymmetricGpuArray(addr, shape, dtype, _axon.gpu_device(), _axon.gpu_heap_owner(),
                                 pe=_axon.my_pe())
    if _axon.is_initialized() and _axon.gpu_enabled():
        addr = _axon.malloc_host(nbytes, alignment)
    else:
        addr = _axon.malloc(nbytes, alignment)
    if nbytes == 0:
        # OpenSHMEM returns NULL for zero bytes; an empty NumPy array stands in for it.
        return np.empty(shape, dtype)
    return _axon.heap_bytes(addr, nbytes).view(dtype).reshape(shape)


def zeros(shape: Shape, dtype: DTypeLike = np.float64, device: str | None = None) -> np.ndarray | SymmetricGpuArray:
    """Collective: a zero-filled array on the symmetric heap (zeroed on every PE before any returns).

    device as for axon.empty.
    """
    array = empty(shape, dtype, device)
    if isinstance(array, SymmetricGpuArray):
        if array.nbytes:
            _axon.memset(array.ptr, 0, array.nbytes)  # on the GPU; returns when done
    else:
        array[...] = 0
    _axon.sync_all()
    return array


def free(array: ArrayLike) -> None:
    """Collective: release an array made by axon.empty/zeros. Every PE must free the same array."""
    if isinstance(array, SymmetricGpuArray) and array.pe != _axon.my_pe():
        raise InvalidArgumentError(
            f"axon.free: the array is a view of PE {array.pe}'s copy; free the array itself")
    if array.size == 0:
        _axon.free(0)
        return
    _axon.free(address_of(array))


def is_symmetric(array: ArrayLike) -> bool:
    """Whether `array` lies in one of this PE's symmetric heaps."""
    return _axon.is_symmetric(address_of(array))


def ptr(array: ArrayLike, pe: int) -> int | None:
    """Address at which this process (host heap) or its GPU (GPU heap) can load/store `array` of
    PE `pe`, or None if unreachable."""
    if isinstance(array, SymmetricGpuArray):
        addr = _axon.ptr(array.symmetric_ptr, pe)
    else:
        addr = _axon.ptr(address_of(array), pe)
    return addr or None


def peer_view(array: ArrayLike, pe: int) -> np.ndarray | SymmetricGpuArray | None:
    """A view of PE `pe`'s copy of symmetric `array` (direct load/store), or None.

    A NumPy view for host heap arrays; for a SymmetricGpuArray, its peer(pe) (GPU load/store).
    """
    if isinstance(array, SymmetricGpuArray):
        return array.peer(pe)
    addr = ptr(array, pe)
    if addr is None:
        return None
    if not array.flags.c_contiguous:
        raise InvalidArgumentError("axon.peer_view: the array must be C-contiguous")
    if array.nbytes > 1:
        _axon.ptr(address_of(array) + array.nbytes - 1, pe)  # the end must be in the heap too
    return _axon.heap_bytes(addr, array.nbytes).view(array.dtype).reshape(array.shape)


def heap_stats() -> dict:
    """Mapped bytes, capacity, bytes in use and live allocations of this PE's default heap.

    The default heap is the one axon.empty/zeros use without a device: the GPU heap
    (AXON_GPU_HEAP_MAX) when the GPU backend is on, else the host heap (AXON_HEAP_MAX).
    """
    return _axon.heap_stats()


def host_heap_stats() -> dict:
    """As heap_stats, for the host heap whatever the backend (device="host" arrays live there)."""
    return _axon.host_heap_stats()
