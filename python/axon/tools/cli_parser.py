"""The argument parser that ``axon`` and its tools share, and the argument types they use.

A usage error is one line (``PROG: error: MESSAGE (see 'PROG --help')``) and exit status 2, not
argparse's usage text plus sys.exit: every ``main()`` returns an int, so the command line can be
called from Python (tests, ``python -m axon.tools.bench``).
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import NoReturn, Sequence

__all__ = ["EXIT_USAGE", "Parser", "UsageError", "integer_at_least", "positive_int", "run", "seconds"]

#: Exit status for a malformed command line, as argparse and most tools use.
EXIT_USAGE = 2


class UsageError(Exception):
    """A bad request; the message is the one line shown after ``PROG: error: `` (exit status 2).

    `prog` names the (sub)command whose command line was wrong; None: the one being run.
    """

    def __init__(self, message: str, prog: str | None = None) -> None:
        super().__init__(message)
        self.prog = prog


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors raise UsageError instead of exiting.

    Subparsers inherit this class (argparse makes them of their parent's class).
    """

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} --help')", self.prog)


def _exit_status(code: object) -> int:
    """The int that a SystemExit code stands for (None means success)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    # sys.exit("message") prints the message and exits 1.
    print(code, file=sys.stderr)
    return 1


def run(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    """Parses `argv` and calls the ``handler`` the parser set; returns the exit code."""
    try:
        args = parser.parse_args(argv)
        return int(args.handler(args))
    except UsageError as exc:
        print(f"{exc.prog or parser.prog}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exc:
        # argparse exits by itself only after printing --help; a handler may also use sys.exit.
        return _exit_status(exc.code)


# --------------------------------------------------------------------------
# Argument types
# --------------------------------------------------------------------------


def integer_at_least(text: str, minimum: int) -> int:
    """`text` as an int >= `minimum`; argparse.ArgumentTypeError otherwise."""
    try:
        value = int(text)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1."""
    return integer_at_least(text, 1)


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, got {text!r}")
    return value
