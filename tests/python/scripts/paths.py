"""Prints how this PE reaches every PE (axon.path_to), one line per PE, then checks a put to each."""

import numpy as np

import axon

axon.init()
me, n = axon.my_pe(), axon.n_pes()
buf = axon.zeros(n, np.int64)
for pe in range(n):
    print(f"path {me}->{pe}: {axon.path_to(pe)}", flush=True)
    axon.put(buf[me:me + 1], np.array([100 + me], np.int64), pe)
axon.barrier_all()
assert list(buf) == [100 + pe for pe in range(n)], list(buf)
print(f"PE {me}: puts ok", flush=True)
axon.finalize()
