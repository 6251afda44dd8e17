"""The ``axon`` command line.

Each subcommand is one ``_add_<name>`` function that adds its subparser and
sets ``handler`` to a ``_cmd_<name>(args) -> int`` function; adding a
subcommand means writing those two functions and listing the first in
``_SUBCOMMANDS``.

This module must not import the compiled extension (nor the package
``__init__``, which does): ``axon run`` has to work without the GPU backend.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Callable

from .tools import bench as _bench_tool
from .tools import cli_parser
from .tools import config as _config_tool
from .tools import doctor as _doctor_tool
from .tools import launcher
from .tools import plot as _plot_tool
from .tools import space_serve as _space_tool
from .tools import topo as _topo_tool

_PROG = "axon"


# --------------------------------------------------------------------------
# axon run
# --------------------------------------------------------------------------


def _add_run(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        # No abbreviations: a program option such as --n must not be taken for --nprocs.
        allow_abbrev=False,
        help="start N PEs of a program on this machine",
        description=(
            "Start N copies (PEs) of PROGRAM on this machine, forward their output "
            "line by line with a [rank] prefix, and stop them all when one fails."
        ),
        epilog=(
            "Everything from PROGRAM on is passed to the program unchanged; put '--' "
            "before PROGRAM if its name starts with '-'."
        ),
    )
    parser.add_argument(
        "-n", "--nprocs", type=cli_parser.positive_int, required=True, metavar="N",
        help="number of PEs to start (>= 1)",
    )
    parser.add_argument(
        "--grace", type=cli_parser.seconds, default=2.0, metavar="SECONDS",
        help="after a PE fails, how long the others may run on before they are "
             "sent SIGTERM (default: %(default)s)",
    )
    parser.add_argument(
        "--emulate-nodes", type=cli_parser.positive_int, default=None, metavar="K",
        help="run the PEs on K emulated nodes of this machine (network, IPC, UTS and mount "
             "namespaces joined by a bridge, so nodes share no memory and UCX carries their "
             "traffic over TCP); N/K PEs per node, in blocks; needs root",
    )
    parser.add_argument(
        "--no-prefix", dest="prefix", action="store_false",
        help="forward output lines without the [rank] prefix",
    )
    # REMAINDER takes everything from the program name on, so options of the
    # program (even ones named like ours, e.g. -n 5) are not parsed here.
    parser.add_argument(
        "command", nargs=argparse.REMAINDER, metavar="PROGRAM [ARGS ...]",
        help="the program every PE runs, and its arguments",
    )
    parser.set_defaults(handler=_cmd_run)


def _cmd_run(args: argparse.Namespace) -> int:
    command: list[str] = list(args.command)
    # argparse keeps the '--' that may separate our options from the program.
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        raise cli_parser.UsageError("no program to run (see 'axon run --help')", "axon run")
    if args.emulate_nodes is not None and args.nprocs % args.emulate_nodes:
        raise cli_parser.UsageError(
            f"{args.nprocs} PEs do not divide over {args.emulate_nodes} emulated nodes "
            "(every node gets the same number of PEs)", "axon run")
    return launcher.run(
        args.nprocs, command, grace=args.grace, prefix=args.prefix, emulate_nodes=args.emulate_nodes
    )


# --------------------------------------------------------------------------
# Parser and entry point
# --------------------------------------------------------------------------

# One function per subcommand; each adds its subparser (see module docstring).
_SUBCOMMANDS: Sequence[Callable[[argparse._SubParsersAction], None]] = (
    _add_run,
    _topo_tool.add_subcommand,
    _doctor_tool.add_subcommand,
    _bench_tool.add_subcommand,
    _plot_tool.add_subcommand,
    _space_tool.add_subcommand,
    _config_tool.add_subcommand,
)


def build_parser() -> argparse.ArgumentParser:
    """The ``axon`` argument parser with every subcommand."""
    parser = cli_parser.Parser(prog=_PROG, description="axon: GPU communication library tools.")
    subparsers = parser.add_subparsers(dest="subcommand", metavar="COMMAND", required=True)
    for add_subcommand in _SUBCOMMANDS:
        add_subcommand(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``axon`` command line (``argv`` defaults to sys.argv[1:]); return the exit code."""
    return cli_parser.run(build_parser(), argv)
