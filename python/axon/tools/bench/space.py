"""``axon bench space-*``: the staging space's benchmarks, each baseline in the same run.

    space-put-get     put and get of GPU data over a sweep of sizes (default 4 KiB to 1 GiB, x4):
                      axon's path against the host-staged baseline of the DataSpaces-GPU study and a
                      pinned buffer reused by hand, through a server on this node and through UCX
                      (driver: space_bench, built with CUDA)
    space-reassembly  one box from many stored pieces: CPU row copies, a cudaMemcpy per row, a
                      kernel per piece, the fused kernel; shares of device-to-device memcpy
                      (driver: space_reassembly_bench of tests/perf, built with CUDA and the tests)
    space-small-puts  -i N nonblocking puts of -m BYTES (default 10,000 of 4 KiB), batching off then on
    space-workflow    --writers M and --readers N processes in different decompositions, 10
                      versions of a 32 MiB variable, the last reader --slow-ms behind; -d D for GPU
                      buffers (driver: space_client_bench, under axon's launcher)

small-puts and workflow start their own server (``axon space serve --mem --space-mem``) and stop it
after; put-get and reassembly run one inside the driver. The drivers print JSON lines as
axon_bench does; the rows are kept as they are in ``--json`` (``"tool": "axon bench"``), and
``axon plot`` draws space-put-get's rows (each carries its ``series``)."""

from __future__ import annotations

import argparse
import os
import queue
import secrets
import signal
import subprocess
import sys
import threading

from ..cli_parser import EXIT_USAGE, UsageError
from .catalog import SPACE_TESTS
from .document import write_document
from .errors import BenchError
from .machine import machine_info
from .programs import find_tool
from .request import Request, _count
from .runner import child_env, launcher_command, run_launched
from .sizes import parse_range, parse_size
from .space_tables import SpaceRowPrinter

_PROG = "axon bench"

_SERVER_START_S = 60

#: The drivers a build may lack, and which builds have them.
_BUILT_ONLY = {"space_bench": "where the build has CUDA",
               "space_reassembly_bench": "where the build has CUDA, with the tests: AXON_BUILD_TESTS=ON"}


def add_space_arguments(parser: argparse.ArgumentParser) -> None:
    """The options only the space tests take."""
    parser.add_argument("--writers", metavar="M", help="space-workflow: writer processes (default 2)")
    parser.add_argument("--readers", metavar="N", help="space-workflow: reader processes (default 4)")
    parser.add_argument("--slow-ms", metavar="MS",
                        help="space-workflow: the last reader sleeps this long per version (default 200)")
    parser.add_argument("--space-mem", metavar="SIZE",
                        help="space-small-puts, space-workflow: the server's --mem (default 128M)")


def _driver_command(args: argparse.Namespace, test: str) -> tuple[list[str], int | None, dict]:
    """(the driver's arguments after the program, the PEs to launch it on or None, the config)."""
    _, _, sub = SPACE_TESTS[test]
    place = None
    if args.placement is not None:
        place = tuple(p.upper() for p in args.placement)
        if len(place) != 2 or any(p not in ("D", "H") for p in place) or place[0] != place[1]:
            raise UsageError(f"{test}: -d takes D D (GPU memory) or H H (host memory)")
    config: dict = {}
    if test in ("space-put-get", "space-reassembly"):
        if place == ("H", "H"):
            raise UsageError(f"{test} measures GPU data: -d D D (the default)")
        out = [sub]
        if test == "space-put-get":
            if args.range is not None and (args.minbytes is not None or args.maxbytes is not None):
                raise UsageError("give the sizes with -m MIN:MAX or with -b/-e, not both")
            if args.range is not None:
                mn, mx = parse_range(args.range)
                if not args.range.partition(":")[0].strip() or ":" not in args.range:
                    mn = min(4 << 10, mx)  # -m MAX: from this test's own smallest size
            else:
                mn = parse_size(args.minbytes, "-b") if args.minbytes else 4 << 10
                mx = parse_size(args.maxbytes, "-e") if args.maxbytes else 1 << 30
            if mn > mx:
                raise UsageError(f"-b {mn} is larger than -e {mx}")
            if mn % 8 or mx % 8:
                raise UsageError("space-put-get moves float64 elements: sizes are multiples of 8 bytes")
            factor = _count(args.stepfactor, "-f", 2) or 4
            out += ["-b", str(mn), "-e", str(mx), "-f", str(factor)]
            config.update(min_bytes=mn, max_bytes=mx, factor=factor)
        if args.no_validate:
            out.append("--no-validate")
        config["placement"] = "D D"
        return out, None, config
    mem = args.space_mem or "128M"
    parse_size(mem, "--space-mem")
    config["space_mem"] = mem
    if test == "space-small-puts":
        if place == ("D", "D"):
            raise UsageError("space-small-puts measures batching of host data: -d H H (the default)")
        count = _count(args.iters, "-i", 1) or 10000
        size = parse_range(args.range)[1] if args.range else parse_size(args.maxbytes, "-e") if args.maxbytes else 4096
        if size % 8:
            raise UsageError("space-small-puts moves float64 elements: -m is a multiple of 8 bytes")
        config.update(count=count, size=size, placement="H H")
        return [sub, "-n", str(count), "-s", str(size)], None, config
    writers = _count(args.writers, "--writers", 1) or 2
    readers = _count(args.readers, "--readers", 1) or 4
    slow = _count(args.slow_ms, "--slow-ms", 0)
    slow = 200 if slow is None else slow
    device = place == ("D", "D")
    config.update(writers=writers, readers=readers, slow_ms=slow, placement="D D" if device else "H H")
    return ([sub, "--writers", str(writers), "--readers", str(readers), "--slow-ms", str(slow),
             "-d", "D" if device else "H"], writers + readers, config)


class _Server:
    """``axon space serve`` on this node for the length of a run."""

    def __init__(self, mem: str) -> None:
        cmd = [sys.executable, "-m", "axon", "space", "serve", "--bind", "127.0.0.1:0", "--mem", mem]
        # The space's key, for the server and the benchmark's clients (never on a command line).
        self.key = os.environ.get("AXON_SPACE_KEY") or secrets.token_hex(32)
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, env=child_env({"AXON_SPACE_KEY": self.key}),
                                         text=True)
        except OSError as exc:
            raise BenchError(f"cannot start a staging server: {exc.strerror or exc}") from exc
        lines: queue.Queue = queue.Queue()

        def read() -> None:  # also drains what it prints later, so that it never blocks on the pipe
            for line in self.proc.stdout:
                lines.put(line)
            lines.put(None)  # its output ended: it exited

        threading.Thread(target=read, daemon=True).start()
        seen: list[str] = []
        try:
            while True:
                try:
                    line = lines.get(timeout=_SERVER_START_S)
                except queue.Empty:
                    raise BenchError(f"the staging server did not start within {_SERVER_START_S} s: "
                                     + " | ".join(seen[-5:])) from None
                if line is None:
                    raise BenchError(f"the staging server stopped at once (exit status {self.proc.wait()}): "
                                     + " | ".join(seen[-5:]))
                seen.append(line.strip())
                if "serving at " in line:
                    self.address = line.split("serving at ", 1)[1].split()[0]
                    return
        except BaseException:
            self.stop()  # never left running behind a failed start or a Ctrl-C
            raise

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def run_space_bench(args: argparse.Namespace) -> int:
    """``axon bench space-*``; returns the exit code."""
    test = args.test
    try:
        driver_args, pes, config = _driver_command(args, test)
    except UsageError as exc:
        print(f"{_PROG}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    program_name = SPACE_TESTS[test][1]
    program = find_tool(program_name)
    if program is None:
        why = f" (it is built only {_BUILT_ONLY[program_name]})" if program_name in _BUILT_ONLY else ""
        print(f"{_PROG}: {test} needs the program {program_name}{why}; build it with 'make build'", file=sys.stderr)
        return 1
    program_cmd = [str(program), *driver_args]
    cmd = program_cmd if pes is None else launcher_command(pes, program_cmd)
    sizes_req = Request(test, config.get("min_bytes", 1), config.get("max_bytes", 1), config.get("factor", 2),
                        None, None, None, not args.no_validate, pes or 1)
    progress = test == "space-put-get" and sys.stdout.isatty() and sys.stderr.isatty()
    # Rows are printed as they are measured (flushed), the summary lines at the end.
    printer = SpaceRowPrinter(test)
    server = None
    try:
        env = None
        if "space_mem" in config:
            server = _Server(config["space_mem"])
            env = {"AXON_SPACE_ADDR": server.address, "AXON_SPACE_KEY": server.key}
            config["server"] = server.address
        outcome = run_launched(cmd, sizes_req, progress, what=test, env=env,
                               on_header=printer.header, on_result=printer.result)
    except BenchError as exc:
        print(f"{_PROG}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{_PROG}: interrupted after {printer.printed} row(s); the rows above were measured",
              file=sys.stderr)
        return 130
    finally:
        if server is not None:
            server.stop()

    if outcome.error is not None:
        message = outcome.error.get("message", "the driver failed")
        print(f"{_PROG}: {'error: ' if outcome.error.get('usage') else ''}{message}", file=sys.stderr)
        return EXIT_USAGE if outcome.error.get("usage") else 1
    printer.finish(outcome.header)
    if args.compare or args.peers:
        print("# --compare: the space tests run their baselines in the same program (see the table); "
              "no other library stages n-D versions between processes here")
    sys.stdout.flush()
    for line in outcome.other:
        print(line, file=sys.stderr)
    if args.json:
        doc = space_document(test, outcome.header or {}, outcome.results, cmd, config)
        try:
            write_document(args.json, doc)
        except OSError as exc:
            print(f"{_PROG}: cannot write {args.json}: {exc.strerror or exc}", file=sys.stderr)
            return 1
    if outcome.returncode != 0 or not outcome.results:
        print(f"{_PROG}: {program_name} failed (exit status {outcome.returncode}):", file=sys.stderr)
        for line in outcome.stderr[-20:]:
            print(f"  {line}", file=sys.stderr)
        return 1
    wrong = sum(r.get("wrong") or 0 for r in outcome.results)
    if wrong:
        print(f"{_PROG}: {wrong} byte(s) or element(s) came back wrong (see #wrong)", file=sys.stderr)
        return 1
    return 0


def space_document(test: str, header: dict, results: list[dict], command: list[str], config: dict) -> dict:
    """The --json document of a space test (the schema of axon bench, rows as the driver gave them)."""
    h = {k: v for k, v in header.items() if k not in ("test", "time_label")}
    return {"tool": "axon bench", "schema": 1, "test": test, "impl": "axon",
            "label": f"axon {test}", "metric": "bandwidth" if test != "space-small-puts" else "latency",
            "time_label": header.get("time_label", SPACE_TESTS[test][0]),
            "config": {**h, **config, "command": command}, "machine": machine_info(), "results": results}
