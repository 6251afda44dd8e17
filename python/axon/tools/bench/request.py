"""Validating the parsed options of ``axon bench`` into a Request, and the driver's arguments for it."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from ..cli_parser import UsageError, integer_at_least
from .catalog import COLLECTIVES, OPS, SPACE_TESTS, TESTS
from .peers import PEER_NAMES
from .sizes import DEFAULT_MAX, DEFAULT_MIN, parse_range, parse_size
from .spellings import check_flag, dtype_name, refuse_threads, split_d, take_test


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
    emulate_nodes: int | None = None  # --emulate-nodes: the PEs on this many emulated nodes
    trials: int = 1  # --trials: timed runs per size of a collective, the median reported

    @property
    def collective(self) -> bool:
        return self.test in COLLECTIVES

    def sizes(self) -> list[int]:
        if self.test == "atomic_lat":
            return [8]  # one 64-bit word, whatever -m says (as the driver does)
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
        if self.collective and self.trials > 1:
            args += ["--trials", str(self.trials)]
        if self.settle_ms is not None and not self.collective:
            args += ["--settle-ms", str(self.settle_ms)]
        return args


def _count(text: str | None, opt: str, minimum: int) -> int | None:
    if text is None:
        return None
    try:
        return integer_at_least(text, minimum)
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"{opt} {exc}") from None


def validate(args: argparse.Namespace) -> Request:
    """Checks the parsed options; raises UsageError with one clear line."""
    take_test(args, [*TESTS, *SPACE_TESTS])
    test = args.test
    if test not in TESTS:
        raise UsageError(f"unknown test {test!r} (tests: {', '.join([*TESTS, *SPACE_TESTS])})")
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
    refuse_threads(getattr(args, "nthreads", None))
    pes = _count(args.pes, "--pes", 2)
    gpus = _count(getattr(args, "ngpus", None), "-g", 2)
    if pes is not None and gpus is not None and pes != gpus:
        raise UsageError(f"-g {gpus} (nccl-tests' GPUs, one PE each) and --pes {pes} disagree: give one of them")
    pes = pes or gpus or 2
    placement, d_dtype = (None, None) if args.placement is None else split_d(args.placement, test, test in COLLECTIVES)
    settle = _count(getattr(args, "settle_ms", None), "--settle-ms", 0)
    given_dtype = getattr(args, "dtype", None)
    dtype = dtype_name(given_dtype) if given_dtype is not None else d_dtype or "float32"
    if d_dtype is not None and given_dtype is not None and d_dtype != dtype:
        raise UsageError(f"-d {args.placement[0]} and --dtype {given_dtype} name two datatypes: give one of them")
    op = (getattr(args, "op", None) or "sum").lower()
    root = _count(getattr(args, "root", None), "--root", 0) or 0
    check = check_flag(getattr(args, "check", None))
    if check is not None and args.no_validate and check:
        raise UsageError("-c 1 (check the data) and --no-validate disagree: give one of them")
    validate_data = not args.no_validate if check is None else check
    if test in COLLECTIVES:
        if placement is not None and placement[0] != placement[1]:
            raise UsageError("a collective's buffers are all in one place: -d D D or -d H H")
        if op not in OPS:
            raise UsageError(f"--op {op!r} is not one of {', '.join(OPS)}")
        if root >= pes:
            raise UsageError(f"--root {root} is not one of the {pes} PEs (--pes)")
    via_host = bool(getattr(args, "via_host", False))
    if via_host and test not in ("pingping", "p2p-pingping"):
        raise UsageError("--via-host is an option of pingping and p2p-pingping only")
    if via_host and placement not in (None, ("D", "D")):
        raise UsageError("--via-host stages GPU data through the host: it takes -d D D")
    nodes = _count(getattr(args, "emulate_nodes", None), "--emulate-nodes", 1)
    if nodes is not None and pes % nodes:
        raise UsageError(f"--pes {pes} does not divide over --emulate-nodes {nodes}")
    if nodes is not None and (getattr(args, "compare", False) or getattr(args, "peers", None)):
        # Across nodes the peers are ucx_perftest (UCX's own benchmark between PE 0's and PE 1's
        # nodes) and Open MPI; a collective's peer (Open MPI) runs on the same PEs and nodes.
        if pes != nodes and test not in COLLECTIVES:
            raise UsageError(f"--compare across emulated nodes measures PE 0 and PE 1 on two nodes: --pes "
                             f"must equal --emulate-nodes (got --pes {pes}, --emulate-nodes {nodes})")
        if placement is not None and "D" in placement:
            raise UsageError("--compare across emulated nodes runs ucx_perftest and Open MPI on host buffers: "
                             + ("-d H" if test in COLLECTIVES else "-d H H"))
    if test not in COLLECTIVES and (given_dtype is not None or getattr(args, "op", None) is not None):
        raise UsageError(f"--dtype and --op (-o) are options of the collectives; {test} moves bytes")
    trials = _count(getattr(args, "trials", None), "--trials", 1) or 1
    if trials > 1 and test not in COLLECTIVES:
        raise UsageError(f"--trials is an option of the collectives; {test} reports its own statistics")
    return Request(test, mn, mx, factor, iters, warmup, placement, validate_data, pes, settle, dtype, op,
                   root, via_host=via_host, peers=parse_peers(getattr(args, "peers", None)), emulate_nodes=nodes,
                   trials=trials)


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
