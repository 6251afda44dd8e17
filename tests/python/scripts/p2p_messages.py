"""Two-sided messages from Python between every pair: NumPy buffers of every protocol's sizes,
wildcards, a truncated receive, probes and a ring of nonblocking calls; prints one line per PE."""

import numpy as np

import axon

axon.init()
me, n = axon.my_pe(), axon.n_pes()
right, left = (me + 1) % n, (me - 1) % n

for count in (0, 1, 1000, 1024, 1025, 200_000):  # float64: eager up to 8 KiB, then rendezvous
    out = np.arange(count, dtype=np.float64) + 1000 * me
    inbox = np.full(count + 3, -1.0)
    r = axon.irecv(inbox, source=left, tag=count % 100)
    s = axon.isend(out, dest=right, tag=count % 100)
    st = r.wait()
    s.wait()
    assert st == axon.Status(left, count % 100, 8 * count), st
    assert np.array_equal(inbox[:count], np.arange(count) + 1000 * left)
    assert (inbox[count:] == -1).all()

# Wildcards: PE 0 takes everyone's message in any order; each is identified by its source.
req = axon.isend(np.full(4, me, np.int64), dest=0, tag=40 + me)
if me == 0:
    got = np.empty(4, np.int64)
    seen = set()
    for _ in range(n):
        st = axon.recv(got, source=axon.ANY_SOURCE, tag=axon.ANY_TAG)
        assert st.tag == 40 + st.source and (got == st.source).all(), (st, got)
        seen.add(st.source)
    assert seen == set(range(n))
axon.wait_all([req])
axon.barrier_all()

# Truncation: a message longer than the buffer raises, naming both sizes; the sender completes.
t = axon.isend(np.zeros(100, np.uint8), dest=right, tag=9)
try:
    axon.recv(np.zeros(10, np.uint8), source=left, tag=9)
    raise SystemExit("no TruncatedError")
except axon.TruncatedError as e:
    assert "100 bytes" in str(e) and "only 10" in str(e), str(e)
t.wait()

# Probe, then receive into a buffer of the probed size.
p = axon.isend(np.arange(7, dtype=np.int32), dest=right, tag=11)
st = axon.probe(source=left, tag=11)
assert st.nbytes == 28 and axon.iprobe(source=left, tag=12) is None
buf = np.empty(st.nbytes // 4, np.int32)
axon.recv(buf, source=st.source, tag=st.tag)
assert np.array_equal(buf, np.arange(7))
p.wait()

i, st = axon.wait_any([None, axon.isend(np.ones(1), dest=me, tag=3)])
axon.recv(np.empty(1), source=me, tag=3)
assert i == 1
stats = axon.message_stats()
assert stats["eager_sent"] > 0 and stats["rendezvous_sent"] > 0 and stats["waiting_messages"] == 0, stats

# A receive posted in the symmetric heap before its message: a node-local sender copies the
# message straight into it (posted_sent counts those).
inbox = axon.zeros(16, np.int64)
r = axon.irecv(inbox, source=left, tag=21)
axon.barrier_all()
before = axon.message_stats()["posted_sent"]
axon.send(np.arange(16, dtype=np.int64) + me, dest=right, tag=21)
r.wait()
assert np.array_equal(inbox, np.arange(16) + left), inbox
straight = axon.message_stats()["posted_sent"] - before
if axon.ptr(inbox, right) is not None:  # same node: the path is taken
    assert straight == 1, straight
axon.barrier_all()
axon.free(inbox)
axon.barrier_all()
print(f"PE {me}: messages ok", flush=True)
axon.finalize()
