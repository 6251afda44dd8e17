"""The Open MPI peer across emulated nodes (axon.tools.bench.mpi_peer): its launch agent and mpirun line.
Running it needs root, Open MPI and mpi4py (the GPU machine has them); these tests check the
pieces that decide where each rank runs."""

from __future__ import annotations

import subprocess

from axon.tools.bench import mpi_peer


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
