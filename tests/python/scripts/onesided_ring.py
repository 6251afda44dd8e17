"""Python one-sided API across PEs: run as `axon run -n N python onesided_ring.py`."""

import numpy as np

import axon

axon.init()
me, n = axon.my_pe(), axon.n_pes()
right, left = (me + 1) % n, (me - 1) % n

# put / get of float32 arrays around the ring
x = axon.zeros((4, 256), np.float32)
mine = np.arange(1024, dtype=np.float32).reshape(4, 256) + 10000 * me
axon.put(x, mine, right)
axon.barrier_all()
assert np.array_equal(x, np.arange(1024, dtype=np.float32).reshape(4, 256) + 10000 * left), x[0, :4]
got = np.empty_like(mine)
axon.get(got, x, right)
assert np.array_equal(got, mine)

# p / g on a view of one element
cells = axon.zeros(n, np.int64)
axon.p(cells[me:me + 1], 7 * me + 1, right)
axon.barrier_all()
assert cells[left] == 7 * left + 1
assert axon.g(cells[left:left + 1], me) == 7 * left + 1

# put_signal: data then signal; the receiver sees both
sig = axon.zeros(1, np.uint64)
payload = axon.zeros(512, np.int32)
axon.put_signal(payload, np.full(512, me, np.int32), sig, 1, axon.SignalOp.ADD, right)
assert axon.signal_wait_until(sig, "ge", 1) == 1
assert (payload == left).all()
axon.barrier_all()

# atomics: everyone adds its rank + 1 on PE 0; compare_swap has exactly one winner
counter = axon.zeros(2, np.int64)
axon.atomic_add(counter, me + 1, 0)
old = axon.atomic_compare_swap(counter[1:], 0, me + 1, 0)
axon.barrier_all()
if me == 0:
    assert counter[0] == n * (n + 1) // 2, counter
    assert 1 <= counter[1] <= n
assert axon.atomic_fetch(counter, 0) == n * (n + 1) // 2
w32 = axon.zeros(1, np.int32)
axon.atomic_set(w32, -3, right)
axon.barrier_all()
assert axon.atomic_fetch_add(w32, -4, me) == -3
assert w32[0] == -7
assert axon.atomic_swap(w32, 0b1100, me) == -7
assert axon.atomic_fetch_and(w32, 0b0110, me) == 0b1100
assert axon.atomic_fetch_or(w32, 0b0001, me) == 0b0100
assert axon.atomic_fetch_xor(w32, 0b0101, me) == 0b0101
assert w32[0] == 0

# direct load/store through a peer view, where the neighbour shares this node's memory; on another
# node (axon run --emulate-nodes) there is none, and a put does the same
view = axon.peer_view(x, right)
if axon.path_to(right).startswith("ucx"):
    assert view is None
    axon.put(x[0, :1], np.array([-1.0 - me], np.float32), right)
else:
    assert view is not None and view.shape == x.shape
    view[0, 0] = -1.0 - me
axon.barrier_all()
assert x[0, 0] == -1.0 - left

# teams
world = axon.team_world()
assert world.my_pe() == me and world.n_pes() == n
evens = world.split_strided(0, 2, (n + 1) // 2)
if me % 2 == 0:
    assert evens is not None and evens.my_pe() == me // 2
    assert evens.translate(evens.my_pe(), world) == me
    evens.barrier()
    evens.destroy()
else:
    assert evens is None

# bad input raises the right subclass, on every PE alike
try:
    axon.put(x, mine, n)
    raise SystemExit("put to a PE out of range did not raise")
except axon.InvalidPeError as e:
    assert f"PE {n} is outside" in str(e)
try:
    axon.put(np.zeros(4, np.float32), mine[0, :4], right)
    raise SystemExit("put into a non-symmetric array did not raise")
except axon.OutOfBoundsError as e:
    assert "not in the symmetric heap" in str(e)
try:
    axon.zeros(100 if me == 0 else 200, np.uint8)
    raise SystemExit("mismatched allocation did not raise")
except axon.CollectiveMismatchError as e:
    assert "malloc(100" in str(e) and "malloc(200" in str(e), str(e)

for a in (w32, counter, x, payload, sig, cells):
    axon.free(a)
axon.finalize()
print(f"PE {me}: ok")
