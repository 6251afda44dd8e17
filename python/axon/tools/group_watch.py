"""Kills what the PEs started when the launcher dies without doing it itself.

PR_SET_PDEATHSIG (``parent_death.py``) has the kernel kill every PE process when a launcher is
killed by SIGKILL, but not the processes a PE started: a PE that is a shell script running
``python train.py`` would leave the python running. Each PE leads a process group of its own
(its session), and its children stay in it, so killing the groups reaches them. A dead launcher
cannot do that, so a *watcher* does: a small process, in a session of its own (a signal to the
launcher's process group leaves it alone), that reads from a pipe the ids of the PEs' groups as
the launcher starts and reaps them. When the pipe reaches end-of-file without the word ``done``,
the launcher has gone without cleaning up: the watcher SIGKILLs every group still listed, and
exits. A launcher that ends in any other way says ``done`` and the watcher exits at once.

A group id is the pid of the PE that leads it, which the launcher takes off the list as soon as
it reaps that PE: until then the pid cannot be reused, so the watcher does not signal a stranger.
(After the launcher's death the PEs are reaped by someone else, so the id is free again the moment
a PE with no process left in its group is reaped; reusing it within the microseconds before the
watcher acts would take a wrap of the kernel's pid counter.)

Standard library only, like the launcher; the watcher runs in an isolated interpreter (-I -S),
so it needs nothing from the environment the PEs get.
"""

from __future__ import annotations

import subprocess
import sys

__all__ = ["GroupWatch"]

# How long a launcher that ends normally waits for the watcher to go.
_EXIT_WAIT = 2.0

_WATCHER = r"""
import os, signal, sys
groups = set()
for line in sys.stdin.buffer:
    word = line.strip()
    if word == b"done":
        sys.exit(0)
    if word[:1] == b"+":
        groups.add(int(word[1:]))
    elif word[:1] == b"-":
        groups.discard(int(word[1:]))
for group in groups:
    try:
        os.killpg(group, signal.SIGKILL)
    except OSError:
        pass
"""


class GroupWatch:
    """The launcher's side of the watcher; every method is a no-op once the watcher is gone."""

    def __init__(self) -> None:
        try:
            self._proc: subprocess.Popen | None = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _WATCHER],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError:
            # No watcher: the PEs still die with the launcher; only their children may not.
            self._proc = None

    def __enter__(self) -> GroupWatch:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def add(self, group: int) -> None:
        """List the process group led by a PE just started."""
        self._send(f"+{group}\n")

    def remove(self, group: int) -> None:
        """Take off a PE's group once the launcher has reaped the PE (its pid may be reused)."""
        self._send(f"-{group}\n")

    def close(self) -> None:
        """The launcher ends in order: the watcher exits without killing anything."""
        self._send("done\n")
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass
        try:
            proc.wait(_EXIT_WAIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def _send(self, line: str) -> None:
        if self._proc is None:
            return
        try:
            self._proc.stdin.write(line.encode())  # type: ignore[union-attr]
            self._proc.stdin.flush()  # type: ignore[union-attr]
        except OSError:
            # The watcher was killed: carry on without it.
            self._proc.kill()
            self._proc.wait()
            self._proc = None
