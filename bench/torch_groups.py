"""The set-up the torch benchmarks share (bench/torch_backend.py, bench/gemm_overlap.py)."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

import axon.torch  # noqa: F401  (registers "axon")


def axon_and_nccl() -> tuple[torch.device, int, int, dist.ProcessGroup]:
    """(this rank's GPU, rank, ranks, a NCCL group): the default group on the backend "axon" (its
    store serves NCCL's group too), and a NCCL group over the same ranks, the peer beside it."""
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dev = torch.device("cuda", local)
    dist.init_process_group("axon")
    return dev, dist.get_rank(), dist.get_world_size(), dist.new_group(backend="nccl")
