"""Emulated nodes on one machine, for ``axon run --emulate-nodes K``.

Each emulated node is a set of Linux namespaces that one *holder* process
(``sleep`` under ``unshare``) keeps alive:

* its own network namespace, joined to the other nodes' by a veth pair to a
  bridge that lives in a namespace of its own (so nothing touches the host's
  network, and two jobs at once cannot collide: each has private addresses);
* its own IPC and UTS namespaces: its own host name (``axon-node<k>``), so
  axon and UCX both see another machine, and UCX may not use System V shared
  memory between nodes;
* its own mount namespace, with ``/sys`` remounted (so that tools list the
  node's own network devices, as ``ip netns exec`` does) and a fresh tmpfs on
  ``/dev/shm`` (nodes share no POSIX shared memory either).

PEs enter their node's namespaces with ``nsenter``. Holders get SIGKILL when
the launcher dies (``PR_SET_PDEATHSIG``), so the namespaces, and the veth links
with them, vanish after a normal exit, a Ctrl-C, a dead PE, and even a
killed launcher. Creating them needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN).

Standard library only, like the launcher.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Sequence

from .parent_death import die_with_parent

__all__ = ["EmulatedNodes", "EmulationError", "node_of_rank", "SUBNET_PREFIX"]

#: Addresses of the emulated nodes: node k is SUBNET_PREFIX + str(k + 1).
SUBNET_PREFIX = "10.77.0."

#: Most nodes one bridge subnet holds (a /24, minus the network address).
MAX_NODES = 250

_TOOLS = ("ip", "nsenter", "unshare")
_SETUP_TIMEOUT = 10.0

# Run by each holder: remount what the node must not share, then sleep until killed.
_HOLDER_SCRIPT = (
    "mount -t sysfs sysfs /sys && mount -t tmpfs -o mode=1777 tmpfs /dev/shm && exec sleep infinity"
)


class EmulationError(RuntimeError):
    """The nodes could not be made; the message says why and what to do."""


def node_of_rank(rank: int, nprocs: int, nodes: int) -> int:
    """Node of PE ``rank``: PEs are placed in blocks, nprocs / nodes per node."""
    return rank // (nprocs // nodes)


def _run(argv: Sequence[str], what: str) -> None:
    try:
        subprocess.run(list(argv), check=True, capture_output=True, timeout=_SETUP_TIMEOUT)
    except subprocess.CalledProcessError as exc:
        detail = (exc.stderr or b"").decode("utf-8", "replace").strip()
        raise EmulationError(f"{what} failed: {' '.join(argv)}: {detail or f'status {exc.returncode}'}") from exc
    except subprocess.TimeoutExpired as exc:
        raise EmulationError(f"{what} did not finish in {_SETUP_TIMEOUT:.0f} s: {' '.join(argv)}") from exc


class EmulatedNodes:
    """``count`` emulated nodes joined by a bridge; a context manager that removes them."""

    def __init__(self, count: int) -> None:
        if not 1 <= count <= MAX_NODES:
            raise EmulationError(f"--emulate-nodes must be between 1 and {MAX_NODES}, got {count}")
        self.count = count
        self._holders: list[subprocess.Popen] = []
        self._bridge: subprocess.Popen | None = None
        # veth names live in the host's namespace for a moment: the launcher's pid keeps two jobs
        # started at once apart (names have at most 15 characters).
        self._tag = f"ax{os.getpid() % 1000000}"

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
        self._check_can_create()
        try:
            self._bridge = self._start_holder()
            self._in(self._bridge, "ip", "link", "add", "br0", "type", "bridge", what="creating the bridge")
            self._in(self._bridge, "ip", "link", "set", "br0", "up", what="starting the bridge")
            for node in range(self.count):
                self._holders.append(self._start_holder())
                self._wire(node)
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

    def _check_can_create(self) -> None:
        missing = [tool for tool in _TOOLS if shutil.which(tool) is None]
        if missing:
            raise EmulationError(
                f"emulated nodes need {', '.join(missing)} (Debian packages iproute2 and util-linux)"
            )
        if os.geteuid() != 0:
            raise EmulationError(
                "emulated nodes need root (network, IPC, UTS and mount namespaces, veth links "
                "and a bridge need CAP_SYS_ADMIN and CAP_NET_ADMIN); run as root, or run on one "
                "node without --emulate-nodes"
            )

    def _start_holder(self) -> subprocess.Popen:
        holder = subprocess.Popen(
            ["unshare", "--net", "--ipc", "--uts", "--mount", "--propagation", "private",
             "--", "sh", "-c", _HOLDER_SCRIPT],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            # The holder dies with the launcher, even one killed by SIGKILL.
            preexec_fn=die_with_parent(),
        )
        # The holder is ready once `sleep` runs in the new namespaces.
        deadline = time.monotonic() + _SETUP_TIMEOUT
        while time.monotonic() < deadline:
            if holder.poll() is not None:
                err = holder.stderr.read().decode("utf-8", "replace").strip() if holder.stderr else ""
                raise EmulationError(f"could not create a node's namespaces (unshare): {err or 'no reason given'}")
            try:
                with open(f"/proc/{holder.pid}/comm", encoding="ascii") as comm:
                    if comm.read().strip() == "sleep":
                        return holder
            except OSError:
                pass
            time.sleep(0.01)
        holder.kill()
        raise EmulationError(f"a node's namespaces were not ready after {_SETUP_TIMEOUT:.0f} s")

    def _in(self, holder: subprocess.Popen, *argv: str, what: str) -> None:
        _run(["nsenter", "-t", str(holder.pid), "--net", "--uts", "--", *argv], what)

    def _wire(self, node: int) -> None:
        holder = self._holders[node]
        assert self._bridge is not None
        inside, outside = f"{self._tag}n{node}a", f"{self._tag}n{node}b"
        what = f"wiring node {node}"
        _run(["ip", "link", "add", inside, "type", "veth", "peer", "name", outside], what)
        try:
            _run(["ip", "link", "set", inside, "netns", str(holder.pid)], what)
            _run(["ip", "link", "set", outside, "netns", str(self._bridge.pid)], what)
        except EmulationError:
            # Still in the host's namespace: delete it here (deleting one end deletes both).
            subprocess.run(["ip", "link", "del", outside], capture_output=True, check=False)
            subprocess.run(["ip", "link", "del", inside], capture_output=True, check=False)
            raise
        self._in(self._bridge, "ip", "link", "set", outside, "master", "br0", "up", what=what)
        self._in(holder, "ip", "link", "set", "lo", "up", what=what)
        self._in(holder, "ip", "addr", "add", f"{self.address(node)}/24", "dev", inside, what=what)
        self._in(holder, "ip", "link", "set", inside, "up", what=what)
        self._in(holder, "hostname", f"axon-node{node}", what=what)
