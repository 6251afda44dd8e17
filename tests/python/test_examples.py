"""The applications in examples/, run through the launcher as a user runs them.

Jacobi: every mode's .npy result is compared with an independent NumPy solve of the same
problem (bit for bit: the stencil adds in one fixed order everywhere), on 1 to 4 PEs, with domains
that do not divide evenly. The host-backend modes run here; the GPU modes (marked gpu) where the
GPU backend can start.

The streaming broadcast: every receiver checks every word of every frame itself (a frame that
arrives late, torn or stale fails the run); here its report, its JSON lines and its refusals.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from emulated import nodes_why_not
from test_gpu import _GPU_OK, _GPU_WHY_NOT

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "build" / "examples"
TIMEOUT = 120


def example(name: str) -> Path:
    path = EXAMPLES / name
    if not path.is_file():
        pytest.fail(f"{path} is missing: build the examples first ('make build')")
    return path


def launch(npes: int, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "AXON_TIMEOUT": "30", **(env or {})}
    return subprocess.run([sys.executable, "-m", "axon", "run", "-n", str(npes), *args],
                          capture_output=True, text=True, timeout=TIMEOUT, env=full_env,
                          stdin=subprocess.DEVNULL)


def jacobi_reference(n: int, iters: int) -> np.ndarray:
    """The problem of examples/jacobi, solved with NumPy slices: an (n+2)^2 grid whose top
    boundary row is 1.0, K sweeps adding up, down, left and right in that order, times 0.25."""
    u = np.zeros((n + 2, n + 2))
    u[0, :] = 1.0
    for _ in range(iters):
        new = u.copy()
        new[1:-1, 1:-1] = 0.25 * (((u[:-2, 1:-1] + u[2:, 1:-1]) + u[1:-1, :-2]) + u[1:-1, 2:])
        u = new
    return u[1:-1, 1:-1]


def run_jacobi(tmp_path: Path, npes: int, mode: str, n: int, iters: int, *extra: str,
               env: dict | None = None) -> np.ndarray:
    out = tmp_path / f"jacobi_{mode}_{npes}.npy"
    res = launch(npes, str(example("jacobi")), "--n", str(n), "--iters", str(iters), "--mode", mode,
                 "--out", str(out), "--check", *extra, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "identical (0 of" in res.stdout, res.stdout
    assert f"mode {mode}, N {n}, {iters} sweeps on {npes} PEs" in res.stdout
    return np.load(out)


@pytest.mark.parametrize("mode", ["host", "twosided"])
@pytest.mark.parametrize("npes", [1, 3, 4])
def test_jacobi_host_modes_match_numpy(tmp_path, mode, npes):
    n, iters = 37, 60  # 37 rows: slabs of 10, 9, 9, 9 on 4 PEs
    got = run_jacobi(tmp_path, npes, mode, n, iters)
    assert got.shape == (n, n) and got.dtype == np.float64
    want = jacobi_reference(n, iters)
    assert np.array_equal(got, want)
    assert got[0].max() > 0.5 and got[-1].max() < got[0].max()  # heat flows down from the top


def test_jacobi_one_row_per_pe(tmp_path):
    got = run_jacobi(tmp_path, 4, "host", 4, 9)
    assert np.array_equal(got, jacobi_reference(4, 9))


@pytest.mark.parametrize("args, message", [
    (["--mode", "fast"], "unknown --mode 'fast'"),
    (["--n", "0"], "--n takes a positive integer, not '0'"),
    (["--iters"], "--iters needs a value"),
    (["--bogus"], "unknown argument '--bogus'"),
])
def test_jacobi_bad_arguments_are_refused(args, message):
    res = launch(2, str(example("jacobi")), *args)
    assert res.returncode != 0
    assert message in res.stdout + res.stderr


def test_jacobi_refuses_more_pes_than_rows():
    res = launch(3, str(example("jacobi")), "--n", "2")
    assert res.returncode != 0
    assert "a 2-row domain cannot be split over 3 PEs" in res.stdout + res.stderr


@pytest.mark.parametrize("mode", ["device", "stream", "staged"])
def test_jacobi_gpu_modes_name_the_missing_gpu_on_the_host_backend(mode):
    res = launch(2, str(example("jacobi")), "--mode", mode, "--n", "16", "--iters", "2",
                 env={"AXON_BACKEND": "host"})
    assert res.returncode != 0
    assert f"--mode {mode} needs the GPU backend, which is off here: " in res.stdout + res.stderr


@pytest.mark.gpu
@pytest.mark.skipif(not _GPU_OK, reason=_GPU_WHY_NOT)
@pytest.mark.parametrize("mode, extra", [("device", ()), ("device", ("--no-graph",)), ("stream", ()),
                                         ("stream", ("--no-graph",)), ("twosided", ()), ("staged", ())])
@pytest.mark.parametrize("npes", [1, 2, 3])
def test_jacobi_gpu_modes_match_numpy(tmp_path, mode, extra, npes):
    n, iters = 61, 41  # an odd sweep count: the graph's last sweep is launched alone
    got = run_jacobi(tmp_path, npes, mode, n, iters, *extra, env={"AXON_BACKEND": "auto"})
    assert np.array_equal(got, jacobi_reference(n, iters))


# ── The in-situ workflow (examples/insitu) ────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def space_server():
    import axon.space

    with axon.space.Server(listen="127.0.0.1:0", mem="128M") as server:
        yield server


def run_insitu(server, npes: int, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return launch(npes, str(example("insitu")), *args,
                  env={"AXON_SPACE_ADDR": server.address, "AXON_SPACE_KEY": server.key, **(env or {})})


@pytest.mark.parametrize("npes, sim_pes, grid", [(2, 1, ["17"]), (5, 3, ["23", "19", "11"]),
                                                 (4, 1, ["9", "30", "8"])])
def test_insitu_analysis_agrees_with_the_in_situ_statistics(space_server, npes, sim_pes, grid):
    res = run_insitu(space_server, npes, "--sim-pes", str(sim_pes), "--grid", *grid, "--steps", "7", "--json",
                     "--name", "grid" + "x".join(grid))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "against the in-situ analysis: all agree" in res.stdout
    line = next(ln for ln in res.stdout.splitlines() if '"app": "insitu"' in ln)
    import json

    result = json.loads(line.split("] ", 1)[1])
    assert result["mismatches"] == 0 and result["steps"] == 7
    assert (result["sim_pes"], result["analysis_pes"]) == (sim_pes, npes - sim_pes)
    assert result["put_ms_p50"] > 0 and result["get_ms_p50"] > 0


@pytest.mark.parametrize("keep", ["1", "2"])
def test_insitu_with_few_kept_versions_loses_none(space_server, keep):
    # The simulation waits for the analysis so that no version is dropped unread.
    res = run_insitu(space_server, 3, "--sim-pes", "1", "--grid", "12", "--steps", "9", "--keep", keep,
                     "--name", "keep" + keep)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "all agree" in res.stdout


def test_insitu_runs_twice_on_one_server(space_server):
    # A second run's versions follow the first's, so nothing collides and old versions go.
    for _ in range(2):
        res = run_insitu(space_server, 2, "--grid", "17", "--steps", "3", "--name", "twice")
        assert res.returncode == 0, res.stdout + res.stderr
    assert space_server.stats()["bytes_in_use"] <= 128 * 2**20


@pytest.mark.parametrize("args, message", [
    (["--sim-pes", "2"], "--sim-pes 2 of 2 PEs leaves none for one"),
    (["--gpu-path", "fast"], "unknown --gpu-path 'fast'"),
    (["--steps", "-1"], "--steps takes a positive integer, not '-1'"),
    (["--grid", "8", "8"], "--grid takes N or NX NY NZ"),
    (["--bins", "5000"], "--bins takes at most 1024 bins"),
])
def test_insitu_bad_arguments_are_refused(space_server, args, message):
    res = run_insitu(space_server, 2, *args)
    assert res.returncode != 0
    assert message in res.stdout + res.stderr


def test_insitu_without_a_server_says_so():
    res = launch(2, str(example("insitu")), "--steps", "1",
                 env={"AXON_SPACE_ADDR": "127.0.0.1:1", "AXON_SPACE_KEY": "ab" * 32, "AXON_TIMEOUT": "5"})
    assert res.returncode != 0
    assert "127.0.0.1:1" in res.stdout + res.stderr


@pytest.mark.gpu
@pytest.mark.skipif(not _GPU_OK, reason=_GPU_WHY_NOT)
@pytest.mark.parametrize("path", ["direct", "host-staged"])
def test_insitu_on_gpus_agrees(space_server, path):
    res = run_insitu(space_server, 3, "--sim-pes", "2", "--grid", "40", "--steps", "5", "--gpu-path", path, "--name", "gpu",
                     env={"AXON_BACKEND": "auto"})
    assert res.returncode == 0, res.stdout + res.stderr
    assert "GPU data" in res.stdout and "all agree" in res.stdout


def test_the_demo_tour_verifies_every_example():
    res = subprocess.run([sys.executable, str(ROOT / "examples" / "tour.py")], capture_output=True, text=True,
                         timeout=TIMEOUT, stdin=subprocess.DEVNULL, env=dict(os.environ, AXON_TIMEOUT="30"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count("identical (0 of 65536 values differ") == 2
    assert "all agree" in res.stdout and "0 wrong values" in res.stdout
    assert "every example verified its results" in res.stdout


def frame_rows(stdout: str) -> dict:
    """The JSON lines of a frame_broadcast --json run, by transport."""
    rows = {}
    for line in stdout.splitlines():
        text = line.split("] ", 1)[-1]
        if text.startswith("{") and '"app": "frame_broadcast"' in text:
            row = json.loads(text)
            rows[row["transport"]] = row
    return rows


def run_frames(npes: int, *args: str, launcher: tuple = (), env: dict | None = None) -> dict:
    res = subprocess.run([sys.executable, "-m", "axon", "run", "-n", str(npes), *launcher,
                          str(example("frame_broadcast")), "--json", *args],
                         capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL,
                         env={**os.environ, "AXON_TIMEOUT": "30", **(env or {})})
    assert res.returncode == 0, res.stdout + res.stderr
    assert "all correct (0 of" in res.stdout, res.stdout
    rows = frame_rows(res.stdout)
    for row in rows.values():
        assert row["bad_frames"] == 0 and row["fps"] > 0 and row["pes"] == npes
        assert 0 < row["latency_p50_us"] <= row["latency_p99_us"] <= row["latency_max_us"]
    return rows


@pytest.mark.parametrize("npes, size", [(2, "64K"), (3, "4112")])
def test_frame_broadcast_delivers_every_frame_on_the_host_backend(npes, size):
    rows = run_frames(npes, "--frame-bytes", size, "--frames", "20", "--warmup", "2",
                      env={"AXON_BACKEND": "host"})
    assert set(rows) == {"axon", "twosided"}
    assert all(r["frames"] == 20 and r["source"] == "host" for r in rows.values())


def test_frame_broadcast_runs_the_transports_asked_for_in_order():
    res = launch(2, str(example("frame_broadcast")), "--frames", "5", "--frame-bytes", "1K", "--via",
                 "twosided,axon", env={"AXON_BACKEND": "host"})
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.index("| twosided |") < res.stdout.index("| axon |")


@pytest.mark.skipif(nodes_why_not() is not None, reason=str(nodes_why_not()))
def test_frame_broadcast_across_emulated_nodes():
    rows = run_frames(4, "--frame-bytes", "256K", "--frames", "10", "--warmup", "2",
                      launcher=("--emulate-nodes", "2"), env={"AXON_BACKEND": "host"})
    assert set(rows) == {"axon", "twosided"}


@pytest.mark.parametrize("args, message", [
    (["--frame-bytes", "48"], "at least 64 bytes"),
    (["--frame-bytes", "1000"], "multiple of 16"),
    (["--frame-bytes", "2X"], "--frame-bytes takes a size"),
    (["--source", "camera"], "unknown --source 'camera'"),
    (["--via", "axon,mpi"], "unknown transport 'mpi'"),
    (["--frames", "0"], "--frames takes a positive integer"),
])
def test_frame_broadcast_bad_arguments_are_refused(args, message):
    res = launch(2, str(example("frame_broadcast")), *args, env={"AXON_BACKEND": "host"})
    assert res.returncode != 0
    assert message in res.stderr, res.stderr


@pytest.mark.parametrize("npes, args, message", [
    (1, [], "needs at least one other PE"),
    (2, ["--source", "gpu"], "--source gpu needs the GPU backend"),
    (2, ["--via", "nccl"], "--via nccl: NCCL moves GPU frames only"),
])
def test_frame_broadcast_refuses_what_the_job_cannot_do(npes, args, message):
    res = launch(npes, str(example("frame_broadcast")), *args, env={"AXON_BACKEND": "host"})
    assert res.returncode != 0
    assert message in res.stderr, res.stderr


@pytest.mark.gpu
@pytest.mark.skipif(not _GPU_OK, reason=_GPU_WHY_NOT)
@pytest.mark.parametrize("source", ["host", "gpu"])
def test_frame_broadcast_on_gpus(source):
    rows = run_frames(2, "--frame-bytes", "1M", "--frames", "20", "--source", source, env={"AXON_BACKEND": "auto"})
    assert {"axon", "twosided"} <= set(rows)
