"""The group's timeout bounds a collective that a rank never joins: started with torchrun's
variables or by `axon run`, with no AXON_TIMEOUT, init_process_group(timeout=3 s) makes it axon's
bound; rank 0's
all_reduce then raises torch's DistBackendError naming the op, the rank, the tensor and the wait,
while rank 1 stays alive but never calls. Prints "DistBackendError after S s: ..." on rank 0."""

import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import axon.torch  # noqa: F401  (registers "axon")

dist.init_process_group("axon", timeout=timedelta(seconds=3))
dist.all_reduce(torch.ones(4))  # both ranks are up
if dist.get_rank() == 1:
    time.sleep(7)  # alive past rank 0's 3 s bound (its liveness is fine), but it never makes the call
    os._exit(0)
start = time.time()
try:
    dist.all_reduce(torch.ones(5, dtype=torch.int32))
    raise AssertionError("all_reduce returned although rank 1 never called it")
except dist.DistBackendError as e:
    text = str(e)
    assert "all_reduce" in text and "rank 0" in text and "(5,)" in text and "int32" in text, text
    print(f"DistBackendError after {time.time() - start:.2f} s: {text}", flush=True)
os._exit(0)  # the team's call is abandoned: no orderly finalize
