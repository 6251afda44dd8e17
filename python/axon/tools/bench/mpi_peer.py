"""Open MPI as a comparison peer of the two-sided tests and the collectives: mpi4py programs with
OSU's patterns (``p2p-latency``, ``p2p-bw``, ``p2p-bibw``, ``p2p-pingping``: two ranks) and the
collectives with axon's driver's conventions (``allreduce``, ``allgather``, ``alltoall``,
``broadcast``: ``mpi_collectives.py``), on host (NumPy) buffers, on this node or across emulated
nodes (the ranks in blocks of --pes / --nodes a node, as ``axon run --emulate-nodes`` places PEs).

Run as root, where Open MPI's ``mpirun`` and mpi4py are installed (``axon bench --compare`` runs
it right after axon's driver)::

    python -m axon.tools.bench.mpi_peer p2p-latency --sizes 8,64,512 [--nodes 1|2] [--pml ucx,ob1]
        [-i ITERS] [-x WARMUP] [--mca KEY VALUE ...]
    python -m axon.tools.bench.mpi_peer allreduce --sizes 8,65536 --pes 4 --nodes 2
        [--dtype float32] [--op sum] [--root 0] ...

``--pml ucx`` is Open MPI over UCX (``--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices
any``); ``--pml ob1`` its own layer (the shared-memory BTL on one node, TCP between nodes). Each
runs under its own mpirun; results carry ``impl`` "openmpi-ucx" or "openmpi-ob1". Across nodes it
makes two emulated nodes (``emulated_nodes.py``, as ``axon run --emulate-nodes 2`` does), runs
``mpirun`` inside node 0 and starts node 1's Open MPI daemon through a launch agent that enters
node 1's namespaces instead of ssh (``plm_rsh_agent``).

Times follow axon's driver: latency is the one-way time (round trip / 2); bw and bibw the time
per message of windows of 64 (bibw: both directions summed); pingping the time per exchange; a
collective's time is the slowest rank's average per call. mpi4py adds its own call overhead (about
a microsecond per call), which a C program would not pay. Where the ranks outnumber the machine's
cores (emulated nodes share them), Open MPI yields while it waits (``mpi_yield_when_idle 1``), as
axon's waits do where its PEs outnumber the cores (``AXON_HOST_PES``): busy polling on shared cores
would measure the scheduler, not Open MPI.

Output: one JSON object per line (``peer``, ``result`` or ``error``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile

from ..emulated_nodes import EmulatedNodes, EmulationError
from .mpi_collectives import COLLECTIVES, DTYPES, OPS, run_collective

#: Open MPI's point-to-point layer on UCX, as the issue's baseline names it.
UCX_PML = (("pml", "ucx"), ("pml_ucx_tls", "any"), ("pml_ucx_devices", "any"))


def emit(record: dict) -> None:
    print(json.dumps(record), flush=True)


def agent_script(enter: dict[str, list[str]]) -> str:
    """A launch agent for ``plm_rsh_agent``: Open MPI calls it as ``agent HOST COMMAND...``; it
    runs COMMAND inside HOST's namespaces (``enter[HOST]``, a command prefix)."""
    cases = "\n".join(f"  {shlex.quote(host)}) exec {shlex.join(prefix)} /bin/sh -c \"$*\" ;;"
                      for host, prefix in enter.items())
    return ("#!/bin/sh\n# Made by axon.tools.bench.mpi_peer: enter an emulated node instead of ssh.\n"
            "host=$1; shift\ncase \"$host\" in\n" + cases +
            "\n  *) echo \"mpi_peer agent: unknown node $host\" >&2; exit 1 ;;\nesac\n")


def forwarded_environment() -> list[str]:
    """mpirun's -x options that hand the ranks this process's paths."""
    return [arg for name in ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH") if name in os.environ for arg in ("-x", name)]


def mpirun_command(mpirun: str, agent: str, hosts: list[str], program: list[str],
                   mca: list[tuple[str, str]], per_node: int = 1) -> list[str]:
    """mpirun with ``per_node`` ranks on each of ``hosts``, launched through ``agent``, in blocks
    (ranks 0 .. per_node - 1 on the first host), as axon's launcher places PEs."""
    cmd = [mpirun, "--allow-run-as-root", "-np", str(len(hosts) * per_node),
           "--host", ",".join(f"{h}:{per_node}" for h in hosts),
           "--map-by", "slot", "--bind-to", "none", "--mca", "plm", "rsh", "--mca", "plm_rsh_agent", agent]
    for key, value in mca:
        cmd += ["--mca", key, value]
    cmd += forwarded_environment()
    return cmd + program


def loaded_library(stem: str) -> str:
    """The file of the shared library ``stem`` this process has mapped ("" if none): which UCX
    Open MPI loaded."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.split()[-1]
                if os.path.basename(path).startswith(stem + "."):
                    return path
    except OSError:
        pass
    return ""


#: The two-sided tests, as axon bench names them ("latency" is the one-sided comparison's name
#: for the same ping-pong); they run on two ranks.
P2P_TESTS = ("p2p-latency", "p2p-bw", "p2p-bibw", "p2p-pingping", "latency")
TESTS = P2P_TESTS + COLLECTIVES
WINDOW = 64  # osu_bw's window

#: Open MPI's point-to-point layers: UCX's, and its own (ob1, with the shared-memory BTL on one
#: node and TCP between nodes).
PMLS = {"ucx": UCX_PML, "ob1": (("pml", "ob1"),)}


def default_iters(test: str, size: int) -> tuple[int, int]:
    """OSU's defaults, capped as axon's driver caps them (about 4 GiB per size and direction)."""
    windowed = test in ("p2p-bw", "p2p-bibw")
    big = size > 8192
    iters = (20 if big else 100) if windowed else (1000 if big else 10000)
    warmup = (2 if big else 10) if windowed else (10 if big else 100)
    cap = int(4 * 2**30 / max(size * (WINDOW if windowed else 1), 1))
    iters = max(2 if windowed else 10, min(iters, cap))
    return iters, min(warmup, max(1, iters // 10))


def rank_program(test: str, sizes: list[int], iters: int | None, warmup: int | None, impl: str,
                 validate: bool, dtype: str = "float32", op: str = "sum", root: int = 0) -> int:
    """The MPI program (rank 0 reports): a collective (mpi_collectives.py), or OSU's patterns on
    Send/Recv/Isend/Irecv between ranks 0 and 1."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    if rank == 0:
        library = MPI.Get_library_version().strip("\x00 \n").split("\n")[0]  # Open MPI's ends in a NUL
        emit({"type": "peer", "impl": impl, "version": library, "library": library,
              "pml": os.environ.get("OMPI_MCA_pml", ""), "libucp": loaded_library("libucp"),
              "ranks": comm.Get_size(), "yield_when_idle": os.environ.get("OMPI_MCA_mpi_yield_when_idle", "")})
    if test in COLLECTIVES:
        try:
            wrong = run_collective(comm, test, sizes, iters, warmup, impl, dtype, op, root, validate, emit)
        except ValueError as e:  # the same bad argument on every rank: rank 0 says it once
            if rank == 0:
                emit({"type": "error", "usage": True, "message": f"Open MPI peer: {e}"})
            return 2
        return 0 if wrong == 0 else 1
    return point_to_point(comm, test, sizes, iters, warmup, impl, validate)


def point_to_point(comm, test: str, sizes: list[int], iters: int | None, warmup: int | None, impl: str,
                   validate: bool) -> int:
    """OSU's patterns between ranks 0 and 1 (rank 0 reports)."""
    import numpy as np
    from mpi4py import MPI

    rank = comm.Get_rank()
    peer = 1 - rank
    wrong_total = 0
    for size in sizes:
        n, w = default_iters(test, size)
        n, w = iters or n, warmup if warmup is not None else w
        send = ((np.arange(max(size, 1), dtype=np.int64) * 131 + size + rank * 17) % 251).astype(np.uint8)
        recv = np.zeros(max(size, 1), np.uint8)
        ack = np.zeros(1, np.uint8)
        sv, rv = [send[:size], MPI.BYTE], [recv[:size], MPI.BYTE]
        comm.Barrier()
        start = 0.0
        for i in range(w + n):
            if i == w:
                start = MPI.Wtime()
            if test in ("p2p-latency", "latency"):
                if rank == 0:
                    comm.Send(sv, 1, 1)
                    comm.Recv(rv, 1, 1)
                else:
                    comm.Recv(rv, 0, 1)
                    comm.Send(sv, 0, 1)
            elif test == "p2p-pingping":
                MPI.Request.Waitall([comm.Irecv(rv, peer, 1), comm.Isend(sv, peer, 1)])
            else:
                both = test == "p2p-bibw"
                reqs = []
                if both or rank == 1:
                    reqs += [comm.Irecv(rv, peer, 1) for _ in range(WINDOW)]
                if both or rank == 0:
                    reqs += [comm.Isend(sv, peer, 1) for _ in range(WINDOW)]
                MPI.Request.Waitall(reqs)
                if not both:
                    if rank == 0:
                        comm.Recv([ack, MPI.BYTE], 1, 2)
                    else:
                        comm.Send([ack, MPI.BYTE], 0, 2)
        mine = MPI.Wtime() - start
        elapsed = comm.allreduce(mine, op=MPI.MAX)
        received = test != "p2p-bw" or rank == 1
        wrong = 0
        if validate and received and size:
            want = ((np.arange(size, dtype=np.int64) * 131 + size + peer * 17) % 251).astype(np.uint8)
            wrong = int((recv[:size] != want).sum())
        wrong = comm.allreduce(wrong)
        wrong_total += wrong
        if rank == 0:
            if test in ("p2p-latency", "latency"):
                us = elapsed / n / 2 * 1e6
                bw = size / us / 1e3
            elif test == "p2p-pingping":
                us = elapsed / n * 1e6
                bw = size / us / 1e3
            else:
                us = elapsed / (n * WINDOW) * 1e6
                bw = size / us / 1e3 * (2 if test == "p2p-bibw" else 1)
            emit({"type": "result", "impl": impl, "test": test, "size": size, "iters": n, "warmup": w,
                  "time_us": us, "bw_gbs": bw, "wrong": wrong if validate else None})
    return 0 if wrong_total == 0 else 1


def local_mpirun_command(mpirun: str, program: list[str], mca: list[tuple[str, str]], pes: int = 2) -> list[str]:
    """mpirun with ``pes`` ranks on this node (more than its cores allowed: --oversubscribe)."""
    cmd = [mpirun, "--allow-run-as-root", "-np", str(pes), "--oversubscribe", "--bind-to", "none"]
    for key, value in mca:
        cmd += ["--mca", key, value]
    cmd += forwarded_environment()
    return cmd + program


def request_error(test: str, pes: int, nodes: int, dtype: str = "float32", op: str = "sum", root: int = 0) -> str:
    """Why the peer cannot run `test` so ("" if it can): checked before mpirun starts."""
    if test in COLLECTIVES and dtype not in DTYPES:
        return f"--dtype {dtype}: Open MPI 4 has no MPI type for it (the peer takes {', '.join(DTYPES)})"
    if test in COLLECTIVES and op not in OPS:
        return f"--op {op!r} is not one of {', '.join(OPS)}"
    if test in COLLECTIVES and not 0 <= root < pes:
        return f"--root {root} is not one of the {pes} ranks"
    if test in P2P_TESTS and pes != 2:
        return f"{test} runs on 2 ranks, not --pes {pes}"
    if pes < 1 or nodes < 1 or pes % nodes:
        return f"--pes {pes} does not divide over --nodes {nodes}"
    return ""


def oversubscribed(pes: int) -> bool:
    """Whether the ranks outnumber the cores this process may run on (emulated nodes share them)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return pes > cores


def rank_program_args(args: argparse.Namespace, impl: str) -> list[str]:
    """The command each rank runs under mpirun."""
    program = [sys.executable, "-m", "axon.tools.bench.mpi_peer", args.test, "--rank-program", impl,
               "--sizes", args.sizes]
    if args.iters:
        program += ["-i", str(args.iters)]
    if args.warmup is not None:
        program += ["-x", str(args.warmup)]
    if args.test in COLLECTIVES:
        program += ["--dtype", args.dtype, "--op", args.op, "--root", str(args.root)]
    if not args.validate:
        program.append("--no-validate")
    return program


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m axon.tools.bench.mpi_peer", description=__doc__.split("\n\n")[0])
    p.add_argument("test", nargs="?", default="p2p-latency", choices=TESTS)
    p.add_argument("--sizes", required=True, help="comma-separated message sizes in bytes")
    p.add_argument("-i", "--iters", type=int, default=None)
    p.add_argument("-x", "--warmup", type=int, default=None)
    p.add_argument("--nodes", type=int, default=2,
                   help="1: all ranks on this node; K > 1: --pes / K ranks on each of K emulated nodes")
    p.add_argument("--pes", type=int, default=2, help="ranks in all (the two-sided tests: 2)")
    p.add_argument("--dtype", default="float32", help="a collective's datatype (axon's name)")
    p.add_argument("--op", default="sum", help="a reduction's operator: sum, prod, min, max")
    p.add_argument("--root", type=int, default=0, help="broadcast's root rank")
    p.add_argument("--pml", default=None,
                   help="comma-separated point-to-point layers to run, of ucx and ob1 (default: ucx "
                        "across nodes, both on one node)")
    p.add_argument("--mca", nargs=2, action="append", metavar=("KEY", "VALUE"), default=None,
                   help="Open MPI MCA settings instead of --pml's")
    p.add_argument("--no-validate", dest="validate", action="store_false")
    p.add_argument("--mpirun", default=shutil.which("mpirun") or "mpirun")
    p.add_argument("--rank-program", default=None, help=argparse.SUPPRESS)  # run under mpirun: the impl
    args = p.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s]
    except ValueError:
        emit({"type": "error", "usage": True, "message": f"--sizes: not a list of integers: {args.sizes!r}"})
        return 2
    if args.rank_program:
        return rank_program(args.test, sizes, args.iters, args.warmup, args.rank_program, args.validate,
                            args.dtype, args.op, args.root)
    why = request_error(args.test, args.pes, args.nodes, args.dtype, args.op, args.root)
    if why:
        emit({"type": "error", "usage": True, "message": why})
        return 2
    if not shutil.which(args.mpirun):
        emit({"type": "error", "message": f"{args.mpirun} not found: install Open MPI (Debian: openmpi-bin)"})
        return 1
    if args.mca:
        runs = [("openmpi", [tuple(kv) for kv in args.mca])]
    else:
        names = (args.pml or ("ucx" if args.nodes > 1 else "ucx,ob1")).split(",")
        unknown = [n for n in names if n not in PMLS]
        if unknown:
            emit({"type": "error", "usage": True, "message": f"--pml takes ucx and ob1; got {args.pml!r}"})
            return 2
        runs = [(f"openmpi-{n}", list(PMLS[n])) for n in names]
    waits = [("mpi_yield_when_idle", "1")] if oversubscribed(args.pes) else []
    status = 0
    for impl, mca in runs:
        program = rank_program_args(args, impl)
        mca = list(mca) + waits
        if args.nodes == 1:
            status = subprocess.run(local_mpirun_command(args.mpirun, program, mca, args.pes)).returncode or status
            continue
        try:
            with EmulatedNodes(args.nodes) as nodes, tempfile.TemporaryDirectory(prefix="axon-mpi-") as tmp:
                hosts = [f"axon-node{k}" for k in range(args.nodes)]
                agent = os.path.join(tmp, "enter-node")
                with open(agent, "w") as f:
                    f.write(agent_script({h: nodes.enter_command(k) for k, h in enumerate(hosts)}))
                os.chmod(agent, stat.S_IRWXU)
                cmd = nodes.enter_command(0) + mpirun_command(args.mpirun, agent, hosts, program, mca,
                                                              args.pes // args.nodes)
                status = subprocess.run(cmd).returncode or status
        except EmulationError as e:
            emit({"type": "error", "message": str(e)})
            return 1
    return status


if __name__ == "__main__":
    sys.exit(main())
