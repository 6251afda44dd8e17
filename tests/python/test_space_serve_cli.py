"""`axon space serve` given what a user may mistype: one clear line naming the value and a
non-zero exit, never a Python traceback (the real command, as a user runs it)."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("axon.space")

# A key given, so that the server gets as far as the mistake (without one it is refused first).
KEY = "5a" * 32


def _serve(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, AXON_TIMEOUT="5", AXON_SPACE_KEY=KEY)
    return subprocess.run([sys.executable, "-m", "axon", "space", "serve", "--listen", "127.0.0.1:0", *args],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.parametrize("args,needles", [
    (["--listen", "nonsense"], ["nonsense"]),
    (["--listen", "1.2.3.4.5:99999"], ["1.2.3.4.5"]),
    (["--join", "127.0.0.1:1"], ["127.0.0.1:1"]),
    (["--join", "nonsense"], ["--join nonsense: "]),
    (["--contact-file", "/no/such/dir/c.json"], ["the contact file /no/such/dir/c.json", "No such file or directory"]),
], ids=["listen", "listen-bad-port", "join", "join-not-an-address", "contact-file"])
def test_a_mistake_is_one_line_and_a_non_zero_exit(args, needles):
    result = _serve(*args)
    assert result.returncode != 0, result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("axon space serve: "), result.stderr
    assert all(n in lines[0] for n in needles), lines[0]
    assert "Traceback" not in result.stderr


def test_sigterm_right_after_start_stops_the_server_every_time(tmp_path):
    """SIGTERM as soon as the first line is out: the server stops and exits 0 every time. Its
    handler used to set a threading.Event, which deadlocked on the Event's own lock when the signal
    came while the main thread was inside Event.wait() (2 hangs in 15 starts)."""
    import signal
    import time

    env = dict(os.environ, AXON_TIMEOUT="5", AXON_SPACE_KEY=KEY)
    for attempt in range(20):
        proc = subprocess.Popen([sys.executable, "-m", "axon", "space", "serve", "--listen", "127.0.0.1:0",
                                 "--mem", "8M", "--contact-file", str(tmp_path / f"c{attempt}.json")],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env)
        try:
            first = proc.stdout.readline()
            assert first.startswith("axon space: serving at"), first + proc.stderr.read()
            t0 = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 0, f"attempt {attempt}: exit {proc.returncode}: {err}"
        assert "stopping" in err and time.monotonic() - t0 < 10, (attempt, err)
