"""Message sizes: parsing them from the command line, and their labels."""

from __future__ import annotations

import re

from ..cli_parser import UsageError

#: Default sweep (OSU's default range for the one-sided tests ends at 4 MiB).
DEFAULT_MIN, DEFAULT_MAX = 1, 4 << 20

_SIZE_RE = re.compile(r"^\s*(\d+)\s*([kKmMgG]?)(?:i?[bB])?\s*$")
_SCALE = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def parse_size(text: str, what: str = "size") -> int:
    """``"8"``, ``"64K"``, ``"1M"``, ``"2G"`` (binary multiples) -> bytes; >= 1."""
    m = _SIZE_RE.match(text)
    if not m:
        raise UsageError(f"{what}: {text!r} is not a size (e.g. 8, 64K, 1M)")
    value = int(m.group(1)) * _SCALE[m.group(2).lower()]
    if value < 1:
        raise UsageError(f"{what}: sizes start at 1 byte, got {text!r}")
    return value


def size_label(n: float) -> str:
    """8 -> '8 B', 4096 -> '4 KiB', 1048576 -> '1 MiB' (and '1.5 KiB' where not whole).

    Also takes the float positions of plot axis ticks (8.0 -> '8 B')."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            v = n / scale
            return f"{v:g} {unit}" if v == int(v) else f"{v:.3g} {unit}"
    return f"{n:g} B"


def parse_range(text: str) -> tuple[int, int]:
    """``-m`` as OSU takes it: ``MIN:MAX``, ``MAX`` or ``MIN:``."""
    if ":" in text:
        lo, _, hi = text.partition(":")
        mn = parse_size(lo, f"-m {text}: MIN") if lo.strip() else DEFAULT_MIN
        mx = parse_size(hi, f"-m {text}: MAX") if hi.strip() else max(DEFAULT_MAX, mn)
    else:
        mn, mx = DEFAULT_MIN, parse_size(text, f"-m {text}: MAX")
    if mn > mx:
        raise UsageError(f"-m {text}: MIN ({mn}) is larger than MAX ({mx})")
    return mn, mx
