"""torch's ReduceOp in axon's terms: the op axon runs, and what happens before and after it.

AVG is a sum divided by the group size afterwards; PREMUL_SUM scales the input by its factor, then
sums (both for floating dtypes, as NCCL). bool reduces as uint8 (sum and max: or; product and
min: and). Bitwise ops are not axon's: refused, naming the op and the dtype.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

import torch
import torch.distributed as dist

from ..collectives import DTYPES, ReduceOp
from ..errors import InvalidArgumentError
from ._tensors import FLOATING, reduced_dtype

_RED = dist.ReduceOp.RedOpType
_PLAIN = {_RED.SUM: "sum", _RED.PRODUCT: "prod", _RED.MIN: "min", _RED.MAX: "max"}
_BOOL = {_RED.SUM: "max", _RED.MAX: "max", _RED.BOR: "max", _RED.PRODUCT: "min", _RED.MIN: "min",
         _RED.BAND: "min"}
# axon's codes of its dtype and op names, as its stream-ordered calls take them.
_DTYPE_CODES = {name: code for code, name in enumerate(DTYPES)}
_OP_CODES = {op.name.lower(): int(op) for op in ReduceOp}


@dataclass(frozen=True)
class Reduction:
    axon_op: str                                     # "sum", "prod", "min", "max"
    dtype: str                                       # axon's name of the dtype it computes in
    factor: Optional[Union[float, torch.Tensor]] = None  # PREMUL_SUM: the input is scaled first
    divide: bool = False                             # AVG: the result is divided by the group size

    # (dtype, op) as axon's stream-ordered calls take them, worked out once per cached Reduction.
    codes: tuple[int, int] = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "codes", (_DTYPE_CODES[self.dtype], _OP_CODES[self.axon_op]))

    def scaled(self, t: torch.Tensor) -> torch.Tensor:
        """The input as the reduction takes it: scaled by the factor (a new tensor) or `t`."""
        if self.factor is None:
            return t
        f = self.factor.to(t.device) if isinstance(self.factor, torch.Tensor) else self.factor
        return (t * f).to(t.dtype)

    def finish(self, t: torch.Tensor, group_size: int) -> None:
        if self.divide:
            t.div_(group_size)


_PLAIN_CACHE: dict = {}  # (op kind, dtype) -> Reduction, for every op without a factor


def reduction(op, t: torch.Tensor, api: str) -> Reduction:
    """How to run `op` on `t`; InvalidArgumentError naming the api, the op and the dtype when axon
    cannot. Runs on every reduction call: one lookup for the common ops."""
    kind = op if type(op) is _RED else op.op
    known = _PLAIN_CACHE.get((kind, t.dtype))
    if known is not None:
        return known
    red = _reduction(op, kind, t, api)
    if red.factor is None:
        _PLAIN_CACHE[(kind, t.dtype)] = red
    return red


def _reduction(op, kind, t: torch.Tensor, api: str) -> Reduction:
    dtype = str(t.dtype).replace("torch.", "")
    name = reduced_dtype(t, api)
    if t.dtype == torch.bool and kind in _BOOL:
        return Reduction(_BOOL[kind], name)
    if kind in _PLAIN:
        return Reduction(_PLAIN[kind], name)
    if kind in (_RED.AVG, _RED.PREMUL_SUM) and t.dtype in FLOATING:
        if kind == _RED.AVG:
            return Reduction("sum", name, divide=True)
        # A premul_sum op carries its factor (a number or a one-element tensor) in its state.
        state = op.__getstate__() if hasattr(op, "__getstate__") else None
        factor = state[1] if isinstance(state, tuple) and len(state) > 1 else None
        if factor is None:
            raise InvalidArgumentError(f"axon.torch: {api} with PREMUL_SUM: the op carries no factor "
                                       f"(make it with torch.distributed._make_nccl_premul_sum(factor))")
        return Reduction("sum", name, factor=factor)
    name = str(kind).split(".")[-1]
    why = "for floating-point tensors only" if kind in (_RED.AVG, _RED.PREMUL_SUM) else "not supported by axon"
    raise InvalidArgumentError(f"axon.torch: {api} with ReduceOp.{name} on a {dtype} tensor: {name} is {why}")
