"""Finding the programs built with the benchmarks: the driver axon_bench, the peer programs and the
staging space's drivers."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import BenchError

#: The axon package directory; this file is axon/tools/bench/programs.py.
PACKAGE_DIR = Path(__file__).resolve().parents[2]


#: Where a build in the source tree puts the programs: the benchmarks of the public API (bench/)
#: and those of the library's internal pieces (tests/perf/, built with the tests).
_BUILD_DIRS = (Path("build") / "bench", Path("build") / "tests" / "perf")


def _tool_candidates(name: str) -> list[Path]:
    found = [PACKAGE_DIR / "bin" / name]                     # installed with the wheel
    for tree in (PACKAGE_DIR.parent.parent, Path.cwd()):     # the source tree (python/axon), the cwd
        found += [tree / folder / name for folder in _BUILD_DIRS]
    return found


def find_tool(name: str) -> Path | None:
    """A program built with the benchmarks (next to the package, else in build/bench or
    build/tests/perf), or None."""
    for path in _tool_candidates(name):
        if path.is_file() and os.access(path, os.X_OK):
            return path
    return None


def find_driver() -> Path:
    """The axon_bench executable: $AXON_BENCH_DRIVER, next to the package, else build/bench."""
    override = os.environ.get("AXON_BENCH_DRIVER")
    if override:
        path = Path(override)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise BenchError(f"AXON_BENCH_DRIVER={override} is not an executable file")
        return path
    found = find_tool("axon_bench")
    if found is None:
        raise BenchError("cannot find the benchmark driver axon_bench (looked at "
                         + ", ".join(str(p) for p in _tool_candidates("axon_bench"))
                         + "); build it with 'make build'")
    return found
