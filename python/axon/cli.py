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
import math
import sys
from collections.abc import Sequence
from typing import Callable, NoReturn

from . import launcher
from .tools import bench as _bench_tool
from .tools import doctor as _doctor_tool
from .tools import plot as _plot_tool
from .tools import topo as _topo_tool

_PROG = "axon"

# Exit code for a malformed command line, as argparse and most tools use.
_EXIT_USAGE = 2


class _UsageError(Exception):
    """A malformed command line; the message is the one line shown to the user."""


class _Parser(argparse.ArgumentParser):
    """ArgumentParser that reports a usage error as one line and does not exit.

    The default prints the whole usage plus the message and calls sys.exit;
    main() instead prints one line and returns 2, so it can be called from
    Python and always returns an int. Subparsers inherit this class.
    """

    def error(self, message: str) -> NoReturn:
        raise _UsageError(f"{self.prog}: error: {message} (see '{self.prog} --help')")


# --------------------------------------------------------------------------
# Argument types
# --------------------------------------------------------------------------


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, got {text!r}")
    return value


# --------------------------------------------------------------------------
# axon run
# --------------------------------------------------------------------------


def _add_run(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
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
        "-n", "--nprocs", type=_positive_int, required=True, metavar="N",
        help="number of PEs to start (>= 1)",
    )
    parser.add_argument(
        "--grace", type=_seconds, default=2.0, metavar="SECONDS",
        help="after a PE fails, how long the others may run on before they are "
             "sent SIGTERM (default: %(default)s)",
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
        raise _UsageError("axon run: error: no program to run (see 'axon run --help')")
    return launcher.run(args.nprocs, command, grace=args.grace, prefix=args.prefix)


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
)


def build_parser() -> argparse.ArgumentParser:
    """The ``axon`` argument parser with every subcommand."""
    parser = _Parser(prog=_PROG, description="axon: GPU communication library tools.")
    subparsers = parser.add_subparsers(dest="subcommand", metavar="COMMAND", required=True)
    for add_subcommand in _SUBCOMMANDS:
        add_subcommand(subparsers)
    return parser


def _exit_status(code: object) -> int:
    """The int that a SystemExit code stands for (None means success)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    # sys.exit("message") prints the message and exits 1.
    print(code, file=sys.stderr)
    return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``axon`` command line (``argv`` defaults to sys.argv[1:]); return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return int(args.handler(args))
    except _UsageError as exc:
        print(exc, file=sys.stderr)
        return _EXIT_USAGE
    except SystemExit as exc:
        # argparse exits by itself only after printing --help; a subcommand
        # may also use sys.exit. Either way main() returns an int.
        return _exit_status(exc.code)
