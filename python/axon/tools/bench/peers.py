"""--compare: which comparison peers this machine has (NCCL, PyTorch, NVSHMEM on one node's GPUs;
ucx_perftest across emulated nodes; Open MPI on host buffers, on one node or across emulated
nodes), which tests each is compared on, and the note that says whether each ran, and why not."""

from __future__ import annotations

import ctypes.util
import importlib.util
from pathlib import Path

from .catalog import COLLECTIVES, P2P_TESTS, PERFTEST_TESTS
from .programs import find_tool

#: --peers names, as typed, and the peers they select.
PEER_NAMES = {"nccl": "NCCL", "pytorch": "PyTorch NCCL", "nvshmem": "NVSHMEM", "ucx_perftest": "ucx_perftest",
              "openmpi": "Open MPI"}

#: The program that drives NVSHMEM (bench/nvshmem_peer.cu), built where NVSHMEM's headers and
#: device library are found at build time.
NVSHMEM_PEER = "axon_nvshmem_peer"


def _pip_library(package: str, pattern: str) -> str | None:
    """A shared library shipped in an NVIDIA pip wheel (nvidia/<package>/lib), without importing it."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return None
    for root in (spec.submodule_search_locations or []) if spec else []:
        lib = Path(root) / package / "lib"
        if lib.is_dir():
            for path in sorted(lib.glob(pattern)):
                return str(path)
    return None


def _find_spec(name: str) -> str | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    return (spec.origin or name) if spec else None


def _ucx_perftest() -> dict:
    """ucx_perftest beside the UCX axon loads (a peer across emulated nodes: "network")."""
    from .. import doctor

    library = doctor.network_library()
    tool, env = doctor.ucx_tool_beside(library, "ucx_perftest")
    peer = {"peer": "ucx_perftest", "found": bool(tool), "where": tool, "what": "ucx_perftest", "network": True,
            "runner": tool, "version": (library or {}).get("version") or "",
            "libdir": env.get("LD_LIBRARY_PATH", "").split(":")[0] if tool else ""}
    if not (library or {}).get("available"):
        peer["unavailable"] = "axon has no UCX to compare with: " + ((library or {}).get("why_not") or "not built with it")
    return peer


def _open_mpi() -> dict:
    """Open MPI's mpirun with mpi4py (a peer of the two-sided tests and the collectives on host
    buffers, "host_buffers")."""
    import shutil

    mpirun = shutil.which("mpirun")
    mpi4py = _find_spec("mpi4py")
    peer = {"peer": "Open MPI", "found": bool(mpirun and mpi4py), "where": mpirun, "what": "mpirun and mpi4py",
            "host_buffers": True}
    if mpirun and not mpi4py:
        peer["unavailable"] = "mpi4py is not installed (pip install mpi4py)"
    return peer


def detect_peers() -> list[dict]:
    """Which comparison peers this machine has: [{peer, found, where, what}], nothing loaded.
    A peer that is found but cannot be driven carries "unavailable": why."""
    nccl = ctypes.util.find_library("nccl") or _pip_library("nccl", "libnccl.so*")
    torch = _find_spec("torch")
    nvshmem = (ctypes.util.find_library("nvshmem_host") or ctypes.util.find_library("nvshmem")
               or _pip_library("nvshmem", "libnvshmem_host.so*"))
    nvshmem_peer = find_tool(NVSHMEM_PEER)
    # A peer program built against an NVSHMEM outside the library path finds it through its rpath.
    nvshmem = nvshmem or (str(nvshmem_peer) if nvshmem_peer else None)
    peers = [
        {"peer": "NCCL", "found": bool(nccl), "where": nccl, "what": "libnccl.so"},
        {"peer": "PyTorch NCCL", "found": bool(torch), "where": torch, "what": "torch"},
        {"peer": "NVSHMEM", "found": bool(nvshmem), "where": nvshmem, "what": "libnvshmem_host.so",
         "runner": str(nvshmem_peer) if nvshmem_peer else None},
    ]
    peers.append(_ucx_perftest())
    peers.append(_open_mpi())
    if nvshmem and not nvshmem_peer:
        peers[2]["unavailable"] = (f"axon was built without {NVSHMEM_PEER} (it needs NVSHMEM's headers and "
                                   "libnvshmem_device.a at build time: set NVSHMEM_HOME or install "
                                   "nvidia-nvshmem-cu13, then rebuild)")
    return peers


#: What each peer is run on: (tests, how). PyTorch NCCL covers the point-to-point tests that
#: NCCL's send/recv can express; NVSHMEM those its put/signal calls express, and every
#: collective but the rooted reduce (it has none).
PEER_SCOPE = {
    "NCCL": (frozenset(COLLECTIVES), "in the same program on the same buffers"),
    "PyTorch NCCL": (frozenset(COLLECTIVES) | {"latency", "pingping"} | P2P_TESTS,
                     "right after axon, through torch.distributed on the same GPUs and sizes"),
    "NVSHMEM": ((frozenset(COLLECTIVES) - {"reduce"}) | {"latency", "put_signal_rtt", "pingping", "bw", "bibw"},
                "right after axon, through its stream-ordered host API on its own symmetric heap, on the "
                "same GPUs and sizes"),
}
PEER_SCOPE["ucx_perftest"] = (frozenset(PERFTEST_TESTS),
                               "right after axon, between the same two emulated nodes, over the UCX axon loads")
TORCH_TESTS = PEER_SCOPE["PyTorch NCCL"][0]
#: The collectives the Open MPI peer runs (mpi_collectives.py; MPI's reduce and reduce_scatter
#: put their in-place results elsewhere than axon's, so they are not compared yet).
MPI_COLLECTIVES = frozenset({"allreduce", "allgather", "alltoall", "broadcast"})
PEER_SCOPE["Open MPI"] = (P2P_TESTS | MPI_COLLECTIVES,
                          "right after axon, through mpi4py on host buffers on the same nodes and PEs, "
                          "over UCX (pml ucx; on one node also over its own layer, pml ob1)")
UCX_PERFTEST_TESTS = PEER_SCOPE["ucx_perftest"][0]
MPI_TESTS = PEER_SCOPE["Open MPI"][0]
NVSHMEM_TESTS = PEER_SCOPE["NVSHMEM"][0]


def compare_notes(peers: list[dict], have_gpu: bool, ran: frozenset[str] = frozenset(),
                  test: str | None = None, gpu_buffers: bool = True,
                  failed: dict[str, str] | None = None, nodes: bool = False) -> list[dict]:
    """One note per peer: 'run' for the peers in `ran`, else why not; `failed`: peer -> why its
    run failed, added to its note. `nodes`: the PEs ran on emulated nodes."""
    out = []
    for p in peers:
        state = f"{p['what']} {'found' if p['found'] else 'not found'}"
        tests, how = PEER_SCOPE.get(p["peer"], (frozenset(), ""))
        if p["peer"] in ran:
            status, note = "run", f"{p['peer']}: run {how} ({p['where']})"
        elif p.get("deselected"):
            status, note = "not_run", f"{p['peer']}: not run, not in --peers ({state})"
        elif p.get("network") and not nodes:
            status, note = "not_run", f"{p['peer']}: not run, it is compared across emulated nodes only (--emulate-nodes)"
        elif nodes and not p.get("network") and not p.get("host_buffers"):
            status, note = "not_run", f"{p['peer']}: not run, it is compared on one node (without --emulate-nodes)"
        elif not have_gpu and not p.get("network") and not p.get("host_buffers"):
            status, note = "skipped", f"{p['peer']}: skipped, needs GPUs ({state})"
        elif not p["found"]:
            status, note = "skipped", f"{p['peer']}: skipped ({state})"
        elif not tests:
            status, note = "not_run", (f"{p['peer']}: not run, axon bench does not drive it yet "
                                       f"({state} at {p['where']})")
        elif p.get("unavailable"):
            status, note = "not_run", f"{p['peer']}: not run, {p['unavailable']} ({state} at {p['where']})"
        elif test is not None and test not in tests:
            status, note = "not_run", (f"{p['peer']}: not run, it is compared on "
                                       f"{', '.join(sorted(tests))} only ({state})")
        elif not gpu_buffers and not p.get("network") and not p.get("host_buffers"):
            status, note = "not_run", f"{p['peer']}: not run, it is compared on GPU buffers (-d D D) only"
        elif gpu_buffers and (p.get("network") or p.get("host_buffers")):
            status, note = "not_run", f"{p['peer']}: not run, it is compared on host buffers (-d H H) only"
        else:
            status, note = "not_run", f"{p['peer']}: not run ({state} at {p['where']})"
        why = (failed or {}).get(p["peer"])
        out.append({**p, "status": status, "note": note + (f"; it failed: {why}" if why else "")})
    return out
