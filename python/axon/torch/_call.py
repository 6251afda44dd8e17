"""One collective call of a group: which path it takes, and its Work.

CUDA tensors go on torch's current stream through axon's stream-ordered calls (_cuda.py): the
host returns at once and the Work's wait() orders the caller's stream after it. CPU tensors, and
CUDA tensors on a team without a stream path, take axon's blocking calls; those first let the
team's earlier stream calls finish, so the team sees its calls in order.
"""

from __future__ import annotations

from typing import Optional

import torch

import axon

from . import _cuda
from ._reduce_ops import Reduction
from ._tensors import byte_view, typed_view
from ._work import AxonCudaWork, AxonWork, done


class GroupCalls:
    """A group's state across calls: its team, its place on the CUDA streams, and whether the
    team has stream-ordered collectives at all (learned from the first CUDA call)."""

    def __init__(self, team: axon.Team):
        self.team = team
        self.order = _cuda.StreamOrder()
        self.streams_usable = True

    def start(self, t: torch.Tensor, api: str, *, stream_path: bool = True) -> "Call":
        """A call on tensor `t` (its first tensor). stream_path=False: a call made of blocking
        steps (two-sided messages, barriers) whatever the device."""
        if t.is_cuda and stream_path and self.streams_usable:
            try:
                cur, capture = self.order.begin()
            except axon.UnsupportedError:
                self.streams_usable = False  # the host backend: axon's blocking calls
            else:
                return Call(self, api, cur, capture)
        self.order.drain()
        return Call(self, api, None, False)


class Call:
    """One call's path: on the stream `stream` (None: axon's blocking calls)."""

    __slots__ = ("_group", "_api", "stream", "_capture")

    def __init__(self, group: GroupCalls, api: str, stream: Optional[_cuda.CurrentStream], capture: bool):
        self._group = group
        self._api = api
        self.stream = stream
        self._capture = capture

    def run(self, kind: str, src: torch.Tensor, dst: torch.Tensor, red: Optional[Reduction] = None,
            root: int = 0) -> None:
        """axon's `kind` collective of the contiguous tensors src and dst (the same tensor: in
        place). Reductions take `red`; copies move bytes."""
        if self.stream is not None:
            try:
                _cuda.enqueue(kind, self._group.team, src, dst, self.stream, self._api, red=red, root=root)
                return
            except axon.UnsupportedError:
                # No stream path on this team (checked before anything is enqueued): the blocking
                # calls from now on, which synchronize the stream first.
                self._group.streams_usable = False
                self.stream = None
        _blocking(kind, self._group.team, src, dst, self._api, red=red, root=root)

    def work(self, tensors: list) -> AxonWork:
        """The call's Work, once everything of it is enqueued (or done)."""
        if self.stream is None:
            return done(tensors)
        self._group.order.end(self.stream, self._capture)
        return AxonCudaWork(tensors, self.stream)


def _blocking(kind, team, src, dst, api, *, red, root) -> None:
    """axon's blocking call of that name (axon.allreduce, ...): reductions on typed views, copies on
    bytes."""
    call = getattr(axon, kind)
    rooted = {"root": root} if kind in ("reduce", "broadcast") else {}
    if red is not None:
        s, name = typed_view(src, api)
        call(s, s if dst is src else typed_view(dst, api)[0], red.axon_op, team=team, dtype=name, **rooted)
    else:
        s = byte_view(src)
        call(s, s if dst is src else byte_view(dst), team=team, **rooted)
