"""``axon bench`` from start to end: validate the request, run the driver and the peer programs,
print the table and the --compare notes, write --json, and choose the exit status."""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from .. import cli_parser
from ..cli_parser import EXIT_USAGE, UsageError
from .catalog import SPACE_TESTS, TESTS
from .document import bench_document, check_writable, write_document
from .errors import BenchError
from .options import add_arguments
from .peer_runs import PROGRAM_PEERS, run_peer
from .peers import compare_notes, detect_peers
from .programs import find_driver
from .request import validate
from .results import Outcome, by_impl
from .runner import launch_command, run_driver
from .space import run_space_bench
from .spellings import take_test
from .tables import RowPrinter

_PROG = "axon bench"


def run_bench(args: argparse.Namespace) -> int:
    """The handler of ``axon bench``; returns the exit code."""
    try:
        take_test(args, [*TESTS, *SPACE_TESTS])
        if args.json:
            _check_json_path(args.json)
        if args.test in SPACE_TESTS:
            return run_space_bench(args)
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
    if req.collective and req.placement in (None, ("D", "D")) and not req.emulate_nodes:
        nccl = peers.get("NCCL")
        if nccl and nccl["found"] and not nccl.get("deselected"):
            req.nccl = nccl["where"]
            ran = frozenset({"NCCL"})
    interactive = sys.stdout.isatty() and sys.stderr.isatty()
    # axon's rows are printed as they are measured; the peers' tables once all have run.
    printer = RowPrinter(req.test)
    try:
        outcome = run_driver(driver, req, progress=interactive, on_result=printer.result,
                             on_header=printer.header)
    except BenchError as exc:
        print(f"{_PROG}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{_PROG}: interrupted after {printer.printed} size(s); the rows above were measured",
              file=sys.stderr)
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
    for name, tests in PROGRAM_PEERS:
        p = peers.get(name)
        if not (p and p["found"] and not p.get("unavailable") and not p.get("deselected") and req.test in tests):
            continue
        # GPU peers on one node's GPU buffers; network peers across emulated nodes, on host
        # buffers; host-buffer peers (Open MPI) on host buffers, on one node or across nodes.
        if p.get("network"):
            if not req.emulate_nodes or gpu_buffers:
                continue
        elif p.get("host_buffers"):
            if (outcome.header or {}).get("placement") not in ("H H", "H"):  # a collective's is one letter
                continue
        elif req.emulate_nodes or not (have_gpu and gpu_buffers):
            continue
        status = run_peer(name, p, req, outcome, interactive) if outcome.returncode == 0 else \
            "not started: axon's own run failed"
        if status == "run":
            ran = ran | {name}
        elif status:
            failed[name] = status
    printer.finish(outcome.header, outcome.results, outcome.peers)
    compare = None
    if compare_wanted:
        compare = compare_notes(list(peers.values()), have_gpu, ran, req.test, gpu_buffers, failed,
                                nodes=bool(req.emulate_nodes))
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
            write_document(args.json, doc)
        except OSError as exc:
            print(f"{_PROG}: cannot write {args.json}: {exc.strerror or exc}", file=sys.stderr)
            return 1

    mine = by_impl(outcome.results).pop("axon")
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


def _check_json_path(path: str) -> None:
    """UsageError unless --json's file can be written: checked before the sweep, not after it."""
    try:
        check_writable(path)
    except OSError as exc:
        raise UsageError(f"--json {path}: cannot write it: {exc.strerror or exc}") from None


def _print_stderr_tail(outcome: Outcome, skip_driver: bool = False, limit: int = 20) -> None:
    lines = [line for line in outcome.stderr
             if not (skip_driver and line.startswith("axon_bench: "))]
    for line in lines[-limit:]:
        print(f"  {line}", file=sys.stderr)


def _configure(parser: argparse.ArgumentParser) -> None:
    add_arguments(parser)
    parser.set_defaults(handler=run_bench)


def add_subcommand(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Adds ``bench`` to the ``axon`` command line (handler: :func:`run_bench`)."""
    parser = subparsers.add_parser("bench", help="OSU-style benchmarks of the one-sided and two-sided APIs, nccl-tests-style of the collectives")
    _configure(parser)
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = cli_parser.Parser(prog=_PROG)
    _configure(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """``axon bench`` on its own (tests, ``python -m axon.tools.bench``); returns the exit code."""
    return cli_parser.run(build_parser(), argv)
