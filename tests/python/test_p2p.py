"""Two-sided messages from Python: a world of one in this process (self-sends, errors), and real
runs of several PEs through the launcher, on one node and on emulated nodes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from emulated import nodes_why_not

import axon

SCRIPTS = Path(__file__).parent / "scripts"


def axon_run(n, *argv, nodes=None, env=None, timeout=180):
    full = dict(os.environ, AXON_TIMEOUT="20", AXON_BACKEND="host", **(env or {}))
    cmd = [sys.executable, "-m", "axon", "run", "-n", str(n)]
    if nodes:
        cmd += ["--emulate-nodes", str(nodes)]
    return subprocess.run(cmd + list(argv), capture_output=True, text=True, env=full, timeout=timeout,
                          stdin=subprocess.DEVNULL)


@pytest.fixture
def world_of_one(single_pe):
    single_pe.setenv("AXON_TIMEOUT", "0.5")  # the timeout test waits it out
    single_pe.setenv("AXON_BACKEND", "host")
    axon.init()
    yield


@pytest.mark.parametrize("count", [0, 3, 1024, 1025, 300_000])
def test_self_send_of_every_protocol(world_of_one, count):
    out = np.random.default_rng(count).standard_normal(count)
    inbox = np.empty(count)
    s = axon.isend(out, dest=0, tag=5)
    st = axon.recv(inbox, source=axon.ANY_SOURCE, tag=5)
    assert st == axon.Status(0, 5, out.nbytes)
    assert s.wait() == axon.Status(0, 5, out.nbytes)
    assert np.array_equal(inbox, out)


def test_truncation_names_both_sizes(world_of_one):
    s = axon.isend(np.zeros(64, np.uint8), dest=0, tag=1)
    with pytest.raises(axon.TruncatedError, match=r"has 64 bytes but the receive buffer holds only 16"):
        axon.recv(np.zeros(16, np.uint8), source=0, tag=1)
    s.wait()


def test_unmatched_receive_times_out_naming_it_and_what_waits(world_of_one):
    axon.send(np.zeros(2, np.int32), dest=0, tag=3)
    with pytest.raises(axon.TimeoutError) as e:
        axon.recv(np.zeros(2, np.int32), source=0, tag=4)
    assert "recv from source 0, tag 4, of up to 8 B on team world" in str(e.value)
    assert "(source 0, tag 3, 8 B)" in str(e.value)
    assert axon.iprobe(0, 3) == axon.Status(0, 3, 8)
    axon.recv(np.zeros(2, np.int32), source=0, tag=3)


def test_bad_arguments_raise_clear_errors(world_of_one):
    with pytest.raises(axon.InvalidPeError, match="dest 1 is outside team world"):
        axon.send(np.zeros(1), dest=1)
    with pytest.raises(axon.InvalidArgumentError, match="tag -1"):
        axon.send(np.zeros(1), dest=0, tag=axon.ANY_TAG)
    with pytest.raises(axon.InvalidArgumentError, match="tag must be an int"):
        axon.recv(np.zeros(1), tag="7")
    with pytest.raises(axon.InvalidArgumentError, match="C-contiguous"):
        axon.send(np.zeros((4, 4))[:, 1], dest=0)
    with pytest.raises(axon.InvalidArgumentError, match="must be a NumPy array"):
        axon.send([1, 2, 3], dest=0)
    with pytest.raises(axon.InvalidArgumentError, match="read-only|writable"):
        ro = np.zeros(4)
        ro.flags.writeable = False
        axon.recv(ro)


def test_explain_message_names_protocol_and_path(world_of_one):
    assert axon.explain_message(8, 0).startswith("eager")
    assert axon.explain_message(1 << 20, 0).startswith("rendezvous")
    assert "AXON_P2P_EAGER" in axon.explain_message(1 << 20, 0)


def test_messages_between_three_pes():
    res = axon_run(3, sys.executable, str(SCRIPTS / "p2p_messages.py"))
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    for pe in range(3):
        assert f"[{pe}] PE {pe}: messages ok" in res.stdout, res.stdout + res.stderr


@pytest.mark.skipif(nodes_why_not() is not None, reason=str(nodes_why_not()))
def test_messages_across_emulated_nodes():
    res = axon_run(4, sys.executable, str(SCRIPTS / "p2p_messages.py"), nodes=2)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    for pe in range(4):
        assert f"[{pe}] PE {pe}: messages ok" in res.stdout, res.stdout + res.stderr


def test_receive_from_a_dead_peer_raises_peer_dead():
    res = axon_run(2, sys.executable, str(SCRIPTS / "p2p_peer_dies.py"))
    out = res.stdout + res.stderr
    assert "[0] caught PeerDeadError" in res.stdout, out
    assert "recv from source 1, tag 0, of up to 32 B on team world gave up: PE 1 (pid" in res.stdout, out
    seconds = float(res.stdout.split("caught PeerDeadError after ")[1].split(" s")[0])
    assert seconds < 1.5, out


def test_stream_ordered_messages_need_the_gpu_backend(world_of_one):
    import numpy as np

    buf = np.zeros(4, np.uint8)
    with pytest.raises(axon.UnsupportedError, match="send_on_stream: stream-ordered messages need the GPU backend"):
        axon.send_on_stream(buf, 0)
    with pytest.raises(axon.UnsupportedError, match="recv_on_stream"):
        axon.recv_on_stream(buf, 0)
    # A group of nothing is fine; a group_end without a group_start is not.
    with axon.group():
        pass
    with pytest.raises(axon.InvalidArgumentError, match="group_end without a group_start"):
        axon.group_end()
