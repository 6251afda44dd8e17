"""The spellings of nccl-tests and the OSU micro-benchmarks that ``axon bench`` takes, and what
each means here.

Accepted as the other tool means them: nccl-tests' ``-n``/``--iters`` (iterations), ``-w``/
``--warmup_iters``, ``-c 0|1``/``--check``, ``-o``/``--op``, ``-g``/``--ngpus`` (GPUs: one PE each,
as ``--pes``), ``-d``/``--datatype`` with a datatype name and its datatype names (``float``,
``half``, ...); OSU's ``-i``, ``-x``, ``-m`` and ``-d cuda D D``. nccl-tests' ``-t`` (threads) has
no equivalent and is refused naming what to type. ``-d`` stays axon's placement (``-d H D``) when
its values are D and H, so older command lines keep working.
"""

from __future__ import annotations

from ...collectives import DTYPES
from ..cli_parser import UsageError

__all__ = ["DTYPE_ALIASES", "check_flag", "dtype_name", "refuse_threads", "split_d", "take_test"]

#: nccl-tests' (and C's) datatype names -> axon's.
DTYPE_ALIASES = {"float": "float32", "double": "float64", "half": "float16", "bf16": "bfloat16",
                 "int": "int32", "char": "int8", "fp32": "float32", "fp64": "float64", "fp16": "float16"}

# OSU's -d takes an accelerator first: cuda (axon's GPU buffers), or one axon does not run on.
_OSU_ACCELERATORS = ("cuda", "managed")
_OTHER_ACCELERATORS = ("rocm", "openacc", "sycl")

_PLACES = ("D", "H")


def dtype_name(text: str, opt: str = "--dtype") -> str:
    """axon's name of the datatype `text` (axon's or nccl-tests' spelling); UsageError otherwise."""
    name = text.lower()
    name = DTYPE_ALIASES.get(name, name)
    if name not in DTYPES:
        raise UsageError(f"{opt} {text!r} is not one of {', '.join(DTYPES)} "
                         f"(nccl-tests' {', '.join(DTYPE_ALIASES)} too)")
    return name


def _is_dtype(text: str) -> bool:
    name = text.lower()
    return DTYPE_ALIASES.get(name, name) in DTYPES


def split_d(values: list[str], test: str, collective: bool) -> tuple[tuple[str, str] | None, str | None]:
    """``-d VALUES`` -> (placement, datatype): one of them is None.

    ``-d H D`` (axon), ``-d cuda D D`` / ``-d cuda`` (OSU: GPU buffers), ``-d float`` (nccl-tests:
    the datatype, collectives only); a collective, whose buffers are all in one place, also takes
    ``-d D`` or ``-d H``. Anything else: UsageError naming the forms.
    """
    forms = ("-d takes two of D (GPU memory) and H (host memory), e.g. -d H D (OSU's -d cuda D D too)"
             + ("; or a datatype, as nccl-tests: -d float" if collective else ""))
    vals = list(values)
    if vals and vals[0].lower() in _OTHER_ACCELERATORS:
        raise UsageError(f"-d {vals[0]}: axon bench runs on CUDA GPUs; for GPU buffers type -d D D (or -d cuda D D)")
    if vals and vals[0].lower() in _OSU_ACCELERATORS:
        vals = vals[1:] or ["D", "D"]  # OSU's -d cuda without places: GPU buffers on both sides
    if len(vals) == 1 and _is_dtype(vals[0]):
        if not collective:
            raise UsageError(f"-d {vals[0]} is a datatype (nccl-tests' -d), which only the collectives take; "
                             f"{test}'s -d is the buffers' places, e.g. -d D D")
        return None, dtype_name(vals[0], "-d")
    places = tuple(v.upper() for v in vals)
    if collective and len(places) == 1 and places[0] in _PLACES:
        places = (places[0], places[0])
    if len(places) != 2 or any(p not in _PLACES for p in places):
        raise UsageError(f"{forms}; got -d {' '.join(values)!r}")
    return places, None  # type: ignore[return-value]


def take_test(args, tests: list[str]) -> None:
    """Sets ``args.test`` when ``-d`` took it: ``axon bench -d H H latency`` puts the test last
    among -d's values (nargs="+"); UsageError when there is no test at all."""
    if args.test is None and args.placement and args.placement[-1] in tests:
        args.test = args.placement.pop()
    if args.test is None:
        raise UsageError(f"the following arguments are required: TEST (e.g. axon bench latency; tests: "
                         f"{', '.join(tests)})")
    if args.placement == []:
        raise UsageError("-d takes two of D (GPU memory) and H (host memory), e.g. -d H D")


def check_flag(text: str | None) -> bool | None:
    """nccl-tests' ``-c 0|1``: whether to check the data (None when absent)."""
    if text is None:
        return None
    if text not in ("0", "1"):
        raise UsageError(f"-c takes 0 (do not check the data, as --no-validate) or 1 (check it), got {text!r}")
    return text == "1"


def refuse_threads(text: str | None) -> None:
    """nccl-tests' ``-t`` (threads per process) has no equivalent: axon runs one PE per GPU."""
    if text is not None:
        raise UsageError(f"-t {text}: axon bench has no threads per process (nccl-tests' -t); it runs one PE "
                         f"per GPU: for {text} GPUs type --pes {text}")
