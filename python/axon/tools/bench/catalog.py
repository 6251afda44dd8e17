"""The tests ``axon bench`` runs, the columns each shows, and the tests of the peers that share them.

The lowest module of the package: the names of the tests are needed by the options, their
validation, the space tests' runner and the peer programs alike, so they live here and import
none of those."""

from __future__ import annotations

from dataclasses import dataclass

from ...collectives import ReduceOp


@dataclass(frozen=True)
class TestSpec:
    """How `axon bench` shows one test: the main column(s) of its table."""

    metric: str          # "latency" or "bandwidth"
    summary: str         # one line for --help and the table's title
    columns: tuple       # (JSON field, heading) pairs, main column first


_LAT = ("time_us", "Latency (us)")
_BW = ("bw_gbs", "Bandwidth (GB/s)")

TESTS: dict[str, TestSpec] = {
    "latency": TestSpec("latency", "put_signal ping-pong, ONE-WAY latency = round trip / 2 (osu_latency)",
                        (_LAT,)),
    "bw": TestSpec("bandwidth", "windows of 64 put_nbi, quiet, signal, ack per window (osu_bw)", (_BW,)),
    "bibw": TestSpec("bandwidth", "both PEs run the bw pattern at once; sum of both (osu_bibw)",
                     (("bw_gbs", "Bi-Bandwidth (GB/s)"),)),
    "pingping": TestSpec("bandwidth", "both PEs put_signal to each other at once; time per exchange, "
                                      "bandwidth = bytes sent by ONE PE / time",
                         (("time_us", "Time (us)"), _BW)),
    "put_lat": TestSpec("latency", "blocking put + quiet, one message at a time", (_LAT,)),
    "get_lat": TestSpec("latency", "blocking get, one message at a time", (_LAT,)),
    "put_bw": TestSpec("bandwidth", "windows of 64 put_nbi, then quiet", (_BW,)),
    "get_bw": TestSpec("bandwidth", "windows of 64 get_nbi, then quiet", (_BW,)),
    "put_signal_rtt": TestSpec("latency", "put_signal ping-pong, reported as the ROUND TRIP",
                               (("time_us", "Round trip (us)"),)),
    "atomic_lat": TestSpec("latency", "blocking 64-bit fetch_add, one at a time (8 bytes, whatever -m says)",
                           (_LAT,)),
    "p2p-latency": TestSpec("latency", "send/recv ping-pong, ONE-WAY latency = round trip / 2 (osu_latency)",
                            (_LAT,)),
    "p2p-bw": TestSpec("bandwidth", "windows of 64 isend/irecv, a 4-byte ack per window (osu_bw)", (_BW,)),
    "p2p-bibw": TestSpec("bandwidth", "both PEs run the p2p-bw pattern at once; sum of both (osu_bibw)",
                         (("bw_gbs", "Bi-Bandwidth (GB/s)"),)),
    "p2p-pingping": TestSpec("bandwidth", "both PEs isend and irecv at once; time per exchange, "
                                          "bandwidth = bytes sent by ONE PE / time",
                             (("time_us", "Time (us)"), _BW)),
}

#: The two-sided tests (send/recv).
P2P_TESTS = frozenset(t for t in TESTS if t.startswith("p2p-"))

#: The collectives, measured on every PE with nccl-tests conventions (size, count, type, redop,
#: root, time, algbw, busbw, #wrong; out of place, then in place).
COLLECTIVES: dict[str, str] = {
    "allreduce": "allreduce over all PEs; busbw = algbw * 2(n-1)/n",
    "broadcast": "broadcast from --root; busbw = algbw",
    "reduce": "reduce to --root; busbw = algbw",
    "allgather": "allgather, size = the output; busbw = algbw * (n-1)/n",
    "reduce_scatter": "reduce_scatter, size = the input; busbw = algbw * (n-1)/n",
    "alltoall": "alltoall, size = either buffer; busbw = algbw * (n-1)/n",
}
for _name, _summary in COLLECTIVES.items():
    TESTS[_name] = TestSpec("bandwidth", _summary, (("time_us", "Time (us)"), ("bw_gbs", "Bus bandwidth (GB/s)")))

#: The reduction operators, as --op takes them.
OPS = tuple(op.name.lower() for op in ReduceOp)

#: The space tests (run by space.py, on their own path): summary, driver program (built in bench/,
#: or tests/perf/ for space-reassembly, which measures the library's internal pieces), its subcommand.
SPACE_TESTS: dict[str, tuple[str, str, str]] = {
    "space-put-get": ("staging space: put and get of GPU data, axon vs the host-staged and pinned-staged "
                      "baselines, same node and over UCX", "space_bench", "put-get"),
    "space-reassembly": ("staging space: one box from many pieces; CPU rows, memcpy per row, kernel per "
                         "piece, fused kernel, as shares of memcpy", "space_reassembly_bench", "reassembly"),
    "space-small-puts": ("staging space: -i N nonblocking puts of -m BYTES, batching off then on",
                         "space_client_bench", "small-puts"),
    "space-workflow": ("staging space: --writers M x --readers N in different decompositions, a slow "
                       "reader, the server's memory high-water mark", "space_client_bench", "workflow"),
}

#: axon's test -> the ucx_perftest tests compared with it (the peer program runs them, peers.py
#: notes where it is compared).
PERFTEST_TESTS: dict[str, tuple[str, ...]] = {
    "latency": ("ucp_put_lat", "ucp_am_lat"),
    "get_lat": ("ucp_get",),
    "atomic_lat": ("ucp_fadd",),
    "put_bw": ("ucp_put_bw",),
    "bw": ("ucp_put_bw",),
}
