"""``axon bench TEST``: OSU-style benchmarks of axon's one-sided API over a sweep of message sizes.

The measuring is done by a C++ driver, ``axon_bench`` (bench/axon_bench.cpp), which the launcher
starts on 2 PEs (``python -m axon run -n 2 axon_bench TEST ...``). The driver prints one JSON
object per line as it goes; this package validates the options first, runs the driver, shows a
progress bar on long sweeps (on a terminal), prints an OSU-style table and writes ``--json``.
One module a job:

    command    the handler of ``axon bench`` and main(): the steps below, in order
    options    the options as typed (argparse)
    request    their validation into a Request, and the driver's arguments for it
    catalog    the tests (the space tests' too), the columns each shows, ucx_perftest's tests
    sizes      message sizes: parsing and labels
    programs   where the driver and the peer programs are built
    runner     a program run through the launcher, its JSON lines read into a results.Outcome
    progress   the progress bar over the sizes
    peers      which --compare peers this machine has, and the note on each
    peer_runs  the peer programs (PyTorch, NVSHMEM, ucx_perftest, Open MPI), run after axon on the
               same sizes
    tables     the tables printed
    document   the --json document (machine: the machine it records)
    space      the staging space's tests (space-*), on their own path

The peer programs, each run as a program of its own (``python -m axon.tools.bench.NAME``) and
imported by no module here:

    torch_peer         PyTorch (torch.distributed NCCL, symmetric memory) on every PE
    ucx_perftest_peer  UCX's ucx_perftest between two emulated nodes
    mpi_peer           Open MPI through mpi4py, on one node or two emulated nodes

JSON written by ``--json FILE`` (``schema`` 1)::

    {"tool": "axon bench", "schema": 1, "test": "latency", "impl": "axon",
     "label": "axon latency H H",                 # what `axon plot` calls the line
     "metric": "latency" | "bandwidth",           # the main column of the test
     "time_label": "one-way latency (...)",       # what time_us means for this test
     "config": {"placement": "H H", "local": "H", "remote": "H", "pes": 2, "backend": "host",
                "window": 64, "validate": true, "iters": null, "warmup": null, "sizes": [...],
                "limit_name": "memcpy between the same mappings" | null, "command": [...], ...},
     "machine": {"hostname": ..., "cpu": ..., "cpus": ..., "os": ..., "gpu": [...] | null},
     "results": [{"test": "latency", "size": 8, "iters": 10000, "warmup": 100,
                  "time_us": 0.12, "bw_gbs": 0.066, "wrong": 0,
                  "limit": {"time_us": 0.003, "bw_gbs": 2.4}}, ...],   # limit: H H only
     "compare": [{"peer": "NCCL", "status": "skipped", "found": false, "where": null,
                  "note": "..."}, ...]}                                # with --compare only

Units: ``time_us`` in microseconds; ``bw_gbs`` in GB/s = 1e9 bytes per second. ``limit`` is the
same transfers done as a plain memcpy between the same mappings (the hardware limit of the host
path), in the same units. ``wrong`` counts the bytes of the last transfer of a size that differ
from the expected pattern (null with --no-validate).

Like every tool module, this one must not import the compiled extension at import time; it never
initializes axon in this process.
"""

from ..cli_parser import EXIT_USAGE, UsageError
from .catalog import COLLECTIVES, OPS, TESTS, TestSpec
from .command import add_subcommand, build_parser, main, run_bench
from .document import bench_document
from .errors import BenchError
from .machine import machine_info
from .peer_runs import nvshmem_peer_command, peer_command, run_peer, torch_peer_command
from .peers import NVSHMEM_PEER, NVSHMEM_TESTS, PEER_NAMES, PEER_SCOPE, TORCH_TESTS, compare_notes, detect_peers
from .programs import find_driver, find_tool
from .progress import PROGRESS_AFTER_S
from .request import Request, parse_peers, validate
from .results import Outcome
from .runner import launch_command, run_driver, run_launched
from .sizes import DEFAULT_MAX, DEFAULT_MIN, parse_range, parse_size, size_label
from .tables import IMPL_NAMES, collective_table_lines, table_lines

# Re-exported: callers import these from axon.tools.bench, whichever module holds them.
__all__ = ["add_subcommand", "bench_document", "BenchError", "build_parser", "collective_table_lines",
           "COLLECTIVES", "compare_notes", "DEFAULT_MAX", "DEFAULT_MIN", "detect_peers", "EXIT_USAGE",
           "find_driver", "find_tool", "IMPL_NAMES", "launch_command", "machine_info", "main", "NVSHMEM_PEER",
           "nvshmem_peer_command", "NVSHMEM_TESTS", "OPS", "Outcome", "parse_peers", "parse_range", "parse_size",
           "peer_command", "PEER_NAMES", "PEER_SCOPE", "PROGRESS_AFTER_S", "Request", "run_bench",
           "run_driver", "run_launched", "run_peer", "size_label", "table_lines", "TESTS", "TestSpec",
           "torch_peer_command", "TORCH_TESTS", "UsageError", "validate"]
