"""Liveness of PEs that the pid check cannot see: a PE in another PID namespace.

Two PEs are started by hand (AXON_RANK, AXON_WORLD_SIZE, AXON_STORE_ADDR), one of them under
`unshare --pid --fork`, so each sees the other's pid as nothing or as some other process. Both
must pass a barrier and wait on each other without either being taken for dead, and when one is
killed with SIGKILL the other must raise PeerDeadError naming it within 5 s: the store, which sees
the killed PE's connection drop, tells it.

Needs root (CI runs as root) for unshare; skipped elsewhere.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent / "scripts" / "wait_for_peer.py"


def _unshare_works() -> bool:
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "--pid", "--fork", "true"], capture_output=True).returncode == 0


pytestmark = pytest.mark.skipif(not _unshare_works(), reason="needs root and unshare --pid")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class _Pe:
    """One PE's process and the lines it prints, read as they come."""

    def __init__(self, rank: int, port: int, namespaced: bool):
        env = dict(os.environ, AXON_RANK=str(rank), AXON_WORLD_SIZE="2", AXON_STORE_ADDR=f"127.0.0.1:{port}",
                   AXON_BACKEND="host", AXON_TIMEOUT="60")
        cmd = [sys.executable, str(SCRIPT)]
        if namespaced:
            cmd = ["unshare", "--pid", "--fork"] + cmd
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        self.pid = None  # the PE's own pid as this test sees it
        self._ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))
            if line.startswith("ready "):
                self.pid = int(line.split()[2])
                self._ready.set()

    def wait_ready(self, timeout: float) -> bool:
        return self._ready.wait(timeout)

    def text(self) -> str:
        return "\n".join(self.lines)

    def kill(self):
        if self.pid:
            os.kill(self.pid, signal.SIGKILL)
        self.proc.kill()


@pytest.mark.parametrize("victim", [1, 0], ids=["kill-namespaced-pe", "kill-pe-serving-the-store"])
def test_pe_in_another_pid_namespace_is_neither_falsely_dead_nor_missed(victim):
    port = _free_port()
    pes = [_Pe(0, port, namespaced=False), _Pe(1, port, namespaced=True)]
    try:
        for pe in pes:
            assert pe.wait_ready(60), f"PE did not pass the barrier:\n{pe.text()}"
        # Both wait on each other well past a liveness check (50 ms): nobody may be taken for dead.
        time.sleep(1.0)
        for pe in pes:
            assert pe.proc.poll() is None, f"a PE gave up while its peer was alive:\n{pe.text()}"
        killed_at = time.monotonic()
        pes[victim].kill()
        survivor = pes[1 - victim]
        survivor.proc.wait(timeout=30)
        took = time.monotonic() - killed_at
        assert survivor.proc.returncode == 3, survivor.text()
        assert f"PE {victim}" in survivor.text(), survivor.text()
        assert took < 5.0, f"PeerDeadError came {took:.1f} s after the kill:\n{survivor.text()}"
    finally:
        for pe in pes:
            if pe.proc.poll() is None:
                pe.kill()
            pe.proc.wait(timeout=30)
