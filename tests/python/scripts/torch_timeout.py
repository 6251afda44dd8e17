"""Group timeouts bound a collective that a rank never joins. Started with torchrun's variables
or by `axon run`, with no AXON_TIMEOUT: init_process_group(timeout=3 s) makes 3 s axon's bound,
and new_group(timeout=1.5 s) its team's own. Rank 0's all_reduce on the subgroup, then on the
default group, raises torch's DistBackendError naming the op, the rank, the tensor and the wait,
while rank 1 stays alive but never calls. Prints "subgroup DistBackendError after S s: ..." and
"DistBackendError after S s: ..." on rank 0."""

import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import axon.torch  # noqa: F401  (registers "axon")

dist.init_process_group("axon", timeout=timedelta(seconds=3))
sub = dist.new_group([0, 1], timeout=timedelta(seconds=1.5))
dist.all_reduce(torch.ones(4))  # both ranks are up
dist.all_reduce(torch.ones(4), group=sub)
if dist.get_rank() == 1:
    time.sleep(8)  # alive past rank 0's bounds (its liveness is fine), but it never makes the calls
    os._exit(0)
for label, group, tensor in (("subgroup ", sub, torch.ones(3, dtype=torch.float64)),
                             ("", None, torch.ones(5, dtype=torch.int32))):
    start = time.time()
    try:
        dist.all_reduce(tensor, group=group)
        raise AssertionError("all_reduce returned although rank 1 never called it")
    except dist.DistBackendError as e:
        text = str(e)
        assert "all_reduce" in text and "rank 0" in text and str(tuple(tensor.shape)) in text, text
        print(f"{label}DistBackendError after {time.time() - start:.2f} s: {text}", flush=True)
os._exit(0)  # the teams' calls are abandoned: no orderly finalize
