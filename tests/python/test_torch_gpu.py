"""The torch.distributed backend "axon" on CUDA tensors, one rank per GPU (2 to 4): every operation
against its reference, and beside ProcessGroupNCCL in the same processes (results, stream
semantics, CUDA graph capture, DDP and FSDP2 weights, a 2-D DeviceMesh with HSDP over
it, functional collectives). Marked `gpu`;
skipped without torch's CUDA, or with fewer than 2 GPUs (NCCL takes one GPU per rank)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install torch)")

SCRIPTS = Path(__file__).parent / "scripts"
GPUS = torch.cuda.device_count() if torch.cuda.is_available() else 0
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(GPUS < 2, reason=f"needs 2 GPUs with torch's CUDA, found {GPUS}")]
RANKS = sorted({2, min(GPUS, 4)})


def axon_run(n, script, *args, timeout=420):
    env = dict(os.environ, AXON_TIMEOUT="60", AXON_BACKEND="gpu", PYTHONUNBUFFERED="1",
               NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1")
    return subprocess.run([sys.executable, "-m", "axon", "run", "-n", str(n), sys.executable, str(SCRIPTS / script),
                           *args], capture_output=True, text=True, env=env, timeout=timeout,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("n", RANKS)
def test_every_op_on_cuda_tensors_matches_its_reference(n):
    res = axon_run(n, "torch_backend_ops.py", "axon", "cuda")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-5000:]
    assert res.stdout.count("torch backend ops OK") == n, res.stdout


@pytest.mark.parametrize("n", RANKS)
def test_cuda_tensors_beside_nccl(n):
    res = axon_run(n, "torch_cuda_semantics.py")
    print(res.stdout[-4000:])  # the timings of each rank (pytest -rP shows them)
    failed = [line for line in res.stdout.splitlines() if line.startswith("FAILED")]
    assert res.returncode == 0 and not failed, "\n".join(failed) + "\n" + res.stdout[-3000:] + res.stderr[-5000:]
    assert res.stdout.count("torch cuda semantics OK") == n, res.stdout
