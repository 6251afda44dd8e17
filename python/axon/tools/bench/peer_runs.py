"""Running the comparison peers that are programs of their own (PyTorch, NVSHMEM; ucx_perftest
across emulated nodes; Open MPI on host buffers) after axon's run, on the same PEs and sizes, and
adding their rows to axon's outcome."""

from __future__ import annotations

import socket
import sys

from .errors import BenchError
from .peers import MPI_TESTS, NVSHMEM_TESTS, TORCH_TESTS, UCX_PERFTEST_TESTS
from .request import Request
from .results import Outcome, by_impl
from .runner import launcher_command, run_launched

#: The peers run as programs of their own, in this order, and the tests each is run on.
PROGRAM_PEERS = (("PyTorch NCCL", TORCH_TESTS), ("NVSHMEM", NVSHMEM_TESTS), ("ucx_perftest", UCX_PERFTEST_TESTS),
                 ("Open MPI", MPI_TESTS))


def _peer_args(req: Request, sizes: list[int], *options: str) -> list[str]:
    """The request as both peer programs take it; `options` come right after the sizes."""
    args = [req.test, "--sizes", ",".join(str(s) for s in sizes), *options, *req.iteration_args()]
    if req.collective:
        args += ["--dtype", req.dtype, "--op", req.op, "--root", str(req.root)]
    if not req.validate:
        args.append("--no-validate")
    return args


def torch_peer_command(req: Request, sizes: list[int], port: int) -> list[str]:
    """The launcher command that runs axon.tools.bench.torch_peer on req.pes PEs."""
    return launcher_command(req.pes, [sys.executable, "-m", "axon.tools.bench.torch_peer",
                                      *_peer_args(req, sizes, "--port", str(port))])


def nvshmem_peer_command(req: Request, sizes: list[int], runner: str) -> list[str]:
    """The launcher command that runs axon_nvshmem_peer on req.pes PEs."""
    return launcher_command(req.pes, [runner, *_peer_args(req, sizes)])


def ucx_perftest_command(req: Request, sizes: list[int], peer: dict) -> list[str]:
    """The launcher command that runs axon.tools.bench.ucx_perftest_peer on 2 PEs on 2 emulated nodes."""
    return launcher_command(2, [sys.executable, "-m", "axon.tools.bench.ucx_perftest_peer", req.test,
                                "--sizes", ",".join(str(s) for s in sizes), "--perftest", peer["runner"],
                                "--libdir", peer.get("libdir") or "", "--version", peer.get("version") or "",
                                *req.iteration_args()], emulate_nodes=2)


def mpi_peer_command(req: Request, sizes: list[int]) -> list[str]:
    """axon.tools.bench.mpi_peer on the request's nodes and PEs (its own mpirun; not through axon's
    launcher)."""
    cmd = [sys.executable, "-m", "axon.tools.bench.mpi_peer", req.test, "--sizes", ",".join(str(s) for s in sizes),
           "--nodes", str(req.emulate_nodes or 1), "--pes", str(req.pes), *req.iteration_args()]
    if req.collective:
        cmd += ["--dtype", req.dtype, "--op", req.op, "--root", str(req.root)]
    return cmd + ([] if req.validate else ["--no-validate"])


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def peer_command(name: str, peer: dict, req: Request, sizes: list[int]) -> list[str]:
    if name == "NVSHMEM":
        return nvshmem_peer_command(req, sizes, peer["runner"])
    if name == "ucx_perftest":
        return ucx_perftest_command(req, sizes, peer)
    if name == "Open MPI":
        return mpi_peer_command(req, sizes)
    return torch_peer_command(req, sizes, _free_port())


def run_peer(name: str, peer: dict, req: Request, outcome: Outcome, progress: bool) -> str:
    """Runs a peer program on the sizes the driver ran and adds its rows, peers and notes to
    `outcome`. Returns "run", or one line saying why it failed (axon's own results stand either
    way)."""
    if req.collective:
        sizes = [r["size"] for r in by_impl(outcome.results)["axon"] if "size" in r]
    else:
        sizes = list((outcome.header or {}).get("sizes") or req.sizes())
    if not sizes:
        return ""
    try:
        got = run_launched(peer_command(name, peer, req, sizes), req, progress, what=f"{req.test} ({name})")
    except (BenchError, OSError) as exc:
        return str(exc)
    except KeyboardInterrupt:
        return "interrupted"  # axon's results are still printed and written
    outcome.results += got.results
    outcome.peers += got.peers
    outcome.notes += got.notes
    if got.error is not None or got.returncode != 0:
        why = (got.error or {}).get("message") or f"exit status {got.returncode}"
        tail = [line for line in got.stderr if line.strip()][-3:]
        return why + ("; " + " | ".join(tail) if tail and got.error is None else "")
    return "run"
