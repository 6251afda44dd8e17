"""Open MPI over UCX as a comparison peer across emulated nodes: an mpi4py ping-pong (OSU
conventions) between two emulated nodes, for the latency axon's ``latency`` test measures there.

Run as root, where Open MPI's ``mpirun`` and mpi4py are installed::

    python -m axon.tools.mpi_peer --sizes 8,64,512 [-i ITERS] [-x WARMUP] [--mca KEY VALUE ...]

It makes two emulated nodes (``emulated_nodes.py``, as ``axon run --emulate-nodes 2`` does), runs
``mpirun`` inside node 0 with one rank per node, and starts node 1's Open MPI daemon through a
launch agent that enters node 1's namespaces instead of ssh (``plm_rsh_agent``). Open MPI runs with
``--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any`` (its UCX point-to-point layer,
over TCP between the nodes) unless ``--mca`` says otherwise. Each result is the one-way latency,
round trip / 2, of blocking Send/Recv of host (NumPy) buffers, as osu_latency measures it; mpi4py
adds its own call overhead (about a microsecond per call), which a C program would not pay.

Output: one JSON object per line (``result`` with ``impl`` "openmpi-ucx", or ``error``).
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

#: Open MPI's point-to-point layer on UCX, as the issue's baseline names it.
UCX_PML = (("pml", "ucx"), ("pml_ucx_tls", "any"), ("pml_ucx_devices", "any"))


def emit(record: dict) -> None:
    print(json.dumps(record), flush=True)


def agent_script(enter: dict[str, list[str]]) -> str:
    """A launch agent for ``plm_rsh_agent``: Open MPI calls it as ``agent HOST COMMAND...``; it
    runs COMMAND inside HOST's namespaces (``enter[HOST]``, a command prefix)."""
    cases = "\n".join(f"  {shlex.quote(host)}) exec {shlex.join(prefix)} /bin/sh -c \"$*\" ;;"
                      for host, prefix in enter.items())
    return ("#!/bin/sh\n# Made by axon.tools.mpi_peer: enter an emulated node instead of ssh.\n"
            "host=$1; shift\ncase \"$host\" in\n" + cases +
            "\n  *) echo \"mpi_peer agent: unknown node $host\" >&2; exit 1 ;;\nesac\n")


def mpirun_command(mpirun: str, agent: str, hosts: list[str], program: list[str],
                   mca: list[tuple[str, str]]) -> list[str]:
    """mpirun with one rank on each of ``hosts``, launched through ``agent``."""
    cmd = [mpirun, "--allow-run-as-root", "-np", str(len(hosts)), "--host", ",".join(f"{h}:1" for h in hosts),
           "--map-by", "node", "--bind-to", "none", "--mca", "plm", "rsh", "--mca", "plm_rsh_agent", agent]
    for key, value in mca:
        cmd += ["--mca", key, value]
    for name in ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH"):
        if name in os.environ:
            cmd += ["-x", name]
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


def pingpong(sizes: list[int], iters: int | None, warmup: int | None) -> None:
    """The MPI program (rank 0 reports): blocking Send/Recv ping-pong, one way = round trip / 2."""
    import numpy as np
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    if rank == 0:
        emit({"type": "peer", "impl": "openmpi-ucx", "library": MPI.Get_library_version().strip().split("\n")[0],
              "pml": os.environ.get("OMPI_MCA_pml", ""), "libucp": loaded_library("libucp")})
    for size in sizes:
        big = size > 8192
        n = iters if iters else (1000 if big else 10000)
        w = warmup if warmup is not None else (10 if big else 100)
        buf = np.zeros(max(size, 1), np.uint8)
        view = [buf[:size], MPI.BYTE]
        comm.Barrier()
        start = 0.0
        for i in range(w + n):
            if i == w:
                start = MPI.Wtime()
            if rank == 0:
                comm.Send(view, 1, 1)
                comm.Recv(view, 1, 1)
            else:
                comm.Recv(view, 0, 1)
                comm.Send(view, 0, 1)
        elapsed = MPI.Wtime() - start
        if rank == 0:
            one_way_us = elapsed / n / 2 * 1e6
            emit({"type": "result", "impl": "openmpi-ucx", "test": "latency", "size": size,
                  "time_us": one_way_us, "bw_gbs": size / one_way_us / 1e3, "iterations": n})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m axon.tools.mpi_peer", description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", required=True, help="comma-separated message sizes in bytes")
    p.add_argument("-i", "--iters", type=int, default=None)
    p.add_argument("-x", "--warmup", type=int, default=None)
    p.add_argument("--mca", nargs=2, action="append", metavar=("KEY", "VALUE"), default=None,
                   help="Open MPI MCA settings (default: the UCX PML, any transport and device)")
    p.add_argument("--mpirun", default=shutil.which("mpirun") or "mpirun")
    p.add_argument("--rank-program", action="store_true", help=argparse.SUPPRESS)  # run under mpirun
    args = p.parse_args(argv)
    try:
        sizes = [int(s) for s in args.sizes.split(",") if s]
    except ValueError:
        emit({"type": "error", "usage": True, "message": f"--sizes: not a list of integers: {args.sizes!r}"})
        return 2
    if args.rank_program:
        pingpong(sizes, args.iters, args.warmup)
        return 0
    if not shutil.which(args.mpirun):
        emit({"type": "error", "message": f"{args.mpirun} not found: install Open MPI (Debian: openmpi-bin)"})
        return 1
    mca = [tuple(kv) for kv in args.mca] if args.mca else list(UCX_PML)
    program = [sys.executable, "-m", "axon.tools.mpi_peer", "--rank-program", "--sizes", args.sizes]
    if args.iters:
        program += ["-i", str(args.iters)]
    if args.warmup is not None:
        program += ["-x", str(args.warmup)]
    try:
        with EmulatedNodes(2) as nodes, tempfile.TemporaryDirectory(prefix="axon-mpi-") as tmp:
            hosts = [f"axon-node{k}" for k in range(2)]
            agent = os.path.join(tmp, "enter-node")
            with open(agent, "w") as f:
                f.write(agent_script({h: nodes.enter_command(k) for k, h in enumerate(hosts)}))
            os.chmod(agent, stat.S_IRWXU)
            cmd = nodes.enter_command(0) + mpirun_command(args.mpirun, agent, hosts, program, mca)
            return subprocess.run(cmd).returncode
    except EmulationError as e:
        emit({"type": "error", "message": str(e)})
        return 1


if __name__ == "__main__":
    sys.exit(main())
