"""Run a command as on a machine without some programs: ``hide_command.py DIR NAME... -- ARGV``.

DIR is made anew with a link to every program of PATH's folders but the NAMEs (the first of each
name, as PATH finds it), then ARGV is executed (in this process, so signals reach it) with PATH set
to DIR alone. The emulated-node tests run this way with ``ip`` hidden, as on the lent GPU machines,
which have no iproute2: `axon run --emulate-nodes` must then make its links with pyroute2.
"""

import os
import shutil
import sys


def make_path(folder: str, hidden: set[str]) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    for source in os.environ.get("PATH", os.defpath).split(os.pathsep):
        try:
            names = os.listdir(source or ".")
        except OSError:
            continue
        for name in names:
            target = os.path.join(folder, name)
            path = os.path.join(source, name)
            if name in hidden or os.path.lexists(target) or not os.access(path, os.X_OK) or os.path.isdir(path):
                continue
            os.symlink(os.path.abspath(path), target)


def main(argv: list[str]) -> int:
    if "--" not in argv or argv.index("--") < 2 or argv.index("--") == len(argv) - 1:
        print("usage: hide_command.py DIR NAME... -- COMMAND [ARG...]", file=sys.stderr)
        return 2
    split = argv.index("--")
    folder, hidden, command = argv[0], set(argv[1:split]), argv[split + 1:]
    make_path(folder, hidden)
    os.environ["PATH"] = os.path.abspath(folder)
    os.execvp(command[0], command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
