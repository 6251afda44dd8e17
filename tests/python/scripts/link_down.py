"""The first PE of the last node takes its node's link down; then every PE gets from a PE on the
other side (argument "get", the default), or puts to it and fences ("fence": the fence waits for
the put to land), and must fail within AXON_TIMEOUT naming that PE's node (not hang)."""

import os
import subprocess
import sys
import time

import numpy as np

import axon

axon.init()
me, n = axon.my_pe(), axon.n_pes()
half = n // 2
cell = axon.zeros(1, np.int64)
axon.barrier_all()
if me == half:
    time.sleep(0.5)  # every PE leaves the barrier first
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    link = next(line.split(":")[1].strip().split("@")[0] for line in links.splitlines()
                if line.split(":")[1].strip().startswith("ax"))
    subprocess.run(["ip", "link", "set", link, "down"], check=True)
    print(f"PE {me}: took {link} down", flush=True)
else:
    time.sleep(1.5)
other = (me + half) % n
start = time.monotonic()
got = np.zeros(1, np.int64)
try:
    if sys.argv[1:] == ["fence"]:
        axon.put_nbi(cell, np.ones(1, np.int64), other)
        axon.fence()
    else:
        axon.get(got, cell, other)
except (axon.TimeoutError, axon.PeerDeadError) as e:
    print(f"caught {type(e).__name__} after {time.monotonic() - start:.2f} s: {e}", flush=True)
    time.sleep(3.0)  # the others' gets time out too before this PE's exit could be seen as a death
    os._exit(0)  # no finalize: its barrier needs the nodes that cannot reach each other
print(f"the {sys.argv[1] if sys.argv[1:] else 'get'} returned across a link that is down", flush=True)
os._exit(1)
