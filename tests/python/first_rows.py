"""A benchmark command run as a user pipes it: its header and first row arrive while it still runs,
then Ctrl-C (SIGINT) stops it. Shared by the bench tests that check rows are printed as measured."""

from __future__ import annotations

import signal
import subprocess
import sys


def interrupt_after_first_row(args: list[str], timeout: float = 60) -> tuple[list[str], str, str, int]:
    """Runs `python -m axon <args>`, reads its lines up to the first one that is not a comment,
    checks the command still runs, sends SIGINT and returns (lines read, the rest of stdout,
    stderr, exit status)."""
    proc = subprocess.Popen([sys.executable, "-m", "axon", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        lines = []
        while True:
            line = proc.stdout.readline()
            assert line, "the run ended before printing a row"
            lines.append(line.rstrip("\n"))
            if not line.startswith("#"):
                break
        assert proc.poll() is None, "the row came only at the end of the run"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return lines, out, err, proc.returncode
