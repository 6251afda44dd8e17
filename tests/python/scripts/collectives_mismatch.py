"""A collective called with different counts on different PEs: every PE must get
axon.CollectiveMismatchError naming both calls (from the call, or from the next one on the team).
Run as `axon run -n N python collectives_mismatch.py`."""

import numpy as np

import axon

axon.init()
me = axon.my_pe()
x = np.ones(100 + me, np.float32)  # each PE passes a different count
message = ""
try:
    axon.allreduce(x)
    axon.barrier()
except axon.CollectiveMismatchError as e:
    message = str(e)
assert "mismatch" in message and "allreduce(count" in message, f"PE {me}: {message!r}"
try:
    axon.barrier()
    raise AssertionError("a collective after the mismatch succeeded")
except axon.CollectiveMismatchError as e:
    assert "destroy the team" in str(e) or "mismatch" in str(e), str(e)
print(f"PE {me}: mismatch reported: {message}")
axon.finalize()
