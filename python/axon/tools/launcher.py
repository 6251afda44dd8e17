"""Process launcher behind ``axon run``.

``run(nprocs, argv)`` starts ``nprocs`` copies of a program on this machine,
one per PE, and supervises them until they are all gone:

* each PE gets the launcher's environment plus ``AXON_RANK``,
  ``AXON_WORLD_SIZE``, ``AXON_LOCAL_RANK``, ``AXON_LOCAL_SIZE``, ``AXON_HOST_PES``,
  ``AXON_STORE_ADDR`` (where PE 0 serves the bootstrap key-value store) and
  ``AXON_JOB_KEY`` (a fresh key per job, which every PE proves to the store), and torchrun's
  ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR`` and
  ``MASTER_PORT`` (a second free port beside the store's), so that torch.distributed's env://
  rendezvous, and scripts written for torchrun, run under ``axon run`` unchanged;
* every line a PE writes is forwarded, whole, to the launcher's stdout or
  stderr with a ``[rank] `` prefix;
* when one PE fails, the others get a grace period, then SIGTERM, then
  SIGKILL, so a crashed job never leaves PEs spinning in a collective;
* SIGINT, SIGTERM and SIGHUP sent to the launcher are forwarded to every PE,
  with the same escalation; one that arrives while the PEs are being started
  stops the start instead, and the PEs already started are killed;
* a launcher killed outright (SIGKILL, which it cannot catch) takes its PEs
  with it: each PE asks the kernel for SIGKILL when the launcher goes
  (PR_SET_PDEATHSIG, ``parent_death.py``), and a watcher process kills what
  the PEs started (``group_watch.py``).

This module uses only the standard library and must not import the compiled
extension: the launcher has to work before (and without) the GPU backend.
"""

from __future__ import annotations

import collections
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO

from .emulated_nodes import EmulatedNodes, EmulationError, node_of_rank
from .group_watch import GroupWatch
from .parent_death import die_with_parent

__all__ = [
    "EXIT_CANNOT_START",
    "KILL_AFTER_TERM",
    "LineSink",
    "describe_status",
    "exit_code_of",
    "find_free_port",
    "new_job_key",
    "pe_environment",
    "run",
    "signal_name",
]

#: Exit code when the program cannot be started at all (as a shell does).
EXIT_CANNOT_START = 127

#: Seconds between the SIGTERM and the SIGKILL the launcher sends when stopping PEs.
KILL_AFTER_TERM = 3.0

# How often the supervisor polls the PEs. Polling (rather than a blocking wait
# on one child) lets it notice any PE's exit and any received signal promptly.
_POLL_INTERVAL = 0.05

# How long to wait for a PE's output pipes to reach end-of-file once the PE
# itself has exited. The data of an exited PE is already in the pipe, so this
# only runs out when a process the PE started keeps the pipe open.
_DRAIN_TIMEOUT = 5.0

# Signals the launcher catches and forwards to the PEs. PEs run in their own
# sessions, so a terminal's Ctrl-C reaches only the launcher and each PE gets
# the signal exactly once, from the launcher. SIGHUP is what a closed ssh
# session or terminal sends: PEs, in sessions of their own, would not get it.
_FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_STORE_HOST = "127.0.0.1"

# The store's port on emulated node 0 (any port is free in a new network namespace).
_EMULATED_STORE_PORT = 29500


# --------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------


def find_free_port(host: str = _STORE_HOST) -> int:
    """Return a TCP port on ``host`` that was free a moment ago.

    The port is found by binding port 0 and closing the socket again; PE 0
    binds it shortly afterwards to serve the key-value store.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def new_job_key() -> str:
    """A fresh job key: 32 bytes from the system's random source, as hex (AXON_JOB_KEY).

    The same as the library's ``Secret::generate``; made here because the launcher must not load
    the compiled extension.
    """
    return secrets.token_hex(32)


def pe_environment(
    rank: int,
    nprocs: int,
    store_addr: str,
    base: Mapping[str, str] | None = None,
    nodes: int = 1,
    job_key: str | None = None,
    torch_port: int | None = None,
) -> dict[str, str]:
    """Environment of PE ``rank``: ``base`` (default: ours) plus the AXON_* variables.

    With ``nodes`` > 1 (emulated nodes), PEs sit in blocks of nprocs / nodes per node and the
    local rank and size count within the node. ``job_key`` (the same for every PE of the job,
    from new_job_key) becomes AXON_JOB_KEY; a key or key file the launcher itself was given
    belongs to another job (the one that started it) and is not passed on. With ``torch_port``,
    torchrun's variables too (torch's store on PE 0's host at that port).
    """
    env = dict(os.environ if base is None else base)
    env.pop("AXON_JOB_KEY", None)
    env.pop("AXON_JOB_KEY_FILE", None)
    if job_key is not None:
        env["AXON_JOB_KEY"] = job_key
    per_node = nprocs // nodes
    env.update(
        {
            "AXON_RANK": str(rank),
            "AXON_WORLD_SIZE": str(nprocs),
            "AXON_LOCAL_RANK": str(rank % per_node),
            "AXON_LOCAL_SIZE": str(per_node),
            # All of them run on this machine, emulated nodes too: waits share the cores by it.
            "AXON_HOST_PES": str(nprocs),
            "AXON_STORE_ADDR": store_addr,
        }
    )
    if torch_port is not None:
        # torchrun's variables for this job's PEs (not an outer launcher's): torch's own store
        # serves on PE 0's host, beside axon's.
        env.update(
            {
                "RANK": str(rank),
                "WORLD_SIZE": str(nprocs),
                "LOCAL_RANK": str(rank % per_node),
                "LOCAL_WORLD_SIZE": str(per_node),
                "MASTER_ADDR": store_addr.rpartition(":")[0].strip("[]"),
                "MASTER_PORT": str(torch_port),
            }
        )
    # Output goes through a pipe, where Python would buffer it in blocks: PEs' lines would then
    # show up late and out of step with the others'. A user's explicit setting wins.
    env.setdefault("PYTHONUNBUFFERED", "1")
    if nodes > 1:
        # Emulated nodes share the machine's GPUs, and UCX would map GPU memory between them with
        # cuda_ipc (it then calls them one node), which real nodes cannot do. A user's UCX_TLS wins.
        env.setdefault("UCX_TLS", "^cuda_ipc")
    return env


def signal_name(signum: int) -> str:
    """``9`` -> ``"SIGKILL"``; a number with no name gives ``"signal N"``."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def exit_code_of(returncode: int) -> int:
    """Shell-style exit code of a ``Popen.returncode`` (killed by signal N -> 128+N)."""
    return 128 - returncode if returncode < 0 else returncode


def describe_status(returncode: int) -> str:
    """Human-readable status of a ``Popen.returncode``, e.g. ``exited with status 3``."""
    if returncode < 0:
        signum = -returncode
        return f"was killed by signal {signum} ({signal_name(signum)})"
    return f"exited with status {returncode}"


# --------------------------------------------------------------------------
# Output forwarding
# --------------------------------------------------------------------------


class LineSink:
    """Writes whole lines to one of the launcher's output streams.

    Several reader threads share a sink (and all sinks share one lock, since
    stdout and stderr often end up in the same terminal or file): each line is
    written and flushed while holding the lock, so lines of different PEs
    never interleave mid-line. Lines are bytes, so a PE's non-UTF-8 output
    goes through unchanged.
    """

    def __init__(self, stream: IO[str], lock: threading.Lock) -> None:
        self._stream = stream
        # Streams replaced by test harnesses may have no binary layer.
        self._binary: IO[bytes] | None = getattr(stream, "buffer", None)
        self._lock = lock
        self._closed = False
        # Anything already written through the text layer must come out
        # before what we write underneath it.
        self._flush_text_layer()

    def write_line(self, prefix: bytes, line: bytes) -> None:
        """Write ``prefix + line``, adding the newline a last line may lack."""
        if not line.endswith(b"\n"):
            line += b"\n"
        data = prefix + line
        with self._lock:
            if self._closed:
                return
            try:
                if self._binary is not None:
                    self._binary.write(data)
                    self._binary.flush()
                else:
                    self._stream.write(data.decode("utf-8", errors="replace"))
                    self._stream.flush()
            except (OSError, ValueError):
                # The reader went away (e.g. `axon run ... | head`). Keep the
                # readers draining the PEs' pipes so PEs never block on a full
                # pipe, but stop writing.
                self._closed = True
                self._silence()

    def close(self) -> None:
        """Drop every later line; a reader thread still blocked then never writes."""
        with self._lock:
            self._closed = True

    def _flush_text_layer(self) -> None:
        try:
            self._stream.flush()
        except (OSError, ValueError):
            pass

    def _silence(self) -> None:
        # Point the broken descriptor at /dev/null so that the interpreter's
        # own flush at exit does not fail (and complain) a second time.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self._stream.fileno())
            finally:
                os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass


def _pump(source: IO[bytes], sink: LineSink, prefix: bytes) -> None:
    """Reader-thread body: forward ``source`` line by line until end-of-file."""
    try:
        # readline returns a final line without newline at end-of-file, and
        # b"" only once the pipe is closed by every writer.
        for line in iter(source.readline, b""):
            sink.write_line(prefix, line)
    finally:
        source.close()


# --------------------------------------------------------------------------
# Signals received by the launcher
# --------------------------------------------------------------------------


class _SignalCatcher:
    """Records SIGINT/SIGTERM/SIGHUP while active instead of letting them kill the launcher.

    The handler only queues the signal; the supervisor loop forwards it. That
    keeps the handler trivial and also covers PEs started after the signal
    arrived. Outside the main thread Python cannot install handlers, so the
    catcher then does nothing (the embedding program owns its signals).
    """

    def __init__(self) -> None:
        self.pending: collections.deque[int] = collections.deque()
        self._previous: dict[int, object] = {}

    def __enter__(self) -> _SignalCatcher:
        if threading.current_thread() is not threading.main_thread():
            return self
        for signum in _FORWARDED_SIGNALS:
            # A signal the launcher was told to ignore (e.g. SIGINT of a
            # background job in a script) stays ignored, for the PEs too.
            if signal.getsignal(signum) == signal.SIG_IGN:
                continue
            self._previous[signum] = signal.signal(signum, self._record)
        return self

    def __exit__(self, *exc_info: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]
        self._previous.clear()

    def _record(self, signum: int, _frame: object) -> None:
        self.pending.append(signum)


# --------------------------------------------------------------------------
# Starting and supervising PEs
# --------------------------------------------------------------------------


@dataclass
class _PE:
    rank: int
    proc: subprocess.Popen
    readers: list[threading.Thread] = field(default_factory=list)
    #: Last signal the launcher sent this PE, to tell "stopped by us" from "failed".
    launcher_signal: int | None = None

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def send_signal(self, signum: int) -> None:
        """Signal the PE's whole process group (which it leads: own session)."""
        if self.proc.returncode is not None:
            # Already reaped: its pid, and so its group id, may be reused.
            return
        try:
            os.killpg(self.proc.pid, signum)
        except (ProcessLookupError, PermissionError):
            # Gone already, or (setuid program) not ours to signal: either
            # way there is nothing more the launcher can do for this PE.
            pass


class _CannotStart(Exception):
    """The program could not be started; the message is ready for the user."""


class _StartInterrupted(Exception):
    """A signal arrived while the PEs were being started; the started ones are gone."""

    def __init__(self, signum: int, started: int, nprocs: int) -> None:
        super().__init__(
            f"received {signal_name(signum)} while starting the PEs ({started} of {nprocs} "
            "started); stopped them"
        )
        self.exit_code = 128 + signum


class _Output:
    """The launcher's two sinks plus its own status messages."""

    def __init__(self) -> None:
        lock = threading.Lock()
        self.stdout = LineSink(sys.stdout, lock)
        self.stderr = LineSink(sys.stderr, lock)

    def say(self, message: str) -> None:
        self.stderr.write_line(b"", f"axon run: {message}".encode("utf-8", "replace"))

    def close(self) -> None:
        self.stdout.close()
        self.stderr.close()


def _start_reader(pe: _PE, source: IO[bytes], sink: LineSink, prefix: bytes, name: str) -> None:
    thread = threading.Thread(
        target=_pump,
        args=(source, sink, prefix),
        name=f"axon-run-pe{pe.rank}-{name}",
        # Daemon: a pipe held open by a leftover grandchild must not keep the
        # launcher alive after it gave up waiting for it (see _drain).
        daemon=True,
    )
    thread.start()
    pe.readers.append(thread)


def _start_pes(
    nprocs: int,
    argv: Sequence[str],
    output: _Output,
    prefix: bool,
    nodes: EmulatedNodes | None,
    signals: _SignalCatcher,
    watch: GroupWatch,
) -> list[_PE]:
    """Start every PE; on failure stop the ones already started and raise _CannotStart.

    A signal received before a PE is started (also while the emulated nodes were made) stops
    the start: the PEs already started are killed and _StartInterrupted is raised. Those PEs
    have not got far enough to finish anything, and a user who pressed Ctrl-C while a hundred
    PEs start should not wait for the hundred first.
    """
    if nodes is None:
        store_addr = f"{_STORE_HOST}:{find_free_port()}"
        torch_port = find_free_port()
    else:
        # PE 0 serves the store on node 0, whose fresh network namespace has every port free.
        store_addr = f"{nodes.address(0)}:{_EMULATED_STORE_PORT}"
        torch_port = _EMULATED_STORE_PORT + 1
    job_key = new_job_key()  # only the PEs of this job can prove it to its store
    node_count = nodes.count if nodes else 1
    # Made here, in the thread that then supervises the PEs until they are gone: the kernel
    # kills each PE when this thread exits (see parent_death.py).
    die_with_launcher = die_with_parent()
    pes: list[_PE] = []
    for rank in range(nprocs):
        if signals.pending:
            _kill_and_reap(pes)
            _kill_leftover_groups(pes)
            _drain(pes, output)
            raise _StartInterrupted(signals.pending[0], len(pes), nprocs)
        enter = nodes.enter_command(node_of_rank(rank, nprocs, node_count)) if nodes else []
        try:
            proc = subprocess.Popen(
                enter + list(argv),
                env=pe_environment(rank, nprocs, store_addr, nodes=node_count, job_key=job_key,
                                  torch_port=torch_port),
                # Only PE 0 reads the terminal, as with mpirun; N readers of
                # one stdin would split its input arbitrarily.
                stdin=None if rank == 0 else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                preexec_fn=die_with_launcher,
            )
        except OSError as exc:
            _kill_and_reap(pes)
            _drain(pes, output)
            reason = exc.strerror or str(exc)
            raise _CannotStart(f"cannot start {argv[0]!r}: {reason}") from exc
        watch.add(proc.pid)
        pe = _PE(rank, proc)
        pes.append(pe)
        line_prefix = f"[{rank}] ".encode() if prefix else b""
        assert proc.stdout is not None and proc.stderr is not None
        _start_reader(pe, proc.stdout, output.stdout, line_prefix, "stdout")
        _start_reader(pe, proc.stderr, output.stderr, line_prefix, "stderr")
    return pes


def _kill_and_reap(pes: Sequence[_PE]) -> None:
    """SIGKILL every live PE and wait for it: nothing may outlive the launcher."""
    for pe in pes:
        pe.send_signal(signal.SIGKILL)
    for pe in pes:
        pe.proc.wait()


def _kill_leftover_groups(pes: Sequence[_PE]) -> None:
    """SIGKILL what remains of the given PEs' process groups.

    A PE's own children stay in its group after the PE exits (e.g. a shell
    script's background job) and may keep its output pipes open; a stopped
    job must not leave them running. The group id is the reaped PE's pid,
    which the kernel keeps allocated while the group has members; callers
    pass only PEs reaped moments ago or whose pipes are still held open, so
    the id cannot have been reused by an unrelated group.
    """
    for pe in pes:
        try:
            os.killpg(pe.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _drain(pes: Sequence[_PE], output: _Output) -> None:
    """Wait until every line the PEs wrote has been forwarded."""
    deadline = time.monotonic() + _DRAIN_TIMEOUT
    for pe in pes:
        for reader in pe.readers:
            reader.join(max(0.0, deadline - time.monotonic()))
        if any(reader.is_alive() for reader in pe.readers):
            output.say(
                f"output of PE {pe.rank} is still open (a process it started is "
                "still running); not waiting for it"
            )


class _Supervisor:
    """Polls the PEs until all are gone, stopping them all once one fails.

    Stopping means: wait ``grace`` seconds for the PEs to end by themselves,
    then SIGTERM the survivors, then SIGKILL them KILL_AFTER_TERM seconds later.
    The same escalation follows a signal the launcher forwards.
    """

    def __init__(
        self, pes: list[_PE], grace: float, output: _Output, signals: _SignalCatcher, watch: GroupWatch
    ) -> None:
        self._pes = pes
        self._watch = watch
        self._live = list(pes)
        self._grace = grace
        self._output = output
        self._signals = signals
        self._stop_started: float | None = None
        # PEs running when the stop began: their groups are swept at the end.
        self._stopped: list[_PE] = []
        self._term_sent = False
        self._kill_sent = False
        self._exit_code: int | None = None

    def run(self) -> int:
        """Supervise until every PE has exited; return the launcher's exit code."""
        while True:
            self._forward_signals()
            self._reap()
            if not self._live:
                break
            self._escalate()
            time.sleep(_POLL_INTERVAL)
        if self._stop_started is not None:
            _kill_leftover_groups(self._leftover_candidates())
        # No PE failed: 0, also when PEs handled a forwarded signal and exited 0.
        return 0 if self._exit_code is None else self._exit_code

    def kill_survivors(self) -> None:
        """Last resort if supervision itself fails: no PE may be left behind."""
        self._stopped.extend(self._live)
        _kill_and_reap(self._live)
        self._live.clear()
        _kill_leftover_groups(self._leftover_candidates())

    def _leftover_candidates(self) -> list[_PE]:
        """PEs whose groups may hold leftovers and are safe to signal; see _kill_leftover_groups."""
        return [
            pe for pe in self._pes
            if pe in self._stopped or any(reader.is_alive() for reader in pe.readers)
        ]

    def _forward_signals(self) -> None:
        while self._signals.pending:
            signum = self._signals.pending.popleft()
            self._output.say(f"received {signal_name(signum)}; forwarding it to the PEs")
            self._signal_live(signum)
            self._begin_stop(trigger=None)

    def _reap(self) -> None:
        for pe in list(self._live):
            if pe.proc.poll() is None:
                continue
            self._live.remove(pe)
            # Reaped: its pid, the id of its group, may be reused from now on.
            self._watch.remove(pe.proc.pid)
            self._report_exit(pe)

    def _report_exit(self, pe: _PE) -> None:
        returncode = pe.returncode
        assert returncode is not None
        if returncode == 0:
            return
        if pe.launcher_signal is not None and returncode < 0:
            self._output.say(f"PE {pe.rank} stopped by the launcher ({signal_name(-returncode)})")
        else:
            stopping_others = self._stop_started is None and bool(self._live)
            suffix = "; stopping the other PEs" if stopping_others else ""
            self._output.say(f"PE {pe.rank} {describe_status(returncode)}{suffix}")
        # Even with no PE left, a failed job is "stopped": whatever its PEs
        # left running in their process groups is killed at the end.
        self._begin_stop(trigger=pe)
        # The first failure decides the exit code; the failures it causes don't.
        if self._exit_code is None:
            self._exit_code = exit_code_of(returncode)

    def _begin_stop(self, trigger: _PE | None) -> None:
        """Start the escalation; ``trigger`` is the failed PE, if a failure caused it."""
        if self._stop_started is not None:
            return
        self._stop_started = time.monotonic()
        self._stopped = list(self._live) + ([trigger] if trigger is not None else [])

    def _escalate(self) -> None:
        if self._stop_started is None:
            return
        elapsed = time.monotonic() - self._stop_started
        if not self._term_sent and elapsed >= self._grace:
            self._term_sent = True
            self._signal_live(signal.SIGTERM)
        if not self._kill_sent and elapsed >= self._grace + KILL_AFTER_TERM:
            self._kill_sent = True
            self._signal_live(signal.SIGKILL)

    def _signal_live(self, signum: int) -> None:
        for pe in self._live:
            pe.launcher_signal = signum
            pe.send_signal(signum)


def run(
    nprocs: int,
    argv: list[str],
    *,
    grace: float = 2.0,
    prefix: bool = True,
    emulate_nodes: int | None = None,
) -> int:
    """Run ``nprocs`` PEs of the program ``argv`` on this machine; return the exit code.

    The exit code is 0 when every PE exits 0; otherwise the status of the
    first PE that failed (128+N for a PE killed by signal N), also after a
    forwarded SIGINT/SIGTERM/SIGHUP (so PEs that handle it and exit 0 give 0);
    128+N when signal N stopped the start of the PEs; 127 when the program
    cannot be started. ``grace`` is how long the other PEs may run on
    after a failure before the launcher stops them; ``prefix`` selects the
    ``[rank] `` prefix on forwarded output lines. ``emulate_nodes`` runs the PEs
    on that many emulated nodes (``emulated_nodes.py``), nprocs / nodes PEs on
    each, in blocks; it must divide ``nprocs``.
    """
    if nprocs < 1:
        raise ValueError(f"nprocs must be >= 1, got {nprocs}")
    if not argv:
        raise ValueError("argv must name the program to run")
    if not grace >= 0:  # also rejects NaN
        raise ValueError(f"grace must be >= 0 seconds, got {grace}")
    if emulate_nodes is not None and (emulate_nodes < 1 or nprocs % emulate_nodes):
        raise ValueError(
            f"{nprocs} PEs do not divide over {emulate_nodes} emulated nodes "
            "(every node gets the same number of PEs)"
        )

    output = _Output()
    # Catch signals before the first PE (or emulated node) exists: PEs live in
    # their own sessions, so a launcher killed by Ctrl-C would orphan them, and
    # one that arrives during the start must stop it (see _start_pes).
    with _SignalCatcher() as signals:
        if emulate_nodes is None:
            return _run_with_output(nprocs, argv, grace, prefix, None, output, signals)
        try:
            nodes = EmulatedNodes(emulate_nodes)
            with nodes:
                return _run_with_output(nprocs, argv, grace, prefix, nodes, output, signals)
        except EmulationError as exc:
            output.say(str(exc))
            output.close()
            return EXIT_CANNOT_START


def _run_with_output(
    nprocs: int,
    argv: list[str],
    grace: float,
    prefix: bool,
    nodes: EmulatedNodes | None,
    output: _Output,
    signals: _SignalCatcher,
) -> int:
    # Until every PE is reaped and its group swept (or the launcher raises after
    # kill_survivors), the watcher stands by to kill the groups should the launcher die.
    with GroupWatch() as watch:
        try:
            pes = _start_pes(nprocs, argv, output, prefix, nodes, signals, watch)
        except _CannotStart as exc:
            output.say(str(exc))
            output.close()
            return EXIT_CANNOT_START
        except _StartInterrupted as exc:
            output.say(str(exc))
            output.close()
            return exc.exit_code
        supervisor = _Supervisor(pes, grace, output, signals, watch)
        try:
            exit_code = supervisor.run()
        except BaseException:
            supervisor.kill_survivors()
            raise
        # Only now that every PE has exited can its pipes reach end-of-file.
        _drain(pes, output)
        # Readers still blocked on a leftover process must not write once we
        # return (and never while the interpreter shuts down).
        output.close()
        return exit_code
