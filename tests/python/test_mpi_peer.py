"""The Open MPI peer (axon.tools.bench.mpi_peer, mpi_collectives): its launch agent, its mpirun
line, its arguments from `axon bench`, the collectives' sizes and expected values; and, where
mpirun and mpi4py are installed (CI has neither), a real tiny run of a collective on this node and,
as root, across two emulated nodes."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys

import numpy as np
import pytest

from axon.tools import bench
from axon.tools.bench import mpi_collectives, mpi_peer, peer_runs
from axon.tools.bench.peers import compare_notes
from emulated import nodes_why_not


def test_the_agent_runs_the_command_inside_the_named_node(tmp_path):
    # Each "node" here is a prefix that records where it ran instead of entering namespaces.
    log = tmp_path / "ran"
    enter = {f"axon-node{k}": ["env", f"NODE={k}"] for k in range(2)}
    agent = tmp_path / "agent"
    agent.write_text(mpi_peer.agent_script(enter))
    agent.chmod(0o700)
    subprocess.run([str(agent), "axon-node1", f"echo $NODE >> {log}"], check=True)
    assert log.read_text().split() == ["1"]
    # Open MPI passes the daemon's command as several words.
    subprocess.run([str(agent), "axon-node0", "echo", f"$NODE >> {log}"], check=True)
    assert log.read_text().split() == ["1", "0"]
    bad = subprocess.run([str(agent), "elsewhere", "true"], capture_output=True, text=True)
    assert bad.returncode != 0 and "unknown node elsewhere" in bad.stderr


def test_mpirun_places_one_rank_per_node_through_the_agent_on_ucx():
    cmd = mpi_peer.mpirun_command("mpirun", "/tmp/agent", ["axon-node0", "axon-node1"], ["prog"],
                                  list(mpi_peer.UCX_PML))
    joined = " ".join(cmd)
    assert "-np 2" in joined and "--host axon-node0:1,axon-node1:1" in joined
    # A launcher of its own (images may pin plm to isolated), no binding: each node's daemon
    # would bind its rank to core 0 of the same machine.
    assert "--mca plm rsh" in joined and "--mca plm_rsh_agent /tmp/agent" in joined
    assert "--bind-to none" in joined
    assert "--mca pml ucx" in joined and "--mca pml_ucx_tls any" in joined and "--mca pml_ucx_devices any" in joined
    assert cmd[-1] == "prog"


def test_bad_sizes_are_a_usage_error(capsys):
    assert mpi_peer.main(["--sizes", "8,x"]) == 2
    assert '"usage": true' in capsys.readouterr().out


def test_without_mpirun_it_says_what_to_install(capsys):
    assert mpi_peer.main(["--sizes", "8", "--mpirun", "/nonexistent/mpirun"]) == 1
    assert "openmpi-bin" in capsys.readouterr().out


def test_mpirun_places_ranks_in_blocks_of_the_nodes():
    # 2 nodes x 2 ranks: ranks 0 and 1 on node 0, as `axon run --emulate-nodes 2 -n 4` places PEs.
    cmd = mpi_peer.mpirun_command("mpirun", "/tmp/agent", ["axon-node0", "axon-node1"], ["prog"], [], per_node=2)
    joined = " ".join(cmd)
    assert "-np 4" in joined and "--host axon-node0:2,axon-node1:2" in joined and "--map-by slot" in joined
    local = " ".join(mpi_peer.local_mpirun_command("mpirun", ["prog"], [], pes=4))
    assert "-np 4" in local and "--oversubscribe" in local


@pytest.mark.parametrize("args,needle", [
    (("p2p-bw", 4, 2), "p2p-bw runs on 2 ranks, not --pes 4"),
    (("allreduce", 3, 2), "--pes 3 does not divide over --nodes 2"),
    (("allreduce", 2, 1, "bfloat16"), "--dtype bfloat16: Open MPI 4 has no MPI type for it"),
    (("allreduce", 2, 1, "float32", "mean"), "--op 'mean' is not one of sum, prod, min, max"),
    (("broadcast", 2, 2, "float32", "sum", 2), "--root 2 is not one of the 2 ranks"),
])
def test_requests_it_cannot_run_are_refused_before_mpirun(args, needle, capsys):
    assert needle in mpi_peer.request_error(*args)
    test, pes, nodes, *rest = args
    argv = [test, "--sizes", "8", "--pes", str(pes), "--nodes", str(nodes), "--mpirun", "/nonexistent/mpirun"]
    for opt, value in zip(("--dtype", "--op", "--root"), rest):
        argv += [opt, str(value)]
    assert mpi_peer.main(argv) == 2  # a usage error, though mpirun is missing too
    record = json.loads(capsys.readouterr().out)
    assert record["usage"] is True and needle in record["message"]
    assert mpi_peer.request_error("alltoall", 4, 2) == "" and mpi_peer.request_error("p2p-latency", 2, 1) == ""


def test_collective_shapes_and_factors_follow_the_driver():
    # bench/coll_values.hpp's shapeOf: (count argument, source, destination) elements.
    assert mpi_collectives.shape("allreduce", 4096, 4, 4) == (1024, 1024, 1024)
    assert mpi_collectives.shape("allgather", 4096, 4, 4) == (256, 256, 1024)
    assert mpi_collectives.shape("alltoall", 4096, 4, 4) == (256, 1024, 1024)
    assert mpi_collectives.shape("broadcast", 8, 4, 4) == (2, 2, 2)
    assert mpi_collectives.shape("allgather", 8, 4, 4)[2] == 0  # under an element a rank: skipped
    assert mpi_collectives.bus_factor("allreduce", 4) == 1.5
    assert mpi_collectives.bus_factor("alltoall", 4) == 0.75 and mpi_collectives.bus_factor("broadcast", 4) == 1.0
    assert mpi_collectives.default_iters(65536) == (200, 20) and mpi_collectives.default_iters(65537) == (20, 5)


def test_collective_expected_values_are_the_drivers():
    i = np.arange(8)
    # inputAt: (pe + 1) * (i % 7 + 1); prod: 2 where pe + i is even, else 1.
    assert mpi_collectives.input_at("sum", 1, i).tolist() == [2, 4, 6, 8, 10, 12, 14, 2]
    assert mpi_collectives.input_at("prod", 1, i)[:3].tolist() == [1, 2, 1]
    assert mpi_collectives.expected_at("sum", 3, i)[:2].tolist() == [6, 12]
    assert mpi_collectives.expected_at("max", 3, i)[:2].tolist() == [3, 6]
    # alltoall on 2 ranks, blocks of 2: rank 1 gets rank 0's block 1, then its own block 1.
    assert mpi_collectives.wanted("alltoall", "sum", 2, 1, 0, 2, 4).tolist() == [3, 4, 6, 8]
    # allgather: rank p's block p, blocks of 2.
    assert mpi_collectives.wanted("allgather", "sum", 2, 0, 0, 2, 4).tolist() == [1, 2, 2, 4]
    assert mpi_collectives.wanted("broadcast", "sum", 2, 0, 1, 4, 3).tolist() == [2, 4, 6]


def test_axon_bench_hands_the_collective_its_pes_nodes_and_type():
    req = bench.validate(bench.build_parser().parse_args(
        ["allreduce", "-d", "H", "--pes", "4", "--emulate-nodes", "2", "-b", "8", "-e", "4M", "-f", "8",
         "--compare", "--peers", "openmpi", "--dtype", "int32", "-o", "max"]))
    cmd = peer_runs.mpi_peer_command(req, [8, 64])
    joined = " ".join(cmd)
    assert cmd[1:4] == ["-m", "axon.tools.bench.mpi_peer", "allreduce"]
    assert "--sizes 8,64 --nodes 2 --pes 4" in joined and "--dtype int32 --op max --root 0" in joined
    one_node = bench.validate(bench.build_parser().parse_args(["p2p-bw", "-d", "H", "H", "--compare"]))
    assert "--nodes 1 --pes 2" in " ".join(peer_runs.mpi_peer_command(one_node, [8]))
    assert "--dtype" not in peer_runs.mpi_peer_command(one_node, [8])
    # A two-sided test across nodes still measures PE 0 and PE 1 only.
    with pytest.raises(bench.UsageError, match="--pes must equal --emulate-nodes"):
        bench.validate(bench.build_parser().parse_args(["p2p-bw", "--pes", "4", "--emulate-nodes", "2", "--compare"]))


def test_the_compare_note_names_open_mpi_on_the_collectives():
    peer = {"peer": "Open MPI", "found": True, "where": "/usr/bin/mpirun", "what": "mpirun and mpi4py",
            "host_buffers": True}
    ran = compare_notes([dict(peer)], False, frozenset({"Open MPI"}), "alltoall", False, nodes=True)[0]
    assert ran["status"] == "run" and "on the same nodes and PEs" in ran["note"]
    reduce = compare_notes([dict(peer)], False, frozenset(), "reduce", False, nodes=True)[0]
    assert reduce["status"] == "not_run" and "allgather, allreduce, alltoall, broadcast" in reduce["note"]
    missing = compare_notes([{**peer, "found": False, "where": None}], False, frozenset(), "allreduce", False)[0]
    assert missing["note"] == "Open MPI: skipped (mpirun and mpi4py not found)"


_MPI_WHY_NOT = (None if shutil.which("mpirun") and importlib.util.find_spec("mpi4py")
                else "needs Open MPI's mpirun and mpi4py (Debian openmpi-bin, pip install mpi4py)")

_RESULT_FIELDS = {"impl", "test", "size", "count", "dtype", "redop", "root", "algorithm", "iters", "warmup",
                  "time_us", "bw_gbs", "wrong", "out_of_place", "in_place"}
_SIDE_FIELDS = {"time_us", "algbw_gbs", "busbw_gbs", "wrong"}


def _peer_run(argv: list[str]) -> list[dict]:
    done = subprocess.run([sys.executable, "-m", "axon.tools.bench.mpi_peer", *argv], capture_output=True,
                          text=True, timeout=120)
    records = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0, (done.stdout, done.stderr[-2000:])
    return records


def _check_results(records: list[dict], test: str, sizes: list[int], impl: str) -> None:
    results = [r for r in records if r["type"] == "result"]
    assert [r["size"] for r in results] == sizes
    for r in results:
        assert set(r) - {"type"} == _RESULT_FIELDS
        assert r["impl"] == impl and r["test"] == test and r["wrong"] == 0
        for side in ("out_of_place", "in_place"):
            assert set(r[side]) == _SIDE_FIELDS and r[side]["time_us"] > 0 and r[side]["wrong"] == 0
    peer = [r for r in records if r["type"] == "peer"]
    assert peer and "Open MPI" in peer[0]["version"] and "\x00" not in peer[0]["version"]


@pytest.mark.skipif(_MPI_WHY_NOT is not None, reason=_MPI_WHY_NOT or "")
@pytest.mark.parametrize("test", mpi_collectives.COLLECTIVES)
def test_a_real_collective_on_this_node(test):
    # ob1 on one node: Open MPI's shared-memory layer (UCX's needs its own devices set up).
    records = _peer_run([test, "--sizes", "8,4096", "--nodes", "1", "--pes", "2", "--pml", "ob1", "-i", "3",
                         "-x", "1", "--dtype", "int32", "--root", "1"])
    _check_results(records, test, [8, 4096], "openmpi-ob1")


@pytest.mark.skipif(_MPI_WHY_NOT is not None, reason=_MPI_WHY_NOT or "")
def test_a_real_alltoall_across_two_emulated_nodes_of_two_ranks():
    why = nodes_why_not(ucx=False)
    if why:
        pytest.skip(why)
    records = _peer_run(["alltoall", "--sizes", "64,65536", "--nodes", "2", "--pes", "4", "-i", "3", "-x", "1"])
    _check_results(records, "alltoall", [64, 65536], "openmpi-ucx")
    assert [r["ranks"] for r in records if r["type"] == "peer"] == [4]


@pytest.mark.skipif(_MPI_WHY_NOT is not None, reason=_MPI_WHY_NOT or "")
def test_axon_bench_prints_open_mpi_beside_axon_with_the_ratio(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("AXON_BACKEND", "host")
    monkeypatch.setenv("AXON_TIMEOUT", "60")
    out = tmp_path / "allgather.json"
    rc = bench.main(["allgather", "-d", "H", "-m", "1K:4K", "-f", "4", "-i", "3", "-x", "1", "--peers", "openmpi",
                     "--json", str(out)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    assert "# axon vs openmpi-ob1, same run, same sizes: openmpi-ob1 time / axon time" in captured.out
    doc = json.loads(out.read_text())
    impls = {r["impl"] for r in doc["results"]}
    assert {"axon", "openmpi-ob1"} <= impls, impls
    assert [r["size"] for r in doc["results"] if r["impl"] == "openmpi-ob1"] == [1024, 4096]
    note = next(c for c in doc["compare"] if c["peer"] == "Open MPI")
    assert note["status"] == "run", note
