"""Strong scaling of examples/jacobi: time per sweep for each N and PE count, every mode run
beside the staged baseline in the same invocation, as a Markdown table of times and ratios.

    python examples/jacobi/scaling.py --n 1024 4096 --pes 1 2 4 --iters 1000
        [--modes staged twosided stream device] [--jacobi build/examples/jacobi] [--json out.jsonl]

Ratio: the mode's time per sweep over the baseline's (--baseline, default staged; below 1: faster). Each run is
launched through axon's launcher; --check is left to the tests (it solves serially on PE 0).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path


def run_one(jacobi: str, pes: int, n: int, iters: int, mode: str) -> dict:
    # `axon run` as a user types it; unprefixed lines, so that the JSON line is found as printed.
    cmd = [sys.executable, "-m", "axon", "run", "-n", str(pes), "--no-prefix", jacobi, "--n", str(n),
           "--iters", str(iters), "--mode", mode, "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600)
    for line in proc.stdout.splitlines():
        if line.startswith('{"app": "jacobi"'):
            return json.loads(line)
    raise SystemExit(f"scaling: {' '.join(cmd[2:])} failed (status {proc.returncode}):\n{proc.stderr[-2000:]}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs="+", default=[1024, 4096])
    p.add_argument("--pes", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--iters", type=int, default=1000)
    p.add_argument("--modes", nargs="+", default=["staged", "twosided", "stream", "device"])
    p.add_argument("--baseline", default="staged", help="the mode the others are divided by (default: staged; "
                   "twosided on the host backend)")
    p.add_argument("--jacobi", default=str(Path(__file__).resolve().parents[2] / "build" / "examples" / "jacobi"))
    p.add_argument("--json", help="append every result as a JSON line to this file")
    a = p.parse_args()
    modes = [a.baseline] + [m for m in a.modes if m != a.baseline]
    print("| N | PEs | " + " | ".join(f"{m} us/sweep" for m in modes) + " | "
          + " | ".join(f"{m}/{a.baseline}" for m in modes[1:]) + " |")
    print("|" + "---|" * (2 + 2 * len(modes) - 1))
    for n in a.n:
        for pes in a.pes:
            results = [run_one(a.jacobi, pes, n, a.iters, m) for m in modes]
            if a.json:
                with open(a.json, "a") as f:
                    for r in results:
                        f.write(json.dumps(r) + "\n")
            sums = {r["interior_sum"] for r in results}
            if len(sums) != 1:
                raise SystemExit(f"scaling: the modes disagree at N {n}, {pes} PEs: {sums}")
            base = results[0]["sec_per_sweep"]
            times = " | ".join(f"{r['sec_per_sweep'] * 1e6:.1f}" for r in results)
            ratios = " | ".join(f"{r['sec_per_sweep'] / base:.2f}" for r in results[1:])
            print(f"| {n} | {pes} | {times} | {ratios} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
