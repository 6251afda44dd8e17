"""A PE started by hand: joins, passes a barrier, then waits on a signal nobody sends.

Prints "ready <pe> <pid as /proc sees it>" after the barrier, and "peerdead: <message>" when the
wait ends with PeerDeadError (exit 3). The pid comes from /proc/self, which names this process as
the launching test sees it even when it runs in a PID namespace of its own.
"""

import os
import sys
import time

import numpy as np

import axon

axon.init()
sig = axon.zeros(1, np.uint64)
axon.barrier_all()
print(f"ready {axon.my_pe()} {os.readlink('/proc/self')}", flush=True)
start = time.monotonic()
try:
    axon.signal_wait_until(sig, axon.Cmp.EQ, 1)
except axon.PeerDeadError as e:
    print(f"peerdead after {time.monotonic() - start:.2f} s: {e}", flush=True)
    os._exit(3)  # no finalize: its barrier would wait for the dead PE
print("the wait returned without the signal", flush=True)
sys.exit(1)
