"""One-sided communication on symmetric NumPy arrays (OpenSHMEM 1.5 semantics).

The remote side (dest of put, src of get, sig, atomic targets) must be an array on the symmetric
heap: PE `pe`'s copy of it is the one read or written. The local side may be any array.
"""

from __future__ import annotations

import enum

import numpy as np

from . import _axon
from .errors import InvalidArgumentError
from .memory import address_of


class SignalOp(enum.IntEnum):
    SET = 0
    ADD = 1


class Cmp(enum.IntEnum):
    EQ = 0
    NE = 1
    GT = 2
    GE = 3
    LT = 4
    LE = 5


class _AtomicOp(enum.IntEnum):
    FETCH = 0
    SET = 1
    SWAP = 2
    COMPARE_SWAP = 3
    FETCH_ADD = 4
    ADD = 5
    FETCH_AND = 6
    FETCH_OR = 7
    FETCH_XOR = 8


_ATOMIC_DTYPES = {np.dtype(t) for t in (np.int32, np.uint32, np.int64, np.uint64)}


def _enum(value, kind, api):
    if isinstance(value, str):
        try:
            return kind[value.upper()]
        except KeyError:
            names = ", ".join(m.name.lower() for m in kind)
            raise InvalidArgumentError(f"axon.{api}: {value!r} is not one of {names}") from None
    return kind(value)


def _contiguous(array, api, role):
    if not isinstance(array, np.ndarray):
        raise InvalidArgumentError(f"axon.{api}: {role} must be a NumPy array, not {type(array).__name__}")
    if not array.flags.c_contiguous:
        raise InvalidArgumentError(f"axon.{api}: {role} must be C-contiguous")
    return array


def _pair(dest, src, api):
    _contiguous(dest, api, "dest")
    _contiguous(src, api, "src")
    if dest.dtype != src.dtype:
        raise InvalidArgumentError(f"axon.{api}: dest is {dest.dtype} but src is {src.dtype}")
    if src.nbytes > dest.nbytes:
        raise InvalidArgumentError(
            f"axon.{api}: src has {src.size} elements but dest only {dest.size}")
    return src.nbytes


def put(dest: np.ndarray, src: np.ndarray, pe: int) -> None:
    """Copy `src` (local) into PE `pe`'s `dest` (symmetric). Returns when `src` may be reused."""
    _axon.put(address_of(dest), address_of(src), _pair(dest, src, "put"), pe)


def get(dest: np.ndarray, src: np.ndarray, pe: int) -> None:
    """Copy PE `pe`'s `src` (symmetric) into `dest` (local)."""
    n = _pair(src, dest, "get")
    _axon.get(address_of(dest), address_of(src), n, pe)


def put_nbi(dest: np.ndarray, src: np.ndarray, pe: int) -> None:
    """As put, complete at the next quiet()."""
    _axon.put_nbi(address_of(dest), address_of(src), _pair(dest, src, "put_nbi"), pe)


def get_nbi(dest: np.ndarray, src: np.ndarray, pe: int) -> None:
    """As get, complete at the next quiet()."""
    n = _pair(src, dest, "get_nbi")
    _axon.get_nbi(address_of(dest), address_of(src), n, pe)


def p(dest: np.ndarray, value, pe: int) -> None:
    """Write one element (the first of `dest`) on PE `pe`."""
    _contiguous(dest, "p", "dest")
    if dest.size == 0:
        raise InvalidArgumentError("axon.p: dest is empty")
    src = np.asarray(value, dtype=dest.dtype).reshape(1)
    _axon.put(address_of(dest), address_of(src), dest.itemsize, pe)


def g(src: np.ndarray, pe: int):
    """Read one element (the first of `src`) from PE `pe`."""
    _contiguous(src, "g", "src")
    if src.size == 0:
        raise InvalidArgumentError("axon.g: src is empty")
    out = np.empty(1, dtype=src.dtype)
    _axon.get(address_of(out), address_of(src), src.itemsize, pe)
    return out[0]


def _signal(sig, api):
    _contiguous(sig, api, "sig")
    if sig.dtype != np.uint64 or sig.size == 0:
        raise InvalidArgumentError(f"axon.{api}: sig must be a uint64 array (its first element is the signal)")
    return address_of(sig)


def put_signal(dest: np.ndarray, src: np.ndarray, sig: np.ndarray, value: int, op, pe: int,
               nbi: bool = False) -> None:
    """Put `src` into PE `pe`'s `dest`, then set or add `value` to its signal `sig[0]`.

    A PE that sees the signal change also sees the data.
    """
    n = _pair(dest, src, "put_signal")
    _axon.put_signal(address_of(dest), address_of(src), n, _signal(sig, "put_signal"), int(value),
                     int(_enum(op, SignalOp, "put_signal")), pe, nbi)


def signal_op(sig: np.ndarray, value: int, op, pe: int) -> None:
    """Set or add `value` to PE `pe`'s signal `sig[0]`."""
    _axon.signal_op(_signal(sig, "signal_op"), int(value), int(_enum(op, SignalOp, "signal_op")), pe)


def signal_fetch(sig: np.ndarray) -> int:
    """Read this PE's signal `sig[0]`."""
    return _axon.signal_fetch(_signal(sig, "signal_fetch"))


def signal_wait_until(sig: np.ndarray, cmp, value: int) -> int:
    """Wait until this PE's `sig[0]` compares true against `value`; return the value seen.

    Bounded by AXON_TIMEOUT (raises axon.TimeoutError); raises axon.PeerDeadError if a PE dies.
    """
    return _axon.signal_wait_until(_signal(sig, "signal_wait_until"),
                                   int(_enum(cmp, Cmp, "signal_wait_until")), int(value))


def _atomic(op, dest, operand, cond, pe, api):
    _contiguous(dest, api, "dest")
    if dest.dtype not in _ATOMIC_DTYPES or dest.size == 0:
        raise InvalidArgumentError(
            f"axon.{api}: dest must be an int32, uint32, int64 or uint64 array (first element), "
            f"not {dest.dtype}")
    bits = dest.itemsize * 8
    mask = (1 << bits) - 1
    raw = _axon.atomic(int(op), address_of(dest), dest.itemsize, int(operand) & mask, int(cond) & mask, pe)
    # The word comes back unsigned; reinterpret it as the element type (signed types wrap).
    return np.array([raw], dtype=f"u{dest.itemsize}").view(dest.dtype)[0]


def atomic_fetch(src: np.ndarray, pe: int):
    return _atomic(_AtomicOp.FETCH, src, 0, 0, pe, "atomic_fetch")


def atomic_set(dest: np.ndarray, value, pe: int) -> None:
    _atomic(_AtomicOp.SET, dest, value, 0, pe, "atomic_set")


def atomic_swap(dest: np.ndarray, value, pe: int):
    return _atomic(_AtomicOp.SWAP, dest, value, 0, pe, "atomic_swap")


def atomic_compare_swap(dest: np.ndarray, cond, value, pe: int):
    """Write `value` if the element equals `cond`; return the value before."""
    return _atomic(_AtomicOp.COMPARE_SWAP, dest, value, cond, pe, "atomic_compare_swap")


def atomic_fetch_add(dest: np.ndarray, value, pe: int):
    return _atomic(_AtomicOp.FETCH_ADD, dest, value, 0, pe, "atomic_fetch_add")


def atomic_add(dest: np.ndarray, value, pe: int) -> None:
    _atomic(_AtomicOp.ADD, dest, value, 0, pe, "atomic_add")


def atomic_fetch_and(dest: np.ndarray, value, pe: int):
    return _atomic(_AtomicOp.FETCH_AND, dest, value, 0, pe, "atomic_fetch_and")


def atomic_fetch_or(dest: np.ndarray, value, pe: int):
    return _atomic(_AtomicOp.FETCH_OR, dest, value, 0, pe, "atomic_fetch_or")


def atomic_fetch_xor(dest: np.ndarray, value, pe: int):
    return _atomic(_AtomicOp.FETCH_XOR, dest, value, 0, pe, "atomic_fetch_xor")


fence = _axon.fence
quiet = _axon.quiet
barrier_all = _axon.barrier_all
sync_all = _axon.sync_all
