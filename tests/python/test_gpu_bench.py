"""`axon bench` on GPU buffers: the hand-staged ping-ping and the PyTorch and NVSHMEM comparison peers.

Marked `gpu` and skipped where the GPU backend cannot start; the peer cases also need two GPUs
(NCCL and NVSHMEM put one PE on each) and torch, or axon_nvshmem_peer (built where NVSHMEM is
found). Run them with `pytest -m gpu tests/python`.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest

from axon.tools import bench as _bench
from test_gpu import _GPU_OK, _GPU_WHY_NOT

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _GPU_OK, reason=_GPU_WHY_NOT)]


def _gpu_count() -> int:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return 0
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None or _gpu_count() < 2,
                                 reason="needs PyTorch and two GPUs")


def bench(tmp_path, *argv: str) -> dict:
    out = tmp_path / "bench.json"
    env = dict(os.environ, AXON_TIMEOUT="60", AXON_BACKEND="gpu", NCCL_NVLS_ENABLE="0",
               TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1")
    res = subprocess.run([sys.executable, "-m", "axon", "bench", *argv, "--json", str(out)],
                         capture_output=True, text=True, env=env, timeout=600, stdin=subprocess.DEVNULL)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    doc = json.loads(out.read_text())
    doc["stdout"] = res.stdout
    return doc


def test_pingping_staged_by_hand_delivers_every_byte(tmp_path):
    doc = bench(tmp_path, "pingping", "-m", "8:1M", "-f", "32", "-i", "20", "-x", "2", "--via-host")
    assert doc["label"] == "axon pingping D D via host" and doc["config"]["via_host"] is True
    assert [r["size"] for r in doc["results"]] == [8, 256, 8192, 262144]
    assert all(r["wrong"] == 0 and r["time_us"] > 0 for r in doc["results"])
    assert "staged through host memory by hand" in doc["stdout"]


@needs_torch
def test_allreduce_compare_runs_pytorch_on_the_same_sizes(tmp_path):
    doc = bench(tmp_path, "allreduce", "-m", "8:256K", "-f", "16", "-i", "10", "-x", "2", "--compare")
    by_impl: dict[str, list[dict]] = {}
    for r in doc["results"]:
        by_impl.setdefault(r.get("impl", "axon"), []).append(r)
    sizes = [r["size"] for r in by_impl["axon"]]
    assert [r["size"] for r in by_impl["pytorch-nccl"]] == sizes
    for r in by_impl["pytorch-nccl"]:
        assert r["out_of_place"]["time_us"] is None  # torch.distributed has no out-of-place all_reduce
        assert r["in_place"]["time_us"] > 0 and r["in_place"]["wrong"] == 0
    for r in by_impl.get("pytorch-symm-mem", []):
        assert r["wrong"] == 0
    status = {c["peer"]: c["status"] for c in doc["compare"]}
    assert status["PyTorch NCCL"] == "run"
    assert "axon vs PyTorch NCCL" in doc["stdout"]


@needs_torch
@pytest.mark.parametrize("test", ["latency", "pingping", "allgather", "reduce_scatter", "alltoall", "broadcast"])
def test_compare_pytorch_checks_what_it_received(tmp_path, test):
    doc = bench(tmp_path, test, "-m", "64:64K", "-f", "32", "-i", "10", "-x", "2", "--compare")
    rows = [r for r in doc["results"] if r.get("impl") == "pytorch-nccl"]
    assert [r["size"] for r in rows] == [r["size"] for r in doc["results"] if r.get("impl", "axon") == "axon"]
    assert rows and all(r["wrong"] == 0 and r["time_us"] > 0 for r in rows)


needs_nvshmem = pytest.mark.skipif(_bench.find_tool(_bench.NVSHMEM_PEER) is None or _gpu_count() < 2,
                                   reason="needs axon_nvshmem_peer (built where NVSHMEM is found) and two GPUs")


@needs_nvshmem
@pytest.mark.parametrize("test", ["allreduce", "broadcast", "allgather", "reduce_scatter", "alltoall",
                                  "latency", "put_signal_rtt", "pingping", "bw", "bibw"])
def test_compare_nvshmem_checks_what_it_received(tmp_path, test):
    doc = bench(tmp_path, test, "-m", "64:64K", "-f", "32", "-i", "10", "-x", "2", "--compare")
    rows = [r for r in doc["results"] if r.get("impl") == "nvshmem"]
    mine = [r for r in doc["results"] if r.get("impl", "axon") == "axon"]
    assert [r["size"] for r in rows] == [r["size"] for r in mine]
    assert all(r["wrong"] == 0 and r["time_us"] > 0 for r in rows), rows
    status = {c["peer"]: c["status"] for c in doc["compare"]}
    assert status["NVSHMEM"] == "run", doc["compare"]
    assert "axon vs NVSHMEM" in doc["stdout"] or "NVSHMEM / axon time" in doc["stdout"]


@needs_nvshmem
def test_compare_nvshmem_reduces_every_element_exactly_in_a_narrow_type(tmp_path):
    doc = bench(tmp_path, "allreduce", "-m", "6:96K", "-f", "16", "-i", "5", "-x", "1", "--dtype", "bfloat16",
                "--op", "max", "--compare")
    rows = [r for r in doc["results"] if r.get("impl") == "nvshmem"]
    assert rows and all(r["wrong"] == 0 and r["dtype"] == "bfloat16" and r["redop"] == "max" for r in rows)
    assert all(r["in_place"]["time_us"] > 0 for r in rows)  # NVSHMEM reduces in place too
