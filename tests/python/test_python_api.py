"""The Python API: a world of one in this process, and real multi-PE runs through the launcher."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import axon

SCRIPTS = Path(__file__).parent / "scripts"
RUN_TIMEOUT = 120


def axon_run(n: int, *argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = dict(os.environ, AXON_TIMEOUT="20", **(env or {}))
    return subprocess.run([sys.executable, "-m", "axon", "run", "-n", str(n), *argv],
                          capture_output=True, text=True, env=full_env, timeout=RUN_TIMEOUT,
                          stdin=subprocess.DEVNULL)


@pytest.fixture
def world_of_one(monkeypatch):
    """axon initialised as a world of one (whatever launcher variables the test runner has)."""
    for var in ("RANK", "WORLD_SIZE", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                "AXON_STORE_ADDR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AXON_RANK", "0")
    monkeypatch.setenv("AXON_WORLD_SIZE", "1")
    monkeypatch.setenv("AXON_TIMEOUT", "0.5")
    axon.init()
    yield
    if axon.is_initialized():
        axon.finalize()


def test_calls_before_init_raise():
    assert not axon.is_initialized()
    with pytest.raises(axon.NotInitializedError, match="before init"):
        axon.my_pe()
    with pytest.raises(axon.Error):
        axon.zeros(4)


def test_world_of_one_basics(world_of_one):
    assert axon.my_pe() == 0 and axon.n_pes() == 1
    assert axon.launcher_name() == "axon"
    a = axon.zeros((3, 5), np.float64)
    assert a.shape == (3, 5) and a.dtype == np.float64 and not a.any()
    assert axon.is_symmetric(a) and not axon.is_symmetric(np.zeros(3))
    src = np.random.default_rng(1).standard_normal((3, 5))
    axon.put(a, src, 0)
    assert np.array_equal(a, src)
    out = np.empty_like(src)
    axon.get(out, a, 0)
    assert np.array_equal(out, src)
    stats = axon.heap_stats()
    assert stats["allocations"] >= 2 and stats["in_use_bytes"] >= a.nbytes
    axon.free(a)
    assert axon.heap_stats()["allocations"] == stats["allocations"] - 1


def test_team_timeout(world_of_one):
    world = axon.team_world()
    default = world.timeout  # AXON_TIMEOUT
    team = world.split_strided(0, 1, 1)
    team.set_timeout(2.5)
    assert team.timeout == 2.5 and world.timeout == default
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(axon.InvalidArgumentError, match="not a bound"):
            team.set_timeout(bad)
    team.set_timeout(0)
    assert team.timeout == default
    team.destroy()


def test_init_twice_raises(world_of_one):
    with pytest.raises(axon.AlreadyInitializedError, match="twice"):
        axon.init()


def test_errors_name_what_is_wrong(world_of_one):
    a = axon.zeros(16, np.int32)
    with pytest.raises(axon.InvalidPeError, match="PE 1 is outside the world"):
        axon.put(a, np.ones(16, np.int32), 1)
    with pytest.raises(axon.OutOfBoundsError, match="not in the symmetric heap"):
        axon.put(np.zeros(16, np.int32), np.ones(16, np.int32), 0)
    with pytest.raises(axon.InvalidArgumentError, match="src has 17 elements but dest only 16"):
        axon.put(a, np.ones(17, np.int32), 0)
    with pytest.raises(axon.InvalidArgumentError, match="dest is int32 but src is float64"):
        axon.put(a, np.ones(16), 0)
    with pytest.raises(axon.OutOfBoundsError, match="runs 4 bytes past its allocation"):
        axon._axon.put(axon.memory.address_of(a) + 4, axon.memory.address_of(a), 64, 0)
    with pytest.raises(axon.InvalidArgumentError, match="uint64"):
        axon.signal_wait_until(a, "ge", 1)
    with pytest.raises(axon.InvalidArgumentError, match="not one of"):
        axon.signal_wait_until(axon.zeros(1, np.uint64), "bigger", 1)
    with pytest.raises(axon.InvalidArgumentError, match="int32, uint32, int64 or uint64"):
        axon.atomic_fetch_add(axon.zeros(1, np.float32), 1, 0)
    with pytest.raises(axon.OutOfMemoryError, match="AXON_HEAP_MAX"):
        axon.empty(1 << 42, np.uint8)
    # Every error is an axon.Error and the matching builtin.
    assert issubclass(axon.TimeoutError, TimeoutError) and issubclass(axon.OutOfMemoryError, MemoryError)


def test_signal_wait_times_out_with_diagnostics(world_of_one):
    sig = axon.zeros(1, np.uint64)
    axon.signal_op(sig, 3, axon.SignalOp.SET, 0)
    with pytest.raises(axon.TimeoutError) as info:
        axon.signal_wait_until(sig, axon.Cmp.GE, 5)
    msg = str(info.value)
    assert "PE 0:" in msg and "heap offset" in msg and ">= 5" in msg and "seen 3" in msg


def test_arrays_stay_valid_after_finalize(world_of_one):
    a = axon.zeros(1000, np.int16)
    a[:] = 7
    axon.finalize()
    with pytest.raises(axon.NotInitializedError, match="after finalize"):
        axon.my_pe()
    # The heap mapping lives as long as an array needs it: no crash, values intact.
    assert int(a.sum()) == 7000


def test_zero_size_arrays(world_of_one):
    z = axon.zeros((0, 4), np.float32)
    assert z.shape == (0, 4)
    axon.free(z)


@pytest.mark.parametrize("n", [2, 4])
def test_onesided_ring_through_launcher(n):
    res = axon_run(n, sys.executable, str(SCRIPTS / "onesided_ring.py"))
    assert res.returncode == 0, res.stdout + res.stderr
    for pe in range(n):
        assert f"[{pe}] PE {pe}: ok" in res.stdout, res.stdout + res.stderr


def test_peer_death_ends_the_wait_with_an_error_naming_the_pe():
    res = axon_run(2, sys.executable, str(SCRIPTS / "peer_dies.py"))
    out = res.stdout + res.stderr
    assert "[0] caught PeerDeadError" in res.stdout, out
    assert "PE 1 (pid" in res.stdout, out
    assert "PE 1 was killed by signal 9 (SIGKILL)" in res.stderr, out
    assert res.returncode == 137, out
    # Detected long before the launcher's own stop (grace 2 s) or any timeout (20 s).
    seconds = float(res.stdout.split("caught PeerDeadError after ")[1].split(" s")[0])
    assert seconds < 1.5, out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_store_gives_a_bootstrap_error_naming_the_address():
    port = free_port()
    # The job's key given, as a launcher would: the wait is for the store, not for rank 0's key file.
    env = dict(os.environ, AXON_RANK="1", AXON_WORLD_SIZE="2", AXON_STORE_ADDR=f"127.0.0.1:{port}",
               AXON_TIMEOUT="1", AXON_JOB_KEY="ab" * 32)
    code = "import axon\ntry:\n axon.init()\nexcept axon.BootstrapError as e:\n print('BootstrapError:', e)\n"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=30)
    assert res.returncode == 0, res.stderr
    assert f"cannot reach the axon store at 127.0.0.1:{port}" in res.stdout, res.stdout
    assert "AXON_STORE_ADDR" in res.stdout


def test_bad_environment_is_reported():
    env = dict(os.environ, AXON_RANK="3", AXON_WORLD_SIZE="2", AXON_STORE_ADDR="127.0.0.1:1")
    code = "import axon\ntry:\n axon.init()\nexcept axon.InvalidArgumentError as e:\n print('bad:', e)\n"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=30)
    assert "rank 3 (AXON_RANK) is outside [0, 2) (AXON_WORLD_SIZE)" in res.stdout, res.stdout + res.stderr
