"""What a launched run printed, record by record: its header, result rows, peers and notes."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Outcome:
    header: dict | None
    results: list[dict]
    error: dict | None
    returncode: int
    stderr: list[str]
    other: list[str]
    peers: list[dict] = field(default_factory=list)  # comparison peers the driver ran
    notes: list[dict] = field(default_factory=list)  # what a peer could not run, and why


def by_impl(results: list[dict]) -> dict[str, list[dict]]:
    """The result rows of each implementation (the rows' "impl"; axon's first, if empty)."""
    out: dict[str, list[dict]] = {"axon": []}
    for r in results:
        out.setdefault(r.get("impl", "axon"), []).append(r)
    return out
