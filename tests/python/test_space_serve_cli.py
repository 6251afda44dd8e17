"""`axon space serve` given what a user may mistype: one clear line and a non-zero exit, never a
Python traceback (the real command, as a user runs it)."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("axon.space")


def _serve(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, AXON_TIMEOUT="5")
    return subprocess.run([sys.executable, "-m", "axon", "space", "serve", "--listen", "127.0.0.1:0", *args],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.parametrize("args,code,start", [
    (["--listen", "nonsense"], 2,
     "axon space serve: error: --listen address 'nonsense' (staging server address) is not host:port"),
    (["--join", "127.0.0.1:1"], 1,
     "axon space serve: cannot start the server: staging server 127.0.0.1:"),
    (["--contact-file", "/no/such/dir/c.json"], 1,
     "axon space serve: cannot start the server: cannot write the contact file /no/such/dir/c.json"),
], ids=["listen", "join", "contact-file"])
def test_a_mistake_is_one_line_and_a_non_zero_exit(args, code, start):
    result = _serve(*args)
    assert result.returncode == code, result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(start), result.stderr
    assert "Traceback" not in result.stderr
    if args[0] == "--join":
        assert "joining the space of 127.0.0.1:1 failed" in lines[0]
