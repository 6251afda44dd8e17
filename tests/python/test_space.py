"""The staging space end to end on the host: servers as their own processes (`axon space serve`),
clients in this process and in child processes, every path (shared memory on this node, UCX,
batches), several servers, and each fault the service must survive."""

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from emulated import nodes_why_not

import axon
import axon.space as space

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The space's key of these tests' servers and clients (test_space_auth.py tests the key itself).
KEY = "5a" * 32


@pytest.fixture(autouse=True)
def _space_key(monkeypatch):
    """Every server started here (processes, embedded, across emulated nodes) and every client,
    here and in child processes, takes the key from AXON_SPACE_KEY."""
    monkeypatch.setenv("AXON_SPACE_KEY", KEY)


class ServerProcess:
    def __init__(self, *args, mem="64M", policy="block"):
        cmd = [sys.executable, "-m", "axon", "space", "serve", "--listen", "127.0.0.1:0", "--mem", mem,
               "--policy", policy, "--drain", "2", *args]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        m = re.search(r"serving at (\S+)", line)
        if not m:
            self.proc.kill()
            raise RuntimeError(f"the server did not start: {line!r} {self.proc.stderr.read()}")
        self.address = m.group(1)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def rss_bytes(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def stop(self, sig=signal.SIGTERM):
        if self.alive():
            self.proc.send_signal(sig)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        self.proc.stderr.close()


@pytest.fixture
def servers(request):
    started = []

    def start(*args, **kw):
        s = ServerProcess(*args, **kw)
        started.append(s)
        return s

    yield start
    for s in started:
        s.stop()


def space_of(start, n, **kw):
    """n servers forming one space: the first with --servers n, the others joining it."""
    first = start("--servers", str(n), **kw)
    rest = [start("--join", first.address, **kw) for _ in range(n - 1)]
    return [first] + rest


def run_child(code: str, *args, timeout=60):
    """Runs a client in a child process (the code gets `addr` as sys.argv[1])."""
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("n_servers", [1, 3])
@pytest.mark.parametrize("shared_memory", [True, False])
def test_random_boxes_come_back_exactly(servers, n_servers, shared_memory):
    first = space_of(servers, n_servers)[0]
    rng = np.random.default_rng(n_servers * 10 + shared_memory)
    shape = (57, 33, 20)
    data = rng.random(shape)
    with space.connect(first.address, timeout=20, shared_memory=shared_memory) as c:
        assert len(c.servers) == n_servers
        c.define("field", shape, "float64")
        # Writers' decomposition: uneven slabs along dimension 0, split along dimension 1 too.
        cuts0 = [0, 7, 30, 31, 57]
        cuts1 = [0, 16, 33]
        for i in range(len(cuts0) - 1):
            for j in range(len(cuts1) - 1):
                block = np.ascontiguousarray(data[cuts0[i]:cuts0[i + 1], cuts1[j]:cuts1[j + 1]])
                c.put("field", 5, (cuts0[i], cuts1[j], 0), block)
        assert c.wait_version("field", 5, timeout=10) == 5
        for _ in range(40):
            lo = [int(rng.integers(0, s)) for s in shape]
            hi = [int(rng.integers(l + 1, s + 1)) for l, s in zip(lo, shape)]
            got = c.get("field", 5, lo, hi)
            np.testing.assert_array_equal(got, data[lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]])
        out = np.zeros(shape)
        c.get("field", 5, (0, 0, 0), shape, out=out)
        np.testing.assert_array_equal(out, data)
        st = c.stats()
        assert len(st["servers"]) == n_servers
        assert sum(s["pieces"] for s in st["servers"]) >= 8
        if n_servers > 1:
            assert all(s["pieces"] > 0 for s in st["servers"]), "pieces spread over every server"
        if shared_memory:
            assert st["client"]["shared_memory_gets"] > 0
        else:
            assert st["client"]["shared_memory_gets"] == 0 and st["client"]["ucx_gets"] > 0


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32"])
def test_every_dtype_and_eight_dimensions(servers, dtype):
    s = servers()
    shape = (3, 2, 4, 2, 3, 2, 2, 5)
    data = (np.arange(np.prod(shape)) % 100).astype(dtype).reshape(shape)
    with space.connect(s.address, timeout=10) as c:
        c.define("x", shape, dtype)
        c.put("x", 0, (0,) * 8, data[:2])
        c.put("x", 0, (2,) + (0,) * 7, data[2:])
        lo, hi = (1, 0, 1, 1, 0, 0, 1, 2), (3, 2, 4, 2, 2, 1, 2, 5)
        np.testing.assert_array_equal(c.get("x", 0, lo, hi), data[tuple(slice(a, b) for a, b in zip(lo, hi))])


def test_bad_input_is_refused_before_data_moves_and_the_server_lives_on(servers):
    s = servers()
    with space.connect(s.address, timeout=5) as c:
        c.define("t", (10, 10), "float32")
        a = np.ones((10, 10), np.float32)
        c.put("t", 1, (0, 0), a)
        bad = [
            (lambda: c.get("t", 1, (5, 0), (5, 10)), "lo >= hi|empty"),
            (lambda: c.get("t", 1, (0, 0), (11, 10)), "outside"),
            (lambda: c.get("t", 1, (0,) * 9, (1,) * 9), "dimensions"),
            (lambda: c.get("t", 1, (0, 0), (10, 10), out=np.empty((10, 10), np.float64)), "holds float32"),
            (lambda: c.get("t", 1, (0, 0), (10, 10), out=np.empty((3, 3), np.float32)), r"out has shape \(3, 3\)"),
            (lambda: c.get("nope", 1, (0, 0), (1, 1)), "not defined"),
            (lambda: c.define("n" * 300, (4,), "float32"), "bytes long"),
            (lambda: c.define("big", (1 << 40, 1 << 40), "float64"), "overflow"),
            (lambda: c.define("t", (10, 11), "float32"), "defined differently"),
            (lambda: c.put("t", 2, (5, 5), a), "outside"),
            (lambda: c.put("t", 2, (0, 0), np.ones((2, 2), np.int32)), "holds float32"),
            (lambda: c.define("bf", (4,), "complex64"), "not one of"),
        ]
        for call, says in bad:
            with pytest.raises(axon.InvalidArgumentError, match=says):
                call()
        np.testing.assert_array_equal(c.get("t", 1, (0, 0), (10, 10)), a)
        assert c.stats()["servers"][0]["puts_committed"] == 1
    assert s.alive()


def test_a_writer_ahead_of_the_others_never_pushes_out_their_versions(servers):
    s = servers(mem="128M")  # 2 x keep_versions versions of 32 MiB
    child = """
        import sys, time, numpy as np, axon.space as sp
        c = sp.connect(sys.argv[1], timeout=30)
        c.define("wf", (2048, 2048), "float64", keep_versions=2)
        r = int(sys.argv[2])
        time.sleep(1.0 * r)  # writer 1 starts late: writer 0 fills the space with versions it cannot finish
        for v in range(10):
            c.put("wf", v, (1024 * r, 0), np.full((1024, 2048), float(v)))
    """
    writers = [run_child(child, s.address, str(r)) for r in (0, 1)]
    for p in writers:
        assert p.wait(60) == 0, p.stderr.read()
        p.stdout.close()
        p.stderr.close()
    with space.connect(s.address, timeout=10) as c:
        assert c.wait_version("wf", 9, timeout=10) == 9
        np.testing.assert_array_equal(c.get("wf", 9, (1000, 7), (1050, 9)), np.full((50, 2), 9.0))
        assert c.stats()["servers"][0]["high_water"] <= 128 << 20


def test_overlap_evicted_and_incomplete(servers):
    s = servers()
    with space.connect(s.address, timeout=5) as c:
        c.define("v", (8, 8), "float64", keep_versions=1)
        c.put("v", 1, (0, 0), np.zeros((4, 8)))
        with pytest.raises(axon.InvalidArgumentError, match=r"overlaps the stored piece \[0:4, 0:8\)"):
            c.put("v", 1, (3, 0), np.zeros((2, 8)))
        with pytest.raises(space.IncompleteError, match=r"missing 1 box\(es\): \[4:8, 0:8\)"):
            c.get("v", 1, (2, 0), (8, 8), timeout=0.3)
        c.put("v", 1, (4, 0), np.zeros((4, 8)))
        c.put("v", 2, (0, 0), np.zeros((8, 8)))  # complete: with keep_versions=1, version 1 goes (nobody holds it)
        with pytest.raises(space.EvictedError, match="version 1"):
            c.get("v", 1, (0, 0), (1, 1))
        assert isinstance(space.EvictedError("x"), axon.Error)


def test_a_get_waits_for_a_piece_written_later(servers):
    s = servers()
    with space.connect(s.address, timeout=10) as c:
        c.define("late", (4, 4), "int32")
        writer = run_child("""
            import sys, time, numpy as np, axon.space as sp
            c = sp.connect(sys.argv[1], timeout=10)
            time.sleep(0.5)
            c.put("late", 3, (0, 0), np.arange(16, dtype=np.int32).reshape(4, 4))
        """, s.address)
        t0 = time.monotonic()
        got = c.get("late", 3, (1, 1), (3, 3), timeout=8)
        assert time.monotonic() - t0 > 0.3
        np.testing.assert_array_equal(got, np.arange(16, dtype=np.int32).reshape(4, 4)[1:3, 1:3])
        assert writer.wait(20) == 0, writer.stderr.read()
        writer.stdout.close()
        writer.stderr.close()


def test_batched_nonblocking_puts(servers):
    s = servers()
    with space.connect(s.address, timeout=10, shared_memory=False, batch=64 << 10) as c:
        c.define("rows", (2000, 512), "float64")
        data = np.random.default_rng(1).random((2000, 512))
        reqs = [c.iput("rows", 0, (i, 0), data[i:i + 1]) for i in range(2000)]  # 4 KiB each
        for r in reqs:
            r.wait()
        st = c.stats()["client"]
        assert st["batched_puts"] == 2000
        assert 2000 * 4096 / (64 << 10) <= st["batches"] < 200
        np.testing.assert_array_equal(c.get("rows", 0, (0, 0), (2000, 512)), data)
    with space.connect(s.address, timeout=10, shared_memory=False, batch=0) as c:
        reqs = [c.iput("rows", 1, (i, 0), data[i:i + 1]) for i in range(100)]
        for r in reqs:
            r.wait()
        assert c.stats()["client"]["batches"] == 0


@pytest.mark.parametrize("policy", ["reject", "block", "evict"])
def test_a_put_stream_far_beyond_mem_never_kills_the_server(servers, policy):
    s = servers(mem="16M", policy=policy)
    rss0 = s.rss_bytes()
    block = np.ones((1 << 20,), np.float64)  # 8 MiB
    failures = 0
    with space.connect(s.address, timeout=10) as c:
        c.define("stream", (1 << 20,), "float64", keep_versions=100)
        for version in range(25):  # 200 MiB through a 16 MiB server
            try:
                c.put("stream", version, (0,), block, timeout=0.3)
            except space.FullError as e:
                failures += 1
                assert "16777216" in str(e) or "full" in str(e)
        st = c.stats()["servers"][0]
    assert s.alive()
    assert st["high_water"] <= 16 << 20
    assert s.rss_bytes() - rss0 < 64 << 20
    if policy == "evict":
        assert failures == 0 and st["versions_evicted"] >= 20
    else:
        assert failures == 23 and st["puts_committed"] == 2


def test_block_waits_until_a_reader_releases(servers):
    s = servers(mem="16M", policy="block")
    block = np.ones((1 << 20,), np.float64)
    with space.connect(s.address, timeout=10) as reader, space.connect(s.address, timeout=10) as writer:
        writer.define("s", (1 << 20,), "float64", keep_versions=1)
        writer.put("s", 0, (0,), block)
        reader.get("s", 0, (0,), (8,))      # the reader holds version 0
        writer.put("s", 1, (0,), block)      # version 0 is past keep_versions but held: 16 MiB used
        done = threading.Event()

        def put2():
            writer.put("s", 2, (0,), block, timeout=10)
            done.set()

        t = threading.Thread(target=put2)
        t.start()
        assert not done.wait(0.5), "the put must wait for memory"
        reader.release("s", 0)               # version 0 goes, and version 2 finds room
        assert done.wait(10)
        t.join()
        assert reader.stats()["servers"][0]["high_water"] <= 16 << 20


def test_a_killed_server_fails_its_clients_in_time_and_the_others_serve_on(servers):
    first, second = space_of(servers, 2)
    with space.connect(first.address, timeout=5, shared_memory=False) as c:
        c.define("k", (64, 16), "float64")
        data = np.arange(64 * 16, dtype=np.float64).reshape(64, 16)
        c.put("k", 0, (0, 0), data)
        second.proc.kill()
        second.proc.wait()
        t0 = time.monotonic()
        with pytest.raises(space.ServerLostError, match=re.escape(second.address)) as lost:
            c.get("k", 0, (0, 0), (64, 16))
        assert time.monotonic() - t0 < 5
        assert not isinstance(lost.value, space.ServerUnreachableError), "reached, then lost"
        # Slab 0 (rows 0..7) lives on the first server, which still answers.
        np.testing.assert_array_equal(c.get("k", 0, (0, 0), (8, 16)), data[:8])


def test_shutdown_with_a_get_in_flight_fails_it_quickly(servers):
    s = servers()
    with space.connect(s.address, timeout=30) as c:
        c.define("never", (4,), "float64")
        result = {}

        def waiting_get():
            try:
                c.get("never", 0, (0,), (4,), timeout=30)
            except axon.Error as e:
                result["error"] = e

        t = threading.Thread(target=waiting_get)
        t.start()
        time.sleep(0.3)
        t0 = time.monotonic()
        s.stop(signal.SIGTERM)
        t.join(15)
        assert not t.is_alive()
        assert isinstance(result.get("error"), space.ServerLostError), result
        assert "shutting down" in str(result["error"]) or s.address in str(result["error"])
        assert time.monotonic() - t0 < 10


def test_a_writer_killed_mid_put_leaves_nothing_visible_and_frees_its_memory(servers):
    s = servers(mem="1G")
    writer = run_child("""
        import sys, numpy as np, axon.space as sp
        c = sp.connect(sys.argv[1], timeout=30, shared_memory=False)
        c.define("big", (64 << 20,), "float64")
        a = np.ones(64 << 20)
        print("putting", flush=True)
        c.put("big", 0, (0,), a)
        print("done", flush=True)
    """, s.address)
    assert writer.stdout.readline().strip() == "putting"
    time.sleep(0.15)
    writer.kill()
    writer.wait()
    writer.stdout.close()
    writer.stderr.close()
    with space.connect(s.address, timeout=5) as c:
        deadline = time.monotonic() + 10
        while True:
            st = c.stats()["servers"][0]
            if st["puts_committed"] == 1 or (st["bytes_in_use"] == 0 and st["puts_aborted"] >= 1) or \
                    time.monotonic() > deadline:
                break
            time.sleep(0.1)
        if st["puts_committed"] == 1:  # the whole 512 MiB got there before the kill: all of it is visible
            assert c.get("big", 0, (0,), (4,)).tolist() == [1.0] * 4
        else:
            assert st["bytes_in_use"] == 0 and st["puts_aborted"] >= 1, st
            with pytest.raises(space.IncompleteError):
                c.get("big", 0, (0,), (4,), timeout=0.2)


def test_a_killed_reader_lets_go_of_its_holds(servers):
    s = servers()
    with space.connect(s.address, timeout=10) as c:
        c.define("h", (4,), "float64", keep_versions=1)
        c.put("h", 0, (0,), np.zeros(4))
        reader = run_child("""
            import sys, time, axon.space as sp
            c = sp.connect(sys.argv[1], timeout=10)
            c.get("h", 0, (0,), (4,))
            print("holding", flush=True)
            time.sleep(60)
        """, s.address)
        assert reader.stdout.readline().strip() == "holding"
        c.put("h", 1, (0,), np.ones(4))
        assert c.stats()["servers"][0]["versions"] == 2, "version 0 is held"
        reader.kill()
        reader.wait()
        reader.stdout.close()
        reader.stderr.close()
        deadline = time.monotonic() + 10
        while c.stats()["servers"][0]["versions"] != 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert c.stats()["servers"][0]["versions"] == 1
        with pytest.raises(space.EvictedError):
            c.get("h", 0, (0,), (4,))


def test_contact_file_is_atomic_carries_an_epoch_and_goes_at_exit(servers, tmp_path, monkeypatch):
    path = tmp_path / "space.json"
    s = servers("--contact-file", str(path))
    info = json.loads(path.read_text())
    assert info["address"] == s.address and info["epoch"] > 0 and info["pid"] == s.proc.pid
    assert info["key"] == KEY and (path.stat().st_mode & 0o777) == 0o600
    written = path.read_bytes()
    monkeypatch.delenv("AXON_SPACE_ADDR", raising=False)
    monkeypatch.setenv("AXON_SPACE_FILE", str(path))
    with space.connect(timeout=5) as c:
        assert c.servers == [s.address]
    stale = dict(info, epoch=info["epoch"] + 1)
    path.write_text(json.dumps(stale))
    with pytest.raises(space.ServerUnreachableError, match="stale"):
        space.connect(timeout=5)
    path.write_bytes(written)  # the server removes only the file it wrote (test_space_api.py)
    s.stop()
    assert not path.exists()
    with pytest.raises(space.ServerUnreachableError, match="cannot be read"):
        space.connect(timeout=2)


def test_no_server_named_and_an_unreachable_one(monkeypatch):
    monkeypatch.delenv("AXON_SPACE_ADDR", raising=False)
    monkeypatch.delenv("AXON_SPACE_FILE", raising=False)
    with pytest.raises(axon.InvalidArgumentError, match="AXON_SPACE_ADDR"):
        space.connect()
    with pytest.raises(space.ServerUnreachableError, match="127.0.0.1:1"):
        space.connect("127.0.0.1:1", timeout=2)
    with pytest.raises(axon.InvalidArgumentError, match="host:port"):
        space.connect("nonsense", timeout=2)


def test_every_gpu_path_moves_host_data_and_a_bad_one_is_refused():
    with space.Server(listen="127.0.0.1:0", mem="32M") as s:
        with pytest.raises(axon.InvalidArgumentError, match="gpu_path 'fast' is not one of direct, ucx-device, host-staged"):
            space.connect(s.address, timeout=5, gpu_path="fast")
        a = np.arange(64 * 300, dtype=np.float64).reshape(64, 300)
        for version, path in enumerate(("direct", "ucx-device", "host-staged")):
            with space.connect(s.address, timeout=5, gpu_path=path, shared_memory=False) as c:
                c.define("g", a.shape, "float64", keep_versions=4)
                c.put("g", version, (0, 0), a)
                np.testing.assert_array_equal(c.get("g", version, (3, 7), (60, 299)), a[3:60, 7:299])
                st = c.stats()["client"]
                # Host data never takes a GPU path's copies.
                assert st["host_staged_copies"] == 0 and st["pipelined_puts"] == 0 and st["fused_kernels"] == 0


def test_an_embedded_server_and_iget(tmp_path):
    with space.Server(listen="127.0.0.1:0", mem="32M") as s, space.connect(s.address, timeout=5) as c:
        c.define("e", (16, 16), "float32")
        a = np.arange(256, dtype=np.float32).reshape(16, 16)
        c.iput("e", 0, (0, 0), a).wait()
        r = c.iget("e", 0, (2, 3), (9, 12))
        np.testing.assert_array_equal(r.wait(), a[2:9, 3:12])
        assert s.stats()["puts_committed"] == 1


@pytest.mark.skipif(nodes_why_not() is not None, reason=str(nodes_why_not()))
def test_across_emulated_nodes_over_ucx(tmp_path):
    script = tmp_path / "nodes.py"
    script.write_text(textwrap.dedent(f"""
        import os, time, numpy as np, axon.space as sp
        rank = int(os.environ["AXON_RANK"])
        addr_file, done_file = {str(tmp_path / "addr")!r}, {str(tmp_path / "done")!r}
        if rank == 0:
            s = sp.Server(mem="64M")
            open(addr_file + ".tmp", "w").write(s.address)
            os.rename(addr_file + ".tmp", addr_file)
            while not os.path.exists(done_file):
                time.sleep(0.05)
            s.stop()
        else:
            while not os.path.exists(addr_file):
                time.sleep(0.05)
            c = sp.connect(open(addr_file).read(), timeout=20)
            c.define("n", (300, 70), "float64")
            a = np.random.default_rng(0).random((300, 70))
            c.put("n", 0, (0, 0), a[:150])
            c.put("n", 0, (150, 0), a[150:])
            assert np.array_equal(c.get("n", 0, (10, 5), (290, 60)), a[10:290, 5:60])
            st = c.stats()["client"]
            assert st["shared_memory_puts"] == 0 and st["ucx_gets"] == 1, st
            print("across nodes ok", flush=True)
            c.close()
            open(done_file, "w").write("x")
    """))
    out = subprocess.run([sys.executable, "-m", "axon", "run", "-n", "2", "--emulate-nodes", "2", sys.executable,
                          str(script)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "across nodes ok" in out.stdout
