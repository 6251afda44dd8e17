"""The alpha-beta model of axon's collectives across nodes: for N nodes, P PEs a node and a call of
n bytes (nccl-tests' size, as ``axon bench`` reports it), the time of the algorithm axon picks as

    T = alpha * rounds + beta * bytes

where rounds are the network rounds on the critical path (each waits for a message from another
node) and bytes the bytes the busiest node sends over its link. alpha is a put_signal round trip
between two nodes and beta the seconds per byte of one link (1 / two-sided bandwidth at 4 MiB);
both are fitted from two measurements (docs/performance.md, "The alpha-beta model").

The algorithms and their thresholds are those of src/coll/hierarchy.cpp and plan.cpp
(makeLeaderPlan): the steps inside a node (shared memory) are not counted, nor the reductions'
arithmetic. Used by docs/performance.md's tables::

    python -m axon.tools.coll_model --alpha-us 14 --beta-gbs 2.4 [--pes-per-node 1] [--nodes 2,3,64]
        [--sizes 8,65536,1048576,4194304] [--crossovers | --references]
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from typing import Sequence

KIB = 1024
MIB = 1024 * KIB

#: AXON_COLL_BUFFER's default: the bytes of one round among the node leaders.
LEADER_ROUND = 256 * KIB
#: kNetRoundMax less the slot's header (coll/net_workspace.hpp): a direct-level round's data.
DIRECT_ROUND = 64 * KIB - 64
#: Direct-level rounds in flight per PE (netDepth): a step publishes up to DEPTH - 1 ahead.
DIRECT_DEPTH = 8
#: makeLeaderPlan: allreduce doubles up to this many bytes, else rings.
DOUBLING_MAX = 64 * KIB
#: plan.cpp's choose(): broadcast takes the chain from this size on 3 or more members.
CHAIN_MIN = 1 * MIB
#: makeLeaderPlan: allgather rings from this total size on 3 or more leaders.
ALLGATHER_RING_MIN = 256 * KIB

COLLECTIVES = ("allreduce", "allgather", "alltoall", "broadcast")


@dataclass(frozen=True)
class Cost:
    """One collective's predicted cost: the algorithm among nodes, its rounds and bytes per node."""

    algorithm: str
    rounds: float
    wire_bytes: float

    def seconds(self, alpha: float, beta: float) -> float:
        return alpha * self.rounds + beta * self.wire_bytes


def _ceil_div(a: float, b: float) -> int:
    return max(int(math.ceil(a / b)), 1)


def doubling(nodes: int, n: int, round_bytes: int = LEADER_ROUND) -> Cost:
    """Recursive doubling among leaders: log2 of the largest power of two <= N exchanges of the
    whole buffer per chunk; the others fold into a partner first and get the result back (2 rounds,
    one more buffer sent by the partner)."""
    p2 = 1 << (nodes.bit_length() - 1)
    steps = p2.bit_length() - 1
    folded = nodes > p2
    chunks = _ceil_div(n, round_bytes)
    return Cost("recursive_doubling", chunks * (steps + (2 if folded else 0)), n * (steps + (1 if folded else 0)))


def ring_allreduce(nodes: int, n: int, round_bytes: int = LEADER_ROUND) -> Cost:
    """Ring among leaders: 2(N-1) steps per chunk of N segments; each node sends 2(N-1)/N of it."""
    chunks = _ceil_div(n, round_bytes * nodes)
    return Cost("ring", chunks * 2 * (nodes - 1), 2 * (nodes - 1) / nodes * n)


def oneshot_broadcast(nodes: int, n: int, round_bytes: int = LEADER_ROUND) -> Cost:
    """The root's leader puts every chunk to each other leader: its link carries (N-1) n."""
    return Cost("oneshot", _ceil_div(n, round_bytes), (nodes - 1) * n)


def chain_broadcast(nodes: int, n: int, round_bytes: int = LEADER_ROUND) -> Cost:
    """A chain root, root+1, ... pipelined in chunks of n/8 (16 KiB to a round): chunks + N - 2
    steps of one chunk each (plan.cpp's chainSteps)."""
    chunk = min(max(_ceil_div(n, 8), 16 * KIB), round_bytes)
    chunks = _ceil_div(n, chunk)
    steps = chunks + nodes - 2
    return Cost("chain", steps, steps * min(chunk, n))


def allgather_leaders(nodes: int, n: int, ring: bool, round_bytes: int = LEADER_ROUND) -> Cost:
    """Each leader's node block (n / N, its PEs' blocks packed) to every other leader: one-shot
    (all at once) or a ring of N-1 steps; each node sends (N-1)/N n either way."""
    chunks = _ceil_div(n / nodes, round_bytes)
    return Cost("ring" if ring else "oneshot", chunks * ((nodes - 1) if ring else 1), (nodes - 1) / nodes * n)


def alltoall_direct(nodes: int, per_node: int, n: int) -> Cost:
    """Pairwise and direct: each PE sends a block of n / (N P) to each of the P (N-1) PEs of other
    nodes, in messages of DIRECT_ROUND, DEPTH - 1 ahead of the one it waits for; a node's link
    carries its P PEs' (N-1)/N n each."""
    block = n / (nodes * per_node)
    messages = per_node * (nodes - 1) * _ceil_div(block, DIRECT_ROUND)
    return Cost("pairwise", _ceil_div(messages, DIRECT_DEPTH - 1), per_node * (nodes - 1) / nodes * n)


def halving_doubling(nodes: int, n: int) -> Cost:
    """Not in axon (a reference for many nodes): reduce-scatter by recursive halving, then
    allgather by recursive doubling, on a power of two of nodes: 2 log2 N rounds, 2(N-1)/N n bytes."""
    steps = max((nodes - 1).bit_length(), 1)
    return Cost("halving_doubling", 2 * steps, 2 * (nodes - 1) / nodes * n)


def binomial_broadcast(nodes: int, n: int) -> Cost:
    """Not in axon (a reference for many nodes): a binomial tree, log2 N rounds of the whole buffer."""
    steps = max((nodes - 1).bit_length(), 1)
    return Cost("binomial_tree", steps, steps * n)


def axon_cost(collective: str, nodes: int, per_node: int, n: int, round_bytes: int = LEADER_ROUND) -> Cost:
    """The cost of the algorithm axon picks across `nodes` nodes (of `per_node` PEs each)."""
    if nodes < 2 or per_node < 1:
        raise ValueError(f"the model is of teams across 2 or more nodes of 1 or more PEs (got {nodes} x {per_node})")
    if collective == "allreduce":
        return doubling(nodes, n, round_bytes) if n <= DOUBLING_MAX else ring_allreduce(nodes, n, round_bytes)
    if collective == "broadcast":
        chain = n >= CHAIN_MIN and nodes >= 3
        return chain_broadcast(nodes, n, round_bytes) if chain else oneshot_broadcast(nodes, n, round_bytes)
    if collective == "allgather":
        return allgather_leaders(nodes, n, nodes >= 3 and n >= ALLGATHER_RING_MIN, round_bytes)
    if collective == "alltoall":
        return alltoall_direct(nodes, per_node, n)
    raise ValueError(f"the model has {', '.join(COLLECTIVES)}, not {collective!r}")


def crossover(cost_a, cost_b, alpha: float, beta: float, lo: int = 8, hi: int = 1 << 34) -> int | None:
    """The smallest size (bytes, a power of two between lo and hi) from which cost_b(n) is below
    cost_a(n), if cost_a(lo) <= cost_b(lo); else None. cost_x: n -> Cost."""
    n = lo
    if cost_b(n).seconds(alpha, beta) < cost_a(n).seconds(alpha, beta):
        return None
    while n <= hi:
        if cost_b(n).seconds(alpha, beta) < cost_a(n).seconds(alpha, beta):
            return n
        n *= 2
    return None


def size_text(n: float) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", MIB), ("KiB", KIB)):
        if n >= size:
            v = n / size
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.1f} {unit}"
    return f"{n:.0f} B"


def time_text(seconds: float) -> str:
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


def prediction_lines(alpha: float, beta: float, nodes: Sequence[int], per_node: int, sizes: Sequence[int]) -> list[str]:
    """A Markdown table: the predicted time of each collective for each node count and size."""
    lines = ["| collective | nodes | " + " | ".join(size_text(s) for s in sizes) + " |",
             "| --- | --- | " + " | ".join("---" for _ in sizes) + " |"]
    for c in COLLECTIVES:
        for k in nodes:
            cells = []
            for s in sizes:
                cost = axon_cost(c, k, per_node, s)
                cells.append(f"{time_text(cost.seconds(alpha, beta))} ({cost.algorithm})")
            lines.append(f"| {c} | {k} | " + " | ".join(cells) + " |")
    return lines


def crossover_lines(alpha: float, beta: float, nodes: Sequence[int]) -> list[str]:
    """A Markdown table of where, by the model, one algorithm overtakes the other, against where
    axon switches."""
    lines = ["| nodes | allreduce: ring beats doubling from (axon: > 64 KiB) | broadcast: chain beats "
             "one-shot from (axon: >= 1 MiB, 3+ nodes) | allgather: ring vs one-shot (axon: ring >= 256 KiB, 3+ nodes) |",
             "| --- | --- | --- | --- |"]
    for k in nodes:
        ring = crossover(lambda s: doubling(k, s), lambda s: ring_allreduce(k, s), alpha, beta)
        chain = crossover(lambda s: oneshot_broadcast(k, s), lambda s: chain_broadcast(k, s), alpha, beta)
        extra = allgather_leaders(k, 4 * MIB, True).rounds - allgather_leaders(k, 4 * MIB, False).rounds
        lines.append(f"| {k} | {size_text(ring) if ring else 'never'} | "
                     f"{size_text(chain) if chain else ('always' if k >= 3 else 'never')} | "
                     f"same bytes per node; the ring adds {extra:.0f} rounds at 4 MiB "
                     f"({time_text(extra * alpha)}) |")
    return lines


def reference_lines(alpha: float, beta: float, nodes: Sequence[int], sizes: Sequence[int]) -> list[str]:
    """A Markdown table: axon's allreduce and broadcast against algorithms it does not have."""
    lines = ["| collective | nodes | size | axon's algorithm | predicted | reference algorithm | predicted |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for c, ref in (("allreduce", halving_doubling), ("broadcast", binomial_broadcast)):
        for k in nodes:
            for s in sizes:
                mine, other = axon_cost(c, k, 1, s), ref(k, s)
                lines.append(f"| {c} | {k} | {size_text(s)} | {mine.algorithm} | {time_text(mine.seconds(alpha, beta))} "
                             f"| {other.algorithm} | {time_text(other.seconds(alpha, beta))} |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m axon.tools.coll_model", description=__doc__.split("\n\n")[0])
    p.add_argument("--alpha-us", type=float, required=True, help="a put_signal round trip between nodes (us)")
    p.add_argument("--beta-gbs", type=float, required=True, help="two-sided bandwidth at 4 MiB (GB/s)")
    p.add_argument("--pes-per-node", type=int, default=1)
    p.add_argument("--nodes", default="2,3,4,8,16,32,64")
    p.add_argument("--sizes", default="8,65536,1048576,4194304")
    p.add_argument("--crossovers", action="store_true", help="print where the algorithms cross instead")
    p.add_argument("--references", action="store_true",
                   help="print axon's allreduce and broadcast beside halving-doubling and a binomial tree instead")
    args = p.parse_args(argv)
    if args.alpha_us <= 0 or args.beta_gbs <= 0 or args.pes_per_node < 1:
        p.error("--alpha-us and --beta-gbs must be positive, --pes-per-node at least 1")
    try:
        nodes = [int(x) for x in args.nodes.split(",") if x]
        sizes = [int(x) for x in args.sizes.split(",") if x]
    except ValueError:
        p.error("--nodes and --sizes take comma-separated integers")
    if any(k < 2 for k in nodes) or any(s < 1 for s in sizes):
        p.error("--nodes are 2 or more, --sizes 1 byte or more")
    alpha, beta = args.alpha_us * 1e-6, 1 / (args.beta_gbs * 1e9)
    if args.crossovers:
        lines = crossover_lines(alpha, beta, nodes)
    elif args.references:
        lines = reference_lines(alpha, beta, nodes, sizes)
    else:
        lines = prediction_lines(alpha, beta, nodes, args.pes_per_node, sizes)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
