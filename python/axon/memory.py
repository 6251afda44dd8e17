"""Symmetric heap arrays: NumPy arrays whose memory has the same offset on every PE."""

from __future__ import annotations

import math

import numpy as np

from . import _axon
from .errors import InvalidArgumentError

_ALIGNMENT = 64


def address_of(array: np.ndarray) -> int:
    """The address of the first element of `array`."""
    return array.__array_interface__["data"][0]


def empty(shape, dtype=np.float64) -> np.ndarray:
    """Collective: an uninitialised array on the symmetric heap of every PE.

    Every PE must pass the same shape and dtype (the byte count is checked across PEs).
    Release it with axon.free(array), collectively; dropping the last reference does not free it.
    """
    dtype = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise InvalidArgumentError(f"axon.empty: negative dimension in shape {shape}")
    nbytes = math.prod(shape) * dtype.itemsize
    addr = _axon.malloc(nbytes, max(_ALIGNMENT, dtype.alignment))
    if nbytes == 0:
        # OpenSHMEM returns NULL for zero bytes; an empty NumPy array stands in for it.
        return np.empty(shape, dtype)
    return _axon.heap_bytes(addr, nbytes).view(dtype).reshape(shape)


def zeros(shape, dtype=np.float64) -> np.ndarray:
    """Collective: a zero-filled array on the symmetric heap (zeroed on every PE before any returns)."""
    array = empty(shape, dtype)
    array[...] = 0
    _axon.sync_all()
    return array


def free(array: np.ndarray) -> None:
    """Collective: release an array made by axon.empty/zeros. Every PE must free the same array."""
    if array.size == 0:
        _axon.free(0)
        return
    _axon.free(address_of(array))


def is_symmetric(array: np.ndarray) -> bool:
    """Whether `array` lies in this PE's symmetric heap."""
    return _axon.is_symmetric(address_of(array))


def ptr(array: np.ndarray, pe: int) -> int | None:
    """Address at which this process can load/store `array` of PE `pe`, or None if unreachable."""
    addr = _axon.ptr(address_of(array), pe)
    return addr or None


def peer_view(array: np.ndarray, pe: int) -> np.ndarray | None:
    """A NumPy view of PE `pe`'s copy of symmetric `array` (direct load/store), or None."""
    addr = ptr(array, pe)
    if addr is None:
        return None
    if not array.flags.c_contiguous:
        raise InvalidArgumentError("axon.peer_view: the array must be C-contiguous")
    if array.nbytes > 1:
        _axon.ptr(address_of(array) + array.nbytes - 1, pe)  # the end must be in the heap too
    return _axon.heap_bytes(addr, array.nbytes).view(array.dtype).reshape(array.shape)


def heap_stats() -> dict:
    """Mapped bytes, capacity (AXON_HEAP_MAX), bytes in use and live allocations of this PE."""
    return _axon.heap_stats()
