"""all_to_all with uneven blocks, on axon's two-sided messages: block j of the source goes to
member j, which keeps block i of its destination for member i. axon's alltoall takes equal blocks
only."""

from __future__ import annotations

from typing import Sequence

import numpy as np

import axon

from ..errors import InvalidArgumentError


def splits(sizes: Sequence[int], rows: int, n: int, what: str) -> list[int]:
    """The rows per member: `sizes` as given, or `rows` split evenly when `sizes` is empty."""
    if not sizes:
        if rows % n:
            raise InvalidArgumentError(f"axon.torch: all_to_all_single: {rows} rows do not split evenly over {n} "
                                       f"ranks; pass {what}")
        return [rows // n] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n or any(s < 0 for s in sizes) or sum(sizes) != rows:
        raise InvalidArgumentError(f"axon.torch: all_to_all_single: {what}={sizes} must be {n} sizes >= 0 "
                                   f"summing to the tensor's {rows} rows")
    return sizes


def _offsets(sizes: Sequence[int]) -> list[int]:
    return [0] + list(np.cumsum(sizes, dtype=np.int64)[:-1]) if sizes else []


def exchange(src, send_bytes: Sequence[int], dst, recv_bytes: Sequence[int], team: axon.Team, tag: int) -> None:
    """Sends src's byte ranges (send_bytes[j] to member j) and receives into dst's (recv_bytes[i]
    from member i). src and dst are 1-D byte buffers; every receive is posted before any send, and
    the own block is copied."""
    me, n = team.my_pe(), team.n_pes()
    so, ro = _offsets(send_bytes), _offsets(recv_bytes)
    if send_bytes[me] != recv_bytes[me]:
        raise InvalidArgumentError(f"axon.torch: all_to_all: this rank sends itself {send_bytes[me]} bytes but "
                                   f"expects {recv_bytes[me]}")
    # Empty blocks travel too: a member that sends a block its peer does not expect is then caught
    # (truncated, or short) instead of its message lingering to match a later call's receive.
    recvs = [(i, axon.irecv(dst[ro[i]:ro[i] + recv_bytes[i]], source=i, tag=tag, team=team))
             for i in range(n) if i != me]
    dst[ro[me]:ro[me] + recv_bytes[me]] = src[so[me]:so[me] + send_bytes[me]]
    # Sends in a ring order from the next member on, so that no member is everyone's first target.
    sends = [axon.isend(src[so[j]:so[j] + send_bytes[j]], dest=j, tag=tag, team=team)
             for j in ((me + k) % n for k in range(1, n))]
    axon.wait_all(sends + [r for _, r in recvs])
    for i, r in recvs:
        if r.status.nbytes != recv_bytes[i]:
            raise InvalidArgumentError(f"axon.torch: all_to_all: rank {i} sent {r.status.nbytes} bytes, this "
                                       f"rank expected {recv_bytes[i]}")
