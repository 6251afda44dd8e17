"""The alpha-beta model of the collectives across nodes (axon.tools.coll_model): each algorithm's
rounds and bytes per node, the choice it mirrors from src/coll/plan.cpp, the crossovers, and its
command line."""

from __future__ import annotations

import pytest

from axon.tools import coll_model as m

KIB, MIB = 1024, 1024 * 1024


def test_doubling_rounds_and_bytes_with_and_without_a_fold():
    assert m.doubling(2, 8) == m.Cost("recursive_doubling", 1, 8)
    assert m.doubling(8, 1000) == m.Cost("recursive_doubling", 3, 3000)
    # 3 nodes: one folds into its partner (2 more rounds), which sends the result back (n more).
    assert m.doubling(3, 8) == m.Cost("recursive_doubling", 3, 16)
    # Above a round (AXON_COLL_BUFFER) the doubling runs once per chunk.
    assert m.doubling(2, 1 * MIB).rounds == 4


def test_ring_allreduce_sends_2_n_minus_1_over_n_in_2_n_minus_1_steps_per_chunk():
    assert m.ring_allreduce(4, 4 * MIB) == m.Cost("ring", 4 * 6, 1.5 * 4 * MIB)  # chunks of 4 x 256 KiB
    assert m.ring_allreduce(64, 8) == m.Cost("ring", 126, 2 * 63 / 64 * 8)


def test_broadcast_one_shot_and_chain():
    assert m.oneshot_broadcast(4, 1 * MIB) == m.Cost("oneshot", 4, 3 * MIB)
    # 1 MiB in 8 chunks of 128 KiB along 4 nodes: 8 + 2 steps of one chunk each.
    assert m.chain_broadcast(4, 1 * MIB) == m.Cost("chain", 10, 10 * 128 * KIB)
    # Small calls: 16 KiB chunks, never more than the call.
    assert m.chain_broadcast(3, 100) == m.Cost("chain", 2, 200)


def test_alltoall_counts_the_messages_of_every_pe_of_a_node():
    # 2 nodes x 2 PEs, 1 MiB: blocks of 256 KiB, 5 messages of at most 64 KiB less the header to
    # each of 2 remote PEs = 10 messages, 7 ahead: 2 rounds; the node sends 2 x 512 KiB.
    c = m.alltoall_direct(2, 2, 1 * MIB)
    assert c == m.Cost("pairwise", 2, 1 * MIB)
    assert m.alltoall_direct(2, 1, 8) == m.Cost("pairwise", 1, 4)


@pytest.mark.parametrize("collective,nodes,size,algorithm", [
    ("allreduce", 2, 64 * KIB, "recursive_doubling"),
    ("allreduce", 2, 64 * KIB + 4, "ring"),
    ("broadcast", 2, 4 * MIB, "oneshot"),
    ("broadcast", 3, 1 * MIB, "chain"),
    ("broadcast", 3, 1 * MIB - 4, "oneshot"),
    ("allgather", 2, 4 * MIB, "oneshot"),
    ("allgather", 3, 256 * KIB, "ring"),
    ("allgather", 3, 128 * KIB, "oneshot"),
    ("alltoall", 64, 8, "pairwise"),
])
def test_the_algorithm_is_the_one_axon_picks(collective, nodes, size, algorithm):
    assert m.axon_cost(collective, nodes, 1, size).algorithm == algorithm


def test_time_is_alpha_rounds_plus_beta_bytes():
    alpha, beta = 10e-6, 1 / 2e9
    c = m.axon_cost("allreduce", 2, 1, 4 * MIB)  # ring, 8 chunks of 2 x 256 KiB, 2 steps each
    assert c.rounds == 16 and c.wire_bytes == 4 * MIB
    assert c.seconds(alpha, beta) == pytest.approx(16 * 10e-6 + 4 * MIB / 2e9)
    with pytest.raises(ValueError, match="2 or more nodes"):
        m.axon_cost("allreduce", 1, 1, 8)
    with pytest.raises(ValueError, match="not 'reduce'"):
        m.axon_cost("reduce", 2, 1, 8)


def test_crossovers():
    alpha, beta = 14e-6, 1 / 2.4e9
    # On 2 nodes the ring sends what doubling sends, in more rounds: it never wins.
    assert m.crossover(lambda s: m.doubling(2, s), lambda s: m.ring_allreduce(2, s), alpha, beta) is None
    # On 64 nodes doubling sends 6 n against the ring's 2 n but in 6 rounds against 126.
    at = m.crossover(lambda s: m.doubling(64, s), lambda s: m.ring_allreduce(64, s), alpha, beta)
    assert at is not None and 64 * KIB < at <= 4 * MIB
    assert m.doubling(64, at).seconds(alpha, beta) > m.ring_allreduce(64, at).seconds(alpha, beta)
    assert m.doubling(64, at // 2).seconds(alpha, beta) <= m.ring_allreduce(64, at // 2).seconds(alpha, beta)


def test_the_command_prints_the_tables(capsys):
    assert m.main(["--alpha-us", "14", "--beta-gbs", "2.4", "--nodes", "2,64", "--sizes", "8,4194304"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "| collective | nodes | 8 B | 4 MiB |"
    assert "| allreduce | 2 | 14.0 us (recursive_doubling) |" in out[2]
    assert m.main(["--alpha-us", "14", "--beta-gbs", "2.4", "--nodes", "2,3", "--crossovers"]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[2].startswith("| 2 | never | never |") and rows[3].startswith("| 3 | ")
    with pytest.raises(SystemExit):
        m.main(["--alpha-us", "0", "--beta-gbs", "2.4"])


def test_the_references_axon_does_not_have():
    assert m.halving_doubling(64, 1 * MIB) == m.Cost("halving_doubling", 12, 2 * 63 / 64 * MIB)
    assert m.halving_doubling(2, 8) == m.Cost("halving_doubling", 2, 8)
    assert m.binomial_broadcast(64, 100) == m.Cost("binomial_tree", 6, 600)
    assert m.binomial_broadcast(3, 100).rounds == 2
    assert m.main(["--alpha-us", "14", "--beta-gbs", "2.4", "--nodes", "64", "--sizes", "65536", "--references"]) == 0


def test_the_module_runs_as_a_program():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "axon.tools.coll_model", "--alpha-us", "14", "--beta-gbs", "2.4",
                           "--nodes", "3", "--sizes", "8"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "| allreduce | 3 | 42.0 us (recursive_doubling) |" in done.stdout
