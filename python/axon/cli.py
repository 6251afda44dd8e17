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
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Callable

from .tools import bench as _bench_tool
from .tools import cli_parser
from .tools import config as _config_tool
from .tools import doctor as _doctor_tool
from .tools import launcher
from .tools import plot as _plot_tool
from .tools import run_checks
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
            "before PROGRAM if its name starts with '-'. A PROGRAM that is a Python file "
            "(script.py, not executable) runs with this Python, as torchrun does."
        ),
    )
    # -np and --np as mpirun spells it.
    parser.add_argument(
        "-n", "--nprocs", "-np", "--np", dest="nprocs", type=cli_parser.positive_int, required=True,
        metavar="N", help="number of PEs to start (>= 1)",
    )
    parser.add_argument(
        "-x", dest="exports", action="append", default=[], metavar="NAME[=VALUE]",
        help="set NAME=VALUE for the PEs (as mpirun -x); repeatable. The PEs get this "
             "environment anyway, so -x NAME alone changes nothing",
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
    exports, notes = run_checks.parse_exports(args.exports)
    command = run_checks.python_script_command(command)
    with run_checks.exported(exports):
        notes += [run_checks.axon_import_hint(command), run_checks.cores_note(args.nprocs)]
        for note in notes:
            if note:
                print(f"axon run: {note}", file=sys.stderr, flush=True)
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


def _version() -> str:
    """``axon VERSION (PACKAGE_DIR, Python X.Y.Z)``: which axon this command runs, and from where.

    The version is read from the package's ``__init__.py`` as text: importing it would load the
    compiled extension, which ``axon`` must work without.
    """
    package_dir = Path(__file__).resolve().parent
    found = re.search(r"^__version__\s*=\s*[\"']([^\"']+)[\"']", (package_dir / "__init__.py").read_text("utf-8"),
                      re.MULTILINE)
    python = ".".join(map(str, sys.version_info[:3]))
    return f"{_PROG} {found.group(1) if found else 'unknown'} ({package_dir}, Python {python})"


class _VersionAction(argparse.Action):
    """``--version``: prints _version() and exits 0 (worked out only when asked for)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print axon's version, where it is installed and the Python, and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:  # type: ignore[override]
        print(_version())
        parser.exit(0)


def build_parser() -> argparse.ArgumentParser:
    """The ``axon`` argument parser with every subcommand."""
    parser = cli_parser.Parser(prog=_PROG, description="axon: GPU communication library tools.")
    parser.add_argument("--version", action=_VersionAction)
    subparsers = parser.add_subparsers(dest="subcommand", metavar="COMMAND", required=True)
    for add_subcommand in _SUBCOMMANDS:
        add_subcommand(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``axon`` command line (``argv`` defaults to sys.argv[1:]); return the exit code."""
    return cli_parser.run(build_parser(), argv)
