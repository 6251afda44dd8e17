"""The emulated nodes themselves (python/axon/tools/emulated_nodes.py), made both ways: with
iproute2's `ip`, and with `ip` hidden from PATH, as on the lent GPU machines, where pyroute2 makes
the links. Each node has its own host name and one link, axon0; node 0 is reached from node 1 over
TCP; and after a run that ends well, a failed PE, a Ctrl-C or a launcher killed by SIGKILL, no
process of the run is left (its PEs, the holders of its namespaces: so the namespaces, and the
bridge and veth links in them, are gone), and nothing of it ever appeared in the host's network
namespace. Where namespaces cannot be made at all, `axon run --emulate-nodes` says so in one line
(the reason every emulated-node test skips with).

The run's processes are found by a mark in their environment (they inherit the launcher's), so
that other runs on the machine at the same time, emulated nodes included, are never counted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from emulated import nodes_why_not, without_ip

AXON_RUN = [sys.executable, "-m", "axon", "run"]
WAYS = ["ip", "without-ip"]
# Names the nodes' links have in their own namespaces; none may ever appear in the host's.
LINK_NAMES = {"br0", "node0", "node1", "axon0"}
TIMEOUT = 60

pytestmark = pytest.mark.skipif(nodes_why_not(ucx=False) is not None, reason=str(nodes_why_not(ucx=False)))

# Each PE says where it runs, node 1's PEs reach node 0's PE 0 over TCP, then the PE ends as told:
# "exit" (all exit 0), "failure" (PE 3 exits 3) once the test writes the file "go", or runs until
# it is stopped ("ctrl-c", "sigkill").
PE = textwrap.dedent("""
    import json, os, shutil, socket, sys, time
    folder, end = sys.argv[1], sys.argv[2]
    rank = int(os.environ["AXON_RANK"])
    reached = 0
    if rank == 0:
        with socket.create_server(("10.77.0.1", 7077)) as server:
            server.settimeout(20)
            for _ in range(2):
                conn, _ = server.accept()
                reached += conn.recv(1) == b"x"
                conn.close()
    elif rank >= 2:
        for _ in range(400):
            try:
                with socket.create_connection(("10.77.0.1", 7077), timeout=5) as conn:
                    conn.sendall(b"x")
                    break
            except OSError:
                time.sleep(0.05)
    info = {"pid": os.getpid(), "host": socket.gethostname(), "links": sorted(os.listdir("/sys/class/net")),
            "ip": shutil.which("ip"), "reached": reached}
    path = os.path.join(folder, f"pe-{rank}.json")
    with open(path + ".tmp", "w") as f:
        json.dump(info, f)
    os.replace(path + ".tmp", path)
    if end in ("exit", "failure"):
        while not os.path.exists(os.path.join(folder, "go")):
            time.sleep(0.02)
        sys.exit(3 if end == "failure" and rank == 3 else 0)
    time.sleep(120)
""")


def _marked(mark: str) -> list[int]:
    """Live processes (not zombies) that carry ``mark`` in their environment."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if mark.encode() not in Path(f"/proc/{entry}/environ").read_bytes():
                continue
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2] not in "ZX":
            found.append(int(entry))
    return found


def _children(pid: int) -> list[int]:
    kids = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:  # a thread may end between the listing and the read
            kids += [int(k) for k in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
        except OSError:
            pass
    return kids


def _comm(pid: int) -> str:
    """The process's name; "" once it is gone."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _netns(pid: int) -> str:
    return os.readlink(f"/proc/{pid}/ns/net")


def _host_links() -> set[str]:
    return set(os.listdir("/sys/class/net"))


@pytest.mark.parametrize("end", ["exit", "failure", "ctrl-c", "sigkill"])
@pytest.mark.parametrize("way", WAYS)
def test_nodes_work_and_nothing_is_left_behind(tmp_path, way, end):
    mark = f"axon-emulated-nodes-test-{uuid.uuid4().hex}"
    argv = [*AXON_RUN, "-n", "4", "--emulate-nodes", "2", "--grace", "1", sys.executable, "-c", PE, str(tmp_path), end]
    if way == "without-ip":
        argv = without_ip(tmp_path / "path", argv)
    env = dict(os.environ, NODES_TEST_MARK=mark)
    launcher = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env)
    try:
        deadline = time.monotonic() + TIMEOUT
        while len(list(tmp_path.glob("pe-*.json"))) < 4:
            if launcher.poll() is not None or time.monotonic() > deadline:
                out, err = launcher.communicate(timeout=TIMEOUT)
                pytest.fail(f"the PEs did not all start (status {launcher.returncode}): {out!r} {err!r}")
            time.sleep(0.02)
        pes = [json.loads((tmp_path / f"pe-{rank}.json").read_text()) for rank in range(4)]

        # Each PE sees its own node: its host name, its one link, no `ip` without it; node 1
        # reached node 0 over the bridge.
        for rank, pe in enumerate(pes):
            assert pe["host"] == f"axon-node{rank // 2}", pe
            assert pe["links"] == ["axon0", "lo"], pe
            assert (pe["ip"] is None) == (way == "without-ip"), pe
        assert pes[0]["reached"] == 2

        # The holders: the launcher's children that are `sleep`, one a node and the bridge's. Each
        # pair of PEs shares its node's network namespace; nothing is in the host's.
        holders = [pid for pid in _children(launcher.pid) if _comm(pid) == "sleep"]
        assert len(holders) == 3, holders
        holder_ns = {_netns(pid) for pid in holders}
        pe_ns = [_netns(pe["pid"]) for pe in pes]
        assert pe_ns[0] == pe_ns[1] != pe_ns[2] == pe_ns[3]
        assert set(pe_ns) < holder_ns and _netns(os.getpid()) not in holder_ns
        assert not LINK_NAMES & _host_links()
        running = _marked(mark)
        assert {pe["pid"] for pe in pes} | set(holders) <= set(running), running

        if end in ("exit", "failure"):
            (tmp_path / "go").write_text("")
        else:
            launcher.send_signal(signal.SIGINT if end == "ctrl-c" else signal.SIGKILL)
        out, err = launcher.communicate(timeout=TIMEOUT)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    expected = {"exit": 0, "failure": 3, "ctrl-c": 128 + signal.SIGINT, "sigkill": -signal.SIGKILL}[end]
    assert launcher.returncode == expected, (out, err)

    # Gone at once once the launcher has returned (it waits for its holders); after SIGKILL the
    # kernel ends them (PR_SET_PDEATHSIG) within moments.
    deadline = time.monotonic() + 5
    while _marked(mark) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = _marked(mark)
    assert not left, [(pid, Path(f"/proc/{pid}/cmdline").read_bytes()) for pid in left]
    assert not LINK_NAMES & _host_links()


def test_without_capabilities_it_says_what_is_missing_in_one_line():
    # Root without CAP_SYS_ADMIN and CAP_NET_ADMIN (as in a container that drops them).
    res = subprocess.run(["setpriv", "--bounding-set", "-sys_admin,-net_admin", "--", *AXON_RUN, "-n", "2",
                          "--emulate-nodes", "2", "true"],
                         capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    assert res.returncode == 127, res
    assert res.stdout == ""
    lines = [line for line in res.stderr.splitlines() if not line.startswith("axon run: note: ")]
    assert lines == ["axon run: emulated nodes cannot be made here: root without CAP_SYS_ADMIN and CAP_NET_ADMIN "
                     "(network, IPC, UTS and mount namespaces, veth links and a bridge need CAP_SYS_ADMIN and "
                     "CAP_NET_ADMIN); run as root, or on one node without --emulate-nodes"], res.stderr


def test_without_ip_or_pyroute2_it_says_how_to_install(tmp_path):
    # pyroute2 made unimportable in the launcher's Python (a package of that name that fails).
    (tmp_path / "hide" / "pyroute2").mkdir(parents=True)
    (tmp_path / "hide" / "pyroute2" / "__init__.py").write_text("raise ImportError('pyroute2 is hidden here')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "hide"))
    res = subprocess.run(without_ip(tmp_path / "path", [*AXON_RUN, "-n", "2", "--emulate-nodes", "2", "true"]),
                         capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL, env=env)
    assert res.returncode == 127, res
    lines = [line for line in res.stderr.splitlines() if not line.startswith("axon run: note: ")]
    assert lines == ["axon run: emulated nodes need the ip command or the Python package pyroute2, and neither is "
                     f"here: apt-get install iproute2, or {sys.executable} -m pip install pyroute2 (the extra "
                     "axon-comm[nodes] names it)"], res.stderr


def test_ctest_skips_on_the_line_the_launcher_prints():
    from axon.tools.emulated_nodes import UNAVAILABLE

    cmake = (Path(__file__).parents[1] / "CMakeLists.txt").read_text()
    assert f'set(AXON_NODES_SKIP_REGEX "{UNAVAILABLE}")' in cmake


@pytest.mark.parametrize("way", WAYS)
def test_ctrl_c_while_the_nodes_are_made_leaves_nothing(tmp_path, way):
    # SIGINT as soon as the first holder runs: the nodes are still being made (pyroute2 is still
    # being imported, without ip), or at the latest the PEs are being started.
    mark = f"axon-emulated-nodes-test-{uuid.uuid4().hex}"
    argv = [*AXON_RUN, "-n", "8", "--emulate-nodes", "4", sys.executable, "-c", "import time; time.sleep(60)"]
    if way == "without-ip":
        argv = without_ip(tmp_path / "path", argv)
    launcher = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=dict(os.environ, NODES_TEST_MARK=mark))
    try:
        deadline = time.monotonic() + TIMEOUT
        while not any(_comm(pid) == "sleep" for pid in _children(launcher.pid)):
            assert launcher.poll() is None and time.monotonic() < deadline, launcher.communicate(timeout=TIMEOUT)
            time.sleep(0.002)
        launcher.send_signal(signal.SIGINT)
        out, err = launcher.communicate(timeout=TIMEOUT)
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    assert launcher.returncode == 128 + signal.SIGINT, (out, err)
    assert b"received SIGINT while starting the PEs" in err, err
    assert not _marked(mark)
    assert not LINK_NAMES & _host_links()


@pytest.mark.parametrize("way", WAYS)
def test_a_link_that_cannot_be_made_is_an_error_naming_the_step(way):
    # A network namespace of its own without the node's link: setting the node up must fail,
    # saying which step, never pass or crash.
    from axon.tools import emulated_nodes

    holder = subprocess.Popen(["unshare", "--net", "--", "sleep", "30"], stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while _netns(holder.pid) == _netns(os.getpid()) or _comm(holder.pid) != "sleep":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        links = emulated_nodes._IpCommand() if way == "ip" else emulated_nodes._Pyroute2()
        with pytest.raises(emulated_nodes.EmulationError) as caught:
            links.node(holder.pid, 5, "10.77.0.6")
    finally:
        holder.kill()
        holder.wait()
    message = str(caught.value)
    assert message.startswith("setting up node 5's link failed (")
    assert ("ip -batch" if way == "ip" else "pyroute2") in message
    assert f"pid {holder.pid}" in message
