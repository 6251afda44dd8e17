"""Two-sided messages: tagged send and receive of any buffer, with MPI's matching rules.

    import axon, numpy as np
    axon.init()
    if axon.my_pe() == 0:
        axon.send(np.arange(10.0), dest=1, tag=7)
    elif axon.my_pe() == 1:
        buf = np.empty(10)
        st = axon.recv(buf, source=0, tag=7)      # Status(source=0, tag=7, nbytes=80)

Buffers are C-contiguous NumPy arrays, torch tensors and CuPy arrays (host or GPU memory), or
symmetric arrays; nothing needs registering. Sources and destinations are indices in `team`
(the world when None). A message never overtakes an earlier one of the same pair; a message
longer than the receive buffer raises TruncatedError naming both sizes. Every wait is bounded by
AXON_TIMEOUT (TimeoutError names what the receive waited for and what waits unmatched), and a
dead peer raises PeerDeadError. Blocking calls do not wait for your CUDA streams: synchronize the
stream that produced a device buffer first (a CUDA array's interface stream is synchronized).

On the GPU backend, send_on_stream and recv_on_stream are enqueued on a CUDA stream, like NCCL's
send/recv: they pair with the peer's calls in call order (never with send/recv), the stream's
later work waits for them, and they can be captured into a CUDA graph. Put an exchange (each PE
sends to the other and receives) in ``with axon.group():`` so that both directions start
together. A failure (TruncatedError, TimeoutError, PeerDeadError) releases the stream and is
raised by the next ``axon.stream_synchronize(stream)``.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Sequence

from dataclasses import dataclass

from . import _axon
from ._types import ArrayLike, StreamLike
from .collectives import _team
from .errors import InvalidArgumentError
from .gpu import _stream_handle, as_buffer

__all__ = [
    "ANY_SOURCE", "ANY_TAG", "MAX_TAG", "Request", "Status", "explain_message", "group", "group_end", "group_start",
    "iprobe", "irecv", "isend", "message_stats", "probe", "recv", "recv_on_stream", "send", "send_on_stream",
    "wait_all", "wait_any",
]

ANY_SOURCE = _axon.ANY_SOURCE
ANY_TAG = _axon.ANY_TAG
MAX_TAG = _axon.MAX_TAG


@dataclass(frozen=True)
class Status:
    """What a receive got: the sender's index in the team, the tag and the message's length."""
    source: int
    tag: int
    nbytes: int


def _status(t) -> Status:
    return Status(int(t[0]), int(t[1]), int(t[2]))


class Request:
    """A nonblocking send or receive. Keeps its buffer alive until it has completed."""

    def __init__(self, raw, buf):
        self._raw = raw
        self._buf = buf
        self._status = None

    def wait(self) -> Status:
        """Waits until complete (bounded by AXON_TIMEOUT); returns the Status."""
        if self._status is None:
            self._status = _status(self._raw.wait())
            self._buf = None
        return self._status

    def test(self) -> bool:
        """Advances messages once; True when complete (then wait() returns at once)."""
        if self._status is not None:
            return True
        t = self._raw.test()
        if t is None:
            return False
        self._status = _status(t)
        self._buf = None
        return True

    @property
    def status(self) -> Status | None:
        """The Status once complete, else None."""
        return self._status


def _addr(buf, api, writable):
    if buf is None:
        return 0, 0
    b = as_buffer(buf, api, "buf", writable=writable)
    return b.addr, b.nbytes


def _tag(tag, api):
    """The tag as an int (its range is checked by the library, naming the call)."""
    if isinstance(tag, bool) or not isinstance(tag, int):
        raise InvalidArgumentError(f"axon.{api}: tag must be an int, not {type(tag).__name__}")
    return tag


def send(buf: ArrayLike, dest: int, tag: int = 0, team: _axon.Team | None = None) -> None:
    """Sends the whole of `buf` to member `dest` of `team`. Returns when `buf` may be reused: at
    once for small messages, once the receiver has matched a large one."""
    tag = _tag(tag, "send")
    addr, n = _addr(buf, "send", False)
    _axon.send(addr, n, int(dest), tag, _team(team))


def recv(buf: ArrayLike, source: int = ANY_SOURCE, tag: int = ANY_TAG, team: _axon.Team | None = None) -> Status:
    """Receives the earliest matching message into `buf` (room: its size in bytes)."""
    tag = _tag(tag, "recv")
    addr, n = _addr(buf, "recv", True)
    return _status(_axon.recv(addr, n, int(source), tag, _team(team)))


def isend(buf: ArrayLike, dest: int, tag: int = 0, team: _axon.Team | None = None) -> Request:
    """Starts a send; `buf` must not change until the request completes."""
    tag = _tag(tag, "isend")
    addr, n = _addr(buf, "isend", False)
    return Request(_axon.isend(addr, n, int(dest), tag, _team(team)), buf)


def irecv(buf: ArrayLike, source: int = ANY_SOURCE, tag: int = ANY_TAG, team: _axon.Team | None = None) -> Request:
    """Posts a receive into `buf`; read it once the request completes."""
    tag = _tag(tag, "irecv")
    addr, n = _addr(buf, "irecv", True)
    return Request(_axon.irecv(addr, n, int(source), tag, _team(team)), buf)


def wait_all(requests: Sequence[Request]) -> list[Status]:
    """Waits for every request; raises the first failure once all have ended."""
    first = None
    out = []
    for r in requests:
        try:
            out.append(r.wait())
        except Exception as e:  # noqa: BLE001 - re-raised below, after the others have ended
            out.append(None)
            first = first or e
    if first is not None:
        raise first
    return out


def wait_any(requests: Sequence[Request]) -> tuple[int, Status]:
    """Waits until one request is complete; returns (its index, its Status)."""
    requests = list(requests)
    for i, r in enumerate(requests):
        if r is not None and r.status is not None:
            return i, r.status
    live = [r._raw if r is not None else None for r in requests]
    if not any(x is not None for x in live):
        raise InvalidArgumentError("axon.wait_any: no valid request")
    i, t = _axon.wait_any(live)
    requests[i]._status = _status(t)
    requests[i]._buf = None
    return i, requests[i]._status


def send_on_stream(buf: ArrayLike, dest: int, stream: StreamLike = None, team: _axon.Team | None = None) -> None:
    """On `stream` (None: the legacy default stream, an int handle, a torch or CuPy stream): sends
    the whole of `buf` to member `dest`; the stream's later work waits until `buf` may be reused."""
    h = _stream_handle(stream, "send_on_stream")
    b = as_buffer(buf, "send_on_stream", "buf", stream=h)
    _axon.send_on_stream(b.addr, b.nbytes, int(dest), _team(team), h)


def recv_on_stream(buf: ArrayLike, source: int, stream: StreamLike = None, team: _axon.Team | None = None) -> None:
    """On `stream`: receives the message of `source`'s matching send_on_stream (the calls pair in
    order) into `buf`; the stream's later work sees the data. `source` names a member (no
    wildcard)."""
    h = _stream_handle(stream, "recv_on_stream")
    b = as_buffer(buf, "recv_on_stream", "buf", writable=True, stream=h)
    _axon.recv_on_stream(b.addr, b.nbytes, int(source), _team(team), h)


def group_start() -> None:
    """Opens a group (on this thread): the stream-ordered calls until group_end start together."""
    _axon.group_start()


def group_end() -> None:
    """Closes the group: its calls (all on one stream) are enqueued as one step."""
    _axon.group_end()


@contextmanager
def group() -> Iterator[None]:
    """``with axon.group():`` around stream-ordered sends and receives that must run at once."""
    group_start()
    try:
        yield
    finally:
        group_end()


def probe(source: int = ANY_SOURCE, tag: int = ANY_TAG, team: _axon.Team | None = None) -> Status:
    """Waits (bounded) for a message a receive (source, tag) would take, without taking it."""
    return _status(_axon.probe(int(source), int(tag), _team(team)))


def iprobe(source: int = ANY_SOURCE, tag: int = ANY_TAG, team: _axon.Team | None = None) -> Status | None:
    """As probe, but looks once: None when no such message waits."""
    t = _axon.iprobe(int(source), int(tag), _team(team))
    return None if t is None else _status(t)


def explain_message(nbytes: int, dest: int, *, device: bool = False, team: _axon.Team | None = None) -> str:
    """Which protocol and path a message of `nbytes` (in GPU memory when `device`) to `dest` takes."""
    if nbytes < 0:
        raise InvalidArgumentError(f"axon.explain_message: nbytes {nbytes} is negative")
    return _axon.explain_message(int(nbytes), int(dest), bool(device), _team(team))


def message_stats() -> dict:
    """This PE's message counts, and the eager data waiting unmatched here (bounded by AXON_P2P_UNEXPECTED)."""
    keys = ("eager_sent", "rendezvous_sent", "received", "waiting_messages", "waiting_bytes",
            "waiting_bytes_peak", "bound", "posted_sent")
    return dict(zip(keys, _axon.message_stats()))
