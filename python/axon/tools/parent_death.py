"""Children that die with the launcher, even with a launcher killed by SIGKILL.

A launcher that is killed outright (SIGKILL from a CI runner, the OOM killer) runs no code, so it
cannot stop its children. The kernel can: ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` in a child makes
the kernel send it SIGKILL when the thread that forked it exits. The setting survives ``exec`` of
ordinary programs (the kernel clears it on exec of a set-user-ID program, or when the child's
credentials change), so it is made in the child between fork and exec: Popen's ``preexec_fn``.

``preexec_fn`` runs Python in a child forked from a process that may have other threads (the
launcher's output readers), and a lock another thread held at the fork stays held there for
good. So the function made here touches no lock of its own: ``prctl`` is resolved in the parent
beforehand, and the child only makes that call, ``getppid`` and, at worst, ``_exit``.

Linux only; elsewhere ``die_with_parent()`` gives None and children are stopped only by the
launcher itself. Standard library only, like the launcher.
"""

from __future__ import annotations

import ctypes
import os
import signal
from collections.abc import Callable

__all__ = ["die_with_parent"]

_PR_SET_PDEATHSIG = 1

# Status of a child whose launcher was gone before it could ask to die with it.
_ORPHANED_AT_START = 125


def _prctl() -> Callable[..., int] | None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl
    except (OSError, AttributeError):
        return None


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child get SIGKILL when this thread exits, or None.

    Call it in the thread that starts the child and stays alive as long as the child should:
    PR_SET_PDEATHSIG fires when the *forking thread* exits, not only the process.
    """
    prctl = _prctl()
    if prctl is None or not hasattr(os, "getppid"):
        return None
    parent = os.getpid()
    sigkill = int(signal.SIGKILL)
    getppid = os.getppid
    exit_now = os._exit

    def set_in_child() -> None:
        prctl(_PR_SET_PDEATHSIG, sigkill)
        # The launcher may have died between fork and the prctl: the child was then already
        # handed to another parent, and no signal will come. It must not run on alone.
        if getppid() != parent:
            exit_now(_ORPHANED_AT_START)

    return set_in_child
