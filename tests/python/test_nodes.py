"""The Python suites on emulated nodes (axon run --emulate-nodes: namespaces joined by a bridge,
UCX over TCP between them): collectives checked against NumPy, one-sided rings, how each PE reaches
the others, and a PE killed on the other node. Making the namespaces needs root, as CI runs;
elsewhere these skip with the reason. The collectives run once more with `ip` hidden from PATH
(the nodes' links made by pyroute2, as on the lent GPU machines)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from emulated import nodes_why_not, without_ip

SCRIPTS = Path(__file__).parent / "scripts"

pytestmark = pytest.mark.skipif(nodes_why_not() is not None, reason=str(nodes_why_not()))


def run_on_nodes(n, nodes, *argv, env=None, timeout=300, hide_ip_in=None):
    full = dict(os.environ, AXON_TIMEOUT="30", AXON_BACKEND="host")
    full.update(env or {})
    command = [sys.executable, "-m", "axon", "run", "-n", str(n), "--emulate-nodes", str(nodes), *argv]
    if hide_ip_in is not None:
        command = without_ip(hide_ip_in, command)
    return subprocess.run(command, capture_output=True, text=True, env=full, timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("n,nodes", [(4, 2), (3, 3)])
def test_collectives_match_numpy_across_nodes(n, nodes):
    res = run_on_nodes(n, nodes, sys.executable, str(SCRIPTS / "collectives_numpy.py"), "5")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert res.stdout.count("collective results match NumPy") == n


def test_collectives_match_numpy_across_nodes_without_ip(tmp_path):
    res = run_on_nodes(4, 2, sys.executable, str(SCRIPTS / "collectives_numpy.py"), "5", hide_ip_in=tmp_path)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert res.stdout.count("collective results match NumPy") == 4


@pytest.mark.parametrize("n,nodes", [(4, 2), (3, 3)])
def test_onesided_ring_across_nodes(n, nodes):
    res = run_on_nodes(n, nodes, sys.executable, str(SCRIPTS / "onesided_ring.py"))
    assert res.returncode == 0, res.stdout + res.stderr
    for pe in range(n):
        assert f"[{pe}] PE {pe}: ok" in res.stdout, res.stdout + res.stderr


def test_path_to_names_the_transport():
    res = run_on_nodes(4, 2, sys.executable, str(SCRIPTS / "paths.py"))
    assert res.returncode == 0, res.stdout + res.stderr
    for me in range(4):
        for pe in range(4):
            path = res.stdout.split(f"path {me}->{pe}: ")[1].split("\n")[0]
            if pe == me:
                assert path == "self"
            elif pe // 2 == me // 2:
                assert path == "shm", path
            else:
                assert path.startswith("ucx:") and "tcp" in path, path
        assert f"PE {me}: puts ok" in res.stdout


def test_pe_killed_on_the_other_node_is_named_within_5_s():
    # PE 3 (node 1) dies; PEs 0 and 1 (node 0) and 2 (node 1) wait for its signal. The launcher's
    # grace is longer than 5 s, so each PE's own detection is what ends its wait.
    res = run_on_nodes(4, 2, "--grace", "8", sys.executable, str(SCRIPTS / "peer_dies.py"), "3")
    out = res.stdout + res.stderr
    assert "PE 3 was killed by signal 9 (SIGKILL)" in res.stderr, out
    for pe in range(3):
        assert f"[{pe}] caught PeerDeadError" in res.stdout, out
        line = res.stdout.split(f"[{pe}] caught PeerDeadError after ")[1].split("\n")[0]
        assert "PE 3" in line, line
        assert float(line.split(" s")[0]) < 5.0, line


@pytest.mark.parametrize("op", ["get", "fence"])
def test_link_down_fails_waits_naming_the_node(op):
    # AXON_TIMEOUT 3 s: every PE's get across the cut link, or fence after a put across it, must
    # end within it (and a little).
    res = run_on_nodes(4, 2, "--grace", "10", sys.executable, str(SCRIPTS / "link_down.py"), op,
                       env={"AXON_TIMEOUT": "3"}, timeout=120)
    out = res.stdout + res.stderr
    assert "PE 2: took ax" in res.stdout, out
    for pe in range(4):
        line = res.stdout.split(f"[{pe}] caught ")[1].split("\n")[0] if f"[{pe}] caught " in res.stdout else ""
        assert line.startswith("TimeoutError"), out
        other_node = 1 - pe // 2
        assert f"(node axon-node{other_node})" in line, line
        if op == "fence":
            assert "fence (flushing UCX's operations to PE" in line, line
        # The limit, plus at most 0.5 s for each of the endpoint's close and the request's cancel.
        assert float(line.split(" after ")[1].split(" s")[0]) < 3.0 + 1.5, line


def test_bench_beside_ucx_perftest_across_nodes(tmp_path):
    """axon bench --compare across emulated nodes runs UCX's own ucx_perftest right after axon,
    between the same two nodes, and reports both (skipped where the UCX in use ships no ucx_perftest)."""
    from axon.tools import doctor

    tool, _ = doctor.ucx_tool_beside(doctor.network_library(), "ucx_perftest")
    if not tool:
        pytest.skip("the UCX axon loads has no ucx_perftest beside it")
    out = tmp_path / "lat.json"
    env = dict(os.environ, AXON_TIMEOUT="60", AXON_BACKEND="host")
    res = subprocess.run([sys.executable, "-m", "axon", "bench", "latency", "--emulate-nodes", "2", "--compare",
                          "-m", "8:64", "-i", "300", "-x", "20", "--settle-ms", "0", "--json", str(out)],
                         capture_output=True, text=True, env=env, timeout=300, stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "ucx_perftest: run right after axon" in res.stdout
    doc = json.loads(out.read_text())
    impls = {r.get("impl", "axon") for r in doc["results"]}
    assert {"axon", "ucx_perftest ucp_put_lat", "ucx_perftest ucp_am_lat"} <= impls, impls
    for r in doc["results"]:
        assert r["time_us"] > 0 and r["size"] in (8, 16, 32, 64)
