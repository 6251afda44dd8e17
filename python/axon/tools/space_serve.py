"""``axon space serve``: a staging server as its own process.

It prints its address (the line ``axon space: serving at HOST:PORT``), writes the contact file when
asked, serves until SIGINT or SIGTERM, then drains transfers under way and removes the file.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading

from . import cli_parser
from .bench.sizes import parse_size

_POLICIES = ("block", "reject", "evict")

_SERVE_PROG = "axon space serve"


def add_subcommand(subparsers: argparse._SubParsersAction) -> None:
    """Add ``space`` (with ``serve``) to the ``axon`` command line."""
    parser = subparsers.add_parser("space", help="the staging space: run a staging server",
                                   description="The staging space (axon.space): versioned n-D arrays held by "
                                               "staging servers between coupled programs.")
    sub = parser.add_subparsers(dest="space_command", metavar="COMMAND", required=True)
    serve = sub.add_parser(
        "serve", help="run a staging server until SIGINT or SIGTERM",
        description="Run a staging server: a pinned host arena bounded by --mem, served over UCX (and shared "
                    "memory to clients on this node). Clients find it by AXON_SPACE_ADDR=HOST:PORT or "
                    "AXON_SPACE_FILE=the contact file.",
        epilog="Several servers form one space: start the first with --servers N, then N-1 more with "
               "--join FIRST_ADDRESS; clients connect to any of them.")
    serve.add_argument("--listen", default="0.0.0.0:0", metavar="HOST:PORT",
                       help="address to listen on (default: every interface, a free port)")
    serve.add_argument("--mem", default="1G", metavar="SIZE",
                       help="bytes of data the server may hold, e.g. 512M, 8G (default: %(default)s)")
    serve.add_argument("--policy", choices=_POLICIES, default="block",
                       help="when memory is full: block puts (up to their timeout), reject them at once, or evict "
                            "the oldest versions no reader holds (default: %(default)s)")
    serve.add_argument("--contact-file", metavar="PATH", default=None,
                       help="write the address here (atomically, with a start-up epoch), removed at exit")
    serve.add_argument("--servers", type=cli_parser.positive_int, default=1, metavar="N",
                       help="this is the first of N servers of the space (default: 1)")
    serve.add_argument("--join", metavar="HOST:PORT", default=None,
                       help="join the space whose first server listens at HOST:PORT")
    serve.add_argument("--drain", type=cli_parser.seconds, default=5.0, metavar="SECONDS",
                       help="at shutdown, how long transfers under way may finish (default: %(default)s)")
    serve.set_defaults(handler=_cmd_serve)


def _cmd_serve(args: argparse.Namespace) -> int:
    mem = parse_size(args.mem, "--mem")
    from axon.errors import Error, InvalidArgumentError
    from axon.space import Server  # the extension: only when a server is started

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        server = Server(listen=args.listen, mem=mem, policy=args.policy, contact_file=args.contact_file,
                        servers=args.servers, join=args.join)
    except InvalidArgumentError as exc:
        # A bad --listen, --join, ...: the message names the value; no traceback for a typo.
        quoted = [opt for opt, value in (("--listen", args.listen), ("--join", args.join))
                  if value and f"'{value}'" in str(exc)]
        raise cli_parser.UsageError(f"{quoted[0]} {exc}" if quoted else str(exc), _SERVE_PROG) from None
    except Error as exc:
        # Nothing to reach at --join, a contact file that cannot be written, a port in use...
        print(f"{_SERVE_PROG}: cannot start the server: {exc}", file=sys.stderr)
        return 1
    print(f"axon space: serving at {server.address} (epoch {server.epoch}, mem {args.mem}, policy {args.policy})",
          flush=True)
    while not stop.wait(0.2):
        pass
    print("axon space: stopping (draining transfers under way)", file=sys.stderr, flush=True)
    server.stop(args.drain)
    return 0
