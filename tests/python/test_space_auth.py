"""The staging space's key, binding and ownership, tried as a stranger would: `axon space serve`
as its own process, clients without the key, with a wrong one and with the right one, raw TCP
connections, a stranger server joining a forming space, and a client's holds (bounded, and let go
when it disconnects). The requests a stranger could send without the handshake (define, put,
query, release, join) are sent raw over UCX in tests/unit/space_auth_test.cpp."""

import json
import os
import re
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

import axon
import axon.space as space

KEY = "c3" * 32
WRONG = "4d" * 32


class Serve:
    """`axon space serve` with `args`, its environment plus `env`; stderr goes to a file (the
    refusals it logs)."""

    def __init__(self, tmp_path, *args, env=None, expect_start=True):
        self.err_path = tmp_path / f"server-{time.monotonic_ns()}.err"
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("AXON_SPACE_")}
        full_env.update(env or {})
        cmd = [sys.executable, "-m", "axon", "space", "serve", "--mem", "32M", "--drain", "1", *args]
        with open(self.err_path, "w") as err:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True, env=full_env)
        self.first_line = self.proc.stdout.readline()
        m = re.search(r"serving at (\S+)", self.first_line)
        self.address = m.group(1) if m else None
        if expect_start and not m:
            self.stop()
            raise RuntimeError(f"the server did not start: {self.first_line!r} {self.stderr()}")

    def stderr(self) -> str:
        return self.err_path.read_text()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()


@pytest.fixture(autouse=True)
def _no_space_variables(monkeypatch):
    for var in ("AXON_SPACE_KEY", "AXON_SPACE_ADDR", "AXON_SPACE_FILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AXON_TIMEOUT", "20")


@pytest.fixture
def serve(tmp_path):
    started = []

    def start(*args, **kw):
        s = Serve(tmp_path, *args, **kw)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def _listening_hosts(port: int) -> list[str]:
    """The local addresses of the TCP sockets listening on `port` (from /proc/net/tcp and tcp6)."""
    hosts = []
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state = fields[1], fields[3]
            host, p = local.split(":")
            if state == "0A" and int(p, 16) == port:  # 0A: LISTEN
                hosts.append(host if width == 32 else socket.inet_ntoa(bytes.fromhex(host)[::-1]))
    return hosts


def test_a_new_key_goes_into_a_0600_contact_file_which_is_enough_to_connect(serve, tmp_path, monkeypatch):
    path = tmp_path / "space.json"
    s = serve("--contact-file", str(path))
    assert f"key: a new key, in {path}" in s.first_line and KEY not in s.first_line
    assert (path.stat().st_mode & 0o777) == 0o600
    info = json.loads(path.read_text())
    assert re.fullmatch(r"[0-9a-f]{64}", info["key"]) and info["key"] not in s.first_line
    monkeypatch.setenv("AXON_SPACE_FILE", str(path))
    with space.connect(timeout=10) as c:
        c.define("f", (16,), "float64")
        c.put("f", 0, (0,), np.arange(16.0))
        np.testing.assert_array_equal(c.get("f", 0, (3,), (9,)), np.arange(3.0, 9.0))
    # The same key given explicitly works; a contact file others may read is refused (the key in
    # it is no longer the space's secret).
    with space.connect(s.address, timeout=10, key=info["key"]) as c:
        assert c.servers == [s.address]
    path.chmod(0o644)
    with pytest.raises(axon.PermissionDeniedError, match="mode 0644"):
        space.connect(timeout=10)
    path.chmod(0o600)


def test_the_default_bind_is_one_address_named_in_the_first_line(serve, tmp_path):
    s = serve("--contact-file", str(tmp_path / "a.json"))
    host, port = s.address.rsplit(":", 1)
    assert host != "0.0.0.0"
    assert f"bound to {host} only, this host's address" in s.first_line
    hosts = _listening_hosts(int(port))
    assert hosts and all(h not in ("0.0.0.0", "0" * 32) for h in hosts), hosts
    local = serve("--bind", "127.0.0.1", "--contact-file", str(tmp_path / "b.json"))
    assert local.address.startswith("127.0.0.1:") and "bound to 127.0.0.1 only (--bind)" in local.first_line
    assert _listening_hosts(int(local.address.rsplit(":", 1)[1])) == ["127.0.0.1"]


def test_a_server_whose_key_no_client_could_learn_is_refused(serve, tmp_path):
    s = serve(expect_start=False)
    assert s.proc.wait(30) == 2
    assert "--contact-file" in s.stderr() and "AXON_SPACE_KEY" in s.stderr()


def test_clients_without_the_key_or_with_a_wrong_one_are_refused_and_change_nothing(serve, monkeypatch):
    s = serve("--bind", "127.0.0.1", env={"AXON_SPACE_KEY": KEY})
    assert "key: AXON_SPACE_KEY" in s.first_line
    owner = space.connect(s.address, timeout=10, key=KEY)
    owner.define("t", (32,), "float64", keep_versions=4)
    owner.put("t", 0, (0,), np.arange(32.0))
    before = owner.stats()["servers"][0]

    with pytest.raises(axon.PermissionDeniedError, match=re.escape(s.address)) as no_key:
        space.connect(s.address, timeout=10)
    assert "AXON_SPACE_KEY" in str(no_key.value)
    with pytest.raises(axon.PermissionDeniedError, match="the key given to connect") as wrong:
        space.connect(s.address, timeout=10, key=WRONG)
    assert s.address in str(wrong.value) and "did not prove the space's key" in str(wrong.value)
    assert WRONG not in str(wrong.value) and KEY not in str(wrong.value)
    monkeypatch.setenv("AXON_SPACE_KEY", WRONG)
    with pytest.raises(axon.PermissionDeniedError, match="came from AXON_SPACE_KEY"):
        space.connect(s.address, timeout=10)
    monkeypatch.delenv("AXON_SPACE_KEY")
    with pytest.raises(axon.InvalidArgumentError, match="hex digits"):
        space.connect(s.address, timeout=10, key="not a key")

    # Nothing of the owner's changed, and the owner goes on.
    after = owner.stats()["servers"][0]
    for field in ("pieces", "versions", "variables", "puts_committed", "bytes_in_use"):
        assert after[field] == before[field], field
    owner.put("t", 1, (0,), np.arange(32.0) * 2)
    np.testing.assert_array_equal(owner.get("t", 1, (0,), (32,)), np.arange(32.0) * 2)
    owner.close()
    # One line for the first refusal, the two within the same second counted, not printed.
    refusals = [line for line in s.stderr().splitlines() if "refused" in line]
    assert 1 <= len(refusals) <= 2, refusals
    assert "did not prove the space's key" in refusals[0] and "127.0.0.1" in refusals[0]


def test_raw_connections_neither_stall_nor_crash_the_server(serve):
    s = serve("--bind", "127.0.0.1", env={"AXON_SPACE_KEY": KEY})
    host, port = s.address.rsplit(":", 1)
    strangers = []
    for i in range(40):
        sock = socket.create_connection((host, int(port)), timeout=5)
        if i % 4 == 1:
            sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
        elif i % 4 == 2:
            sock.sendall(os.urandom(4096))
        elif i % 4 == 3:
            sock.sendall(b"\xff" * 64)  # lengths and counts at their largest
        strangers.append(sock)
    start = time.monotonic()
    with space.connect(s.address, timeout=10, key=KEY, shared_memory=False) as c:
        c.define("r", (64, 8), "float32")
        a = np.random.default_rng(1).random((64, 8), dtype=np.float32)
        c.put("r", 0, (0, 0), a)
        np.testing.assert_array_equal(c.get("r", 0, (5, 2), (60, 7)), a[5:60, 2:7])
    assert time.monotonic() - start < 8
    for sock in strangers:
        sock.close()
    assert s.proc.poll() is None
    with space.connect(s.address, timeout=10, key=KEY) as c:
        assert c.stats()["servers"][0]["puts_committed"] == 1


def test_a_stranger_server_cannot_take_a_forming_spaces_slot(serve):
    first = serve("--bind", "127.0.0.1", "--servers", "2", env={"AXON_SPACE_KEY": KEY})
    stranger = serve("--bind", "127.0.0.1", "--join", first.address, env={"AXON_SPACE_KEY": WRONG},
                     expect_start=False)
    assert stranger.proc.wait(30) != 0
    assert "PermissionDenied" in stranger.stderr() or "did not prove" in stranger.stderr(), stranger.stderr()
    keyless = serve("--bind", "127.0.0.1", "--join", first.address, expect_start=False)
    assert keyless.proc.wait(30) == 2 and "must prove that space's key" in keyless.stderr()
    second = serve("--bind", "127.0.0.1", "--join", first.address, env={"AXON_SPACE_KEY": KEY})
    with space.connect(first.address, timeout=20, key=KEY, shared_memory=False) as c:
        assert c.servers == [first.address, second.address]
        c.define("j", (40, 3), "float64")
        a = np.arange(120.0).reshape(40, 3)
        c.put("j", 0, (0, 0), a)
        np.testing.assert_array_equal(c.get("j", 0, (0, 0), (40, 3)), a)
        assert all(srv["pieces"] > 0 for srv in c.stats()["servers"])


def test_a_clients_holds_are_bounded_and_go_with_it(serve):
    s = serve("--bind", "127.0.0.1", "--max-holds", "2", env={"AXON_SPACE_KEY": KEY})
    writer = space.connect(s.address, timeout=10, key=KEY)
    reader = space.connect(s.address, timeout=10, key=KEY)
    writer.define("h", (8,), "float64", keep_versions=1)
    for v in range(2):
        writer.put("h", v, (0,), np.full(8, float(v)))
        assert reader.get("h", v, (0,), (8,))[0] == v
    writer.put("h", 2, (0,), np.full(8, 2.0))
    with pytest.raises(axon.InvalidArgumentError, match="--max-holds 2"):
        reader.get("h", 2, (0,), (8,))
    # A version it holds already may be read again; one released makes room for another.
    assert reader.get("h", 1, (0,), (8,))[0] == 1
    reader.release("h", 0)
    assert reader.get("h", 2, (0,), (8,))[0] == 2
    writer.put("h", 3, (0,), np.full(8, 3.0))
    assert writer.stats()["servers"][0]["versions"] == 3  # 1 and 2 held, 3 the newest
    reader.close()
    deadline = time.monotonic() + 10
    while writer.stats()["servers"][0]["versions"] != 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert writer.stats()["servers"][0]["versions"] == 1
    writer.close()
