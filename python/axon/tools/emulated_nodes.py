"""Emulated nodes on one machine, for ``axon run --emulate-nodes K``.

Each emulated node is a set of Linux namespaces that one *holder* process
(``sleep`` under ``unshare``) keeps alive:

* its own network namespace, joined to the other nodes' by a veth pair to a
  bridge that lives in a namespace of its own;
* its own IPC and UTS namespaces: its own host name (``axon-node<k>``), so
  axon and UCX both see another machine, and UCX may not use System V shared
  memory between nodes;
* its own mount namespace, with ``/sys`` remounted (so that tools list the
  node's own network devices, as ``ip netns exec`` does) and a fresh tmpfs on
  ``/dev/shm`` (nodes share no POSIX shared memory either).

Nothing is made in the host's network namespace, not even for a moment: each
veth pair is created in the bridge's namespace with its other end placed
straight into the node's. So two jobs at once (two users, two test runs)
cannot collide on a name or an address, and a launcher killed at any point
leaves no link behind. The names are fixed: ``br0`` and ``node<k>`` in the
bridge's namespace, ``axon0`` (address SUBNET_PREFIX + k+1) in node k's.

PEs enter their node's namespaces with ``nsenter``. Holders get SIGKILL when
the launcher dies (``PR_SET_PDEATHSIG``), so the namespaces, and the links in
them, vanish after a normal exit, a Ctrl-C, a dead PE, and even a killed
launcher. Creating them needs CAP_SYS_ADMIN and CAP_NET_ADMIN (root);
``unavailable_reason()`` says, without making anything, why they cannot be
made here, and the tests that need them skip with that reason.

The links are made by one of two ways behind one small interface
(``_IpCommand`` and ``_Pyroute2``: ``bridge()``, then ``node()`` for each node):
iproute2's ``ip`` where the command is found, else pyroute2 (netlink from
Python, ``pip install 'axon-comm[nodes]'``), which the GPU machines' images
need (they have no ``ip``). ``ip`` comes first because it measures faster:
on the 2-core development machine a fresh process made 3 nodes in 0.21-0.28 s
with ``ip`` (one ``ip -batch`` process a namespace) and in 0.60-0.70 s with
pyroute2, most of it the import of pyroute2 (about 0.5 s); 5 runs each. Both
ways are tested in CI (the tests hide ``ip`` from PATH).

Standard library only, like the launcher; pyroute2 is imported only where
``ip`` is missing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence

from .parent_death import die_with_parent

__all__ = [
    "EmulatedNodes",
    "EmulationError",
    "EmulationUnavailable",
    "UNAVAILABLE",
    "node_of_rank",
    "SUBNET_PREFIX",
    "unavailable_reason",
]

#: Addresses of the emulated nodes: node k is SUBNET_PREFIX + str(k + 1).
SUBNET_PREFIX = "10.77.0."

#: Most nodes one bridge subnet holds (a /24, minus the network address).
MAX_NODES = 250

#: How every message of EmulationUnavailable starts. The ctests on emulated nodes are skipped
#: when their output holds it (SKIP_REGULAR_EXPRESSION in tests/CMakeLists.txt), the pytest
#: ones by unavailable_reason().
UNAVAILABLE = "emulated nodes cannot be made here"

#: The link of a node, in its own namespace (the tests' link_down.py looks for "ax...").
NODE_LINK = "axon0"

_NAMESPACES = ("--net", "--ipc", "--uts", "--mount")
_SETUP_TIMEOUT = 10.0

# Capability bits (linux/capability.h) that making the nodes needs.
_CAPABILITIES = ((21, "CAP_SYS_ADMIN"), (12, "CAP_NET_ADMIN"))

# Run by each holder with its node's host name as $1 (the bridge's holder: no name): remount
# what the node must not share, name it, then sleep until killed.
_HOLDER_SCRIPT = (
    "mount -t sysfs sysfs /sys && mount -t tmpfs -o mode=1777 tmpfs /dev/shm"
    ' && { [ -z "$1" ] || hostname "$1"; } && exec sleep infinity'
)


class EmulationError(RuntimeError):
    """The nodes could not be made; the message says why and what to do."""


class EmulationUnavailable(EmulationError):
    """Namespaces cannot be made on this machine at all (not root, no capability, no unshare).

    Installing a package does not help here, unlike a missing ``ip``/pyroute2: the tests that
    need emulated nodes skip with this message instead of failing."""


def node_of_rank(rank: int, nprocs: int, nodes: int) -> int:
    """Node of PE ``rank``: PEs are placed in blocks, nprocs / nodes per node."""
    return rank // (nprocs // nodes)


def _effective_capabilities() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
    except (OSError, ValueError):
        pass
    return 0


def unavailable_reason() -> str | None:
    """Why namespaces cannot be made here at all (a line starting with UNAVAILABLE), or None.

    It makes nothing that outlives it: the last check is an ``unshare`` of the same namespaces
    running ``true``, which also catches what the capabilities do not show (a seccomp filter, a
    kernel without user-visible namespaces)."""
    missing = [tool for tool in ("unshare", "nsenter") if shutil.which(tool) is None]
    if missing:
        return f"{UNAVAILABLE}: no {' or '.join(missing)} command (Debian package util-linux)"
    caps = _effective_capabilities()
    lacking = [name for bit, name in _CAPABILITIES if not caps >> bit & 1]
    if lacking:
        who = "not root" if os.geteuid() != 0 else f"root without {' and '.join(lacking)}"
        return (
            f"{UNAVAILABLE}: {who} (network, IPC, UTS and mount namespaces, veth links and a bridge "
            "need CAP_SYS_ADMIN and CAP_NET_ADMIN); run as root, or on one node without --emulate-nodes"
        )
    try:
        probe = subprocess.run(["unshare", *_NAMESPACES, "--", "true"], capture_output=True,
                               timeout=_SETUP_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return f"{UNAVAILABLE}: unshare {' '.join(_NAMESPACES)} did not finish in {_SETUP_TIMEOUT:.0f} s"
    if probe.returncode != 0:
        detail = probe.stderr.decode("utf-8", "replace").strip() or f"status {probe.returncode}"
        return f"{UNAVAILABLE}: unshare {' '.join(_NAMESPACES)} failed: {detail}"
    return None


def _namespace(pid: int) -> str:
    return f"/proc/{pid}/ns/net"


class _IpCommand:
    """The links, made by iproute2's ``ip``: one ``ip -batch`` in each namespace, entered with
    nsenter (one process a namespace, not one a link)."""

    way = "ip"

    def bridge(self, bridge_pid: int, node_pids: Sequence[int]) -> None:
        lines = ["link add br0 type bridge", "link set br0 up"]
        for node, pid in enumerate(node_pids):
            lines += [f"link add node{node} type veth peer name {NODE_LINK} netns {pid}",
                      f"link set node{node} master br0 up"]
        self._batch(bridge_pid, lines, "making the bridge and the links to the nodes")

    def node(self, node_pid: int, node: int, address: str) -> None:
        lines = ["link set lo up", f"addr add {address}/24 dev {NODE_LINK}", f"link set {NODE_LINK} up"]
        self._batch(node_pid, lines, f"setting up node {node}'s link")

    @staticmethod
    def _batch(pid: int, lines: list[str], what: str) -> None:
        argv = ["nsenter", "-t", str(pid), "--net", "--", "ip", "-batch", "-"]
        try:
            subprocess.run(argv, input="\n".join(lines) + "\n", text=True, check=True,
                           capture_output=True, timeout=_SETUP_TIMEOUT)
        except subprocess.CalledProcessError as exc:
            detail = " ".join((exc.stderr or "").split()) or f"status {exc.returncode}"
            raise EmulationError(f"{what} failed (ip -batch in the namespace of pid {pid}): {detail}") from exc
        except subprocess.TimeoutExpired as exc:
            raise EmulationError(f"{what}: ip -batch did not finish in {_SETUP_TIMEOUT:.0f} s") from exc


class _Pyroute2:
    """The links, made through netlink by pyroute2 (where there is no ``ip``): one netlink socket
    in each namespace, opened by pyroute2 from the namespace's /proc path (flags=0: it must never
    create a namespace there). Netlink answers at once; opening a socket in a namespace is bounded
    by pyroute2 (10 s)."""

    way = "pyroute2"

    def __init__(self) -> None:
        from pyroute2 import IPRoute
        from pyroute2.netlink.exceptions import NetlinkError

        self._iproute = IPRoute
        self._errors = (NetlinkError, OSError, RuntimeError, TimeoutError)

    def bridge(self, bridge_pid: int, node_pids: Sequence[int]) -> None:
        with self._open(bridge_pid, "making the bridge and the links to the nodes") as ipr:
            ipr.link("add", ifname="br0", kind="bridge")
            bridge = ipr.link_lookup(ifname="br0")[0]
            ipr.link("set", index=bridge, state="up")
            for node, pid in enumerate(node_pids):
                ipr.link("add", ifname=f"node{node}", kind="veth", peer={"ifname": NODE_LINK, "net_ns_pid": pid})
                ipr.link("set", index=ipr.link_lookup(ifname=f"node{node}")[0], master=bridge, state="up")

    def node(self, node_pid: int, node: int, address: str) -> None:
        with self._open(node_pid, f"setting up node {node}'s link") as ipr:
            ipr.link("set", index=ipr.link_lookup(ifname="lo")[0], state="up")
            link = ipr.link_lookup(ifname=NODE_LINK)[0]
            ipr.addr("add", index=link, address=address, prefixlen=24)
            ipr.link("set", index=link, state="up")

    @contextlib.contextmanager
    def _open(self, pid: int, what: str) -> Iterator:
        """A pyroute2 socket in the namespace of ``pid``, always closed; pyroute2's errors (and a
        link not found) become an EmulationError that says what was being done."""
        try:
            ipr = self._iproute(netns=_namespace(pid), flags=0)
        except self._errors as exc:
            raise EmulationError(f"{what} failed (pyroute2, namespace of pid {pid}): {exc}") from exc
        try:
            yield ipr
        except (*self._errors, IndexError) as exc:
            raise EmulationError(f"{what} failed (pyroute2, namespace of pid {pid}): {exc!r}") from exc
        finally:
            ipr.close()


def _link_maker() -> _IpCommand | _Pyroute2:
    if shutil.which("ip") is not None:
        return _IpCommand()
    try:
        return _Pyroute2()
    except ImportError as exc:
        raise EmulationError(
            "emulated nodes need the ip command or the Python package pyroute2, and neither is here: "
            f"apt-get install iproute2, or {sys.executable} -m pip install pyroute2 (the extra "
            "axon-comm[nodes] names it)"
        ) from exc


class EmulatedNodes:
    """``count`` emulated nodes joined by a bridge; a context manager that removes them."""

    def __init__(self, count: int) -> None:
        if not 1 <= count <= MAX_NODES:
            raise EmulationError(f"--emulate-nodes must be between 1 and {MAX_NODES}, got {count}")
        self.count = count
        #: Which way made the links ("ip" or "pyroute2"), once entered.
        self.way: str | None = None
        self._holders: list[subprocess.Popen] = []
        self._bridge: subprocess.Popen | None = None

    # -- public ------------------------------------------------------------

    def address(self, node: int) -> str:
        """The IPv4 address of ``node`` on the bridge."""
        return f"{SUBNET_PREFIX}{node + 1}"

    def enter_command(self, node: int) -> list[str]:
        """The prefix that runs a program inside ``node``'s namespaces.

        nsenter forks only to enter a PID namespace, which this does not: it joins the namespaces
        and execs the program in its own process. So the PE's process is the program itself, and
        what the launcher set in it (its session, PR_SET_PDEATHSIG) and sends it reaches the
        program, not a wrapper.
        """
        pid = self._holders[node].pid
        return ["nsenter", "-t", str(pid), "--net", "--ipc", "--uts", "--mount", f"--wd={os.getcwd()}", "--"]

    def __enter__(self) -> EmulatedNodes:
        reason = unavailable_reason()
        if reason:
            raise EmulationUnavailable(reason)
        links = _link_maker()
        self.way = links.way
        try:
            self._start_holder("")
            for node in range(self.count):
                self._start_holder(f"axon-node{node}")
            links.bridge(self._bridge.pid, [holder.pid for holder in self._holders])
            for node, holder in enumerate(self._holders):
                links.node(holder.pid, node, self.address(node))
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Kill every holder: the namespaces, and the links in them, go with the last process."""
        for holder in self._holders + ([self._bridge] if self._bridge else []):
            if holder.poll() is None:
                holder.kill()
            holder.wait()
        self._holders.clear()
        self._bridge = None

    # -- set-up ------------------------------------------------------------

    def _start_holder(self, hostname: str) -> None:
        """Start the holder of a node named ``hostname`` (the bridge's: ""); wait until it runs."""
        holder = subprocess.Popen(
            ["unshare", *_NAMESPACES, "--propagation", "private", "--", "sh", "-c", _HOLDER_SCRIPT,
             "axon-holder", hostname],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            # The holder dies with the launcher, even one killed by SIGKILL.
            preexec_fn=die_with_parent(),
        )
        # Kept at once: close() must kill it whatever happens next.
        if hostname:
            self._holders.append(holder)
        else:
            self._bridge = holder
        # The holder is ready once `sleep` runs in the new namespaces.
        deadline = time.monotonic() + _SETUP_TIMEOUT
        while time.monotonic() < deadline:
            if holder.poll() is not None:
                err = holder.stderr.read().decode("utf-8", "replace").strip() if holder.stderr else ""
                raise EmulationError(f"could not create a node's namespaces (unshare): {err or 'no reason given'}")
            try:
                with open(f"/proc/{holder.pid}/comm", encoding="ascii") as comm:
                    if comm.read().strip() == "sleep":
                        return
            except OSError:
                pass
            time.sleep(0.01)
        raise EmulationError(f"a node's namespaces were not ready after {_SETUP_TIMEOUT:.0f} s")
