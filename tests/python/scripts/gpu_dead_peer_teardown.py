"""A PE dies (SIGKILL) after GPU traffic; the survivors notice it and tear down.

`axon run -n N python gpu_dead_peer_teardown.py` (AXON_BACKEND=gpu). Issue 45: every survivor
printed "cuIpcCloseMemHandle of PE k's buffer failed" dozens of times while tearing down after a
dead peer. Each PE maps every peer's GPU heap (puts around the ring and an allreduce on GPU
arrays), then the last PE kills itself; the others must raise PeerDeadError naming it and end.
The test counts the teardown lines.
"""

import os
import signal
import time

import numpy as np

import axon

axon.init()
me, n = axon.my_pe(), axon.n_pes()
assert axon.gpu_enabled(), axon.gpu_unavailable_reason()
victim = n - 1

x = axon.zeros(1 << 20, np.float32)   # GPU heap: every peer maps it
src = axon.zeros(1 << 20, np.float32)
for step in range(1, n):
    axon.put(x, src, (me + step) % n)
axon.barrier_all()
total = axon.zeros(1 << 16, np.float32)
axon.allreduce(total, total)
axon.barrier_all()
print(f"PE {me}: mapped every peer", flush=True)

if me == victim:
    os.kill(os.getpid(), signal.SIGKILL)
try:
    axon.barrier_all()
except axon.PeerDeadError as e:
    assert f"PE {victim}" in str(e), e
    print(f"PE {me}: saw PE {victim} dead", flush=True)
else:
    raise AssertionError(f"PE {me}: the barrier passed without PE {victim}")
started = time.monotonic()
try:
    axon.finalize()  # its barrier meets the dead PE too; the runtime goes all the same
except axon.PeerDeadError as e:
    assert f"PE {victim}" in str(e), e
assert not axon.is_initialized()
print(f"PE {me}: torn down in {time.monotonic() - started:.2f} s", flush=True)
