"""Every command in README.md and docs/*.md runs, so that the docs cannot go stale.

The fenced ```sh and ```console blocks are run as a user runs them (the convention, and the
markers for what cannot run here, are in docs_blocks.py and docs/architecture.md, "Tests"): from
a scratch folder that links the checkout's files (so `build/...`, `examples/...`, `.venv/bin/axon`
resolve, and files the commands write land there), with this Python's environment first on PATH
and HOME in the scratch folder (for `~/...`). A block passes when every command exits 0 (or the
status its marker names) and a console block's shown output lines are printed, numbers aside.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from docs_blocks import CONSOLE, ROOT, SHELL, all_blocks, console_steps, missing_lines, parse_markers
from emulated import nodes_why_not
from test_gpu import _GPU_OK, _GPU_WHY_NOT

#: Seconds one block may take (each runs small sizes; the whole file takes about a minute on 2 idle
#: cores, but a block of emulated nodes with --compare took over 60 s beside two builds).
BLOCK_TIMEOUT = 180
#: The same for a GPU block (CUDA's start-up on every PE, sizes a GPU user would run).
GPU_BLOCK_TIMEOUT = 180
#: Seconds a server block has to print its first line.
SERVER_START = 30

BLOCKS = all_blocks()
RUNNABLE = [b for b in BLOCKS if b.info in SHELL or b.info == CONSOLE]
LAUNCHER_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                 "AXON_RANK", "AXON_WORLD_SIZE", "AXON_STORE_ADDR", "AXON_SPACE_ADDR", "AXON_SPACE_FILE",
                 "AXON_SPACE_KEY", "AXON_JOB_KEY", "AXON_JOB_KEY_FILE", "AXON_TOPO_FILE")


def test_every_block_says_what_it_is():
    """A fenced block without a language could hide a command from this test; a skip must say why."""
    problems = []
    for b in BLOCKS:
        if not b.info:
            problems.append(f"{b.where}: name the block's language (sh, console, text, cpp, python, ...)")
        if b.markers and b.info not in (*SHELL, CONSOLE):
            problems.append(f"{b.where}: docs-test markers on a {b.info or 'plain'} block, which is not run")
        for word in ("skip", "output varies"):
            if word in b.markers and not b.markers[word]:
                problems.append(f"{b.where}: '{word}' needs a reason in parentheses")
        if "exit" in b.markers and not b.markers["exit"].isdigit():
            problems.append(f"{b.where}: 'exit' needs a status, e.g. 'exit 2'")
        if b.info == CONSOLE:
            try:
                console_steps(b.body)
            except ValueError as exc:
                problems.append(f"{b.where}: {exc}")
        if "server" in b.markers and len([x for x in b.body if x.strip() and not x.lstrip().startswith("#")]) != 1:
            problems.append(f"{b.where}: a server block holds one command")
    assert not problems, "\n".join(problems)
    assert len(RUNNABLE) >= 10  # the parser found the blocks


def test_readme_first_screen_says_what_how_and_where():
    """What a newcomer sees before scrolling: how to get axon, the first commands, and a link to
    every page of docs/."""
    top = "\n".join((ROOT / "README.md").read_text(encoding="utf-8").splitlines()[:30])
    for needle in ("pip install axon-comm", "make demo", "make test", "axon run -n", "axon bench"):
        assert needle in top, needle
    for page in (ROOT / "docs").glob("*.md"):
        assert f"(docs/{page.name})" in top, f"the first screen links no docs/{page.name}"


@pytest.fixture
def sandbox(tmp_path):
    """A scratch folder that looks like the checkout: a link to each of its top-level entries,
    `.venv` to this Python's environment (the one under test, also .venv-gpu)."""
    for entry in ROOT.iterdir():
        if entry.name not in (".git", ".venv"):
            (tmp_path / entry.name).symlink_to(entry)
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))
    return tmp_path


def _env(sandbox: Path, gpu: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in LAUNCHER_VARS}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(sandbox)
    # matplotlib's font cache where it already is, rather than built again in the new HOME
    env.setdefault("MPLCONFIGDIR", str(Path.home() / ".config" / "matplotlib"))
    env["AXON_TIMEOUT"] = "60"
    if gpu:
        env.pop("AXON_BACKEND", None)  # conftest's host default: a GPU block runs as a user's does
    return env


def _run(cmd: str, sandbox: Path, env: dict, timeout: float = BLOCK_TIMEOUT) -> subprocess.CompletedProcess:
    """`cmd` under bash (set -e, pipefail) in a session of its own; whatever it left running (a
    server started with `&`) is stopped afterwards. Output goes through a file: a background
    process keeps a pipe open."""
    with tempfile.TemporaryFile("w+") as log:
        proc = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", cmd], cwd=sandbox, env=env,
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
        timed_out = False
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        finally:
            _stop_group(proc)
        log.seek(0)
        out = log.read()
    if timed_out:
        pytest.fail(f"still running after {timeout} s: {cmd}\n{out}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out)


def _stop_group(proc: subprocess.Popen) -> None:
    """SIGTERM to the command's process group, SIGKILL to what is left 10 s later."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if proc.poll() is not None and not _group_members(proc.pid):
                return
            time.sleep(0.05)
    proc.wait()


def _group_members(pgid: int) -> list[int]:
    """The live processes of a process group (zombies waiting for a reaper do not count)."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(stat.parent.name))
    return members


def _skip_reason(block) -> str | None:
    if "skip" in block.markers:
        return block.markers["skip"]
    if "gpu" in block.markers and not _GPU_OK:
        return f"needs a GPU: {_GPU_WHY_NOT}"
    if "root" in block.markers and nodes_why_not() is not None:
        return f"needs emulated nodes: {nodes_why_not()}"
    return None


def _script(block) -> list[str]:
    lines = block.body
    if "root" in block.markers:  # we are root: sudo may not even be installed
        lines = [re.sub(r"^(\s*)sudo ", r"\1", x) for x in lines]
    return lines


@pytest.mark.parametrize("block", [pytest.param(b, marks=[pytest.mark.gpu] if "gpu" in b.markers else [])
                                   for b in RUNNABLE], ids=[b.where for b in RUNNABLE])
def test_doc_block_runs(block, sandbox):
    reason = _skip_reason(block)
    if reason:
        pytest.skip(reason)
    env = _env(sandbox, "gpu" in block.markers)
    timeout = GPU_BLOCK_TIMEOUT if "gpu" in block.markers else BLOCK_TIMEOUT
    if "server" in block.markers:
        _serve(block, sandbox, env)
    elif block.info in SHELL:
        res = _run("\n".join(_script(block)), sandbox, env, timeout)
        assert res.returncode == 0, f"{block.where}: exit status {res.returncode}\n{res.stdout}"
    else:
        want = int(block.markers.get("exit", 0))
        for cmd, shown in console_steps(_script(block)):
            res = _run(cmd, sandbox, env, timeout)
            assert res.returncode == want, f"{block.where}: {cmd}: exit status {res.returncode}\n{res.stdout}"
            if "output varies" in block.markers:
                shown = [x for x in shown if x.strip()]
                shown = shown[:1] + shown[-1:]
            missing = missing_lines(shown, res.stdout)
            assert not missing, (f"{block.where}: {cmd}: these shown lines were not printed:\n"
                                 + "\n".join(missing) + f"\n--- it printed:\n{res.stdout}")


def _serve(block, sandbox: Path, env: dict) -> None:
    """A command that serves until stopped: it prints its first line and keeps running; SIGTERM
    then stops it cleanly (exit 0)."""
    cmd = next(x for x in _script(block) if x.strip() and not x.lstrip().startswith("#"))
    proc = subprocess.Popen(["bash", "-c", cmd], cwd=sandbox, env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        import selectors

        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        assert sel.select(SERVER_START), f"{block.where}: no output within {SERVER_START} s: {cmd}"
        first = proc.stdout.readline()
        assert first and proc.poll() is None, f"{block.where}: {cmd} stopped: {first}{proc.stdout.read()}"
        os.killpg(proc.pid, signal.SIGTERM)
        rest, _ = proc.communicate(timeout=BLOCK_TIMEOUT)
        assert proc.returncode == 0, f"{block.where}: exit status {proc.returncode} after SIGTERM\n{first}{rest}"
    finally:
        _stop_group(proc)


def test_readme_python_program_is_examples_ring():
    """The README's Python program is the file the first commands run, word for word."""
    block = next(b for b in BLOCKS if b.path.name == "README.md" and b.info == "python"
                 and any("put_signal(x" in x for x in b.body))
    assert "\n".join(block.body) in (ROOT / "examples" / "ring.py").read_text(encoding="utf-8")


def test_shown_output_matches_any_numbers_but_the_same_words():
    printed = "# Size        Latency (us)   memcpy (us)        #wrong\n8                     0.12       1.65e-03             0\n"
    assert missing_lines(["# Size   Latency (us)  memcpy (us)  #wrong", "8  0.116  0.0034  0", ""], printed) == []
    assert missing_lines(["8  0.116  -  0"], "8  0.2  -  0\n") == []  # '-': a value not measured
    for wrong in ("# Size  Bandwidth (GB/s)  memcpy (us)  #wrong", "8  0.116  0.0034  0  oneshot", "8  0.116"):
        assert missing_lines([wrong], printed) == [wrong]


def test_markers_are_read_and_unknown_ones_refused():
    assert parse_markers("skip (needs a cluster, Slurm), exit 2") == {"skip": "needs a cluster, Slurm", "exit": "2"}
    assert parse_markers("gpu, root") == {"gpu": "", "root": ""}
    with pytest.raises(ValueError, match="unknown docs-test marker 'gpus'"):
        parse_markers("gpus")


def test_a_block_stops_at_its_first_failure_and_leaves_nothing_running(sandbox):
    env = _env(sandbox, gpu=False)
    res = _run("false\necho after", sandbox, env)
    assert res.returncode == 1 and "after" not in res.stdout
    start = time.monotonic()
    res = _run("sleep 300 &\necho $! > pid\necho started", sandbox, env)
    assert res.returncode == 0 and res.stdout == "started\n" and time.monotonic() - start < 30
    pid = int((sandbox / "pid").read_text())
    assert not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
