"""The Python API on the GPU backend: symmetric GPU arrays with torch and CuPy, device buffers,
stream-ordered calls. Every test here is marked `gpu` and skipped where the GPU backend cannot
start (no CUDA driver, no GPU); run them with `pytest -m gpu tests/python`.

Every case runs in processes of its own, with AXON_BACKEND=gpu: a world of one per case
(scripts/gpu_single_pe.py), or several PEs through the launcher (PEs may share one GPU). A
crash or a lost CUDA context then fails one case, not the whole run.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parent / "scripts"
RUN_TIMEOUT = 180
_LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                  "AXON_STORE_ADDR")


def _gpu_backend_status() -> tuple[bool, str]:
    """(can run, why not). Asks a fresh process whether axon picks the GPU backend on its own.

    A process whose init fails counts as "can run": the tests then fail with that error rather
    than hide a broken GPU backend behind a skip.
    """
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        return False, f"no CUDA driver: {e}"
    env = {k: v for k, v in os.environ.items() if k not in _LAUNCHER_VARS}
    env.update(AXON_BACKEND="auto", AXON_RANK="0", AXON_WORLD_SIZE="1")
    code = ("import axon\naxon.init()\n"
            "print('gpu' if axon.gpu_enabled() else 'host: ' + axon.gpu_unavailable_reason())\n"
            "axon.finalize()\n")
    try:
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                             timeout=120, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return True, ""
    lines = res.stdout.strip().splitlines()
    if res.returncode == 0 and lines and lines[-1].startswith("host: "):
        return False, f"axon runs the host backend here ({lines[-1][6:]})"
    return True, ""


_GPU_OK, _GPU_WHY_NOT = _gpu_backend_status()
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _GPU_OK, reason=_GPU_WHY_NOT)]


def axon_run(n: int, script: str, *args: str, grace: float = 2.0) -> subprocess.CompletedProcess:
    env = dict(os.environ, AXON_TIMEOUT="30", AXON_BACKEND="gpu", PYTHONUNBUFFERED="1")
    return subprocess.run([sys.executable, "-m", "axon", "run", "-n", str(n), "--grace", str(grace), sys.executable,
                           str(SCRIPTS / script), *args],
                          capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT,
                          stdin=subprocess.DEVNULL)


def _check_run(res: subprocess.CompletedProcess, n: int) -> None:
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    for pe in range(n):
        assert f"[{pe}] PE {pe}: ok" in res.stdout, out


def _need(module: str) -> None:
    """Skips unless `module` is installed (looked up, not imported: the PEs import it)."""
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")


def run_single_pe(case: str) -> subprocess.CompletedProcess:
    """Runs one case of scripts/gpu_single_pe.py as a world of one in a fresh process."""
    env = {k: v for k, v in os.environ.items() if k not in _LAUNCHER_VARS}
    env.update(AXON_BACKEND="gpu", AXON_RANK="0", AXON_WORLD_SIZE="1", AXON_TIMEOUT="30",
               PYTHONUNBUFFERED="1")
    return subprocess.run([sys.executable, str(SCRIPTS / "gpu_single_pe.py"), case],
                          capture_output=True, text=True, env=env, timeout=RUN_TIMEOUT,
                          stdin=subprocess.DEVNULL)


# -- a world of one, each case in its own process --------------------------------------------------


@pytest.mark.parametrize("case", [
    "queries",                      # gpu_enabled/device/peer_reachable, heap stats, both heaps
    "torch_views",                  # torch.from_dlpack / as_tensor share memory, dtypes, views
    "cupy_views",                   # cupy.asarray / from_dlpack share memory, get into cupy
    "zeros_after_dirty_reuse",      # zeros are zero where freed memory was dirty
    "local_buffers_and_scalars",    # torch tensors and pinned arrays on either side, p/g, atomics
    "bad_inputs",                   # non-contiguous, requires_grad, wrong stream, host signal
    "stream_calls",                 # stream-ordered calls on a torch stream
    "outlives_finalize",            # arrays and tensors stay valid after finalize()
    "cuda_current_before_init",     # torch touched CUDA first; init again after finalize
])
def test_single_pe(case):
    res = run_single_pe(case)
    out = res.stdout + res.stderr
    if res.returncode == 3 and "SKIP: " in res.stdout:
        pytest.skip(res.stdout.split("SKIP: ", 1)[1].strip())
    assert res.returncode == 0 and f"ok {case}" in res.stdout, f"exit code {res.returncode}\n{out}"


# -- through the launcher: several PEs (sharing GPUs where there are fewer) -------------------------


@pytest.mark.parametrize("n", [2, 4])
def test_torch_ring(n):
    _need("torch")
    _check_run(axon_run(n, "gpu_torch_ring.py"), n)


@pytest.mark.parametrize("n", [2, 4])
def test_cupy_ring(n):
    _need("cupy")
    _check_run(axon_run(n, "gpu_cupy_ring.py"), n)


@pytest.mark.parametrize("n", [2, 4])
def test_stream_ordered_ring(n):
    _need("torch")
    _check_run(axon_run(n, "gpu_streams_torch.py"), n)


@pytest.mark.parametrize("framework,n", [("torch", 2), ("torch", 4), ("cupy", 2)])
def test_stream_collectives_match_numpy(framework, n):
    """allreduce/reduce/broadcast/allgather/reduce_scatter/alltoall_on_stream on torch or CuPy
    arrays and SymmetricGpuArrays, on the framework's stream, its int handle and the legacy
    stream; the device handle; bad arguments."""
    _need(framework)
    _check_run(axon_run(n, "gpu_coll_streams.py", framework), n)


def test_p2p_between_torch_and_host_then_a_space_server_in_pe0(tmp_path):
    """Issue 45's crash: GPU/host two-sided traffic on 4 PEs, then an in-process staging server in PE 0
    (it died with SIGSEGV in the server's constructor, 7 times out of 7)."""
    _need("torch")
    res = axon_run(4, "gpu_p2p_then_space_server.py", str(tmp_path / "space.contact"))
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    for pe in range(4):
        assert f"[{pe}] PE {pe}: p2p then space server ok" in res.stdout, out


def test_teardown_after_a_dead_peer_says_one_line_per_peer_at_most():
    """Issue 45: after a PE died, every survivor printed "cuIpcCloseMemHandle ... failed" dozens of
    times while tearing down. Now each survivor says at most one line per peer. The launcher lets
    the survivors run on for 30 s after the death (not its default 2 s), so their teardown ends by
    itself and is what is checked."""
    n = 4
    res = axon_run(n, "gpu_dead_peer_teardown.py", grace=30)
    out = res.stdout + res.stderr
    print(out)  # the teardown times, for `pytest -rP`
    assert res.returncode != 0, out  # a PE was killed: the job failed
    for pe in range(n - 1):
        assert f"[{pe}] PE {pe}: saw PE {n - 1} dead" in res.stdout, out
        assert f"[{pe}] PE {pe}: torn down in " in res.stdout, out
        closes = [line for line in out.splitlines() if line.startswith(f"[{pe}]") and "cuIpcCloseMemHandle" in line]
        assert len(closes) <= n - 1, "\n".join(closes)
        for peer in range(n):
            about = [line for line in closes if f"PE {peer}" in line]
            assert len(about) <= 1, "\n".join(about)


def test_gpu_backend_forced_without_a_gpu_names_the_reason():
    """AXON_BACKEND=gpu where the GPU is hidden: init fails naming the reason."""
    env = {k: v for k, v in os.environ.items() if k not in _LAUNCHER_VARS}
    env.update(AXON_BACKEND="gpu", AXON_RANK="0", AXON_WORLD_SIZE="1", CUDA_VISIBLE_DEVICES="")
    code = "import axon\ntry:\n axon.init()\nexcept axon.Error as e:\n print(type(e).__name__, e)\n"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert "AXON_BACKEND=gpu but the GPU backend cannot start" in res.stdout, res.stdout + res.stderr
