"""``axon space serve``: a staging server as its own process.

Its first line is ``axon space: serving at HOST:PORT (...)``: the address clients use, then the
epoch, --mem, --policy, the address it is bound to and why, and where its key came from (never the
key). It writes the contact file (mode 0600, with the key) when asked, serves until SIGINT or
SIGTERM, then drains transfers under way and removes the file (if it is still the one it wrote).
A contact file that a live server holds (an flock on PATH.lock, held for the server's life) is
never overwritten: the second server refuses to start, naming the file and the live server.

The key every client and joining server must prove (docs/security.md): --key-file (mode 0600), else
AXON_SPACE_KEY, else a new one, which only the contact file carries (so a server with neither a
given key nor --contact-file is refused: no client could connect to it).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

from . import cli_parser
from .bench.sizes import parse_size

_POLICIES = ("block", "reject", "evict")


def add_subcommand(subparsers: argparse._SubParsersAction) -> None:
    """Add ``space`` (with ``serve``) to the ``axon`` command line."""
    parser = subparsers.add_parser("space", help="the staging space: run a staging server",
                                   description="The staging space (axon.space): versioned n-D arrays held by "
                                               "staging servers between coupled programs.")
    sub = parser.add_subparsers(dest="space_command", metavar="COMMAND", required=True)
    serve = sub.add_parser(
        "serve", help="run a staging server until SIGINT or SIGTERM",
        description="Run a staging server: a pinned host arena bounded by --mem, served over UCX (and shared "
                    "memory to clients on this node). Clients find it by AXON_SPACE_FILE=the contact file "
                    "(address and key), or AXON_SPACE_ADDR=HOST:PORT with AXON_SPACE_KEY; every client and "
                    "joining server proves the key (docs/security.md).",
        epilog="Several servers form one space: start the first with --servers N, then N-1 more with "
               "--join FIRST_ADDRESS; clients connect to any of them.")
    serve.add_argument("--bind", "--listen", dest="bind", default=None, metavar="HOST[:PORT]",
                       help="the one address to listen on, port 0 or none for a free one (default: this host's "
                            "address, the first interface that is up and not loopback; 127.0.0.1 for this node "
                            "only; 0.0.0.0 listens on every interface)")
    serve.add_argument("--key-file", metavar="PATH", default=None,
                       help="the space's key, hex, in a file of this user with mode 0600 (default: AXON_SPACE_KEY, "
                            "else a new key written into the contact file)")
    serve.add_argument("--max-holds", type=cli_parser.positive_int, default=1024, metavar="N",
                       help="per client: versions it may hold and reads it may have under way (default: "
                            "%(default)s)")
    serve.add_argument("--mem", default="1G", metavar="SIZE",
                       help="bytes of data the server may hold, e.g. 512M, 8G (default: %(default)s)")
    serve.add_argument("--policy", choices=_POLICIES, default="block",
                       help="when memory is full: block puts (up to their timeout), reject them at once, or evict "
                            "the oldest versions no reader holds (default: %(default)s)")
    serve.add_argument("--contact-file", metavar="PATH", default=None,
                       help="write the address and the key here (mode 0600, atomically, with a start-up epoch); "
                            "refused while a live server holds the file (a lock beside it, PATH.lock), replaced "
                            "with a note when its server is gone; removed at exit if still this server's")
    serve.add_argument("--servers", type=cli_parser.positive_int, default=1, metavar="N",
                       help="this is the first of N servers of the space (default: 1)")
    serve.add_argument("--join", metavar="HOST:PORT", default=None,
                       help="join the space whose first server listens at HOST:PORT (with that space's key: "
                            "--key-file or AXON_SPACE_KEY)")
    serve.add_argument("--drain", type=cli_parser.seconds, default=5.0, metavar="SECONDS",
                       help="at shutdown, how long transfers under way may finish (default: %(default)s)")
    serve.set_defaults(handler=_cmd_serve)


def _bind(text: str | None) -> str:
    """--bind HOST or HOST:PORT as the server takes it ("": its default, this host's address)."""
    if not text:
        return ""
    return text if ":" in text else f"{text}:0"


def _bound(args: argparse.Namespace, address: str) -> str:
    """Which address the server listens on, and why, for its first line."""
    host = address.rsplit(":", 1)[0]
    if not args.bind or args.bind.startswith(":"):
        return f"bound to {host} only, this host's address (--bind to choose)"
    if args.bind.split(":")[0] == "0.0.0.0":
        return "listening on every interface (--bind 0.0.0.0)"
    return f"bound to {host} only (--bind)"


def _cmd_serve(args: argparse.Namespace) -> int:
    mem = parse_size(args.mem, "--mem")
    given = args.key_file or os.environ.get("AXON_SPACE_KEY")
    if not given and args.join:
        print(f"axon space serve: a server joining the space of {args.join} must prove that space's key: give it "
              "with --key-file PATH (a 0600 file holding the key as hex) or AXON_SPACE_KEY (the first server's "
              "contact file holds it)", file=sys.stderr)
        return 2
    if not given and not args.contact_file:
        print("axon space serve: clients could never prove this server's key: give --contact-file PATH (the new "
              "key is written into it, mode 0600), --key-file PATH (a 0600 file holding the key as hex), or "
              "AXON_SPACE_KEY (docs/security.md)", file=sys.stderr)
        return 2
    from axon.errors import Error, InvalidArgumentError
    from axon.space import Server  # the extension: only when a server is started

    # The handler only records the signal: an Event.set() there could deadlock on the Event's own
    # lock, held by the main thread inside Event.wait() when the signal came (a SIGTERM right after
    # start hung the server 2 times in 15).
    received: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, _frame: received.append(signum))
    try:
        server = Server(listen=_bind(args.bind), mem=mem, policy=args.policy, contact_file=args.contact_file,
                        servers=args.servers, join=args.join, key_file=args.key_file, max_holds=args.max_holds)
    except InvalidArgumentError as exc:
        # A mistyped --bind or --join: a usage error naming the option, never a traceback.
        quoted = [opt for opt, value in (("--bind", args.bind), ("--join", args.join))
                  if value and f"'{value}" in str(exc)]
        raise cli_parser.UsageError(f"{quoted[0]} {args.bind if quoted[0] == '--bind' else args.join}: {exc}"
                                    if quoted else str(exc), "axon space serve") from None
    except Error as exc:
        print(f"axon space serve: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    key = server.key_origin if server.key_origin != "a new key" else f"a new key, in {args.contact_file}"
    print(f"axon space: serving at {server.address} (epoch {server.epoch}, mem {args.mem}, policy {args.policy}; "
          f"{_bound(args, server.address)}; key: {key})", flush=True)
    while not received:
        time.sleep(0.2)  # a signal ends the wait within this
    print("axon space: stopping (draining transfers under way)", file=sys.stderr, flush=True)
    server.stop(args.drain)
    return 0
