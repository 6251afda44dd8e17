"""The document ``axon bench --json FILE`` writes (the schema is in the package's docstring)."""

from __future__ import annotations

import errno
import json
import os

from .catalog import TESTS
from .machine import machine_info
from .request import Request


def bench_document(req: Request, header: dict | None, results: list[dict], command: list[str],
                   compare: list[dict] | None) -> dict:
    """The document of one run: the request, the driver's header and `results`, this machine and,
    with --compare, the peers' notes."""
    h = dict(header or {})
    placement = h.get("placement") or (" ".join(req.placement) if req.placement else "H H")
    config = {k: v for k, v in h.items() if k not in ("tool", "test", "hostname", "metric", "time_label")}
    config.update({"placement": placement, "pes": req.pes, "command": command,
                   "sizes": h.get("sizes", req.sizes()), "factor": req.factor})
    doc = {
        "tool": "axon bench",
        "schema": 1,
        "test": req.test,
        "impl": "axon",
        "label": f"axon {req.test} {placement}" + (" via host" if req.via_host else ""),
        "metric": TESTS[req.test].metric,
        "time_label": h.get("time_label", TESTS[req.test].summary),
        "config": config,
        "machine": machine_info(),
        "results": results,
    }
    if compare is not None:
        doc["compare"] = compare
    return doc


def write_document(path: str, doc: dict) -> None:
    """Writes `doc` to `path` as indented JSON; raises OSError."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def check_writable(path: str) -> None:
    """Raises OSError unless `path` can be written, without changing it: the sweep before the
    write can take minutes, and a typo in the path should not cost them."""
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    if os.path.exists(path):
        with open(path, "r+", encoding="utf-8"):  # opened for writing, not truncated
            return
    with open(path, "x", encoding="utf-8"):
        pass
    os.remove(path)
