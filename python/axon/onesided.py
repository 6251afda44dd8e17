"""One-sided communication (OpenSHMEM 1.5 semantics) on symmetric arrays.

The remote side (dest of put, src of get, sig, atomic targets) must be in a symmetric heap: PE
`pe`'s copy of it is the one read or written. It may be a NumPy array on the host heap, an
axon.SymmetricGpuArray, or a CUDA array (torch, CuPy) that views the GPU heap. The local side may
be any C-contiguous NumPy array, SymmetricGpuArray or CUDA array (__cuda_array_interface__).

Blocking calls return when done (put: when the source may be reused) but do not wait for work
queued on your CUDA streams: synchronize the stream that produced a device buffer first, or use
the *_on_stream calls, which are ordered on the stream you pass.
"""

from __future__ import annotations

import enum

import numpy as np

from . import _axon
from ._types import ArrayLike, EnumLike, Scalar, StreamLike
from .errors import InvalidArgumentError
from .gpu import _stream_handle, as_buffer

__all__ = [
    "Cmp", "SignalOp", "atomic_add", "atomic_compare_swap", "atomic_fetch", "atomic_fetch_add", "atomic_fetch_and",
    "atomic_fetch_or", "atomic_fetch_xor", "atomic_set", "atomic_swap", "barrier_all", "barrier_all_on_stream",
    "barrier_on_stream", "fence", "g", "get", "get_nbi", "get_on_stream", "p", "put", "put_nbi", "put_on_stream",
    "put_signal", "put_signal_on_stream", "quiet", "quiet_on_stream", "signal_fetch", "signal_op",
    "signal_op_on_stream", "signal_wait_until", "signal_wait_until_on_stream", "stream_synchronize", "sync_all",
]


class SignalOp(enum.IntEnum):
    """What a signal update does to the signal word: SET it to the value, or ADD the value.

    Calls also take the names as strings ("set", "add").
    """

    SET = 0
    ADD = 1


class Cmp(enum.IntEnum):
    """How signal_wait_until compares the signal word with the value (EQ, NE, GT, GE, LT, LE).

    Calls also take the names as strings ("eq", "ge", ...).
    """

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


def _transfer(dest, src, api, *, local_is_dest, stream=None):
    """Checks a put (local src) or get (local dest); returns (dest addr, src addr, bytes).

    The local side sets the amount; the symmetric side must be at least as large and of the same
    dtype.
    """
    d = as_buffer(dest, api, "dest", writable=local_is_dest, stream=stream)
    s = as_buffer(src, api, "src", stream=stream)
    if d.dtype != s.dtype:
        raise InvalidArgumentError(f"axon.{api}: dest is {d.dtype} but src is {s.dtype}")
    if local_is_dest and d.nbytes > s.nbytes:
        raise InvalidArgumentError(f"axon.{api}: dest has {d.size} elements but src only {s.size}")
    if not local_is_dest and s.nbytes > d.nbytes:
        raise InvalidArgumentError(f"axon.{api}: src has {s.size} elements but dest only {d.size}")
    return d.addr, s.addr, (d.nbytes if local_is_dest else s.nbytes)


def put(dest: ArrayLike, src: ArrayLike, pe: int) -> None:
    """Copy `src` (local) into PE `pe`'s `dest` (symmetric). Returns when `src` may be reused."""
    _axon.put(*_transfer(dest, src, "put", local_is_dest=False), pe)


def get(dest: ArrayLike, src: ArrayLike, pe: int) -> None:
    """Copy PE `pe`'s `src` (symmetric) into `dest` (local)."""
    _axon.get(*_transfer(dest, src, "get", local_is_dest=True), pe)


def put_nbi(dest: ArrayLike, src: ArrayLike, pe: int) -> None:
    """As put, complete at the next quiet()."""
    _axon.put_nbi(*_transfer(dest, src, "put_nbi", local_is_dest=False), pe)


def get_nbi(dest: ArrayLike, src: ArrayLike, pe: int) -> None:
    """As get, complete at the next quiet()."""
    _axon.get_nbi(*_transfer(dest, src, "get_nbi", local_is_dest=True), pe)


def p(dest: ArrayLike, value: Scalar, pe: int) -> None:
    """Write one element (the first of `dest`) on PE `pe`."""
    d = as_buffer(dest, "p", "dest")
    if d.size == 0:
        raise InvalidArgumentError("axon.p: dest is empty")
    src = np.asarray(value, dtype=d.dtype).reshape(1)
    _axon.put(d.addr, src.__array_interface__["data"][0], d.itemsize, pe)


def g(src: ArrayLike, pe: int) -> np.generic:
    """Read one element (the first of `src`) from PE `pe`, as a NumPy scalar."""
    s = as_buffer(src, "g", "src")
    if s.size == 0:
        raise InvalidArgumentError("axon.g: src is empty")
    out = np.empty(1, dtype=s.dtype)
    _axon.get(out.__array_interface__["data"][0], s.addr, s.itemsize, pe)
    return out[0]


def _signal(sig, api):
    s = as_buffer(sig, api, "sig")
    if s.dtype != np.uint64 or s.size == 0:
        raise InvalidArgumentError(f"axon.{api}: sig must be a uint64 array (its first element is the signal)")
    return s.addr


def put_signal(dest: ArrayLike, src: ArrayLike, sig: ArrayLike, value: int, op: EnumLike, pe: int,
               nbi: bool = False) -> None:
    """Put `src` into PE `pe`'s `dest`, then set or add `value` to its signal `sig[0]`.

    A PE that sees the signal change also sees the data.
    """
    d, s, n = _transfer(dest, src, "put_signal", local_is_dest=False)
    _axon.put_signal(d, s, n, _signal(sig, "put_signal"), int(value),
                     int(_enum(op, SignalOp, "put_signal")), pe, nbi)


def signal_op(sig: ArrayLike, value: int, op: EnumLike, pe: int) -> None:
    """Set or add `value` to PE `pe`'s signal `sig[0]`."""
    _axon.signal_op(_signal(sig, "signal_op"), int(value), int(_enum(op, SignalOp, "signal_op")), pe)


def signal_fetch(sig: ArrayLike) -> int:
    """Read this PE's signal `sig[0]`."""
    return _axon.signal_fetch(_signal(sig, "signal_fetch"))


def signal_wait_until(sig: ArrayLike, cmp: EnumLike, value: int) -> int:
    """Wait until this PE's `sig[0]` compares true against `value`; return the value seen.

    Bounded by AXON_TIMEOUT (raises axon.TimeoutError); raises axon.PeerDeadError if a PE dies.
    """
    return _axon.signal_wait_until(_signal(sig, "signal_wait_until"),
                                   int(_enum(cmp, Cmp, "signal_wait_until")), int(value))


def _atomic(op, dest, operand, cond, pe, api):
    d = as_buffer(dest, api, "dest")
    if d.dtype not in _ATOMIC_DTYPES or d.size == 0:
        raise InvalidArgumentError(
            f"axon.{api}: dest must be an int32, uint32, int64 or uint64 array (first element), "
            f"not {d.dtype}")
    bits = d.itemsize * 8
    mask = (1 << bits) - 1
    raw = _axon.atomic(int(op), d.addr, d.itemsize, int(operand) & mask, int(cond) & mask, pe)
    # The word comes back unsigned; reinterpret it as the element type (signed types wrap).
    return np.array([raw], dtype=f"u{d.itemsize}").view(d.dtype)[0]


def atomic_fetch(src: ArrayLike, pe: int) -> np.integer:
    """Read PE `pe`'s `src[0]` atomically; return it (int32, uint32, int64 or uint64 arrays)."""
    return _atomic(_AtomicOp.FETCH, src, 0, 0, pe, "atomic_fetch")


def atomic_set(dest: ArrayLike, value: int, pe: int) -> None:
    """Write `value` into PE `pe`'s `dest[0]` atomically."""
    _atomic(_AtomicOp.SET, dest, value, 0, pe, "atomic_set")


def atomic_swap(dest: ArrayLike, value: int, pe: int) -> np.integer:
    """Write `value` into PE `pe`'s `dest[0]` atomically; return the value before."""
    return _atomic(_AtomicOp.SWAP, dest, value, 0, pe, "atomic_swap")


def atomic_compare_swap(dest: ArrayLike, cond: int, value: int, pe: int) -> np.integer:
    """Write `value` into PE `pe`'s `dest[0]` if it equals `cond`, atomically; return the value before."""
    return _atomic(_AtomicOp.COMPARE_SWAP, dest, value, cond, pe, "atomic_compare_swap")


def atomic_fetch_add(dest: ArrayLike, value: int, pe: int) -> np.integer:
    """Add `value` to PE `pe`'s `dest[0]` atomically (wrapping); return the value before."""
    return _atomic(_AtomicOp.FETCH_ADD, dest, value, 0, pe, "atomic_fetch_add")


def atomic_add(dest: ArrayLike, value: int, pe: int) -> None:
    """Add `value` to PE `pe`'s `dest[0]` atomically (wrapping)."""
    _atomic(_AtomicOp.ADD, dest, value, 0, pe, "atomic_add")


def atomic_fetch_and(dest: ArrayLike, value: int, pe: int) -> np.integer:
    """Bitwise-and `value` into PE `pe`'s `dest[0]` atomically; return the value before."""
    return _atomic(_AtomicOp.FETCH_AND, dest, value, 0, pe, "atomic_fetch_and")


def atomic_fetch_or(dest: ArrayLike, value: int, pe: int) -> np.integer:
    """Bitwise-or `value` into PE `pe`'s `dest[0]` atomically; return the value before."""
    return _atomic(_AtomicOp.FETCH_OR, dest, value, 0, pe, "atomic_fetch_or")


def atomic_fetch_xor(dest: ArrayLike, value: int, pe: int) -> np.integer:
    """Bitwise-xor `value` into PE `pe`'s `dest[0]` atomically; return the value before."""
    return _atomic(_AtomicOp.FETCH_XOR, dest, value, 0, pe, "atomic_fetch_xor")


def fence() -> None:
    """Order this PE's puts: those to one PE issued before the fence arrive before those after."""
    _axon.fence()


def quiet() -> None:
    """Complete every outstanding put, put_nbi, get_nbi and atomic of this PE."""
    _axon.quiet()


def barrier_all() -> None:
    """quiet(), then every PE of the world synchronizes (collective)."""
    _axon.barrier_all()


def sync_all() -> None:
    """Every PE of the world synchronizes, without completing outstanding puts (collective)."""
    _axon.sync_all()


# -- stream-ordered calls (GPU backend) --------------------------------------------------------
#
# Each enqueues its work on `stream` and returns at once: None (the legacy default stream), an
# int CUstream handle, a torch.cuda.Stream, a CuPy stream or any object with __cuda_stream__().
# The buffers must stay alive and unchanged until the stream has run the work. Signals used on
# streams must be in the GPU heap. On the host backend they raise axon.UnsupportedError.


def put_on_stream(dest: ArrayLike, src: ArrayLike, pe: int, stream: StreamLike = None) -> None:
    """On `stream`: copy `src` (local) into PE `pe`'s `dest` (symmetric)."""
    h = _stream_handle(stream, "put_on_stream")
    _axon.put_on_stream(*_transfer(dest, src, "put_on_stream", local_is_dest=False, stream=h), pe, h)


def get_on_stream(dest: ArrayLike, src: ArrayLike, pe: int, stream: StreamLike = None) -> None:
    """On `stream`: copy PE `pe`'s `src` (symmetric) into `dest` (local)."""
    h = _stream_handle(stream, "get_on_stream")
    _axon.get_on_stream(*_transfer(dest, src, "get_on_stream", local_is_dest=True, stream=h), pe, h)


def put_signal_on_stream(dest: ArrayLike, src: ArrayLike, sig: ArrayLike, value: int, op: EnumLike, pe: int,
                         stream: StreamLike = None) -> None:
    """On `stream`: put `src` into PE `pe`'s `dest`, then set or add `value` to its `sig[0]`.

    The signal follows the data in stream order with release semantics: a PE that sees it (by
    signal_wait_until or signal_wait_until_on_stream) sees the data.
    """
    api = "put_signal_on_stream"
    h = _stream_handle(stream, api)
    d, s, n = _transfer(dest, src, api, local_is_dest=False, stream=h)
    _axon.put_signal_on_stream(d, s, n, _signal(sig, api), int(value), int(_enum(op, SignalOp, api)), pe, h)


def signal_op_on_stream(sig: ArrayLike, value: int, op: EnumLike, pe: int, stream: StreamLike = None) -> None:
    """On `stream`: set or add `value` to PE `pe`'s signal `sig[0]`."""
    api = "signal_op_on_stream"
    h = _stream_handle(stream, api)
    _axon.signal_op_on_stream(_signal(sig, api), int(value), int(_enum(op, SignalOp, api)), pe, h)


def signal_wait_until_on_stream(sig: ArrayLike, cmp: EnumLike, value: int, stream: StreamLike = None) -> None:
    """Work enqueued on `stream` after this starts once this PE's `sig[0]` compares true.

    The wait runs on the GPU, bounded by AXON_TIMEOUT; past it the kernel reports the PE,
    address, expected and seen value and traps (the CUDA context is lost, as with any trap).
    """
    api = "signal_wait_until_on_stream"
    h = _stream_handle(stream, api)
    _axon.signal_wait_until_on_stream(_signal(sig, api), int(_enum(cmp, Cmp, api)), int(value), h)


def quiet_on_stream(stream: StreamLike = None) -> None:
    """Work enqueued on `stream` after this starts once this PE's puts on it (and put_nbi) are
    complete at their targets."""
    _axon.quiet_on_stream(_stream_handle(stream, "quiet_on_stream"))


def stream_synchronize(stream: StreamLike = None) -> None:
    """Waits until `stream` has done its work, then raises what a stream-ordered call that the
    host served on the way met (a stream-ordered message's TruncatedError, TimeoutError, ...)."""
    _axon.stream_synchronize(_stream_handle(stream, "stream_synchronize"))


def barrier_on_stream(team: _axon.Team, stream: StreamLike = None) -> None:
    """A barrier over `team` on the GPU: work enqueued on `stream` after it starts once every
    member reached it (and quiet held on each). One stream barrier per team in flight at a time."""
    _axon.barrier_on_stream(team, _stream_handle(stream, "barrier_on_stream"))


def barrier_all_on_stream(stream: StreamLike = None) -> None:
    """barrier_on_stream over the world."""
    _axon.barrier_all_on_stream(_stream_handle(stream, "barrier_all_on_stream"))
