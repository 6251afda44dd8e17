"""`axon run`'s PEs live no longer than the launcher: a launcher killed by SIGKILL (which it
cannot catch), one sent SIGHUP (a closed ssh session), and one interrupted while it starts PEs.

Every PE writes its pid into a file of its own first; the tests look the processes up by those
pids (and their start times, so that a reused pid is not taken for the PE), never by name. A
process that is a zombie counts as gone: it runs no more, and in a container nobody may reap it.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from emulated import nodes_why_not
from test_launcher import AXON_RUN, TIMEOUT, _env

# Bound on how long PEs may outlive their launcher.
GONE_WITHIN = 5.0


def _start_time(pid: int) -> int | None:
    """The process's start time in clock ticks, or None when it is gone (or a zombie)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name, in parentheses, may hold spaces: the fields start after its last ')'.
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def _runs(pid: int, cmdline: bytes) -> bool:
    """Whether ``pid`` is a live process (not a zombie) with this command line."""
    try:
        return _start_time(pid) is not None and Path(f"/proc/{pid}/cmdline").read_bytes() == cmdline
    except OSError:
        return False


class _Pes:
    """The PEs of one launcher run, as the pid files in ``folder`` name them."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.started: dict[int, int] = {}  # pid -> start time
        self.elapsed = 0.0  # seconds the PEs took to go, once waited for

    def wait_for(self, count: int) -> None:
        deadline = time.monotonic() + TIMEOUT
        while len(self._read()) < count:
            assert time.monotonic() < deadline, f"only {len(self._read())} of {count} PEs started"
            time.sleep(0.02)

    def _read(self) -> dict[int, int]:
        for path in self.folder.glob("pe-*.pid"):
            text = path.read_text().strip()
            if not text.isdigit() or int(text) in self.started:
                continue
            start = _start_time(int(text))
            if start is not None:
                self.started[int(text)] = start
        return self.started

    def running(self) -> list[int]:
        self._read()
        return [pid for pid, start in self.started.items() if _start_time(pid) == start]

    def wait_gone(self, within: float = GONE_WITHIN) -> float:
        """Seconds until every PE seen is gone; fails the test (killing them) past ``within``."""
        begin = time.monotonic()
        while self.running():
            if time.monotonic() - begin > within:
                left = self.running()
                for pid in left:
                    os.kill(pid, signal.SIGKILL)
                pytest.fail(f"PEs {left} still running {within} s after the launcher went")
            time.sleep(0.02)
        return time.monotonic() - begin


def _launch(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        AXON_RUN + args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    )


def _finish(launcher: subprocess.Popen) -> tuple[int, list[str]]:
    """Wait for the launcher; its exit code and its own stderr lines but its notes (such as more
    PEs than cores, on a CI machine of 2)."""
    try:
        _, err = launcher.communicate(timeout=TIMEOUT)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    lines = err.decode("utf-8", "replace").splitlines()
    return launcher.returncode, [line for line in lines
                                 if line.startswith("axon run:") and not line.startswith("axon run: note: ")]


def _pe_program(folder: Path, body: str) -> list[str]:
    """A Python PE that writes its pid file, then runs ``body``."""
    code = f"""
        import os, signal, sys, time
        path = os.path.join({str(folder)!r}, "pe-" + os.environ["AXON_RANK"] + ".pid")
        with open(path + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.replace(path + ".tmp", path)
    """
    return [sys.executable, "-c", textwrap.dedent(code) + textwrap.dedent(body)]


NODES = [
    pytest.param([], id="one-node"),
    pytest.param(
        ["--emulate-nodes", "2"],
        id="emulated-nodes",
        marks=pytest.mark.skipif(nodes_why_not(ucx=False) is not None, reason=str(nodes_why_not(ucx=False))),
    ),
]


def _kill_launcher_and_time_pes(tmp_path: Path, nprocs: int, args: list[str]) -> _Pes:
    """Start ``axon run -n nprocs ARGS``, SIGKILL it once every PE runs, and wait for the PEs to go."""
    pes = _Pes(tmp_path)
    launcher = _launch(["-n", str(nprocs), *args])
    try:
        pes.wait_for(nprocs)
        launcher.kill()
        launcher.wait(TIMEOUT)
        pes.elapsed = pes.wait_gone()
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    assert len(pes.started) == nprocs
    return pes


@pytest.mark.parametrize("nodes", NODES)
def test_pes_die_with_a_launcher_killed_by_sigkill(tmp_path, nodes):
    # PEs that spin at full CPU, as a job left behind by a killed launcher used to.
    pes = _kill_launcher_and_time_pes(tmp_path, 4, [*nodes, *_pe_program(tmp_path, "while True: pass")])
    # The kernel kills them (PR_SET_PDEATHSIG): no polling interval stands in between.
    assert pes.elapsed < 2.0


def test_processes_started_by_pes_die_with_a_launcher_killed_by_sigkill(tmp_path):
    # Each PE is a shell that runs the spinning program as its child, as a script PE does: the
    # kernel kills the shell, and the launcher's watcher the group it leads.
    script = shlex.join(_pe_program(tmp_path, "while True: pass")) + " & wait"
    pes = _kill_launcher_and_time_pes(tmp_path, 2, ["sh", "-c", script])
    assert pes.elapsed < 2.0


@pytest.mark.parametrize("nodes", NODES)
def test_sighup_to_the_launcher_stops_every_pe(tmp_path, nodes):
    pes = _Pes(tmp_path)
    launcher = _launch(["-n", "2", "--grace", "5", *nodes, *_pe_program(tmp_path, "time.sleep(60)")])
    pes.wait_for(2)
    start = time.monotonic()
    launcher.send_signal(signal.SIGHUP)
    code, lines = _finish(launcher)
    elapsed = time.monotonic() - start
    # Each PE dies of the forwarded SIGHUP, and the first one's status is the launcher's.
    assert code == 128 + signal.SIGHUP
    assert lines[0] == "axon run: received SIGHUP; forwarding it to the PEs"
    assert sorted(lines[1:]) == [f"axon run: PE {pe} stopped by the launcher (SIGHUP)" for pe in range(2)]
    assert pes.wait_gone(0.5) < 0.5
    assert elapsed < 4  # the 5 s grace was not needed


def test_pe_that_ignores_sighup_gets_sigterm_after_the_grace(tmp_path):
    pes = _Pes(tmp_path)
    body = """
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        time.sleep(60)
    """
    launcher = _launch(["-n", "2", "--grace", "0.3", *_pe_program(tmp_path, body)])
    pes.wait_for(2)
    launcher.send_signal(signal.SIGHUP)
    code, lines = _finish(launcher)
    assert code == 128 + signal.SIGTERM
    assert lines[0] == "axon run: received SIGHUP; forwarding it to the PEs"
    assert sorted(lines[1:]) == [f"axon run: PE {pe} stopped by the launcher (SIGTERM)" for pe in range(2)]
    assert not pes.running()


# PE 0 sends the signal to the launcher as soon as it runs, while the launcher is still starting
# the other PEs (starting one takes a fork and an exec; PE 0's sh needs well under that to get to
# its kill). Every PE then sleeps with SIGINT and SIGTERM ignored, as a PE stuck in its start-up
# would: only the launcher's SIGKILL ends it.
INTERRUPT_START = """
    echo $$ > "{folder}/pe-$AXON_RANK.pid.tmp" && mv "{folder}/pe-$AXON_RANK.pid.tmp" "{folder}/pe-$AXON_RANK.pid"
    trap '' INT TERM HUP
    if [ "$AXON_RANK" = 0 ]; then kill -{signal} $PPID; fi
    exec sleep 60
"""

START_INTERRUPTED = re.compile(
    r"axon run: received (SIG\w+) while starting the PEs \((\d+) of (\d+) started\); stopped them"
)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
@pytest.mark.parametrize("nodes", NODES)
def test_signal_during_start_up_stops_the_start(tmp_path, signum, nodes):
    nprocs = 32 if not nodes else 8
    pes = _Pes(tmp_path)
    script = INTERRUPT_START.format(folder=tmp_path, signal=signal.Signals(signum).name[3:])
    start = time.monotonic()
    launcher = _launch(["-n", str(nprocs), *nodes, "sh", "-c", textwrap.dedent(script)])
    code, lines = _finish(launcher)
    elapsed = time.monotonic() - start
    assert code == 128 + signum
    assert len(lines) == 1, lines
    match = START_INTERRUPTED.fullmatch(lines[0])
    assert match is not None, lines
    assert match.group(1) == signal.Signals(signum).name
    assert 1 <= int(match.group(2)) < nprocs and int(match.group(3)) == nprocs
    # The PEs started are gone with the launcher: it killed and reaped them. (They are gone, so
    # their start times cannot be read now: a pid still running counts as a PE left over while
    # it runs our `sleep 60`.)
    pids = [int(path.read_text()) for path in tmp_path.glob("pe-*.pid")]
    assert 1 <= len(pids) <= int(match.group(2))
    assert [pid for pid in pids if _runs(pid, b"sleep\x0060\x00")] == []
    # No grace, no SIGTERM-then-SIGKILL: the PEs ignore both SIGINT and SIGTERM, yet it is quick.
    assert elapsed < 10
