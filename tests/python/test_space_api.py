"""The staging API as a demanding user meets it: a get's `out` checked beside its byte count,
negative versions refused, the start/count form beside [lo, hi), removing a variable, a server
never reached told apart from one lost, and one contact file per live server (the real command)."""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import axon
import axon.space as space

KEY = "5a" * 32


@pytest.fixture(autouse=True)
def _space_key(monkeypatch):
    monkeypatch.setenv("AXON_SPACE_KEY", KEY)


@pytest.fixture
def client():
    with space.Server(listen="127.0.0.1:0", mem="16M") as s, space.connect(s.address, timeout=10) as c:
        yield c


def test_get_out_must_have_the_box_shape_and_the_variable_dtype(client):
    a = np.arange(24, dtype=np.float64).reshape(4, 6)
    client.define("m", a.shape, "float64")
    client.put("m", 0, (0, 0), a)
    # Same byte count, another shape: it would hold the box in the wrong layout.
    with pytest.raises(axon.InvalidArgumentError, match=r"out has shape \(6, 4\).*'m' box.*has shape \(4, 6\)"):
        client.get("m", 0, (0, 0), (4, 6), out=np.empty((6, 4)))
    with pytest.raises(axon.InvalidArgumentError, match=r"out has shape \(24,\)"):
        client.get("m", 0, (0, 0), (4, 6), out=np.empty(24))
    with pytest.raises(axon.InvalidArgumentError, match=r"'m' holds float64, but the array out \(for 'm' box"):
        client.get("m", 0, (0, 0), (4, 6), out=np.empty((4, 6), dtype=np.int64))
    strided = np.empty((4, 12))[:, ::2]
    with pytest.raises(axon.InvalidArgumentError, match=r"C-contiguous.*'m' box"):
        client.get("m", 0, (0, 0), (4, 6), out=strided)
    with pytest.raises(axon.InvalidArgumentError, match=r"out has shape \(2, 6\)"):
        client.iget("m", 0, (1, 0), (2, 6), out=np.empty((2, 6)))
    out = np.empty((2, 3))
    assert client.get("m", 0, (1, 2), (3, 5), out=out) is out
    np.testing.assert_array_equal(out, a[1:3, 2:5])


def test_a_negative_version_is_refused_by_every_write_and_read(client):
    client.define("v", (4,), "int32")
    block = np.arange(4, dtype=np.int32)
    for call in (lambda: client.put("v", -1, (0,), block), lambda: client.iput("v", -1, (0,), block).wait(),
                 lambda: client.get("v", -1, (0,), (4,)), lambda: client.release("v", -1)):
        with pytest.raises(axon.InvalidArgumentError, match=r"'v'.*version -1 is negative"):
            call()
    assert client.stats()["servers"][0]["pieces"] == 0
    client.put("v", 0, (0,), block)
    # wait_version's at_least is a bound: below 0 it means any version.
    assert client.wait_version("v", -1, timeout=5) == 0


def test_start_and_count_name_the_same_box_as_lo_and_hi(client):
    a = np.arange(8 * 5, dtype=np.float32).reshape(8, 5)
    client.define("s", a.shape, "float32")
    client.put("s", 3, (0, 0), a)
    np.testing.assert_array_equal(client.get("s", 3, start=(2, 1), count=(4, 3)), a[2:6, 1:4])
    np.testing.assert_array_equal(client.get("s", 3, (2, 1), (6, 4)), a[2:6, 1:4])
    np.testing.assert_array_equal(client.iget("s", 3, start=(7, 0), count=(1, 5)).wait(), a[7:8])
    with pytest.raises(axon.InvalidArgumentError, match="not both"):
        client.get("s", 3, (2, 1), (6, 4), start=(2, 1), count=(4, 3))
    with pytest.raises(axon.InvalidArgumentError, match="count is missing"):
        client.get("s", 3, start=(2, 1))
    with pytest.raises(axon.InvalidArgumentError, match=r"no box: give lo and hi"):
        client.get("s", 3)
    with pytest.raises(axon.InvalidArgumentError, match="an entry <= 0"):
        client.get("s", 3, start=(0, 0), count=(0, 5))


def test_remove_frees_every_version_fails_waiters_and_frees_the_name():
    with space.Server(listen="127.0.0.1:0", mem="16M") as s, space.connect(s.address, timeout=10) as c, \
            space.connect(s.address, timeout=10) as reader:
        c.define("r", (64, 64), "float64", keep_versions=3)
        c.put("r", 0, (0, 0), np.ones((64, 64)))
        c.put("r", 1, (0, 0), np.ones((64, 64)))
        reader.get("r", 0, (0, 0), (1, 1))  # holds version 0
        used = c.stats()["servers"][0]["bytes_in_use"]
        assert used >= 2 * 64 * 64 * 8
        failures = {}

        def wait(key, fn):
            try:
                fn()
            except axon.Error as e:
                failures[key] = e

        waiters = [threading.Thread(target=wait, args=("wait_version", lambda: reader.wait_version("r", 5, timeout=30))),
                   threading.Thread(target=wait, args=("get", lambda: reader.get("r", 7, (0, 0), (2, 2), timeout=30)))]
        for t in waiters:
            t.start()
        time.sleep(0.5)  # both wait on the server
        start = time.monotonic()
        c.remove("r")
        for t in waiters:
            t.join(10)
        assert time.monotonic() - start < 5, "the waiters were answered at once"
        assert set(failures) == {"wait_version", "get"}, failures
        for e in failures.values():
            assert isinstance(e, axon.InvalidArgumentError) and "'r' was removed" in str(e), e
        server = c.stats()["servers"][0]
        assert server["bytes_in_use"] == 0 and server["versions"] == 0 and server["variables"] == 0, server
        with pytest.raises(axon.InvalidArgumentError, match="'r' is not defined"):
            reader.get("r", 1, (0, 0), (1, 1))
        with pytest.raises(axon.InvalidArgumentError, match="not defined"):
            c.remove("r")
        # The name is free: another shape and dtype.
        c.define("r", (3,), "int32")
        c.put("r", 0, (0,), np.array([7, 8, 9], dtype=np.int32))
        np.testing.assert_array_equal(c.get("r", 0, (0,), (3,)), [7, 8, 9])
        reader.define("r", (3,), "int32")  # refreshes the reader's cached definition
        np.testing.assert_array_equal(reader.get("r", 0, (1,), (3,)), [8, 9])


def test_remove_spans_every_server_of_a_space():
    with space.Server(listen="127.0.0.1:0", mem="16M", servers=2, start=False, key=KEY) as first:
        first._raw.start()
        with space.Server(listen="127.0.0.1:0", mem="16M", join=first.address, key=KEY) as second:
            with space.connect(first.address, timeout=10) as c:
                c.define("w", (64, 8), "float64")
                c.put("w", 0, (0, 0), np.ones((64, 8)))
                assert all(st["bytes_in_use"] > 0 for st in c.stats()["servers"])
                c.remove("w")
                assert all(st["bytes_in_use"] == 0 and st["variables"] == 0 for st in c.stats()["servers"])
                assert second.stats()["versions"] == 0


def test_a_server_never_reached_is_unreachable_not_lost(tmp_path, monkeypatch):
    for addr, cause in (("127.0.0.1:1", ""), ("no-such-host.invalid:4000", "resolve")):
        with pytest.raises(space.ServerUnreachableError, match=re.escape(addr) + ".*could not be reached") as e:
            space.connect(addr, timeout=2)
        assert cause in str(e.value) and "axon space serve" in str(e.value)
        assert isinstance(e.value, space.ServerLostError), "existing handlers still catch it"
        assert e.value.code == -22 and axon.ServerUnreachableError is space.ServerUnreachableError
    monkeypatch.delenv("AXON_SPACE_ADDR", raising=False)
    with pytest.raises(space.ServerUnreachableError, match="cannot be read"):
        space.connect(contact_file=str(tmp_path / "none.json"), timeout=2)
    # A server reached, then lost, stays ServerLostError only: test_space.py's killed server.


def _serve(path, *args):
    cmd = [sys.executable, "-m", "axon", "space", "serve", "--listen", "127.0.0.1:0", "--mem", "16M",
           "--contact-file", str(path), "--drain", "1", *args]
    return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _address(proc) -> str:
    line = proc.stdout.readline()
    m = re.search(r"serving at (\S+)", line)
    assert m, (line, proc.stderr.read() if proc.poll() is not None else "")
    return m.group(1)


def _stop(proc):
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=20)
    return err


def test_a_second_server_never_takes_a_live_servers_contact_file(tmp_path):
    path = tmp_path / "space.json"
    first = _serve(path)
    try:
        address = _address(first)
        written = path.read_bytes()
        second = subprocess.run([sys.executable, "-m", "axon", "space", "serve", "--listen", "127.0.0.1:0",
                                 "--contact-file", str(path)], stdin=subprocess.DEVNULL, capture_output=True,
                                text=True, timeout=60)
        assert second.returncode != 0 and second.stdout == ""
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in second.stderr, second.stderr
        assert str(path) in lines[0] and address in lines[0] and "live" in lines[0], lines[0]
        assert path.read_bytes() == written, "the live server's file is untouched"
        with space.connect(contact_file=str(path), timeout=5) as c:
            assert c.servers == [address]
    finally:
        _stop(first)
    assert not path.exists() and not (tmp_path / "space.json.lock").exists()


def test_a_stale_contact_file_is_replaced_and_a_replaced_one_is_left_alone(tmp_path):
    path = tmp_path / "space.json"
    path.write_text(json.dumps({"address": "127.0.0.1:9", "epoch": 1, "pid": 999999, "servers": 1, "key": KEY}))
    os.chmod(path, 0o600)
    server = _serve(path)
    try:
        address = _address(server)
        assert json.loads(path.read_text())["address"] == address
        # Someone puts another file there while it runs: at exit the server leaves that one alone.
        path.write_text("not this server's\n")
    finally:
        err = _stop(server)
    assert "replacing the stale contact file" in err and "127.0.0.1:9" in err, err
    assert path.read_text() == "not this server's\n"
