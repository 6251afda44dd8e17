"""Ctrl-C on a Python job under `axon run`: every PE ends with Python's own KeyboardInterrupt
traceback, never CPython's raw dump ("object address ... PeerDeadError ... lost sys.stderr").

Ctrl-C reaches every PE at once; a PE waiting in a collective for a PE that stopped first used to
see PeerDeadError with the KeyboardInterrupt still pending, which then fired while Python printed
the PeerDeadError. The extension now lets the pending signal win (python/csrc/errors_py.cpp).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import pytest
from test_launcher import AXON_RUN, _env

pytest.importorskip("axon")

BARRIER_LOOP = textwrap.dedent("""
    import axon
    axon.init()
    print("ready", flush=True)
    while True:
        axon.barrier()
""")


@pytest.mark.parametrize("round_", range(3))
def test_ctrl_c_ends_a_python_job_with_keyboard_interrupt_only(round_):
    env = _env()
    env["AXON_TIMEOUT"] = "20"
    proc = subprocess.Popen(AXON_RUN + ["-n", "2", sys.executable, "-c", BARRIER_LOOP], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    try:
        ready = [proc.stdout.readline().strip() for _ in range(2)]
        assert sorted(ready) == ["[0] ready", "[1] ready"], proc.stderr.read() if proc.poll() is not None else ready
        time.sleep(0.3)  # deep in the barrier loop
        proc.send_signal(signal.SIGINT)  # what Ctrl-C in a terminal sends the launcher
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "lost sys.stderr" not in err and "object address" not in err, err
    assert "PeerDeadError" not in err, err
    assert proc.returncode == 130, err
    launcher = [line for line in err.splitlines() if line.startswith("axon run:")]
    assert launcher[0] == "axon run: received SIGINT; forwarding it to the PEs"
    assert sorted(launcher[1:]) == ["axon run: PE 0 stopped by the launcher (SIGINT)",
                                    "axon run: PE 1 stopped by the launcher (SIGINT)"], err
    for rank in (0, 1):
        assert f"[{rank}] KeyboardInterrupt" in err.splitlines(), err
