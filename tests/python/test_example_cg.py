"""The conjugate-gradient example (examples/cg), run through the launcher as a user runs it.

Every run's x (--out) is compared with an independent NumPy CG of the same problem (the 7-point
Laplacian applied by array slices, not by the example's CSR) for the iterations the run reports:
to a relative 1e-10, since the PEs reduce their dot products in other orders than NumPy does. The
cpu mode runs here on 1 to 4 PEs with slabs that do not divide evenly, and its --check output is
asserted; the GPU modes (marked gpu) run where the GPU backend can start.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from test_examples import example, launch
from test_gpu import _GPU_OK, _GPU_WHY_NOT


def apply_laplacian(v: np.ndarray) -> np.ndarray:
    """6 v minus the six neighbours, zero outside the grid."""
    out = 6.0 * v
    for axis in range(3):
        lo = [slice(None)] * 3
        hi = [slice(None)] * 3
        lo[axis], hi[axis] = slice(None, -1), slice(1, None)
        out[tuple(hi)] -= v[tuple(lo)]
        out[tuple(lo)] -= v[tuple(hi)]
    return out


def cg_reference(n: int, iters: int) -> tuple[np.ndarray, float]:
    """Unpreconditioned CG for A x = 1, x0 = 0, exactly `iters` iterations: x and ||r|| / ||b||."""
    x = np.zeros((n, n, n))
    r = np.ones((n, n, n))
    p = r.copy()
    rr = bb = float(np.vdot(r, r))
    for _ in range(iters):
        ap = apply_laplacian(p)
        alpha = rr / float(np.vdot(p, ap))
        x += alpha * p
        r -= alpha * ap
        rr_new = float(np.vdot(r, r))
        p = r + (rr_new / rr) * p
        rr = rr_new
    return x, (rr / bb) ** 0.5


def iterations_to_converge(n: int, tol: float = 1e-8) -> int:
    """The first iteration after which NumPy's CG has ||r|| / ||b|| < tol: where every mode must
    stop (device mode, which looks at the residual only every 10 iterations, included)."""
    for iters in range(1, 10 * n):
        if cg_reference(n, iters)[1] < tol:
            return iters
    raise AssertionError(f"NumPy's CG did not reach {tol} on n={n}")


def json_result(stdout: str) -> dict:
    line = next(ln for ln in stdout.splitlines() if '"app": "cg"' in ln)
    return json.loads(line.split("] ", 1)[1])


def run_cg(tmp_path, npes: int, mode: str, n: int, *extra: str, env: dict | None = None):
    out = tmp_path / f"cg_{mode}_{npes}_{n}.npy"
    res = launch(npes, str(example("cg")), "--n", str(n), "--mode", mode, "--out", str(out), "--json", *extra,
                 env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    result = json_result(res.stdout)
    assert (result["mode"], result["n"], result["pes"]) == (mode, n, npes)
    x = np.load(out)
    assert x.shape == (n, n, n) and x.dtype == np.float64
    return res, result, x


def assert_matches_numpy(x: np.ndarray, result: dict) -> None:
    want, rel = cg_reference(result["n"], result["iters"])
    assert np.max(np.abs(x - want)) <= 1e-10 * np.max(np.abs(want))
    assert result["rel_residual"] == pytest.approx(rel, rel=1e-6, abs=1e-13)


@pytest.mark.parametrize("npes", [1, 2, 3])
def test_cg_cpu_converges_and_matches_numpy(tmp_path, npes):
    n = 13  # 13 planes: slabs of 5, 4, 4 on 3 PEs
    res, result, x = run_cg(tmp_path, npes, "cpu", n, "--check")
    assert result["converged"] and result["rel_residual"] < 1e-8
    assert result["iters"] == iterations_to_converge(n)
    assert result["checked"] and result["ok"]
    assert result["residual_gap"] <= result["residual_gap_bound"]
    assert result["serial_max_rel_diff"] <= 1e-9
    assert f"mode cpu, N {n}, {npes} PEs: {result['iters']} iterations, converged" in res.stdout
    assert "checked the true residual" in res.stdout and "): OK" in res.stdout
    assert f"checked x against a serial CG of the whole grid, {result['iters']} iterations" in res.stdout
    assert "WRONG" not in res.stdout
    assert_matches_numpy(x, result)
    assert x.min() > 0 and np.allclose(x, x.transpose(2, 1, 0))  # positive, symmetric in x and z


def test_cg_stops_after_iters_on_uneven_slabs(tmp_path):
    # 10 planes on 4 PEs: 3, 3, 2, 2. tol 0: exactly --iters iterations.
    res, result, x = run_cg(tmp_path, 4, "cpu", 10, "--iters", "7", "--tol", "0", "--check")
    assert result["iters"] == 7 and not result["converged"] and result["ok"]
    assert "not converged within --iters" in res.stdout
    assert_matches_numpy(x, result)


def test_cg_one_plane_per_pe(tmp_path):
    _, result, x = run_cg(tmp_path, 4, "cpu", 4, "--check")
    assert result["converged"] and result["ok"]
    assert_matches_numpy(x, result)


def test_cg_check_of_a_large_grid_checks_the_residual_only():
    res = launch(1, str(example("cg")), "--n", "65", "--iters", "3", "--check")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "checked the true residual" in res.stdout
    assert "serial comparison skipped: N 65 > 64" in res.stdout


@pytest.mark.parametrize("args, message", [
    (["--mode", "fast"], "unknown --mode 'fast'"),
    (["--n", "0"], "--n takes a positive integer, not '0'"),
    (["--iters"], "--iters needs a value"),
    (["--tol", "-1"], "--tol takes a number >= 0, not '-1'"),
    (["--bogus"], "unknown argument '--bogus'"),
])
def test_cg_bad_arguments_are_refused(args, message):
    res = launch(2, str(example("cg")), *args)
    assert res.returncode != 0
    assert message in res.stdout + res.stderr
    assert "usage: cg" in res.stdout + res.stderr


@pytest.mark.parametrize("n", ["46341", "4294967296"])
def test_cg_refuses_a_grid_too_large_for_its_column_indices(n):
    res = launch(1, str(example("cg")), "--n", n, "--mode", "cpu", env={"AXON_BACKEND": "host"})
    assert res.returncode != 0
    assert f"--n {n} is too large: a plane of n x n cells must fit in 32-bit column indices" in res.stdout + res.stderr


def test_cg_refuses_more_pes_than_planes():
    res = launch(3, str(example("cg")), "--n", "2")
    assert res.returncode != 0
    assert "cg: error: a grid of 2 planes cannot be split over 3 PEs" in res.stdout + res.stderr


@pytest.mark.parametrize("mode", ["device", "host"])
def test_cg_gpu_modes_name_the_missing_gpu_on_the_host_backend(mode):
    res = launch(2, str(example("cg")), "--mode", mode, "--n", "8", env={"AXON_BACKEND": "host"})
    assert res.returncode != 0
    assert f"cg: error: --mode {mode} needs the GPU backend, which is off here: " in res.stdout + res.stderr


@pytest.mark.gpu
@pytest.mark.skipif(not _GPU_OK, reason=_GPU_WHY_NOT)
@pytest.mark.parametrize("mode, extra", [("device", ()), ("device", ("--no-graph",)), ("host", ())])
@pytest.mark.parametrize("npes", [1, 2, 3])
def test_cg_gpu_modes_converge_and_match_numpy(tmp_path, mode, extra, npes):
    n = 23  # slabs of 8, 8, 7
    res, result, x = run_cg(tmp_path, npes, mode, n, "--check", *extra, env={"AXON_BACKEND": "auto"})
    assert result["converged"] and result["ok"], res.stdout
    assert result["iters"] == iterations_to_converge(n)
    assert result["serial_max_rel_diff"] <= 1e-9
    assert_matches_numpy(x, result)


@pytest.mark.gpu
@pytest.mark.skipif(not _GPU_OK, reason=_GPU_WHY_NOT)
@pytest.mark.parametrize("mode", ["device", "host"])
def test_cg_gpu_modes_stop_after_iters(tmp_path, mode):
    # 23 iterations: two graphs of 10, then 3 launched alone (device mode).
    _, result, x = run_cg(tmp_path, 2, mode, 16, "--iters", "23", "--tol", "0", "--check",
                          env={"AXON_BACKEND": "auto"})
    assert result["iters"] == 23 and not result["converged"] and result["ok"]
    assert_matches_numpy(x, result)
