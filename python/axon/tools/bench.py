"""``axon bench TEST``: OSU-style benchmarks of axon's one-sided API over a sweep of message sizes.

The measuring is done by a C++ driver, ``axon_bench`` (bench/axon_bench.cpp), which the launcher
starts on 2 PEs (``python -m axon run -n 2 axon_bench TEST ...``). The driver prints one JSON
object per line as it goes; this module validates the options first, runs the driver, shows a
progress bar on long sweeps (on a terminal), prints an OSU-style table and writes ``--json``.

JSON written by ``--json FILE`` (``schema`` 1)::

    {"tool": "axon bench", "schema": 1, "test": "latency", "impl": "axon",
     "label": "axon latency H H",                 # what `axon plot` calls the line
     "metric": "latency" | "bandwidth",           # the main column of the test
     "time_label": "one-way latency (...)",       # what time_us means for this test
     "config": {"placement": "H H", "local": "H", "remote": "H", "pes": 2, "backend": "host",
                "window": 64, "validate": true, "iters": null, "warmup": null, "sizes": [...],
                "limit_name": "memcpy between the same mappings" | null, "command": [...], ...},
     "machine": {"hostname": ..., "cpu": ..., "cpus": ..., "os": ..., "gpu": [...] | null},
     "results": [{"test": "latency", "size": 8, "iters": 10000, "warmup": 100,
                  "time_us": 0.12, "bw_gbs": 0.066, "wrong": 0,
                  "limit": {"time_us": 0.003, "bw_gbs": 2.4}}, ...],   # limit: H H only
     "compare": [{"peer": "NCCL", "status": "skipped", "found": false, "where": null,
                  "note": "..."}, ...]}                                # with --compare only

Units: ``time_us`` in microseconds; ``bw_gbs`` in GB/s = 1e9 bytes per second. ``limit`` is the
same transfers done as a plain memcpy between the same mappings (the hardware limit of the host
path), in the same units. ``wrong`` counts the bytes of the last transfer of a size that differ
from the expected pattern (null with --no-validate).

Like every tool module, this one must not import the compiled extension at import time; it never
initializes axon in this process.
"""

from __future__ import annotations

import argparse
import ctypes.util
import importlib.util
import json
import os
import platform
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, NoReturn, Sequence

from ..collectives import DTYPES, ReduceOp

__all__ = ["TESTS", "add_subcommand", "find_driver", "main", "parse_size", "run_bench", "size_label"]

EXIT_USAGE = 2
_PROG = "axon bench"

#: Show the progress bar once a sweep has run this long (seconds), on a terminal only.
PROGRESS_AFTER_S = 2.0

#: Default sweep (OSU's default range for the one-sided tests ends at 4 MiB).
DEFAULT_MIN, DEFAULT_MAX = 1, 4 << 20


@dataclass(frozen=True)
class TestSpec:
    """How `axon bench` shows one test: the main column(s) of its table."""

    metric: str          # "latency" or "bandwidth"
    summary: str         # one line for --help and the table's title
    columns: tuple       # (JSON field, heading) pairs, main column first


_LAT = ("time_us", "Latency (us)")
_BW = ("bw_gbs", "Bandwidth (GB/s)")

TESTS: dict[str, TestSpec] = {
    "latency": TestSpec("latency", "put_signal ping-pong, ONE-WAY latency = round trip / 2 (osu_latency)",
                        (_LAT,)),
    "bw": TestSpec("bandwidth", "windows of 64 put_nbi, quiet, signal, ack per window (osu_bw)", (_BW,)),
    "bibw": TestSpec("bandwidth", "both PEs run the bw pattern at once; sum of both (osu_bibw)",
                     (("bw_gbs", "Bi-Bandwidth (GB/s)"),)),
    "pingping": TestSpec("bandwidth", "both PEs put_signal to each other at once; time per exchange, "
                                      "bandwidth = bytes sent by ONE PE / time",
                         (("time_us", "Time (us)"), _BW)),
    "put_lat": TestSpec("latency", "blocking put + quiet, one message at a time", (_LAT,)),
    "get_lat": TestSpec("latency", "blocking get, one message at a time", (_LAT,)),
    "put_bw": TestSpec("bandwidth", "windows of 64 put_nbi, then quiet", (_BW,)),
    "get_bw": TestSpec("bandwidth", "windows of 64 get_nbi, then quiet", (_BW,)),
    "put_signal_rtt": TestSpec("latency", "put_signal ping-pong, reported as the ROUND TRIP",
                               (("time_us", "Round trip (us)"),)),
}

#: The collectives, measured on every PE with nccl-tests conventions (size, count, type, redop,
#: root, time, algbw, busbw, #wrong; out of place, then in place).
COLLECTIVES: dict[str, str] = {
    "allreduce": "allreduce over all PEs; busbw = algbw * 2(n-1)/n",
    "broadcast": "broadcast from --root; busbw = algbw",
    "reduce": "reduce to --root; busbw = algbw",
    "allgather": "allgather, size = the output; busbw = algbw * (n-1)/n",
    "reduce_scatter": "reduce_scatter, size = the input; busbw = algbw * (n-1)/n",
    "alltoall": "alltoall, size = either buffer; busbw = algbw * (n-1)/n",
}
for _name, _summary in COLLECTIVES.items():
    TESTS[_name] = TestSpec("bandwidth", _summary, (("time_us", "Time (us)"), ("bw_gbs", "Bus bandwidth (GB/s)")))
OPS = tuple(op.name.lower() for op in ReduceOp)


class UsageError(Exception):
    """A bad request; the message is the one line shown to the user (exit status 2)."""


class BenchError(Exception):
    """The run failed; the message is shown to the user (exit status 1)."""


# --------------------------------------------------------------------------
# Sizes and options
# --------------------------------------------------------------------------

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


def size_label(n: int) -> str:
    """8 -> '8 B', 4096 -> '4 KiB', 1048576 -> '1 MiB' (and '1.5 KiB' where not whole)."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            v = n / scale
            return f"{v:g} {unit}" if v == int(v) else f"{v:.3g} {unit}"
    return f"{n} B"


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


def _count(text: str | None, opt: str, minimum: int) -> int | None:
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise UsageError(f"{opt} must be an integer >= {minimum}, got {text!r}")
    return value


@dataclass
class Request:
    """A validated `axon bench` command line."""

    test: str
    min_bytes: int
    max_bytes: int
    factor: int
    iters: int | None
    warmup: int | None
    placement: tuple[str, str] | None
    validate: bool
    pes: int
    settle_ms: int | None = None
    dtype: str = "float32"
    op: str = "sum"
    root: int = 0
    nccl: str | None = None  # libnccl to run beside axon (collectives on GPU buffers, --compare)
    via_host: bool = False   # pingping: GPU data staged through host memory by hand
    peers: frozenset[str] | None = None  # --peers: the --compare peers to run (None: all found)

    @property
    def collective(self) -> bool:
        return self.test in COLLECTIVES

    def sizes(self) -> list[int]:
        out, s = [], self.min_bytes
        while s <= self.max_bytes:
            out.append(s)
            s *= self.factor
        return out

    def iteration_args(self) -> list[str]:
        """-i/-x as given (absent: each side's own defaults by size)."""
        args = [] if self.iters is None else ["-i", str(self.iters)]
        return args + ([] if self.warmup is None else ["-x", str(self.warmup)])

    def driver_args(self) -> list[str]:
        args = [self.test, "-b", str(self.min_bytes), "-e", str(self.max_bytes), "-f", str(self.factor),
                *self.iteration_args()]
        if self.collective:
            args += ["-t", self.dtype, "-o", self.op, "-r", str(self.root)]
            if self.placement is not None:
                args += ["-d", self.placement[0]]
        elif self.placement is not None:
            args += ["-d", *self.placement]
        if not self.validate:
            args.append("--no-validate")
        if self.via_host:
            args.append("--via-host")
        if self.nccl:
            args += ["--nccl", self.nccl]
        if self.settle_ms is not None and not self.collective:
            args += ["--settle-ms", str(self.settle_ms)]
        return args


def validate(args: argparse.Namespace) -> Request:
    """Checks the parsed options; raises UsageError with one clear line."""
    test = args.test
    if test not in TESTS:
        raise UsageError(f"unknown test {test!r} (tests: {', '.join(TESTS)})")
    if args.range is not None and (args.minbytes is not None or args.maxbytes is not None):
        raise UsageError("give the sizes with -m MIN:MAX or with -b/-e, not both")
    if args.range is not None:
        mn, mx = parse_range(args.range)
    else:
        mn = parse_size(args.minbytes, "-b") if args.minbytes is not None else DEFAULT_MIN
        mx = parse_size(args.maxbytes, "-e") if args.maxbytes is not None else max(DEFAULT_MAX, mn)
        if mn > mx:
            raise UsageError(f"-b {args.minbytes} is larger than -e {args.maxbytes}")
    factor = _count(args.stepfactor, "-f", 2) or 2
    iters = _count(args.iters, "-i", 1)
    warmup = _count(args.warmup, "-x", 0)
    pes = _count(args.pes, "--pes", 2) or 2
    placement = None
    if args.placement is not None:
        place = tuple(p.upper() for p in args.placement)
        if any(p not in ("D", "H") for p in place):
            raise UsageError(
                f"-d takes two of D (GPU memory) and H (host memory), e.g. -d H D; got "
                f"{' '.join(args.placement)!r}")
        placement = place  # type: ignore[assignment]
    settle = _count(getattr(args, "settle_ms", None), "--settle-ms", 0)
    dtype, op = getattr(args, "dtype", None) or "float32", getattr(args, "op", None) or "sum"
    root = _count(getattr(args, "root", None), "--root", 0) or 0
    if test in COLLECTIVES:
        if placement is not None and placement[0] != placement[1]:
            raise UsageError("a collective's buffers are all in one place: -d D D or -d H H")
        if dtype not in DTYPES:
            raise UsageError(f"--dtype {dtype!r} is not one of {', '.join(DTYPES)}")
        if op not in OPS:
            raise UsageError(f"--op {op!r} is not one of {', '.join(OPS)}")
        if root >= pes:
            raise UsageError(f"--root {root} is not one of the {pes} PEs (--pes)")
    via_host = bool(getattr(args, "via_host", False))
    if via_host and test != "pingping":
        raise UsageError("--via-host is an option of pingping only")
    if via_host and placement not in (None, ("D", "D")):
        raise UsageError("--via-host stages GPU data through the host: it takes -d D D")
    return Request(test, mn, mx, factor, iters, warmup, placement, not args.no_validate, pes, settle, dtype, op,
                   root, via_host=via_host, peers=parse_peers(getattr(args, "peers", None)))


#: --peers names, as typed, and the peers they select.
PEER_NAMES = {"nccl": "NCCL", "pytorch": "PyTorch NCCL", "nvshmem": "NVSHMEM"}


def parse_peers(text: str | None) -> frozenset[str] | None:
    """--peers nccl,nvshmem -> the peers' names; None when the option is absent."""
    if text is None:
        return None
    names = [t.strip().lower() for t in text.split(",") if t.strip()]
    unknown = [t for t in names if t not in PEER_NAMES]
    if unknown or not names:
        raise UsageError(f"--peers takes a comma-separated list of {', '.join(PEER_NAMES)}; "
                         f"got {text!r}")
    return frozenset(PEER_NAMES[t] for t in names)


# --------------------------------------------------------------------------
# The parser
# --------------------------------------------------------------------------


def _configure(parser: argparse.ArgumentParser) -> None:
    tests = "\n".join(f"  {name:15s} {spec.summary}" for name, spec in TESTS.items())
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (
        "Benchmark axon's one-sided API between PE 0 and PE 1 (OSU micro-benchmark conventions)\n"
        "and its collectives on --pes PEs (nccl-tests conventions) over a sweep of sizes. Tests:\n"
        + tests + "\n\n"
        "Times in microseconds; bandwidth in GB/s = 1e9 bytes per second. The receiver checks\n"
        "every byte of the last transfer of each size (#wrong) unless --no-validate.")
    parser.add_argument("test", metavar="TEST", help="the test to run (see above)")
    parser.add_argument("-m", "--message-size", dest="range", metavar="MIN:MAX",
                        help="sizes MIN..MAX (e.g. 8:1M; K/M/G are binary); default 1:4M")
    parser.add_argument("-b", "--minbytes", metavar="MIN", help="smallest size (as nccl-tests)")
    parser.add_argument("-e", "--maxbytes", metavar="MAX", help="largest size (as nccl-tests)")
    parser.add_argument("-f", "--stepfactor", metavar="FACTOR",
                        help="multiply the size by FACTOR from one step to the next (default 2)")
    parser.add_argument("-i", "--iterations", dest="iters", metavar="ITERS",
                        help="timed iterations per size (windows for the bw tests); default as OSU: "
                             "10000 (100 windows), above 8 KiB 1000 (20 windows)")
    parser.add_argument("-x", "--warmup", metavar="WARMUP",
                        help="untimed iterations first; default as OSU: 100 (10), above 8 KiB 10 (2)")
    parser.add_argument("-d", "--placement", nargs=2, metavar=("LOCAL", "REMOTE"),
                        help="buffers: D (GPU memory) or H (host memory) for the local source and "
                             "the remote destination; default D D with a GPU, else H H")
    parser.add_argument("--no-validate", action="store_true", help="do not check the data received")
    parser.add_argument("--pes", metavar="N",
                        help="PEs to start (default 2; in the one-sided tests PEs past 1 only join the barriers, "
                             "collectives run on all)")
    parser.add_argument("--settle-ms", metavar="MS",
                        help="before the first size, PE 0 and PE 1 ping-pong this long so that idle "
                             "(virtual) CPUs are up to speed (default 200; 0: off)")
    parser.add_argument("--dtype", metavar="TYPE", help="collectives: element type (default float32)")
    parser.add_argument("--op", metavar="OP", help="collectives: sum, prod, min or max (default sum)")
    parser.add_argument("--root", metavar="PE", help="broadcast and reduce: the root (default 0)")
    parser.add_argument("--via-host", action="store_true",
                        help="pingping on GPU buffers staged through host memory by hand: copy to a "
                             "pinned host buffer, exchange host buffers, copy to the GPU (the "
                             "'CUDA-staged MPI' of the ping-ping reference)")
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON (see axon plot)")
    parser.add_argument("--compare", action="store_true",
                        help="run the peers this machine has beside axon, on GPU buffers (-d D D), "
                             "and print the ratios: NCCL on the same buffers in the same program "
                             "(collectives), PyTorch (torch.distributed NCCL: collectives, latency, "
                             "pingping; symmetric memory: allreduce) and NVSHMEM (its stream-ordered "
                             "collectives but reduce; latency, put_signal_rtt, pingping, bw, bibw) "
                             "right after; say which peers are missing, and why")
    parser.add_argument("--peers", metavar="LIST",
                        help="--compare with these peers only: a comma-separated list of nccl, "
                             "pytorch and nvshmem (each peer program adds its own start and run "
                             "time: on 4 GPUs, tens of seconds)")
    parser.set_defaults(handler=run_bench)


def add_subcommand(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Adds ``bench`` to the ``axon`` command line (handler: :func:`run_bench`)."""
    parser = subparsers.add_parser("bench", help="OSU-style benchmarks of the one-sided API, nccl-tests-style of the collectives")
    _configure(parser)
    return parser


class _Parser(argparse.ArgumentParser):
    """For :func:`main`: a usage error is one line, not the usage text plus sys.exit."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=_PROG)
    _configure(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``axon bench`` on its own (tests, ``python -m axon.tools.bench``); returns the exit code."""
    try:
        args = build_parser().parse_args(argv)
    except UsageError as exc:
        print(f"{_PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    return run_bench(args)


# --------------------------------------------------------------------------
# The driver and the machine
# --------------------------------------------------------------------------


def _tool_candidates(name: str) -> list[Path]:
    package = Path(__file__).resolve().parent.parent  # .../axon
    found = [package / "bin" / name]                   # installed with the wheel
    found.append(package.parent.parent / "build" / "bench" / name)  # source tree: python/axon
    found.append(Path.cwd() / "build" / "bench" / name)
    return found


def find_tool(name: str) -> Path | None:
    """A program built with the benchmarks (next to the package, else in build/bench), or None."""
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


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _gpus() -> list[dict] | None:
    """GPUs as nvidia-smi lists them, or None where there is no nvidia-smi or it sees none."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    try:
        out = subprocess.run(
            [smi, "--query-gpu=index,name,memory.total,driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    gpus = []
    for line in out.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4:
            gpus.append({"index": int(parts[0]) if parts[0].isdigit() else parts[0], "name": parts[1],
                         "memory": parts[2], "driver": parts[3]})
    return gpus or None


def machine_info() -> dict:
    return {"hostname": socket.gethostname(), "cpu": _cpu_model(), "cpus": os.cpu_count(),
            "os": platform.platform(), "python": platform.python_version(), "gpu": _gpus()}


# --------------------------------------------------------------------------
# --compare: the peers present on this machine
# --------------------------------------------------------------------------


def _pip_library(package: str, pattern: str) -> str | None:
    """A shared library shipped in an NVIDIA pip wheel (nvidia/<package>/lib), without importing it."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return None
    for root in (spec.submodule_search_locations or []) if spec else []:
        lib = Path(root) / package / "lib"
        if lib.is_dir():
            for path in sorted(lib.glob(pattern)):
                return str(path)
    return None


def _find_spec(name: str) -> str | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    return (spec.origin or name) if spec else None


#: The program that drives NVSHMEM (bench/nvshmem_peer.cu), built where NVSHMEM's headers and
#: device library are found at build time.
NVSHMEM_PEER = "axon_nvshmem_peer"


def detect_peers() -> list[dict]:
    """Which comparison peers this machine has: [{peer, found, where, what}], nothing loaded.
    A peer that is found but cannot be driven carries "unavailable": why."""
    nccl = ctypes.util.find_library("nccl") or _pip_library("nccl", "libnccl.so*")
    torch = _find_spec("torch")
    nvshmem = (ctypes.util.find_library("nvshmem_host") or ctypes.util.find_library("nvshmem")
               or _pip_library("nvshmem", "libnvshmem_host.so*"))
    nvshmem_peer = find_tool(NVSHMEM_PEER)
    # A peer program built against an NVSHMEM outside the library path finds it through its rpath.
    nvshmem = nvshmem or (str(nvshmem_peer) if nvshmem_peer else None)
    peers = [
        {"peer": "NCCL", "found": bool(nccl), "where": nccl, "what": "libnccl.so"},
        {"peer": "PyTorch NCCL", "found": bool(torch), "where": torch, "what": "torch"},
        {"peer": "NVSHMEM", "found": bool(nvshmem), "where": nvshmem, "what": "libnvshmem_host.so",
         "runner": str(nvshmem_peer) if nvshmem_peer else None},
    ]
    if nvshmem and not nvshmem_peer:
        peers[2]["unavailable"] = (f"axon was built without {NVSHMEM_PEER} (it needs NVSHMEM's headers and "
                                   "libnvshmem_device.a at build time: set NVSHMEM_HOME or install "
                                   "nvidia-nvshmem-cu13, then rebuild)")
    return peers


#: What each peer is run on: (tests, how). PyTorch NCCL covers the point-to-point tests that
#: NCCL's send/recv can express; NVSHMEM those its put/signal calls express, and every
#: collective but the rooted reduce (it has none).
PEER_SCOPE = {
    "NCCL": (frozenset(COLLECTIVES), "in the same program on the same buffers"),
    "PyTorch NCCL": (frozenset(COLLECTIVES) | {"latency", "pingping"},
                     "right after axon, through torch.distributed on the same GPUs and sizes"),
    "NVSHMEM": ((frozenset(COLLECTIVES) - {"reduce"}) | {"latency", "put_signal_rtt", "pingping", "bw", "bibw"},
                "right after axon, through its stream-ordered host API on its own symmetric heap, on the "
                "same GPUs and sizes"),
}
TORCH_TESTS = PEER_SCOPE["PyTorch NCCL"][0]
NVSHMEM_TESTS = PEER_SCOPE["NVSHMEM"][0]


def compare_notes(peers: list[dict], have_gpu: bool, ran: frozenset[str] = frozenset(),
                  test: str | None = None, gpu_buffers: bool = True,
                  failed: dict[str, str] | None = None) -> list[dict]:
    """One note per peer: 'run' for the peers in `ran`, else why not; `failed`: peer -> why its
    run failed, added to its note."""
    out = []
    for p in peers:
        state = f"{p['what']} {'found' if p['found'] else 'not found'}"
        tests, how = PEER_SCOPE.get(p["peer"], (frozenset(), ""))
        if p["peer"] in ran:
            status, note = "run", f"{p['peer']}: run {how} ({p['where']})"
        elif p.get("deselected"):
            status, note = "not_run", f"{p['peer']}: not run, not in --peers ({state})"
        elif not have_gpu:
            status, note = "skipped", f"{p['peer']}: skipped, needs GPUs ({state})"
        elif not p["found"]:
            status, note = "skipped", f"{p['peer']}: skipped ({state})"
        elif not tests:
            status, note = "not_run", (f"{p['peer']}: not run, axon bench does not drive it yet "
                                       f"({state} at {p['where']})")
        elif p.get("unavailable"):
            status, note = "not_run", f"{p['peer']}: not run, {p['unavailable']} ({state} at {p['where']})"
        elif test is not None and test not in tests:
            status, note = "not_run", (f"{p['peer']}: not run, it is compared on "
                                       f"{', '.join(sorted(tests))} only ({state})")
        elif not gpu_buffers:
            status, note = "not_run", f"{p['peer']}: not run, it is compared on GPU buffers (-d D D) only"
        else:
            status, note = "not_run", f"{p['peer']}: not run ({state} at {p['where']})"
        why = (failed or {}).get(p["peer"])
        out.append({**p, "status": status, "note": note + (f"; it failed: {why}" if why else "")})
    return out


# --------------------------------------------------------------------------
# Running the driver
# --------------------------------------------------------------------------


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


def _reader(stream, tag: str, q: queue.Queue) -> None:
    try:
        for raw in iter(stream.readline, b""):
            q.put((tag, raw.decode("utf-8", errors="replace").rstrip("\n")))
    finally:
        stream.close()
        q.put((tag, None))


def launch_command(driver: Path, req: Request) -> list[str]:
    """The command that runs the driver on req.pes PEs through axon's launcher."""
    return [sys.executable, "-m", "axon", "run", "-n", str(req.pes), "--no-prefix",
            str(driver), *req.driver_args()]


def _child_env() -> dict:
    env = dict(os.environ)
    # The launcher must import this very package (also when it is not installed).
    root = str(Path(__file__).resolve().parent.parent.parent)
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = root + (os.pathsep + old if old else "")
    return env


class _Progress:
    """A rich progress bar over the sizes, started only once the sweep has run a while."""

    def __init__(self, enabled: bool, sizes: list[int], test: str) -> None:
        self._enabled = enabled
        self._sizes = sizes
        self._test = test
        self._done = 0
        self._bar = None
        self._task = None

    def tick(self, elapsed: float, done: int | None = None) -> None:
        if done is not None:
            self._done = done
        if not self._enabled:
            return
        if self._bar is None and elapsed >= PROGRESS_AFTER_S:
            try:
                from rich.console import Console
                from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
            except ImportError:
                self._enabled = False
                return
            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 console=Console(stderr=True), transient=True)
            self._bar.start()
            self._task = self._bar.add_task("", total=len(self._sizes), completed=self._done)
        if self._bar is not None:
            running = self._sizes[self._done] if self._done < len(self._sizes) else None
            desc = (f"axon bench {self._test}" + (f"  {size_label(running)}" if running else "")
                    + f"  {elapsed:.0f} s")
            self._bar.update(self._task, completed=self._done, description=desc)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def run_driver(driver: Path, req: Request, progress: bool,
               on_result: Callable[[dict], None] | None = None) -> Outcome:
    """Runs the driver through the launcher, reading its JSON lines as they come."""
    return run_launched(launch_command(driver, req), req, progress, on_result)


def run_launched(cmd: list[str], req: Request, progress: bool,
                 on_result: Callable[[dict], None] | None = None, what: str | None = None) -> Outcome:
    """Runs `cmd` (a launcher command whose PE 0 prints JSON lines: header, result, peer, note,
    error, done), reading the lines as they come and showing progress over req's sizes."""
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=_child_env())
    except OSError as exc:
        raise BenchError(f"cannot start {cmd[0]}: {exc.strerror or exc}") from exc
    q: queue.Queue = queue.Queue()
    threads = [threading.Thread(target=_reader, args=(proc.stdout, "out", q), daemon=True),
               threading.Thread(target=_reader, args=(proc.stderr, "err", q), daemon=True)]
    for t in threads:
        t.start()
    out = Outcome(None, [], None, 0, [], [])
    bar = _Progress(progress, req.sizes(), what or req.test)
    start = time.monotonic()
    open_streams = 2
    try:
        while open_streams:
            try:
                tag, line = q.get(timeout=0.1)
            except queue.Empty:
                bar.tick(time.monotonic() - start)
                continue
            if line is None:
                open_streams -= 1
                continue
            if tag == "err":
                out.stderr.append(line)
                continue
            record = None
            if line.startswith("{"):
                try:
                    record = json.loads(line)
                except ValueError:
                    record = None
            if not isinstance(record, dict):
                out.other.append(line)
                continue
            kind = record.pop("type", None)
            if kind == "header":
                out.header = record
            elif kind == "result":
                out.results.append(record)
                if on_result:
                    on_result(record)
                bar.tick(time.monotonic() - start, len(out.results))
            elif kind == "error":
                out.error = record
            elif kind == "peer":
                out.peers.append(record)
            elif kind == "note":
                out.notes.append(record)
            elif kind != "done":
                out.other.append(line)
        out.returncode = proc.wait()
    except BaseException:
        # The launcher forwards SIGINT to the PEs and stops them; SIGKILL would orphan them.
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        raise
    finally:
        bar.close()
    return out


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    v = float(value)
    if v >= 1 or v == 0:
        return f"{v:.2f}"
    return f"{v:.3g}"


#: How the tables name each implementation a run can carry (the JSON's "impl").
IMPL_NAMES = {"axon": "axon", "nccl": "NCCL", "pytorch-nccl": "PyTorch NCCL",
              "pytorch-symm-mem": "PyTorch symmetric memory", "nvshmem": "NVSHMEM"}


def _impl_title(impl: str, peers: list[dict] | None) -> str:
    version = next((p.get("version") for p in peers or [] if p.get("impl") == impl), None)
    name = IMPL_NAMES.get(impl, impl)
    if not version:
        return name
    return f"{name} {version}" if impl in ("nccl", "nvshmem") else f"{name} ({version})"


def _by_impl(results: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {"axon": []}
    for r in results:
        out.setdefault(r.get("impl", "axon"), []).append(r)
    return out


def _ratio(axon_us: Any, peer_us: Any) -> str:
    return f"{peer_us / axon_us:.2f}x" if axon_us and peer_us else "-"


def collective_table_lines(test: str, header: dict | None, results: list[dict],
                           peers: list[dict] | None = None) -> list[str]:
    """The nccl-tests table: out-of-place then in-place time, algbw, busbw and #wrong per size;
    with peers beside axon (NCCL, PyTorch), a table for each and the ratio of the times."""
    impls = _by_impl(results)
    mine = impls.pop("axon")
    lines = _one_collective_table(test, header, mine, "axon")
    for impl, rows in impls.items():
        name = IMPL_NAMES.get(impl, impl)
        lines += [""] + _one_collective_table(test, header, rows, _impl_title(impl, peers))
        lines += ["", f"# axon vs {name}, same run, same sizes: {name} time / axon time (> 1: axon faster)",
                  "#" + "size (B)".rjust(11) + "out-of-place".rjust(14) + "in-place".rjust(11)]
        by_size = {r.get("size"): r for r in rows}
        for r in mine:
            n = by_size.get(r.get("size"))
            if n:
                ratios = [_ratio(r.get(side, {}).get("time_us"), n.get(side, {}).get("time_us"))
                          for side in ("out_of_place", "in_place")]
                lines.append(f"{r.get('size'):>12}{ratios[0]:>14}{ratios[1]:>11}")
    return lines


def _one_collective_table(test: str, header: dict | None, results: list[dict], impl: str) -> list[str]:
    h = header or {}
    lines = [f"# axon bench {test} ({impl}): {COLLECTIVES[test]}",
             f"# {h.get('pes', '?')} PEs, {h.get('backend', '?')} backend, buffers {h.get('placement', '?')}, "
             f"validation {'on' if h.get('validate', True) else 'off'}; time: the slowest PE's average per call",
             "#" + "".join(x.rjust(w) for x, w in ((" size", 11), ("count", 13), ("type", 10), ("redop", 7),
                                                   ("root", 6), ("algo", 9)))
             + "      " + "out-of-place".rjust(12) + "algbw".rjust(9) + "busbw".rjust(9) + "#wrong".rjust(7)
             + "      " + "in-place".rjust(12) + "algbw".rjust(9) + "busbw".rjust(9) + "#wrong".rjust(7),
             "#" + "(B)".rjust(11) + "(elements)".rjust(13) + " " * 32
             + "      " + "time (us)".rjust(12) + "(GB/s)".rjust(9) + "(GB/s)".rjust(9) + " " * 7
             + "      " + "time (us)".rjust(12) + "(GB/s)".rjust(9) + "(GB/s)".rjust(9)]

    def num(v, spec: str) -> str:
        return "-" if v is None else format(float(v), spec)

    def side(d: dict) -> str:
        wrong = d.get("wrong")
        return (f"{num(d.get('time_us'), '.2f'):>12} {num(d.get('algbw_gbs'), '.3f'):>8}"
                f" {num(d.get('busbw_gbs'), '.3f'):>8}{('-' if wrong is None else str(wrong)):>7}")

    for r in results:
        lines.append(f"{r.get('size', '?'):>12}{r.get('count', '?'):>13}{r.get('dtype', '?'):>10}"
                     f"{r.get('redop', '?'):>7}{r.get('root', '?'):>6}{' ' + str(r.get('algorithm', '?')):>9}"
                     f"      {side(r.get('out_of_place', {}))}      {side(r.get('in_place', {}))}")
    return lines


def table_lines(test: str, header: dict | None, results: list[dict],
                peers: list[dict] | None = None) -> list[str]:
    """The OSU-style table: '#' comment lines, then one row per size."""
    if test in COLLECTIVES:
        return collective_table_lines(test, header, results, peers)
    spec = TESTS[test]
    h = header or {}
    lines = [f"# axon bench {test}: {spec.summary}"]
    backend = h.get("backend", "?")
    why = h.get("gpu_unavailable_reason")
    lines.append(
        f"# {h.get('pes', '?')} PEs (PE 0 and PE 1 measure), {backend} backend"
        + (f" ({why})" if backend == "host" and why else "")
        + f", placement {h.get('placement', '?')} (local source, remote destination"
        + ("; staged through host memory by hand" if h.get("via_host") else "") + "), "
        + f"validation {'on' if h.get('validate', True) else 'off'}")
    lines.append("# times in microseconds; GB/s = 1e9 bytes per second"
                 + (f"; limit: {h['limit_name']}" if h.get("limit_name") else ""))
    impls = _by_impl(results)
    results = impls.pop("axon")
    has_limit = any("limit" in r for r in results)
    main_field, main_head = spec.columns[-1] if spec.metric == "bandwidth" else spec.columns[0]
    heads = [head for _, head in spec.columns]
    if has_limit:
        unit = "GB/s" if main_field == "bw_gbs" else "us"
        heads.append(f"memcpy ({unit})")
    heads.append("#wrong")
    widths = [max(len(x), 12) for x in heads]
    lines.append("# " + "Size".ljust(10) + "".join(x.rjust(w + 2) for x, w in zip(heads, widths)))
    for r in results:
        cells = [_fmt(r.get(field)) for field, _ in spec.columns]
        if has_limit:
            cells.append(_fmt((r.get("limit") or {}).get(main_field)))
        wrong = r.get("wrong")
        cells.append("-" if wrong is None else str(wrong))
        lines.append(str(r.get("size")).ljust(12) + "".join(c.rjust(w + 2) for c, w in zip(cells, widths)))
    for impl, rows in impls.items():
        name = IMPL_NAMES.get(impl, impl)
        lines += ["", f"# {_impl_title(impl, peers)}: the same test, sizes and GPUs, same run",
                  "# " + "Size".ljust(10) + "".join(x.rjust(w + 2) for x, w in zip(heads[:len(spec.columns)], widths))
                  + f"{name + ' / axon time':>26}"]
        by_size = {r.get("size"): r for r in results}
        for r in rows:
            cells = [_fmt(r.get(field)) for field, _ in spec.columns]
            ratio = _ratio((by_size.get(r.get("size")) or {}).get("time_us"), r.get("time_us"))
            lines.append(str(r.get("size")).ljust(12) + "".join(c.rjust(w + 2) for c, w in zip(cells, widths))
                         + f"{ratio:>26}")
    return lines


def bench_document(req: Request, header: dict | None, results: list[dict], command: list[str],
                   compare: list[dict] | None) -> dict:
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


def run_bench(args: argparse.Namespace) -> int:
    """The handler of ``axon bench``; returns the exit code."""
    try:
        req = validate(args)
        driver = find_driver()
    except UsageError as exc:
        print(f"{_PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BenchError as exc:
        print(f"{_PROG}: {exc}", file=sys.stderr)
        return 1

    ran: frozenset[str] = frozenset()
    compare_wanted = args.compare or req.peers is not None
    peers = {p["peer"]: p for p in detect_peers()} if compare_wanted else {}
    for name, p in peers.items():
        if req.peers is not None and name not in req.peers:
            p["deselected"] = True
    if req.collective and req.placement in (None, ("D", "D")):
        nccl = peers.get("NCCL")
        if nccl and nccl["found"] and not nccl.get("deselected"):
            req.nccl = nccl["where"]
            ran = frozenset({"NCCL"})
    interactive = sys.stdout.isatty() and sys.stderr.isatty()
    try:
        outcome = run_driver(driver, req, progress=interactive)
    except BenchError as exc:
        print(f"{_PROG}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{_PROG}: interrupted", file=sys.stderr)
        return 130

    if outcome.error is not None:
        message = outcome.error.get("message", "the driver failed")
        if outcome.error.get("usage"):
            print(f"{_PROG}: error: {message}", file=sys.stderr)
            return EXIT_USAGE
        print(f"{_PROG}: {message}", file=sys.stderr)
        _print_stderr_tail(outcome, skip_driver=True)
        return 1
    if outcome.returncode != 0 and not outcome.results:
        print(f"{_PROG}: the driver failed (exit status {outcome.returncode}):", file=sys.stderr)
        _print_stderr_tail(outcome)
        return 1

    have_gpu = (outcome.header or {}).get("backend") == "gpu"
    gpu_buffers = (outcome.header or {}).get("placement") in ("D", "D D") and not req.via_host
    if not outcome.peers:
        ran = frozenset()
    failed: dict[str, str] = {}
    # The peers that run as programs of their own, one after the other, after axon's run.
    for name, tests in (("PyTorch NCCL", TORCH_TESTS), ("NVSHMEM", NVSHMEM_TESTS)):
        p = peers.get(name)
        if not (p and p["found"] and not p.get("unavailable") and not p.get("deselected") and have_gpu
                and gpu_buffers and req.test in tests):
            continue
        status = run_peer(name, p, req, outcome, interactive) if outcome.returncode == 0 else \
            "not started: axon's own run failed"
        if status == "run":
            ran = ran | {name}
        elif status:
            failed[name] = status
    for line in table_lines(req.test, outcome.header, outcome.results, outcome.peers):
        print(line)
    compare = None
    if compare_wanted:
        compare = compare_notes(list(peers.values()), have_gpu, ran, req.test, gpu_buffers, failed)
        print("# --compare: peers on this machine")
        for c in compare:
            print(f"# {c['note']}")
        for n in outcome.notes:
            print(f"# {n.get('note')}")
    sys.stdout.flush()
    for line in outcome.other:
        print(line, file=sys.stderr)

    if args.json:
        doc = bench_document(req, outcome.header, outcome.results, launch_command(driver, req), compare)
        try:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(doc, f, indent=1)
                f.write("\n")
        except OSError as exc:
            print(f"{_PROG}: cannot write {args.json}: {exc.strerror or exc}", file=sys.stderr)
            return 1

    mine = _by_impl(outcome.results).pop("axon")
    wrong = sum(r.get("wrong") or 0 for r in mine)
    peer_wrong = sum(r.get("wrong") or 0 for r in outcome.results) - wrong
    if peer_wrong:
        print(f"{_PROG}: note: a comparison peer got {peer_wrong} wrong value(s) (see its #wrong)", file=sys.stderr)
    if outcome.returncode != 0 or (not req.collective and len(mine) < len(req.sizes())):
        print(f"{_PROG}: the driver stopped early (exit status {outcome.returncode}):", file=sys.stderr)
        _print_stderr_tail(outcome)
        return 1
    if wrong:
        what = "element(s)" if req.collective else "byte(s)"
        print(f"{_PROG}: {wrong} {what} arrived wrong (see #wrong)", file=sys.stderr)
        return 1
    return 0


def torch_peer_command(req: Request, sizes: list[int], port: int) -> list[str]:
    """The launcher command that runs axon.tools.torch_peer on req.pes PEs."""
    cmd = [sys.executable, "-m", "axon", "run", "-n", str(req.pes), "--no-prefix",
           sys.executable, "-m", "axon.tools.torch_peer", req.test,
           "--sizes", ",".join(str(s) for s in sizes), "--port", str(port), *req.iteration_args()]
    if req.collective:
        cmd += ["--dtype", req.dtype, "--op", req.op, "--root", str(req.root)]
    if not req.validate:
        cmd.append("--no-validate")
    return cmd


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def nvshmem_peer_command(req: Request, sizes: list[int], runner: str) -> list[str]:
    """The launcher command that runs axon_nvshmem_peer on req.pes PEs."""
    cmd = [sys.executable, "-m", "axon", "run", "-n", str(req.pes), "--no-prefix", runner, req.test,
           "--sizes", ",".join(str(s) for s in sizes), *req.iteration_args()]
    if req.collective:
        cmd += ["--dtype", req.dtype, "--op", req.op, "--root", str(req.root)]
    if not req.validate:
        cmd.append("--no-validate")
    return cmd


def peer_command(name: str, peer: dict, req: Request, sizes: list[int]) -> list[str]:
    if name == "NVSHMEM":
        return nvshmem_peer_command(req, sizes, peer["runner"])
    return torch_peer_command(req, sizes, _free_port())


def run_peer(name: str, peer: dict, req: Request, outcome: Outcome, progress: bool) -> str:
    """Runs a peer program on the sizes the driver ran and adds its rows, peers and notes to
    `outcome`. Returns "run", or one line saying why it failed (axon's own results stand either
    way)."""
    if req.collective:
        sizes = [r["size"] for r in _by_impl(outcome.results)["axon"] if "size" in r]
    else:
        sizes = list((outcome.header or {}).get("sizes") or req.sizes())
    if not sizes:
        return ""
    try:
        got = run_launched(peer_command(name, peer, req, sizes), req, progress, what=f"{req.test} ({name})")
    except (BenchError, OSError) as exc:
        return str(exc)
    except KeyboardInterrupt:
        return "interrupted"  # axon's results are still printed and written
    outcome.results += got.results
    outcome.peers += got.peers
    outcome.notes += got.notes
    if got.error is not None or got.returncode != 0:
        why = (got.error or {}).get("message") or f"exit status {got.returncode}"
        tail = [line for line in got.stderr if line.strip()][-3:]
        return why + ("; " + " | ".join(tail) if tail and got.error is None else "")
    return "run"


def _print_stderr_tail(outcome: Outcome, skip_driver: bool = False, limit: int = 20) -> None:
    lines = [line for line in outcome.stderr
             if not (skip_driver and line.startswith("axon_bench: "))]
    for line in lines[-limit:]:
        print(f"  {line}", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
