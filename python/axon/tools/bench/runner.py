"""Running a program on the PEs through axon's launcher and reading the JSON lines its PE 0 prints."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

from .errors import BenchError
from .programs import PACKAGE_DIR
from .progress import SweepProgress
from .request import Request
from .results import Outcome


def launcher_command(pes: int, program: list[str], emulate_nodes: int | None = None) -> list[str]:
    """`program` on `pes` PEs through axon's launcher (on `emulate_nodes` emulated nodes when given),
    output lines unprefixed (PE 0 prints the JSON)."""
    nodes = [] if emulate_nodes is None else ["--emulate-nodes", str(emulate_nodes)]
    return [sys.executable, "-m", "axon", "run", "-n", str(pes), *nodes, "--no-prefix", *program]


def launch_command(driver: Path, req: Request) -> list[str]:
    """The command that runs the driver on req.pes PEs through axon's launcher."""
    return launcher_command(req.pes, [str(driver), *req.driver_args()], req.emulate_nodes)


def _reader(stream, tag: str, q: queue.Queue) -> None:
    try:
        for raw in iter(stream.readline, b""):
            q.put((tag, raw.decode("utf-8", errors="replace").rstrip("\n")))
    finally:
        stream.close()
        q.put((tag, None))


def child_env(extra: dict[str, str] | None = None) -> dict:
    """This process's environment for a program the benchmarks start, plus `extra`."""
    env = dict(os.environ, **(extra or {}))
    # The launcher must import this very package (also when it is not installed).
    root = str(PACKAGE_DIR.parent)
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = root + (os.pathsep + old if old else "")
    return env


def run_driver(driver: Path, req: Request, progress: bool,
               on_result: Callable[[dict], None] | None = None,
               on_header: Callable[[dict], None] | None = None) -> Outcome:
    """Runs the driver through the launcher, reading its JSON lines as they come."""
    return run_launched(launch_command(driver, req), req, progress, on_result, on_header=on_header)


def run_launched(cmd: list[str], req: Request, progress: bool,
                 on_result: Callable[[dict], None] | None = None, what: str | None = None,
                 env: dict[str, str] | None = None,
                 on_header: Callable[[dict], None] | None = None) -> Outcome:
    """Runs `cmd` (a launcher command whose PE 0 prints JSON lines: header, result, peer, note,
    error, done), reading the lines as they come and showing progress over req's sizes. `env`:
    variables to set for it on top of this process's; `on_header` and `on_result` see the header
    and each result as it arrives."""
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=child_env(env))
    except OSError as exc:
        raise BenchError(f"cannot start {cmd[0]}: {exc.strerror or exc}") from exc
    q: queue.Queue = queue.Queue()
    threads = [threading.Thread(target=_reader, args=(proc.stdout, "out", q), daemon=True),
               threading.Thread(target=_reader, args=(proc.stderr, "err", q), daemon=True)]
    for t in threads:
        t.start()
    out = Outcome(None, [], None, 0, [], [])
    bar = SweepProgress(progress, req.sizes(), what or req.test)
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
                if on_header:
                    on_header(record)
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
