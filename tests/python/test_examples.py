"""The applications in examples/, run through the launcher as a user runs them.

Jacobi: every mode's .npy result is compared with an independent NumPy solve of the same
problem (bit for bit: the stencil adds in one fixed order everywhere), on 1 to 4 PEs, with domains
that do not divide evenly. The host-backend modes run here; the GPU modes (marked gpu) where the
GPU backend can start.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

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
    full_env = dict(os.environ, AXON_TIMEOUT="30", **(env or {}))
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
