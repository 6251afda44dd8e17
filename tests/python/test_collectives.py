"""Collectives from Python: NumPy-checked results on 2 to 8 PEs with each algorithm, mismatch
reports, explain(), and argument errors."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPTS = Path(__file__).parent / "scripts"


def axon_run(n, *argv, env=None, timeout=300):
    import os

    full = {**os.environ, "AXON_TIMEOUT": "30", **(env or {})}
    return subprocess.run([sys.executable, "-m", "axon", "run", "-n", str(n), *argv], capture_output=True,
                          text=True, env=full, timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("n,seed", [(2, 1), (3, 2), (5, 3), (8, 4)])
def test_collectives_match_numpy(n, seed):
    res = axon_run(n, sys.executable, str(SCRIPTS / "collectives_numpy.py"), str(seed))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert res.stdout.count("collective results match NumPy") == n


@pytest.mark.parametrize("algos", [
    {"AXON_ALGO_ALLREDUCE": "ring", "AXON_ALGO_ALLGATHER": "ring", "AXON_ALGO_BROADCAST": "chain"},
    {"AXON_ALGO_ALLREDUCE": "twoshot"},
], ids=["ring-chain", "twoshot"])
def test_forced_algorithms_match_numpy(algos):
    res = axon_run(4, sys.executable, str(SCRIPTS / "collectives_numpy.py"), "9",
                   env=dict(algos, AXON_COLL_BUFFER="8K"))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]


def test_mismatched_counts_fail_on_every_pe():
    res = axon_run(3, sys.executable, str(SCRIPTS / "collectives_mismatch.py"), timeout=120)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert res.stdout.count("mismatch reported") == 3


@pytest.mark.parametrize("mode", ["barrier_all", "finalize"])
def test_mismatched_pairs_fail_on_every_pe(mode):
    # allreduce against broadcast, two broadcast roots, barrier_all or finalize against allreduce:
    # every PE's own call raises, naming both calls (they returned wrong data on half the PEs, or
    # hung until AXON_TIMEOUT, before issue 45).
    res = axon_run(4, sys.executable, str(SCRIPTS / "collectives_mismatch_pairs.py"), mode,
                   timeout=120)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert res.stdout.count("mismatch reported") == 12, res.stdout


def test_bad_algorithm_variable_is_named(single_pe):
    import axon

    single_pe.setenv("AXON_ALGO_ALLREDUCE", "fastest")
    with pytest.raises(axon.InvalidArgumentError, match="AXON_ALGO_ALLREDUCE='fastest' is not one of oneshot"):
        axon.init()


def test_world_of_one(single_pe):
    import axon

    axon.init()
    x = np.arange(10, dtype=np.int32)
    assert np.array_equal(axon.allreduce(x.copy()), x)
    assert np.array_equal(axon.allgather(x), x)
    assert np.array_equal(axon.reduce_scatter(x), x)
    assert np.array_equal(axon.alltoall(x), x)
    e = axon.explain("allreduce", 1 << 20, "float32")
    assert e.path == "local" and e.algorithm == "local" and "allreduce" in str(e)
    assert (e.blocks, e.sms, e.device_sms) == (0, 0.0, 0)  # no kernel on this path
    axon.barrier()


def test_argument_errors(single_pe):
    import axon

    axon.init()
    x = np.zeros(8, np.float32)
    with pytest.raises(axon.InvalidArgumentError, match="int16 are not supported"):
        axon.allreduce(np.zeros(4, np.int16))
    with pytest.raises(axon.InvalidArgumentError, match="op 'mean' is not one of"):
        axon.allreduce(x, op="mean")
    with pytest.raises(axon.InvalidArgumentError, match="src has 8 elements but dst has 4"):
        axon.allreduce(x, np.zeros(4, np.float32))
    with pytest.raises(axon.InvalidArgumentError, match="differ in dtype"):
        axon.allreduce(x, np.zeros(8, np.int32))
    with pytest.raises(axon.InvalidArgumentError, match="does not match"):
        axon.allreduce(x, dtype="bfloat16")
    with pytest.raises(axon.InvalidPeError, match="root 3 is outside the team"):
        axon.broadcast(x, root=3)
    with pytest.raises(axon.InvalidArgumentError, match="is not one of barrier"):
        axon.explain("allsum", 4)


def test_dead_peer_is_named_not_waited_for():
    res = axon_run(3, sys.executable, str(SCRIPTS / "collectives_peer_dies.py"), timeout=120)
    # The launcher reports PE 1's exit status; the survivors must each have named it.
    assert res.stdout.count("PeerDead after") == 2, res.stdout[-3000:] + res.stderr[-3000:]
    assert "PE 1 exited with status 3" in res.stderr


def test_a_teams_own_timeout_may_outlast_axon_timeout():
    # AXON_TIMEOUT is 1 s; the team's own 6 s lets a receive and an allreduce wait 2 s for PE 0,
    # which would fail under AXON_TIMEOUT alone (the world team keeps 1 s).
    code = (
        "import time, numpy as np, axon\n"
        "axon.init()\n"
        "team = axon.team_world().split_strided(0, 1, axon.n_pes())\n"
        "team.set_timeout(6)\n"
        "if axon.my_pe() == 0:\n"
        "    time.sleep(2)\n"
        "    axon.send(np.arange(4, dtype=np.uint8), dest=1, tag=5, team=team)\n"
        "    time.sleep(2)\n"
        "else:\n"
        "    got = np.empty(4, np.uint8)\n"
        "    axon.recv(got, source=0, tag=5, team=team)\n"
        "    assert got.tolist() == [0, 1, 2, 3], got\n"
        "out = np.empty(2)\n"
        "axon.allreduce(np.ones(2), out, team=team)\n"
        "assert out.tolist() == [2.0, 2.0], out\n"
        "print('waited past AXON_TIMEOUT within the team bound', team.timeout, flush=True)\n"
        "team.destroy()\n"
        "axon.finalize()\n")
    res = axon_run(2, sys.executable, "-c", code, env={"AXON_TIMEOUT": "1"}, timeout=120)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert res.stdout.count("waited past AXON_TIMEOUT within the team bound 6.0") == 2, res.stdout
