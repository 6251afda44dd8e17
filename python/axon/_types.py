"""Names for the kinds of argument the API takes, for its type hints.

The calls check their arguments at run time (and raise axon.InvalidArgumentError with the reason);
these aliases say in help() and to type checkers what may be passed. Buffers and streams come
from libraries axon does not depend on (torch, CuPy), so they are Any here.
"""

from __future__ import annotations

from typing import Any, Sequence, Union

import numpy as np

#: A buffer: a C-contiguous NumPy array, an axon.SymmetricGpuArray, or a CUDA array (a torch CUDA
#: tensor, a CuPy array: anything with __cuda_array_interface__).
ArrayLike = Any
#: A CUDA stream: None (the legacy default stream), an int CUstream handle, a torch.cuda.Stream, a
#: CuPy stream, or any object with __cuda_stream__().
StreamLike = Any
#: A NumPy dtype, its name ("float32"), or "bfloat16".
DTypeLike = Any
#: An enum member (SignalOp, Cmp, ReduceOp, Collective) or its name as a string ("add", "ge", ...).
EnumLike = Union[str, int]
#: A shape, an offset or a box corner: one int per dimension (an int for one dimension).
Index = Sequence[int]
Shape = Union[int, Sequence[int]]
#: One element's value for p() and the atomics.
Scalar = Union[int, float, bool, np.generic]
