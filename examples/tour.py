"""The tour `make demo` runs: axon's examples on the host backend, each saying what it verified.

    python examples/tour.py [--build build] [--pes 4]

1. the ring halo exchange (put_signal between neighbours; every value checked);
2. Jacobi in two modes, host put_signal and two-sided isend/irecv, with their times per sweep;
   both results compared bit for bit with a serial solve;
3. the in-situ workflow through a staging server embedded in this process: a simulation puts
   three variables per step, an analysis with another decomposition gets them and checks its
   statistics against the ones computed inside the simulation.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import axon.space

ROOT = Path(__file__).resolve().parents[1]


def run(title: str, args: list[str], env: dict[str, str]) -> float:
    """Runs one example through `axon run`, its output indented; raises on failure."""
    print(f"\n== {title}\n   $ axon run {' '.join(args)}", flush=True)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "axon", "run", "--no-prefix", *args], env=env,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=300)
    for line in proc.stdout.splitlines():
        if "warn:" not in line:
            print(f"   {line}")
    if proc.returncode != 0:
        raise SystemExit(f"tour: '{title}' failed (exit status {proc.returncode})")
    return time.monotonic() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=str(ROOT / "build"), help="the CMake build tree (default: build)")
    parser.add_argument("--pes", type=int, default=4, help="PEs per example (default: 4)")
    args = parser.parse_args()
    examples = Path(args.build) / "examples"
    missing = [p for p in ("ring_halo", "jacobi", "insitu") if not (examples / p).is_file()]
    if missing:
        print(f"tour: {', '.join(missing)} not built in {examples}: run 'make build' first", file=sys.stderr)
        return 2
    env = dict(os.environ, AXON_BACKEND="host")
    n = str(args.pes)
    start = time.monotonic()
    run("Ring halo exchange: put_signal to both neighbours, every value checked",
        ["-n", n, str(examples / "ring_halo"), "65536", "300"], env)
    for mode in ("host", "twosided"):
        run(f"Jacobi, mode {mode}: 256 x 256 interior, 500 sweeps, checked against a serial solve",
            ["-n", n, str(examples / "jacobi"), "--n", "256", "--iters", "500", "--mode", mode, "--check"], env)
    with axon.space.Server(listen="127.0.0.1:0", mem="256M") as server:
        print(f"\n   (a staging server embedded in this process, at {server.address})")
        run("In-situ workflow: simulation and analysis coupled through the staging space",
            ["-n", n, str(examples / "insitu"), "--sim-pes", str(max(1, args.pes // 2)), "--grid", "48",
             "--steps", "20"], dict(env, AXON_SPACE_ADDR=server.address, AXON_SPACE_KEY=server.key))
        stats = server.stats()
    print(f"\n   the server held at most {stats.get('high_water', 0) / 2**20:.1f} MiB")
    print(f"\ntour: every example verified its results, in {time.monotonic() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
