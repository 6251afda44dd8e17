"""Rank 1 exits during the job: rank 0's next all_reduce raises torch's DistBackendError naming the
dead rank, the op and the tensor, well within the group's timeout. Run under `axon run -n 2`."""

import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import axon.torch  # noqa: F401

dist.init_process_group("axon", timeout=timedelta(seconds=60))
dist.all_reduce(torch.ones(4))
if dist.get_rank() == 1:
    time.sleep(0.3)
    os._exit(3)
start = time.time()
try:
    dist.all_reduce(torch.ones(2, 3, dtype=torch.float64))
    raise AssertionError("all_reduce returned although rank 1 is gone")
except dist.DistBackendError as e:
    text = str(e)
    assert "PE 1" in text and "all_reduce" in text and "(2, 3)" in text and "float64" in text, text
    print(f"DistBackendError after {time.time() - start:.2f} s: {text}", flush=True)
os._exit(0)  # the job is broken: no orderly finalize with a dead peer
