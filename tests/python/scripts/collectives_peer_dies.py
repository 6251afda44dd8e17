"""A PE exits without finalize before a collective: the others get PeerDeadError naming it, within
a liveness check, instead of waiting for AXON_TIMEOUT. Run as `axon run -n N python ...`."""

import os
import time

import numpy as np

import axon

axon.init()
# One collective with everyone first: past it, every PE is through init.
axon.allreduce(np.ones(10, np.float32))
if axon.my_pe() == 1:
    time.sleep(0.3)  # let the others enter the next call
    os._exit(3)
start = time.time()
try:
    axon.allreduce(np.ones(10, np.float32))
    raise AssertionError("allreduce returned although PE 1 is gone")
except axon.PeerDeadError as e:
    assert "PE 1" in str(e) and "allreduce" in str(e) and "collective workspace" in str(e), str(e)
    print(f"PE {axon.my_pe()}: PeerDead after {time.time() - start:.2f} s: {e}")
