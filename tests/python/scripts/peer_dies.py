"""PE 1 (or the PE named by argv[1]) dies (SIGKILL) while the others wait on a signal only it
would set."""

import os
import signal
import sys
import time

import numpy as np

import axon

axon.init()
sig = axon.zeros(1, np.uint64)
axon.barrier_all()
victim = int(sys.argv[1]) if len(sys.argv) > 1 else 1
if axon.my_pe() == victim:
    time.sleep(0.2)
    os.kill(os.getpid(), signal.SIGKILL)
start = time.monotonic()
try:
    axon.signal_wait_until(sig, axon.Cmp.EQ, 1)
except axon.PeerDeadError as e:
    print(f"caught PeerDeadError after {time.monotonic() - start:.2f} s: {e}", flush=True)
    time.sleep(1.0)  # let the other waiters find the victim, not this PE's exit
    os._exit(0)  # no finalize: its barrier would wait for the dead PE
print("the wait returned without the signal", flush=True)
sys.exit(1)
