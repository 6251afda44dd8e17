"""The command line of ``axon bench``: its description and its options, as typed."""

from __future__ import annotations

import argparse

from .catalog import SPACE_TESTS, TESTS
from .space import add_space_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The description and the options of ``axon bench`` (see request.validate for their checks)."""
    tests = "\n".join([f"  {name:15s} {spec.summary}" for name, spec in TESTS.items()]
                      + [f"  {name:17s} {summary}" for name, (summary, _, _) in SPACE_TESTS.items()])
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.description = (
        "Benchmark axon's one-sided API between PE 0 and PE 1 (OSU micro-benchmark conventions)\n"
        "and its collectives on --pes PEs (nccl-tests conventions) over a sweep of sizes. Tests:\n"
        + tests + "\n\n"
        "Times in microseconds; bandwidth in GB/s = 1e9 bytes per second. The receiver checks\n"
        "every byte of the last transfer of each size (#wrong) unless --no-validate.")
    # Optional for argparse: `-d H H latency`, whose -d takes one to three values, leaves the test
    # among -d's (see spellings.take_test).
    parser.add_argument("test", metavar="TEST", nargs="?", help="the test to run (see above)")
    parser.add_argument("-m", "--message-size", dest="range", metavar="MIN:MAX",
                        help="sizes MIN..MAX (e.g. 8:1M; K/M/G are binary); default 1:4M")
    parser.add_argument("-b", "--minbytes", metavar="MIN", help="smallest size (as nccl-tests)")
    parser.add_argument("-e", "--maxbytes", metavar="MAX", help="largest size (as nccl-tests)")
    parser.add_argument("-f", "--stepfactor", metavar="FACTOR",
                        help="multiply the size by FACTOR from one step to the next (default 2)")
    parser.add_argument("-i", "-n", "--iterations", "--iters", dest="iters", metavar="ITERS",
                        help="timed iterations per size (windows for the bw tests); -i as OSU, -n as "
                             "nccl-tests; default as OSU: 10000 (100 windows), above 8 KiB 1000 (20 windows)")
    parser.add_argument("-x", "-w", "--warmup", "--warmup_iters", dest="warmup", metavar="WARMUP",
                        help="untimed iterations first (-x as OSU, -w as nccl-tests); default as OSU: "
                             "100 (10), above 8 KiB 10 (2)")
    parser.add_argument("-d", "--placement", nargs="+", metavar="LOCAL REMOTE",
                        help="buffers: D (GPU memory) or H (host memory) for the local source and "
                             "the remote destination (p2p-*: PE 0's and PE 1's buffers); default D D "
                             "with a GPU, else H H. OSU's -d cuda D D is -d D D; for the collectives, "
                             "-d D (or H) places every buffer and -d TYPE is nccl-tests' datatype")
    parser.add_argument("-c", "--check", metavar="0|1",
                        help="as nccl-tests: 0 does not check the data received (--no-validate), 1 does")
    parser.add_argument("-g", "--ngpus", metavar="N",
                        help="as nccl-tests: N GPUs, one PE each (the same as --pes N)")
    parser.add_argument("-t", "--nthreads", metavar="N", help=argparse.SUPPRESS)  # refused, see request.py
    parser.add_argument("--no-validate", action="store_true", help="do not check the data received")
    parser.add_argument("--pes", metavar="N",
                        help="PEs to start (default 2; in the one-sided tests PEs past 1 only join the barriers, "
                             "collectives run on all)")
    parser.add_argument("--emulate-nodes", metavar="K",
                        help="run the PEs on K emulated nodes (axon run --emulate-nodes: namespaces "
                             "joined by a bridge, UCX over TCP between them; needs root); --pes must be "
                             "a multiple of K, PE 0 and PE 1 then sit on different nodes when K = --pes")
    parser.add_argument("--trials", metavar="T",
                        help="collectives: time each size T times (ITERS calls each, after the -x warmup calls) and "
                             "report the median, for axon and the NCCL rows the driver runs beside it "
                             "(default 1, as nccl-tests; the program peers keep their own conventions)")
    parser.add_argument("--settle-ms", metavar="MS",
                        help="before the first size, PE 0 and PE 1 ping-pong this long so that idle "
                             "(virtual) CPUs are up to speed (default 200; 0: off)")
    parser.add_argument("--dtype", "--datatype", dest="dtype", metavar="TYPE",
                        help="collectives: element type (default float32; nccl-tests' float, half, "
                             "double, int too)")
    parser.add_argument("-o", "--op", metavar="OP", help="collectives: sum, prod, min or max (default sum)")
    parser.add_argument("-r", "--root", metavar="PE", help="broadcast and reduce: the root (default 0)")
    parser.add_argument("--via-host", action="store_true",
                        help="pingping on GPU buffers staged through host memory by hand: copy to a "
                             "pinned host buffer, exchange host buffers, copy to the GPU (the "
                             "'CUDA-staged MPI' of the ping-ping reference)")
    add_space_arguments(parser)
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON (see axon plot)")
    parser.add_argument("--compare", action="store_true",
                        help="run the peers this machine has beside axon, on GPU buffers (-d D D), "
                             "and print the ratios: NCCL on the same buffers in the same program "
                             "(collectives), PyTorch (torch.distributed NCCL: collectives, latency, "
                             "pingping; symmetric memory: allreduce) and NVSHMEM (its stream-ordered "
                             "collectives but reduce; latency, put_signal_rtt, pingping, bw, bibw) "
                             "right after; with --emulate-nodes (host buffers, --pes = K): UCX's "
                             "ucx_perftest between the same two nodes (latency, get_lat, atomic_lat, "
                             "put_bw, bw); say which peers are missing, and why")
    parser.add_argument("--peers", metavar="LIST",
                        help="--compare with these peers only: a comma-separated list of nccl, "
                             "pytorch, nvshmem and ucx_perftest (each peer program adds its own start "
                             "and run time: on 4 GPUs, tens of seconds)")
