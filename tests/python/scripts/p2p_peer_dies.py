"""PE 1 dies (SIGKILL) while PE 0 waits to receive from it: the receive raises PeerDeadError."""

import os
import signal
import time

import numpy as np

import axon

axon.init()
axon.barrier_all()
if axon.my_pe() == 1:
    time.sleep(0.2)
    os.kill(os.getpid(), signal.SIGKILL)
start = time.monotonic()
try:
    axon.recv(np.empty(4), source=1, tag=0)
except axon.PeerDeadError as e:
    print(f"caught PeerDeadError after {time.monotonic() - start:.2f} s: {e}", flush=True)
    time.sleep(1.0)
    os._exit(0)
print("the receive returned", flush=True)
raise SystemExit(1)
