"""Tests of the process launcher, `axon run`, run as a real command.

The launcher is started as `python -m axon run ...`; PEs are small Python
programs (or sh). Set AXON_TEST_PYTHONPATH to test a copy of the package that
is not installed: it is prepended to the launcher's PYTHONPATH.
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Sequence

import pytest

AXON_RUN = [sys.executable, "-m", "axon", "run"]

# Generous bound on any single launcher run, so a regression fails the test
# instead of hanging the suite.
TIMEOUT = 30


def _env() -> dict:
    env = dict(os.environ)
    extra = os.environ.get("AXON_TEST_PYTHONPATH")
    if extra:
        old = env.get("PYTHONPATH")
        env["PYTHONPATH"] = extra + (os.pathsep + old if old else "")
    return env


def _py(code: str) -> list[str]:
    """Command line running ``code`` (dedented) with this interpreter."""
    return [sys.executable, "-c", textwrap.dedent(code)]


def axon_run(*args: str) -> subprocess.CompletedProcess:
    """Run ``axon run ARGS``; returns the completed process with bytes output."""
    return subprocess.run(
        AXON_RUN + list(args),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=_env(),
        timeout=TIMEOUT,
    )


def _lines(data: bytes) -> list[str]:
    return data.decode("utf-8").splitlines()


def _launcher_lines(stderr: bytes) -> list[str]:
    """The launcher's own messages among the stderr lines."""
    return [line for line in _lines(stderr) if line.startswith("axon run:")]


# --------------------------------------------------------------------------
# Environment of the PEs
# --------------------------------------------------------------------------

PRINT_AXON_VARS = """
    import os
    names = ["AXON_RANK", "AXON_WORLD_SIZE", "AXON_LOCAL_RANK", "AXON_LOCAL_SIZE"]
    print(" ".join(f"{n}={os.environ[n]}" for n in names))
"""


def test_ranks_and_sizes_seen_by_pes():
    result = axon_run("-n", "3", *_py(PRINT_AXON_VARS))
    assert result.returncode == 0
    # Nothing on stderr but, on a machine of fewer than 3 cores, the note saying so.
    assert [x for x in _lines(result.stderr) if not x.startswith("axon run: note: 3 PEs on ")] == []
    assert sorted(_lines(result.stdout)) == [
        f"[{i}] AXON_RANK={i} AXON_WORLD_SIZE=3 AXON_LOCAL_RANK={i} AXON_LOCAL_SIZE=3"
        for i in range(3)
    ]


def test_store_address_is_loopback_with_integer_port_shared_by_all_pes():
    result = axon_run("-n", "4", *_py("import os; print(os.environ['AXON_STORE_ADDR'])"))
    assert result.returncode == 0
    lines = _lines(result.stdout)
    assert len(lines) == 4
    addresses = {line.split(" ", 1)[1] for line in lines}
    assert len(addresses) == 1, "every PE must see the same store address"
    host, port = addresses.pop().split(":")
    assert host == "127.0.0.1"
    assert port.isdigit() and 1 <= int(port) <= 65535


def test_pes_inherit_the_launcher_environment():
    env_name = "AXON_TEST_INHERITED"
    code = f"import os; print(os.environ.get({env_name!r}, 'missing'))"
    os.environ[env_name] = "from-parent"
    try:
        result = axon_run("-n", "2", *_py(code))
    finally:
        del os.environ[env_name]
    assert sorted(_lines(result.stdout)) == ["[0] from-parent", "[1] from-parent"]


def test_compiled_program_and_python_script(tmp_path):
    sh = shutil.which("sh")
    assert sh is not None
    result = axon_run("-n", "2", sh, "-c", 'echo "sh $AXON_RANK/$AXON_WORLD_SIZE"')
    assert result.returncode == 0
    assert sorted(_lines(result.stdout)) == ["[0] sh 0/2", "[1] sh 1/2"]

    script = tmp_path / "pe.py"
    script.write_text("import os, sys\nprint('script', os.environ['AXON_RANK'], sys.argv[1:])\n")
    result = axon_run("-n", "2", sys.executable, str(script), "a", "b")
    assert result.returncode == 0
    assert sorted(_lines(result.stdout)) == [
        "[0] script 0 ['a', 'b']",
        "[1] script 1 ['a', 'b']",
    ]


# --------------------------------------------------------------------------
# Output forwarding
# --------------------------------------------------------------------------


def test_stdout_and_stderr_are_prefixed_and_kept_apart():
    code = """
        import os, sys
        rank = os.environ["AXON_RANK"]
        print(f"out {rank}")
        print(f"err {rank}", file=sys.stderr)
    """
    result = axon_run("-n", "2", *_py(code))
    assert result.returncode == 0
    assert sorted(_lines(result.stdout)) == ["[0] out 0", "[1] out 1"]
    assert sorted(_lines(result.stderr)) == ["[0] err 0", "[1] err 1"]


def test_last_line_without_newline_and_non_utf8_bytes():
    code = r"""
        import sys
        sys.stdout.buffer.write(b"bytes \xff\xfe\n")
        sys.stdout.write("first\nno newline at the end")
    """
    result = axon_run("-n", "1", *_py(code))
    assert result.returncode == 0
    assert result.stdout == b"[0] bytes \xff\xfe\n[0] first\n[0] no newline at the end\n"


def test_no_prefix_passes_lines_through():
    code = "import os; print('plain', os.environ['AXON_RANK'])"
    result = axon_run("-n", "2", "--no-prefix", *_py(code))
    assert result.returncode == 0
    assert sorted(_lines(result.stdout)) == ["plain 0", "plain 1"]


def test_lines_of_many_pes_never_interleave_and_all_are_drained():
    nprocs, count = 4, 2000
    code = f"""
        import os, sys
        rank = os.environ["AXON_RANK"]
        for i in range({count}):
            sys.stdout.write(f"out {{rank}} {{i}} " + "x" * 80 + "\\n")
            sys.stderr.write(f"err {{rank}} {{i}} " + "y" * 80 + "\\n")
    """
    result = axon_run("-n", str(nprocs), *_py(code))
    assert result.returncode == 0
    for stream, kind, fill in ((result.stdout, "out", "x"), (result.stderr, "err", "y")):
        pattern = re.compile(rf"\[(\d)\] {kind} (\d) (\d+) {fill}{{80}}")
        seen = {rank: [] for rank in range(nprocs)}
        for line in _lines(stream):
            if line.startswith(f"axon run: note: {nprocs} PEs on "):
                continue  # more PEs than cores (a CI machine of 2)
            match = pattern.fullmatch(line)
            assert match is not None, f"mangled line: {line!r}"
            assert match.group(1) == match.group(2)
            seen[int(match.group(1))].append(int(match.group(3)))
        # Every line arrives, in the order each PE wrote it.
        assert all(numbers == list(range(count)) for numbers in seen.values())


# --------------------------------------------------------------------------
# Failures
# --------------------------------------------------------------------------

# PE 1 runs `failure` once PE 0 has run `peer_setup` and created the file
# argv[1] (so the launcher's signals cannot overtake the setup); PE 0 then
# sleeps until the launcher stops it.
FAIL_ONE_PE = """
    import os, signal, sys, time
    ready = sys.argv[1]
    if os.environ["AXON_RANK"] == "1":
        while not os.path.exists(ready):
            time.sleep(0.01)
        {failure}
    {peer_setup}
    open(ready, "w").close()
    time.sleep(60)
"""


def _fail_one_pe(tmp_path, failure: str, peer_setup: str = "pass") -> list[str]:
    code = FAIL_ONE_PE.format(failure=failure, peer_setup=peer_setup)
    return _py(code) + [str(tmp_path / "pe0-ready")]


def test_failing_pe_sets_exit_code_and_peers_are_stopped(tmp_path):
    start = time.monotonic()
    result = axon_run("-n", "2", "--grace", "0.5", *_fail_one_pe(tmp_path, "sys.exit(3)"))
    elapsed = time.monotonic() - start
    assert result.returncode == 3
    assert _launcher_lines(result.stderr) == [
        "axon run: PE 1 exited with status 3; stopping the other PEs",
        "axon run: PE 0 stopped by the launcher (SIGTERM)",
    ]
    assert elapsed < 10


def test_peer_ignoring_sigterm_is_killed(tmp_path):
    peer_setup = "signal.signal(signal.SIGTERM, signal.SIG_IGN)"
    start = time.monotonic()
    command = _fail_one_pe(tmp_path, "sys.exit(5)", peer_setup)
    result = axon_run("-n", "2", "--grace", "0.2", *command)
    elapsed = time.monotonic() - start
    assert result.returncode == 5
    assert _launcher_lines(result.stderr) == [
        "axon run: PE 1 exited with status 5; stopping the other PEs",
        "axon run: PE 0 stopped by the launcher (SIGKILL)",
    ]
    # grace + 3 s between SIGTERM and SIGKILL, plus start-up.
    assert elapsed < 10


def test_processes_left_by_pes_of_a_stopped_job_are_killed():
    # PE 0 exits at once but leaves a background job holding its output pipes;
    # PE 1 then fails. The launcher must kill the leftover rather than wait on it.
    sh = shutil.which("sh")
    assert sh is not None
    script = 'if [ "$AXON_RANK" = 0 ]; then sleep 60 & exit 0; fi; sleep 0.3; exit 3'
    start = time.monotonic()
    result = axon_run("-n", "2", "--grace", "0.2", sh, "-c", script)
    elapsed = time.monotonic() - start
    assert result.returncode == 3
    assert _launcher_lines(result.stderr) == ["axon run: PE 1 exited with status 3"]
    assert elapsed < 3


def test_pe_killed_by_signal(tmp_path):
    failure = "os.kill(os.getpid(), signal.SIGKILL)"
    result = axon_run("-n", "2", "--grace", "0.5", *_fail_one_pe(tmp_path, failure))
    assert result.returncode == 128 + signal.SIGKILL
    assert _launcher_lines(result.stderr)[0] == (
        "axon run: PE 1 was killed by signal 9 (SIGKILL); stopping the other PEs"
    )


def test_single_failing_pe_reports_status_only():
    result = axon_run("-n", "1", *_py("import sys; sys.exit(4)"))
    assert result.returncode == 4
    assert _launcher_lines(result.stderr) == ["axon run: PE 0 exited with status 4"]


class _Collector:
    """Reads a pipe on a thread, so the test can wait for lines with a timeout."""

    def __init__(self, pipe) -> None:
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.all: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._thread.start()

    def _read(self, pipe) -> None:
        for raw in iter(pipe.readline, b""):
            line = raw.decode("utf-8").rstrip("\n")
            self.all.append(line)
            self.lines.put(line)
        self.lines.put(None)

    def wait_for(self, count: int, text: str, timeout: float = TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        seen = 0
        while seen < count:
            line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            assert line is not None, "pipe closed before the expected lines arrived"
            seen += text in line

    def finish(self) -> list[str]:
        self._thread.join(TIMEOUT)
        return self.all


def test_sigterm_to_launcher_is_forwarded_to_every_pe():
    # PE 0 traps SIGTERM and exits 0; PE 1 dies of it, which sets the exit code.
    code = """
        import os, signal, sys, time
        if os.environ["AXON_RANK"] == "0":
            def on_term(signum, frame):
                print("PE 0 caught SIGTERM", flush=True)
                sys.exit(0)
            signal.signal(signal.SIGTERM, on_term)
        print("ready", flush=True)
        time.sleep(60)
    """
    launcher = subprocess.Popen(
        AXON_RUN + ["-n", "2", "--grace", "5", *_py(code)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    try:
        stdout, stderr = _Collector(launcher.stdout), _Collector(launcher.stderr)
        stdout.wait_for(2, "ready")
        start = time.monotonic()
        launcher.send_signal(signal.SIGTERM)
        returncode = launcher.wait(TIMEOUT)
        elapsed = time.monotonic() - start
    finally:
        if launcher.poll() is None:
            launcher.kill()
            launcher.wait()
    assert returncode == 128 + signal.SIGTERM
    assert "[0] PE 0 caught SIGTERM" in stdout.finish()
    assert [line for line in stderr.finish() if line.startswith("axon run:")] == [
        "axon run: received SIGTERM; forwarding it to the PEs",
        "axon run: PE 1 stopped by the launcher (SIGTERM)",
    ]
    # Both PEs reacted to the forwarded signal; the 5 s grace was not needed.
    assert elapsed < 4


# --------------------------------------------------------------------------
# Start-up errors and the command line
# --------------------------------------------------------------------------


def test_program_not_found():
    result = axon_run("-n", "2", "axon-test-no-such-program", "arg")
    assert result.returncode == 127
    assert result.stdout == b""
    assert _lines(result.stderr) == [
        "axon run: cannot start 'axon-test-no-such-program': No such file or directory"
    ]


def test_program_not_executable(tmp_path):
    program = tmp_path / "not-executable"
    program.write_text("#!/bin/sh\necho hi\n")
    program.chmod(0o644)
    result = axon_run("-n", "2", str(program))
    assert result.returncode == 127
    assert _lines(result.stderr) == [f"axon run: cannot start {str(program)!r}: Permission denied"]


@pytest.mark.parametrize(
    "args",
    [
        ["-n", "0", "true"],
        ["-n", "-1", "true"],
        ["-n", "two", "true"],
        ["true"],
        ["-n", "2"],
        ["-n", "2", "--grace", "-1", "true"],
    ],
    ids=["zero", "negative", "not-a-number", "missing-n", "missing-program", "bad-grace"],
)
def test_bad_command_line_exits_2_with_one_line(args: Sequence[str]):
    result = axon_run(*args)
    assert result.returncode == 2
    assert result.stdout == b""
    lines = _lines(result.stderr)
    assert len(lines) == 1
    assert lines[0].startswith("axon run: error:")


def test_bad_n_message_names_the_option():
    result = axon_run("-n", "0", "true")
    assert "-n/--nprocs/-np/--np: must be an integer >= 1, got '0'" in result.stderr.decode()


ECHO_ARGS = "import sys; print(sys.argv[1:])"


def test_arguments_after_the_program_reach_it_unchanged():
    result = axon_run("-n", "1", *_py(ECHO_ARGS), "-n", "5", "--grace", "9", "--", "-h")
    assert result.returncode == 0
    assert _lines(result.stdout) == ["[0] ['-n', '5', '--grace', '9', '--', '-h']"]


def test_double_dash_separates_the_program():
    result = axon_run("-n", "2", "--", *_py(ECHO_ARGS), "--flag")
    assert result.returncode == 0
    assert sorted(_lines(result.stdout)) == ["[0] ['--flag']", "[1] ['--flag']"]


def test_emulated_nodes_keep_ucx_off_cuda_ipc_unless_the_user_chose_transports():
    from axon.tools.launcher import pe_environment

    # Real nodes cannot map each other's GPU memory; emulated ones on one machine could.
    env = pe_environment(2, 4, "10.77.0.1:29500", base={}, nodes=2)
    assert env["UCX_TLS"] == "^cuda_ipc"
    assert env["AXON_LOCAL_RANK"] == "0" and env["AXON_LOCAL_SIZE"] == "2"
    # Every PE runs on this one machine: waits share its cores by all of them.
    assert env["AXON_HOST_PES"] == "4"
    assert pe_environment(0, 4, "h:1", base={"UCX_TLS": "tcp,cuda_copy"}, nodes=2)["UCX_TLS"] == "tcp,cuda_copy"
    # One node: UCX is left alone.
    assert "UCX_TLS" not in pe_environment(0, 2, "h:1", base={}, nodes=1)


def test_pes_get_torchruns_variables_for_this_job():
    from axon.tools.launcher import pe_environment

    # An outer launcher's values are replaced: they describe another job.
    outer = {"RANK": "7", "WORLD_SIZE": "16", "MASTER_ADDR": "10.0.0.9", "MASTER_PORT": "1234"}
    env = pe_environment(3, 4, "10.77.0.2:29500", base=outer, nodes=2, torch_port=29501)
    assert (env["RANK"], env["WORLD_SIZE"], env["LOCAL_RANK"], env["LOCAL_WORLD_SIZE"]) == ("3", "4", "1", "2")
    assert (env["MASTER_ADDR"], env["MASTER_PORT"]) == ("10.77.0.2", "29501")
    assert "MASTER_PORT" not in pe_environment(0, 2, "h:1", base={})  # only where the launcher chose one


def test_axon_run_gives_every_pe_torchruns_variables():
    code = ("import os; print(' '.join(os.environ[k] for k in ('RANK', 'WORLD_SIZE', 'LOCAL_RANK', "
            "'LOCAL_WORLD_SIZE', 'MASTER_ADDR', 'MASTER_PORT')))")
    result = axon_run("-n", "2", sys.executable, "-c", code)
    assert result.returncode == 0, result.stderr
    rows = sorted(line.split("] ", 1)[1].split() for line in _lines(result.stdout))
    assert [r[:4] for r in rows] == [["0", "2", "0", "2"], ["1", "2", "1", "2"]]
    assert rows[0][4:] == rows[1][4:] and rows[0][5].isdigit()  # one torch store for the job


def test_program_options_that_prefix_launcher_options_reach_the_program():
    # `--n` abbreviates --nprocs and --no-prefix for argparse; it belongs to the program.
    res = axon_run("-n", "1", *_py("import sys; print(sys.argv[1:])"), "--n", "5", "--no")
    assert res.returncode == 0, res.stderr
    assert _lines(res.stdout) == ["[0] ['--n', '5', '--no']"]


# --------------------------------------------------------------------------
# Habits from mpirun and torchrun
# --------------------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["-np", "--np", "-n", "--nprocs"])
def test_np_as_mpirun_spells_it(spelling):
    result = axon_run(spelling, "2", *_py("import os; print(os.environ['AXON_WORLD_SIZE'])"))
    assert result.returncode == 0, result.stderr
    assert sorted(_lines(result.stdout)) == ["[0] 2", "[1] 2"]


def test_x_exports_variables_to_the_pes_as_mpirun_does():
    code = "import os; print(os.environ.get('AXON_TEST_X1'), os.environ.get('AXON_TEST_X2'))"
    os.environ["AXON_TEST_X2"] = "inherited"
    try:
        result = axon_run("-n", "2", "-x", "AXON_TEST_X1=a=b c", "-x", "AXON_TEST_X2", *_py(code))
    finally:
        del os.environ["AXON_TEST_X2"]
    assert result.returncode == 0, result.stderr
    assert sorted(_lines(result.stdout)) == ["[0] a=b c inherited", "[1] a=b c inherited"]
    assert _launcher_lines(result.stderr) == []


def test_x_of_an_unset_variable_is_a_note_and_bad_ones_are_refused():
    result = axon_run("-n", "1", "-x", "AXON_TEST_UNSET_VAR", *_py("print('ran')"))
    assert result.returncode == 0 and _lines(result.stdout) == ["[0] ran"]
    assert _launcher_lines(result.stderr) == [
        "axon run: note: -x AXON_TEST_UNSET_VAR: AXON_TEST_UNSET_VAR is not set here, so the PEs do not get "
        "it either (set it with -x AXON_TEST_UNSET_VAR=VALUE)"]
    for bad, message in ((["-x", "1X=2"], "-x takes NAME=VALUE or NAME (a variable name: letters, digits, _), "
                                           "got '1X=2'"),
                         (["-x", "AXON_RANK=5"], "-x AXON_RANK: axon run sets AXON_RANK for each PE itself")):
        result = axon_run("-n", "1", *bad, "true")
        assert result.returncode == 2 and result.stdout == b""
        assert _lines(result.stderr) == [f"axon run: error: {message}"]


def test_python_file_runs_with_the_jobs_python(tmp_path):
    script = tmp_path / "job.py"
    script.write_text("import os, sys\nprint(os.environ['AXON_RANK'], sys.executable, sys.argv[1:])\n")
    script.chmod(0o644)  # not executable: torchrun runs it with Python, so does axon run
    result = subprocess.run(AXON_RUN + ["-n", "2", "job.py", "-n", "5"], cwd=tmp_path, stdin=subprocess.DEVNULL,
                            capture_output=True, env=_env(), timeout=TIMEOUT)
    assert result.returncode == 0, result.stderr
    assert sorted(_lines(result.stdout)) == [f"[0] 0 {sys.executable} ['-n', '5']",
                                             f"[1] 1 {sys.executable} ['-n', '5']"]


def test_python_without_axon_gets_a_hint(tmp_path):
    """A Python that cannot import axon: one note naming it and the fix, before the PEs fail."""
    # A Python of its own (a venv without axon; PYTHONPATH cleared so that it cannot find ours).
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    bare = venv / "bin" / "python"
    script = tmp_path / "uses_axon.py"
    script.write_text("import axon\nprint('unreachable')\n")
    env = _env()
    env.pop("PYTHONPATH", None)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(__import__("axon.tools.launcher").__file__))
    result = subprocess.run(AXON_RUN + ["-n", "2", "-x", "PYTHONPATH=", str(bare), str(script)],
                            stdin=subprocess.DEVNULL, capture_output=True, env=env, timeout=TIMEOUT)
    assert result.returncode == 1
    notes = [x for x in _launcher_lines(result.stderr) if "cannot import axon" in x]
    assert notes == [
        f"axon run: note: {bare} cannot import axon (ModuleNotFoundError: No module named 'axon'), so every PE "
        f"will fail; run the program with {sys.executable}, which has axon, or install axon for that Python: "
        f"{bare} -m pip install " + notes[0].split(" -m pip install ", 1)[1]]
    # A program that does not use axon is not held up with the note.
    result = subprocess.run(AXON_RUN + ["-n", "1", "-x", "PYTHONPATH=", str(bare), "-c", "print('fine')"],
                            stdin=subprocess.DEVNULL, capture_output=True, env=env, timeout=TIMEOUT)
    assert result.returncode == 0 and _lines(result.stdout) == ["[0] fine"]
    assert _launcher_lines(result.stderr) == []


def test_more_pes_than_cores_gets_one_note():
    cores = len(os.sched_getaffinity(0))
    result = axon_run("-n", str(cores + 1), "true")
    assert result.returncode == 0
    assert _launcher_lines(result.stderr) == [
        f"axon run: note: {cores + 1} PEs on {cores} cores: PEs that wait spin, and more PEs than cores take "
        "turns, so barriers, collectives and small transfers take milliseconds instead of microseconds"]
    assert _launcher_lines(axon_run("-n", str(cores), "true").stderr) == []


def test_version():
    result = subprocess.run([sys.executable, "-m", "axon", "--version"], capture_output=True, text=True,
                            env=_env(), timeout=TIMEOUT)
    assert result.returncode == 0 and result.stderr == ""
    import axon.cli

    package_dir = os.path.dirname(os.path.realpath(axon.cli.__file__))
    version = ".".join(map(str, sys.version_info[:3]))
    assert re.fullmatch(rf"axon \d+\.\d+\.\d+\S* \({re.escape(package_dir)}, Python {version}\)\n", result.stdout)
