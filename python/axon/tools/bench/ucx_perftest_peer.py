"""ucx_perftest as a comparison peer of ``axon bench --compare --emulate-nodes``: UCX's own
benchmark, of the UCX axon loads, between the same two emulated nodes, right after axon's run.

Started on 2 PEs by axon's launcher (``axon bench`` does this; by hand)::

    python -m axon run -n 2 --emulate-nodes 2 --no-prefix python -m axon.tools.bench.ucx_perftest_peer
        TEST --sizes 8,64,... --perftest PATH [--libdir DIR] [-i ITERS] [-x WARMUP] [--port 13337]

PE 0 serves (``ucx_perftest -p PORT``, one server per test and size: it exits after one), PE 1 is
the client: it connects to PE 0's node (the host of AXON_STORE_ADDR), retrying while the server
starts, and prints the results. The tests that match axon's (``impl`` of each result line):

* ``latency`` (axon: put_signal ping-pong, one way): ``ucp_put_lat`` (a put whose last byte the
  target polls, ping-pong, one way) and ``ucp_am_lat`` (an active message ping-pong, one way);
* ``get_lat``: ``ucp_get`` (one blocking get at a time);
* ``atomic_lat``: ``ucp_fadd`` (one blocking 64-bit fetch-and-add at a time);
* ``put_bw`` and ``bw``: ``ucp_put_bw`` (puts streamed, time per message).

Times are ucx_perftest's overall averages (microseconds); bandwidth is bytes / time, as axon's
driver computes it (GB/s = 1e9 bytes per second). ucx_perftest checks no data. Output: one JSON
object per line (``peer``, ``result``, ``done`` or ``error``), read by :mod:`axon.tools.bench`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from .catalog import PERFTEST_TESTS

#: How long the client keeps trying to reach a server that is still starting.
CONNECT_WITHIN_S = 20.0


def emit(record: dict) -> None:
    print(json.dumps(record), flush=True)


def iterations(size: int, iters: int | None, warmup: int | None) -> tuple[int, int]:
    """OSU's defaults, as axon's driver uses them: fewer above 8 KiB."""
    big = size > 8192
    return (iters if iters and iters > 0 else (1000 if big else 10000),
            warmup if warmup is not None and warmup >= 0 else (10 if big else 100))


def parse_final(output: str) -> float | None:
    """The overall average time (us) of ucx_perftest's 'Final:' line, or None."""
    for line in output.splitlines():
        words = line.replace("|", " ").split()
        if "Final:" in words:
            i = words.index("Final:")
            try:
                return float(words[i + 4])  # iterations, typical, average, OVERALL latency
            except (IndexError, ValueError):
                return None
    return None


def server(perftest: str, port: int, timeout: float) -> None:
    proc = subprocess.run([perftest, "-p", str(port)], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"ucx_perftest server exited {proc.returncode}: {proc.stderr.strip()[-300:]}")


def client(perftest: str, host: str, port: int, test: str, size: int, iters: int, warmup: int,
           timeout: float) -> float:
    cmd = [perftest, host, "-p", str(port), "-t", test, "-s", str(size), "-n", str(iters), "-w", str(warmup)]
    end = time.monotonic() + CONNECT_WITHIN_S
    while True:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
        overall = parse_final(proc.stdout) if proc.returncode == 0 else None
        if overall is not None:
            return overall
        if time.monotonic() >= end:
            raise RuntimeError(f"{' '.join(cmd)} failed (exit {proc.returncode}): "
                               f"{(proc.stderr or proc.stdout).strip()[-300:]}")
        time.sleep(0.1)  # the server is not listening yet


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m axon.tools.bench.ucx_perftest_peer")
    ap.add_argument("test", choices=sorted(PERFTEST_TESTS))
    ap.add_argument("--sizes", required=True)
    ap.add_argument("--perftest", required=True, help="the ucx_perftest beside the UCX axon loads")
    ap.add_argument("--libdir", default="", help="the folder of the libucp it must load (LD_LIBRARY_PATH)")
    ap.add_argument("--port", type=int, default=13337)
    ap.add_argument("-i", dest="iters", type=int)
    ap.add_argument("-x", dest="warmup", type=int)
    ap.add_argument("--version", default="", help="the UCX version, for the peer line")
    args = ap.parse_args(argv)
    rank = int(os.environ.get("AXON_RANK", "0"))
    host = os.environ.get("AXON_STORE_ADDR", "127.0.0.1:0").rsplit(":", 1)[0]
    sizes = [int(s) for s in args.sizes.split(",") if s]
    timeout = float(os.environ.get("AXON_TIMEOUT", "300"))
    if args.libdir:
        old = os.environ.get("LD_LIBRARY_PATH")
        os.environ["LD_LIBRARY_PATH"] = args.libdir + (":" + old if old else "")
    try:
        if rank == 1:
            for test in PERFTEST_TESTS[args.test]:
                emit({"type": "peer", "impl": f"ucx_perftest {test}", "version": f"UCX {args.version}".strip()})
        for test in PERFTEST_TESTS[args.test]:
            for size in ([8] if args.test == "atomic_lat" else sizes):
                iters, warmup = iterations(size, args.iters, args.warmup)
                if rank == 0:
                    server(args.perftest, args.port, timeout)
                elif rank == 1:
                    us = client(args.perftest, host, args.port, test, size, iters, warmup, timeout)
                    emit({"type": "result", "impl": f"ucx_perftest {test}", "test": args.test, "size": size,
                          "iters": iters, "warmup": warmup, "time_us": us, "bw_gbs": size / (us * 1e3),
                          "wrong": None})
        if rank == 1:
            emit({"type": "done", "wrong": 0})
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        if rank == 1:
            emit({"type": "error", "message": f"ucx_perftest peer: {exc}"})
        print(f"ucx_perftest peer (PE {rank}): {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
