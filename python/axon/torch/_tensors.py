"""Tensors as axon buffers: which dtypes axon reduces, and byte views for copies.

Copies (broadcast, all_gather, all_to_all, send, recv) move bytes, so every dtype travels, float8
and complex included. Reductions need a dtype axon computes in: the table below; bool reduces as
uint8 (sum and max are a logical or, product and min a logical and).
"""

from __future__ import annotations

import numpy as np
import torch

from ..errors import InvalidArgumentError

# torch dtype -> axon's dtype name, for the reductions.
REDUCIBLE = {
    torch.float32: "float32", torch.float64: "float64", torch.float16: "float16", torch.bfloat16: "bfloat16",
    torch.int8: "int8", torch.uint8: "uint8", torch.int32: "int32", torch.int64: "int64", torch.bool: "uint8",
}
for _name, _axon_name in (("uint32", "uint32"), ("uint64", "uint64")):
    if hasattr(torch, _name):  # torch >= 2.3
        REDUCIBLE[getattr(torch, _name)] = _axon_name
FLOATING = (torch.float32, torch.float64, torch.float16, torch.bfloat16)


def describe(t: torch.Tensor) -> str:
    """The tensor as errors name it: shape, dtype, device."""
    return f"tensor of shape {tuple(t.shape)}, {str(t.dtype).replace('torch.', '')} on {t.device}"


def _flat(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1) if t.dim() != 1 else t


def _sync_cuda(t: torch.Tensor) -> None:
    # axon's blocking calls read device memory from the host side: the work that produced the
    # tensor on torch's current stream must have finished.
    if t.is_cuda:
        torch.cuda.current_stream(t.device).synchronize()


def byte_view(t: torch.Tensor):
    """The contiguous tensor `t` as a 1-D buffer of bytes axon takes (a NumPy array on the host)."""
    _sync_cuda(t)
    b = _flat(t).view(torch.uint8) if t.dtype != torch.uint8 else _flat(t)
    return b if b.is_cuda else b.numpy()


def reduced_dtype(t: torch.Tensor, op: str) -> str:
    """axon's name of the dtype a reduction of `t` computes in; InvalidArgumentError naming the op
    and the dtype when axon cannot reduce it."""
    name = REDUCIBLE.get(t.dtype)
    if name is None:
        raise InvalidArgumentError(
            f"axon.torch: {op} cannot reduce {str(t.dtype).replace('torch.', '')} tensors; axon reduces "
            f"{', '.join(sorted({str(d).replace('torch.', '') for d in REDUCIBLE}))}")
    return name


def typed_view(t: torch.Tensor, op: str):
    """(buffer, axon dtype name) of the contiguous tensor `t` for a reduction; InvalidArgumentError
    naming the op and the dtype when axon cannot reduce it."""
    name = reduced_dtype(t, op)
    _sync_cuda(t)
    f = _flat(t)
    if t.dtype == torch.bfloat16:
        f = f.view(torch.int16)  # NumPy has no bfloat16: the bits, with dtype="bfloat16"
    elif t.dtype == torch.bool:
        f = f.view(torch.uint8)
    if f.is_cuda:
        return f, name
    a = f.numpy()
    return (a.view(np.uint16) if t.dtype == torch.bfloat16 else a), name

