"""What the tests on emulated nodes share: whether nodes can be made here (else why, the reason
they skip with), and how to run a command with iproute2's `ip` hidden from PATH, as on the lent
GPU machines (then `axon run --emulate-nodes` makes the nodes' links with pyroute2)."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

HIDE_COMMAND = Path(__file__).parent / "scripts" / "hide_command.py"


@functools.lru_cache(maxsize=None)
def nodes_why_not(ucx: bool = True) -> str | None:
    """None where emulated nodes can be made (and, with ``ucx``, UCX carries traffic between
    them), else the reason, as `axon run --emulate-nodes` would say it."""
    try:
        from axon import _axon
        from axon.tools.emulated_nodes import unavailable_reason
    except ImportError as exc:
        return f"emulated nodes need axon's extension, which is not built ({exc})"
    reason = unavailable_reason()
    if reason:
        return reason
    if ucx and not _axon.network_library()["available"]:
        return "emulated nodes need UCX between them, and this build has none"
    return None


def without_ip(folder: Path, argv: list[str]) -> list[str]:
    """``argv`` run with `ip` hidden from PATH (``folder`` holds the links of that PATH)."""
    return [sys.executable, str(HIDE_COMMAND), str(folder), "ip", "--", *argv]
