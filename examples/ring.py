"""The README's first Python program: each PE puts 1024 floats into its right neighbour's
symmetric array with a signal, waits for its left neighbour's, and checks every value.

    axon run -n 2 examples/ring.py        # any number of PEs; no GPU needed
"""

import numpy as np
import axon

axon.init()
me, n = axon.my_pe(), axon.n_pes()
x = axon.zeros(1024, np.float32)                 # a NumPy array on the symmetric heap
sig = axon.zeros(1, np.uint64)
axon.put_signal(x, np.full(1024, me, np.float32), sig, 1, "add", (me + 1) % n)
axon.signal_wait_until(sig, "ge", 1)
assert (x == (me - 1) % n).all()
print(f"PE {me} of {n}: 1024 values from PE {(me - 1) % n}, all correct")
axon.free(sig); axon.free(x)                      # collective, like the allocation
axon.finalize()
