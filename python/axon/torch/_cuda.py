"""CUDA tensors: axon's stream-ordered collectives on torch's current stream.

ProcessGroupNCCL's rule is kept: a collective runs after the work queued before it on the current
stream, and work queued after it (or after its Work's wait()) sees the result; the host does not
wait. axon's `*_on_stream` calls enqueue a kernel and return, so each collective goes straight
onto the caller's current stream, with no side stream and no event in between when one stream is
used. A team runs one collective at a time in call order, so when a later call comes on another
stream, that stream first waits for the team's previous call (an event). Inside a CUDA graph
capture nothing outside the capture is waited on (CUDA forbids it; torch synchronizes before a
capture starts), and the captured kernels replay in step, as axon's graph tests check.

Teams without a GPU path for a call (no GPU backend) raise axon.UnsupportedError from the stream
forms; the group then keeps the blocking calls for CUDA tensors, after synchronizing the stream.
"""

from __future__ import annotations

from typing import Optional

import torch

import axon
from .. import _axon
from ..collectives import DTYPES
from ..errors import InvalidArgumentError
from ._reduce_ops import Reduction
from ._tensors import describe

_BYTES = DTYPES.index("uint8")


class CurrentStream:
    """torch's current stream as the calls use it: the Stream object, its raw handle and its
    device, read once when the stream is first seen (each read costs a call)."""

    __slots__ = ("stream", "handle", "device")

    def __init__(self, stream: torch.cuda.Stream):
        self.stream = stream
        self.handle = stream.cuda_stream
        self.device = stream.device_index


def capturing() -> bool:
    """Whether torch's current stream is capturing a CUDA graph (torch.cuda's own check adds a
    microsecond of Python around this one)."""
    return torch._C._cuda_isCurrentStreamCapturing()


class StreamOrder:
    """One team's place on the CUDA streams: the stream of its last collective.

    No event is recorded per call (that would cost every call): when a later call comes on
    another stream, an event recorded then on the last call's stream orders the new stream after
    it. That event may cover work queued on the old stream after the collective too, which only
    delays the new stream, never deadlocks it (that work can wait only for what other streams
    queued before)."""

    def __init__(self):
        self._last: Optional[CurrentStream] = None
        self._device: Optional[int] = None
        # A call was captured into a CUDA graph: its replays run on whatever stream replays it,
        # unseen here, so the host's waits for the team then wait for the whole device.
        self._captured = False
        # torch.cuda.current_stream() costs microseconds a call; the raw handle of the current
        # stream costs a fraction of one, so streams are looked up by handle (one object each).
        self._streams: dict[int, CurrentStream] = {}

    def device(self) -> int:
        """This PE's axon GPU, where the kernels run (enqueue checks the tensors are there);
        axon.UnsupportedError on the host backend."""
        if self._device is None:
            self._device = axon.gpu_device()
        return self._device

    def begin(self) -> tuple[CurrentStream, bool]:
        """(the stream the next collective goes on, whether it is capturing a CUDA graph): torch's
        current stream, ordered after the team's last collective when that ran on another stream
        (not inside a capture: CUDA forbids waiting there for work outside it, and torch
        synchronizes before a capture starts). axon.UnsupportedError on the host backend."""
        device = self._device if self._device is not None else self.device()
        cur = self._streams.get(torch._C._cuda_getCurrentRawStream(device))
        if cur is None:
            if len(self._streams) >= 64:  # streams made and dropped by the caller, one a step
                self._streams.clear()
            cur = CurrentStream(torch.cuda.current_stream(device))
            self._streams[cur.handle] = cur
        capture = capturing()
        if self._last is not None and self._last is not cur and not capture:
            cur.stream.wait_stream(self._last.stream)
        return cur, capture

    def end(self, cur: CurrentStream, capture: bool) -> None:
        """Notes the collective just enqueued on `cur` (a captured one belongs to its graph)."""
        if capture:
            self._captured = True
        else:
            self._last = cur

    def drain(self) -> None:
        """The host waits for the team's last stream collective (before a blocking call on the
        team: one call at a time per team, in order)."""
        if (self._last is None and not self._captured) or capturing():
            return  # nothing on the GPU yet (no CUDA call needed), or inside a capture
        if self._captured:
            torch.cuda.synchronize(self._device)
        elif self._last is not None:
            self._last.stream.synchronize()
        self._last = None


def enqueue(kind: str, team, src: torch.Tensor, dst: torch.Tensor, cur: CurrentStream, api: str, *,
            red: Optional[Reduction] = None, root: int = 0) -> None:
    """Enqueues axon's `kind` collective of the contiguous CUDA tensors on the stream `cur` for
    torch's call `api`. Reductions take `red`; copies move bytes. Runs on every CUDA call: kept to
    a few lookups."""
    device = cur.device
    if src.get_device() != device or (dst is not src and dst.get_device() != device):
        # A host or other GPU's pointer would reach the kernel: an illegal address, which breaks
        # the CUDA context, instead of this error.
        raise InvalidArgumentError(
            f"axon.torch: {api}: the input ({describe(src)}) and the output ({describe(dst)}) must both be on "
            f"this rank's GPU, cuda:{device} (AXON_DEVICE, else the local rank; call "
            f"torch.cuda.set_device(LOCAL_RANK) before init)")
    h = cur.handle
    s, d = src.data_ptr(), dst.data_ptr()
    if kind == "allreduce":
        _axon.allreduce_on_stream(team, s, d, src.numel(), *red.codes, h)
    elif kind == "reduce":
        _axon.reduce_on_stream(team, s, d, src.numel(), *red.codes, root, h)
    elif kind == "reduce_scatter":
        _axon.reduce_scatter_on_stream(team, s, d, dst.numel(), *red.codes, h)
    elif kind == "broadcast":
        _axon.broadcast_on_stream(team, s, d, _nbytes(src), _BYTES, root, h)
    elif kind == "allgather":
        _axon.allgather_on_stream(team, s, d, _nbytes(src), _BYTES, h)
    elif kind == "alltoall":
        _axon.alltoall_on_stream(team, s, d, _nbytes(src) // team.n_pes(), _BYTES, h)
    else:
        raise AssertionError(kind)


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()
