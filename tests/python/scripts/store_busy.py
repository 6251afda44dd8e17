"""A job that keeps its bootstrap store busy for a while (tests/python/test_store_attacks.py).

Every round allocates on the symmetric heap (a rendezvous through the store), writes it, takes a
barrier and an allreduce whose sum is checked, and frees. PE 0 first prints the store's address
and its pid, and decides when to stop (after argv[1] seconds) for everyone. Each PE ends with
"PE k: N rounds ok".
"""

import os
import sys
import time

import numpy as np

import axon

axon.init()
me, n = axon.my_pe(), axon.n_pes()
if me == 0:
    print(f"store {os.environ['AXON_STORE_ADDR']} pid {os.getpid()}", flush=True)
end = time.time() + float(sys.argv[1])
rounds = 0
while True:
    block = axon.zeros(64)
    block[:] = me
    axon.barrier()
    total = axon.allreduce(np.array([me + 1.0]))
    assert total[0] == n * (n + 1) / 2, total
    axon.free(block)
    rounds += 1
    # PE 0's clock decides, so that every PE makes the same calls.
    go = axon.allreduce(np.array([1.0 if me == 0 and time.time() < end else 0.0]))
    if go[0] == 0:
        break
axon.finalize()
print(f"PE {me}: {rounds} rounds ok", flush=True)
