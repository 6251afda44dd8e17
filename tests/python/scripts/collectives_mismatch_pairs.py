"""The mismatches that escaped on half the PEs (issue 45), as Python programs make them: on 4 PEs,
allreduce on half against broadcast on the rest, then broadcast from two roots (each on a fresh
team), then barrier_all or finalize (argv[1]) against an allreduce on the world. Every PE must get
axon.CollectiveMismatchError from the call itself, naming both calls, well before AXON_TIMEOUT.
Run as `axon run -n 4 python collectives_mismatch_pairs.py barrier_all|finalize`."""

import sys
import time

import numpy as np

import axon

mode = sys.argv[1]
axon.init()
me, n = axon.my_pe(), axon.n_pes()
lower = me < n // 2


def expect(what, names, call):
    start = time.monotonic()
    try:
        call()
    except axon.CollectiveMismatchError as e:
        text = str(e)
        assert all(name in text for name in names), f"PE {me}: {what}: {names} not all in {text!r}"
        took = time.monotonic() - start
        assert took < 5, f"PE {me}: {what}: found after {took:.1f} s"
        print(f"PE {me}: {what}: mismatch reported: {text}", flush=True)
        return
    raise AssertionError(f"PE {me}: {what}: the call returned normally")


def on_fresh_team(fn):
    def run():
        team = axon.team_world().split_strided(0, 1, n)
        try:
            fn(team)
        finally:
            team.destroy()
    return run


x = np.arange(16, dtype=np.float32)
expect("allreduce against broadcast", ["allreduce(", "broadcast("], on_fresh_team(
    lambda t: axon.allreduce(x.copy(), team=t) if lower else axon.broadcast(x.copy(), root=0, team=t)))
other = n // 2
expect("broadcast roots", ["root 0", f"root {other}"], on_fresh_team(
    lambda t: axon.broadcast(x.copy(), root=0 if lower else other, team=t)))
axon.barrier_all()

call = "finalize()" if mode == "finalize" else "barrier_all()"
if lower:
    expect(f"{mode} against allreduce", [call, "allreduce("], axon.finalize if mode == "finalize" else axon.barrier_all)
else:
    expect(f"allreduce against {mode}", [call, "allreduce("], lambda: axon.allreduce(x.copy()))
if mode == "barrier_all":
    axon.finalize()  # the barrier_all PEs signalled nothing: the world's barrier still agrees
# In finalize mode the finalize PEs have left: the others exit, as a program that met an error does.
