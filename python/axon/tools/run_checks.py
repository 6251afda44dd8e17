"""What ``axon run`` does with its command line before the launcher starts any PE.

Users bring habits from mpirun and torchrun; this module turns them into what the launcher needs,
or into one clear line:

* ``-x NAME=VALUE`` / ``-x NAME`` (mpirun): variables for the PEs;
* ``axon run -n 2 script.py`` (torchrun): a Python file that is not a program by itself runs with
  the Python running ``axon``, the job's Python;
* a Python program that imports axon, run with a Python that lacks it, gets a hint (which Python,
  how to fix it) before every PE fails with ModuleNotFoundError;
* more PEs than cores gets a one-line note on what that costs.

Standard library only: ``axon run`` must work without the compiled extension.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from .cli_parser import UsageError

__all__ = ["LAUNCHER_VARIABLES", "available_cores", "axon_import_hint", "cores_note", "exported",
           "parse_exports", "python_script_command"]

#: Variables the launcher sets for each PE itself: an -x for them would be overwritten.
LAUNCHER_VARIABLES = ("AXON_RANK", "AXON_WORLD_SIZE", "AXON_LOCAL_RANK", "AXON_LOCAL_SIZE", "AXON_HOST_PES",
                      "AXON_STORE_ADDR", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR",
                      "MASTER_PORT")

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# A Python interpreter by its name: python, python3, python3.12 (what a user types).
_PYTHON_NAME = re.compile(r"python(\d+(\.\d+)?)?")

# An import of axon at the start of a line: what a program that uses axon has.
_IMPORTS_AXON = re.compile(r"^\s*(import|from)\s+axon\b", re.MULTILINE)

# How much of a script is read to look for that import.
_SCRIPT_READ_LIMIT = 1 << 20

# Bound on the one check run with the program's Python (it only looks the package up).
_CHECK_TIMEOUT_S = 20.0


# --------------------------------------------------------------------------
# -x NAME=VALUE
# --------------------------------------------------------------------------


def parse_exports(specs: Sequence[str] | None, environ: Mapping[str, str] | None = None
                  ) -> tuple[dict[str, str], list[str]]:
    """``-x`` arguments -> (variables to set for the PEs, notes for the user).

    ``NAME=VALUE`` sets NAME; ``NAME`` alone passes the launcher's own NAME on, which the PEs
    inherit anyway (mpirun needs it, axon run does not), so it only gets a note when NAME is
    unset. Raises UsageError for a malformed name or a variable the launcher sets per PE.
    """
    env = os.environ if environ is None else environ
    exports: dict[str, str] = {}
    notes: list[str] = []
    for spec in specs or []:
        name, sep, value = spec.partition("=")
        if not _NAME.fullmatch(name):
            raise UsageError(f"-x takes NAME=VALUE or NAME (a variable name: letters, digits, _), got {spec!r}",
                             "axon run")
        if name in LAUNCHER_VARIABLES:
            raise UsageError(f"-x {name}: axon run sets {name} for each PE itself", "axon run")
        if sep:
            exports[name] = value
        elif name not in env:
            notes.append(f"note: -x {name}: {name} is not set here, so the PEs do not get it either "
                         f"(set it with -x {name}=VALUE)")
    return exports, notes


@contextlib.contextmanager
def exported(variables: Mapping[str, str]) -> Iterator[None]:
    """Sets `variables` in this process's environment while the job runs, then restores it.

    The launcher gives each PE its own environment plus the AXON_* variables, so this is exactly
    ``NAME=VALUE axon run ...``; restoring matters when axon run is called from Python (tests).
    """
    saved = {name: os.environ.get(name) for name in variables}
    os.environ.update(variables)
    try:
        yield
    finally:
        for name, old in saved.items():
            if old is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = old


# --------------------------------------------------------------------------
# axon run -n 2 script.py
# --------------------------------------------------------------------------


def python_script_command(command: Sequence[str]) -> list[str]:
    """`command`, with the job's Python in front when it names a Python file to run as torchrun does.

    That is an existing ``.py`` file that cannot run by itself: not executable, or named without
    a directory and not on PATH (where a program name is looked for). Anything else is unchanged.
    """
    program = command[0]
    path = Path(program)
    if path.suffix != ".py" or not path.is_file():
        return list(command)
    runs_by_itself = os.access(path, os.X_OK) and ("/" in program or shutil.which(program) is not None)
    return list(command) if runs_by_itself else [sys.executable, *command]


# --------------------------------------------------------------------------
# A Python without axon
# --------------------------------------------------------------------------


def _python_and_code(command: Sequence[str]) -> tuple[str, str | None] | None:
    """(the interpreter, the text to look for an import of axon in) when `command` runs Python.

    The text is the -c code, the script's start or, for -m MODULE, an import of MODULE; None
    when the command line says nothing of it. None altogether for a program that is not Python.
    """
    if not _PYTHON_NAME.fullmatch(Path(command[0]).name) and command[0] != sys.executable:
        return None
    args = list(command[1:])
    while args and args[0].startswith("-") and args[0] not in ("-c", "-m", "-"):
        args.pop(0)  # interpreter options such as -u, -X dev (its value is not an option: fine here)
    if len(args) >= 2 and args[0] == "-c":
        return command[0], args[1]
    if len(args) >= 2 and args[0] == "-m":
        return command[0], f"import {args[1]}"
    if args and args[0] != "-":
        try:
            with open(args[0], encoding="utf-8", errors="replace") as f:
                return command[0], f.read(_SCRIPT_READ_LIMIT)
        except OSError:
            return command[0], None
    return command[0], None


def _install_advice(python: str) -> str:
    """How to give `python` axon: pip install from this source tree when there is one."""
    package_root = Path(__file__).resolve().parents[3]
    source = package_root if (package_root / "pyproject.toml").is_file() else None
    target = str(source) if source else "<the axon wheel or source tree>"
    return f"{python} -m pip install {target}"


def axon_import_hint(command: Sequence[str], environ: Mapping[str, str] | None = None) -> str | None:
    """A note when `command` is a Python program that imports axon and its Python cannot.

    The check has that Python import axon once, in the environment the PEs get. None when there
    is nothing to say.
    """
    found = _python_and_code(command)
    if found is None:
        return None
    python, code = found
    if code is None or not _IMPORTS_AXON.search(code):
        return None
    resolved = shutil.which(python) or python
    # The Python running axon run has axon. Compared unresolved: a virtual environment's python is
    # a link to the same binary as the base Python's, and only the link's place makes it the venv's.
    if os.path.abspath(resolved) == os.path.abspath(sys.executable):
        return None
    # Imported, not only looked up: a package found without numpy or its extension fails the same.
    try:
        result = subprocess.run([resolved, "-c", "import axon"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, env=dict(os.environ if environ is None else environ),
                                timeout=_CHECK_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None  # the launcher reports a program it cannot start
    if result.returncode == 0:
        return None
    lines = result.stderr.decode("utf-8", "replace").strip().splitlines()
    why = f" ({lines[-1]})" if lines else ""
    return (f"note: {resolved} cannot import axon{why}, so every PE will fail; run the program with "
            f"{sys.executable}, which has axon, or install axon for that Python: {_install_advice(resolved)}")


# --------------------------------------------------------------------------
# More PEs than cores
# --------------------------------------------------------------------------


def available_cores() -> int:
    """The cores this process may run on (its affinity mask; the machine's count where unknown)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cores_note(nprocs: int, cores: int | None = None) -> str | None:
    """One line when `nprocs` PEs outnumber the cores: waits that spin then take turns on a core."""
    cores = available_cores() if cores is None else cores
    if nprocs <= cores:
        return None
    return (f"note: {nprocs} PEs on {cores} cores: PEs that wait spin, and more PEs than cores take turns, "
            "so barriers, collectives and small transfers take milliseconds instead of microseconds")
