"""The staging space: named, versioned n-dimensional arrays held by staging servers between
loosely coupled programs.

Writers put blocks; readers get any box [lo, hi) into host or GPU memory, in any decomposition::

    import axon.space
    c = axon.space.connect()                 # AXON_SPACE_ADDR (+ AXON_SPACE_KEY), else the file AXON_SPACE_FILE names
    c.define("temperature", (512, 512, 512), "float64")
    c.put("temperature", step, (0, 0, 0), block)            # NumPy, CuPy, torch or symmetric arrays
    box = c.get("temperature", step, (10, 0, 0), (20, 512, 512))   # a NumPy array
    box = c.get("temperature", step, start=(10, 0, 0), count=(10, 512, 512))   # the same box
    c.release("temperature", step)
    c.remove("temperature")                  # every version goes; the name may be defined again

Boxes, the convention: arrays are dense and row-major (C order); a box ``[lo, hi)`` has ``lo``
inclusive and ``hi`` exclusive in every dimension, like Python slices (``a[lo0:hi0, lo1:hi1]``;
DataSpaces' inclusive upper bound ``ub`` is ``hi - 1``). ``start``/``count`` name the same box
as ADIOS2 does (``hi = start + count``), and a put's block is ``offset`` (its start) with the
array's shape as its count. Versions are numbers >= 0 (e.g. the step); a negative one is refused.

A client is not a PE: any process may connect, without axon.init(). Servers run as their own
processes (``axon space serve``) or inside a program (:class:`Server`). Every call is bounded by its
timeout, else by AXON_TIMEOUT. Errors: :class:`FullError` (a server's --mem is used up),
:class:`EvictedError` (the version was dropped), :class:`IncompleteError` (not fully written within
the timeout; lists the missing boxes), :class:`ServerLostError` (a server this client reached died
or shut down), :class:`ServerUnreachableError` (a subclass of it: connecting to a server that was
never reached, or through a missing or stale contact file), axon.PermissionDeniedError (no key, a
wrong one, or a server that could not prove it) and axon.InvalidArgumentError for bad boxes,
versions, dtypes, names or buffers (a get's ``out`` of another shape or dtype than the box's).

Every client proves the space's key (docs/security.md): ``key=`` given to :func:`connect`, else
AXON_SPACE_KEY, else the key in the server's contact file when the client finds the server through
it (AXON_SPACE_FILE). An embedded :class:`Server` tells its key as ``server.key``.
"""

from __future__ import annotations

import numpy as np

from . import _axon
from .collectives import DTYPES
from .errors import (EvictedError, FullError, IncompleteError, InvalidArgumentError, ServerLostError,
                     ServerUnreachableError)
from .gpu import as_buffer
from .tools.bench.sizes import parse_size

__all__ = ["connect", "Client", "Server", "Request", "FullError", "EvictedError", "IncompleteError",
           "ServerLostError", "ServerUnreachableError"]

# In the order of axon::space::GpuPath.
_GPU_PATHS = ("direct", "ucx-device", "host-staged")


def _dtype_code(dtype, api: str) -> int:
    name = str(np.dtype(dtype).name if not isinstance(dtype, str) else dtype).replace("torch.", "")
    if name not in DTYPES:
        raise InvalidArgumentError(f"axon.space.{api}: dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    return DTYPES.index(name)


def _timeout(timeout) -> float:
    if timeout is None:
        return -1.0
    if not timeout > 0:
        raise InvalidArgumentError(f"axon.space: timeout must be a positive number of seconds, not {timeout!r}")
    return float(timeout)


def _index(values, api: str, role: str) -> list[int]:
    try:
        return [int(v) for v in values]
    except TypeError:
        raise InvalidArgumentError(f"axon.space.{api}: {role} must be a sequence of integers, not "
                                   f"{type(values).__name__}") from None


def _box(lo, hi, start, count, api: str) -> tuple[list[int], list[int]]:
    """[lo, hi) from either form: lo/hi (hi exclusive) or start/count (ADIOS2's), never both."""
    if start is not None or count is not None:
        if lo is not None or hi is not None:
            raise InvalidArgumentError(f"axon.space.{api}: give the box as lo and hi, or as start= and count=, "
                                       "not both")
        if start is None or count is None:
            raise InvalidArgumentError(f"axon.space.{api}: start= and count= go together (the box is "
                                       f"[start, start + count)); {'count' if count is None else 'start'} is missing")
        start, count = _index(start, api, "start"), _index(count, api, "count")
        if len(start) != len(count):
            raise InvalidArgumentError(f"axon.space.{api}: start has {len(start)} entries but count has {len(count)}")
        if any(n <= 0 for n in count):
            raise InvalidArgumentError(f"axon.space.{api}: count {count} has an entry <= 0 (an empty box)")
        return start, [s + n for s, n in zip(start, count)]
    if lo is None or hi is None:
        raise InvalidArgumentError(f"axon.space.{api}: no box: give lo and hi ([lo, hi), hi exclusive), or start= "
                                   "and count=")
    return _index(lo, api, "lo"), _index(hi, api, "hi")


def _device_of(array):
    """The CUDA device ordinal of a GPU array (None for host memory, or when it does not say)."""
    dev = getattr(array, "__dlpack_device__", None)
    if dev is None:
        return None
    try:
        kind, ordinal = dev()
    except Exception:  # noqa: BLE001 - an object whose method fails says nothing we can use
        return None
    return int(ordinal) if int(kind) in (2, 13) else None  # kDLCUDA, kDLCUDAManaged


class Request:
    """A nonblocking put or get. ``wait()`` returns the get's array (None for a put) or raises its
    failure; the arrays involved stay alive until then."""

    def __init__(self, raw, keep, result=None):
        self._raw, self._keep, self._result = raw, keep, result

    def wait(self):
        """Waits until the request is done; returns the get's array (None for a put)."""
        self._raw.wait()
        self._keep = None
        return self._result

    def test(self) -> bool:
        """Whether the request is done, without waiting (wait() then returns at once)."""
        done = self._raw.test()
        if done:
            self._keep = None
        return done


class Client:
    """A connection to a staging space; see :func:`connect`."""

    def __init__(self, raw):
        self._raw = raw
        self._dtypes: dict[str, int] = {}
        self._device = None  # the GPU this client's GPU transfers run on: the first GPU array's

    # -- variables ---------------------------------------------------------------------------

    def define(self, name: str, shape, dtype, keep_versions: int = 2) -> None:
        """Defines `name` on every server (a repeat must be identical)."""
        code = _dtype_code(dtype, "define")
        self._raw.define(name, _index(shape, "define", "shape"), code, int(keep_versions))
        self._dtypes[name] = code

    def remove(self, name: str) -> None:
        """Removes `name` from every server: every version goes (held ones too) and its memory returns
        to --mem. Returns once it is gone everywhere; the name may then be defined again, with any
        shape. Gets already reading it and puts already landing finish first; gets, wait_version
        calls and puts still waiting on it fail with InvalidArgumentError ("was removed"), as does
        every later call on the name until it is defined again. axon.TimeoutError when transfers
        under way on it outlast the client's timeout (it still goes when they end). Another client
        that used the name should define it again before using it (that refreshes its cached
        definition)."""
        self._raw.remove(name)
        self._dtypes.pop(name, None)

    def _dtype_of(self, name: str) -> int:
        if name not in self._dtypes:
            self._dtypes[name] = self._raw.dtype_of(name)
        return self._dtypes[name]

    def _check_dtype(self, name: str, array_dtype, api: str, where: str = "") -> None:
        want = DTYPES[self._dtype_of(name)]
        have = np.dtype(array_dtype)
        size = 2 if want in ("float16", "bfloat16") else np.dtype(want).itemsize
        if have.itemsize != size or (want not in ("bfloat16",) and have.name != want and have.kind != "V"):
            raise InvalidArgumentError(f"axon.space.{api}: '{name}' holds {want}, but the array{where} is {have.name}")

    def _check_device(self, array, api: str, role: str) -> None:
        # One GPU per client: its staging buffers, stream and kernels live on the first GPU it sees.
        device = _device_of(array)
        if device is None:
            return
        if self._device is None:
            self._device = device
        elif device != self._device:
            raise InvalidArgumentError(f"axon.space.{api}: {role} is on GPU {device}, but this client moves GPU data "
                                       f"on GPU {self._device} (the first GPU array it was given); use one client "
                                       "per GPU")

    # -- puts --------------------------------------------------------------------------------

    def _put_args(self, name, offset, array, api):
        buf = as_buffer(array, f"space.{api}", "array")
        self._check_device(array, api, "the array")
        self._check_dtype(name, buf.dtype, api)
        shape = tuple(int(s) for s in getattr(array, "shape", (buf.size,)))
        offset = _index(offset, api, "offset")
        if len(offset) != len(shape):
            raise InvalidArgumentError(f"axon.space.{api}: offset has {len(offset)} entries but the array has "
                                       f"{len(shape)} dimensions")
        return buf, offset, list(shape)

    def put(self, name: str, version: int, offset, array, timeout: float | None = None) -> None:
        """Stores `array` (dense, row-major, of the variable's dtype) as the block that starts at
        `offset` (its first element, ADIOS2's start; its count is ``array.shape``), i.e. the box
        [offset, offset + array.shape). `version` >= 0. Returns when the servers own the data (the
        array may then be reused). Blocks of one version must not overlap."""
        buf, offset, count = self._put_args(name, offset, array, "put")
        self._raw.put(name, int(version), offset, count, buf.addr, _timeout(timeout))

    def iput(self, name: str, version: int, offset, array, timeout: float | None = None) -> Request:
        """A nonblocking :meth:`put` (same arguments; the block [offset, offset + array.shape)); small
        ones travel in batches (AXON_SPACE_BATCH). Keep the array unchanged until wait()."""
        buf, offset, count = self._put_args(name, offset, array, "iput")
        return Request(self._raw.iput(name, int(version), offset, count, buf.addr, _timeout(timeout)), array)

    # -- gets --------------------------------------------------------------------------------

    def _get_args(self, name, lo, hi, out, api, start=None, count=None):
        lo, hi = _box(lo, hi, start, count, api)
        if len(lo) != len(hi):
            raise InvalidArgumentError(f"axon.space.{api}: lo has {len(lo)} entries but hi has {len(hi)}")
        dims = [h - l for l, h in zip(lo, hi)]
        if any(d <= 0 for d in dims):
            raise InvalidArgumentError(f"axon.space.{api}: the box [{lo}, {hi}) is empty (lo >= hi)")
        box = f"'{name}' box [{tuple(lo)}, {tuple(hi)})"
        if out is None:
            name_dtype = DTYPES[self._dtype_of(name)]
            out = np.empty(dims, dtype=np.uint16 if name_dtype == "bfloat16" else name_dtype)
        try:
            buf = as_buffer(out, f"space.{api}", "out", writable=True)
        except InvalidArgumentError as e:
            raise InvalidArgumentError(f"{e} (the {api} of {box})") from None
        # The box lands dense and row-major: an out of another shape would hold it in the wrong layout.
        shape = getattr(out, "shape", None)
        have = tuple(int(s) for s in shape) if shape is not None else (buf.size,)
        if have != tuple(dims):
            raise InvalidArgumentError(f"axon.space.{api}: out has shape {have}, but {box} has shape {tuple(dims)} "
                                       "(out must be that shape: the box lands dense and row-major)")
        self._check_dtype(name, buf.dtype, api, f" out (for {box})")
        self._check_device(out, api, "out")
        return lo, hi, out, buf

    def get(self, name: str, version: int, lo=None, hi=None, out=None, timeout: float | None = None, *,
            start=None, count=None):
        """The box [lo, hi) of the version: lo inclusive, hi exclusive in every dimension, like Python
        slices (``a[lo0:hi0, lo1:hi1]``), row-major. Or, keyword-only, ``start=`` and ``count=``
        (ADIOS2's form: the box [start, start + count)), never both forms at once.

        Into `out` (host or GPU; C-contiguous, of the box's shape and the variable's dtype, else
        InvalidArgumentError naming both), or a new NumPy array. `version` >= 0. Waits up to the
        timeout for parts still being written; holds the version until release()."""
        lo, hi, out, buf = self._get_args(name, lo, hi, out, "get", start, count)
        self._raw.get(name, int(version), lo, hi, buf.addr, buf.nbytes, _timeout(timeout))
        return out

    def iget(self, name: str, version: int, lo=None, hi=None, out=None, timeout: float | None = None, *,
             start=None, count=None) -> Request:
        """A nonblocking :meth:`get` of the box [lo, hi) (or start=/count=), checked the same way;
        its Request's wait() returns the array."""
        lo, hi, out, buf = self._get_args(name, lo, hi, out, "iget", start, count)
        raw = self._raw.iget(name, int(version), lo, hi, buf.addr, buf.nbytes, _timeout(timeout))
        return Request(raw, out, out)

    # -- versions, stats ---------------------------------------------------------------------

    def wait_version(self, name: str, at_least: int, timeout: float | None = None) -> int:
        """Waits until a version >= at_least is complete on every server; returns the newest complete
        one. `at_least` is a bound, not a version: 0 (or below) means any version."""
        return self._raw.wait_version(name, int(at_least), _timeout(timeout))

    def release(self, name: str, version: int) -> None:
        """Lets the servers drop the version (>= 0) when keep_versions or memory asks for it."""
        self._raw.release(name, int(version))

    def stats(self) -> dict:
        """{'servers': [per server: bytes_in_use, high_water, pieces, ...], 'client': {puts, gets,
        batches, paths taken, copies, fused_kernels, last_path, ...}}"""
        return self._raw.stats()

    @property
    def servers(self) -> list[str]:
        """The addresses ("host:port") of the space's servers."""
        return list(self._raw.servers())

    def close(self) -> None:
        """Waits for open requests, then disconnects (this client's holds are dropped)."""
        self._raw.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def connect(addr: str | None = None, timeout: float | None = None, *, contact_file: str | None = None,
            gpu_path: str = "direct", shared_memory: bool = True, batch: int | None = None,
            key: str | None = None) -> Client:
    """Connects to the space of the server at `addr` ("host:port"; None: AXON_SPACE_ADDR, then the
    contact file AXON_SPACE_FILE names). `gpu_path`: "direct" (one DMA into a server's mapped memory
    on this node; to other nodes a pipeline through pinned host buffers), "ucx-device" (GPU memory
    handed to UCX: GPUDirect RDMA where the NIC has it) or "host-staged" (the baseline: GPU data
    copied to host first). Boxes under 64 KiB go through host memory in one message on every path.
    `shared_memory=False` takes UCX even to servers on this
    node. `batch`: bytes up to which nonblocking puts are batched (0: off; None: AXON_SPACE_BATCH).
    `key`: the space's key, hex (None: AXON_SPACE_KEY, then the contact file's); without the right
    one the servers refuse the client (axon.PermissionDeniedError, naming where the key came from)."""
    if gpu_path not in _GPU_PATHS:
        raise InvalidArgumentError(f"axon.space.connect: gpu_path {gpu_path!r} is not one of {', '.join(_GPU_PATHS)}")
    raw = _axon.SpaceClient(addr or "", contact_file or "", _timeout(timeout), _GPU_PATHS.index(gpu_path),
                            bool(shared_memory), -1 if batch is None else int(batch), key or "")
    return Client(raw)


class Server:
    """A staging server inside this process (``axon space serve`` runs one as its own process).

    ``Server(mem="256M")`` listens on a free port of this host's address (the first interface that
    is up and not loopback; ``listen="127.0.0.1:0"`` for this node only, ``"0.0.0.0:0"`` for every
    interface); ``address`` is what clients connect to. ``servers=N`` makes it the first of N
    servers; the others pass ``join=address`` and the same key.

    The key every client and joining server must prove: ``key`` (hex), else ``key_file`` (mode
    0600), else AXON_SPACE_KEY, else a new one; ``server.key`` tells it (and the contact file holds
    it). ``max_holds``: per client, the versions it may hold and the reads it may have under way."""

    def __init__(self, listen: str = "", mem="1G", policy: str = "block", contact_file: str | None = None,
                 servers: int = 1, join: str | None = None, timeout: float = 300.0, start: bool = True, *,
                 key: str | None = None, key_file: str | None = None, max_holds: int = 1024):
        mem_bytes = parse_size(mem, "mem") if isinstance(mem, str) else int(mem)
        self._raw = _axon.SpaceServer(listen, mem_bytes, policy, contact_file or "", int(servers), join or "",
                                      float(timeout), key or "", key_file or "", int(max_holds))
        if start:
            self._raw.start()

    @property
    def address(self) -> str:
        """The "host:port" that clients connect to (AXON_SPACE_ADDR)."""
        return self._raw.address

    @property
    def epoch(self) -> int:
        """A random number this server drew at start (also in its contact file): a restart changes it."""
        return self._raw.epoch

    @property
    def key(self) -> str:
        """The space's key, hex: what clients pass as ``connect(..., key=)``."""
        return self._raw.key

    @property
    def key_origin(self) -> str:
        """Where the key came from: "a new key", "AXON_SPACE_KEY", "key file PATH", "the key given"."""
        return self._raw.key_origin

    def stats(self) -> dict:
        """What this server holds and did, as Client.stats() reports it per server."""
        return self._raw.stats()

    def stop(self, drain: float = 5.0) -> None:
        """Stops taking requests, lets transfers under way finish for up to `drain` seconds, fails the
        rest (clients get ServerLostError)."""
        self._raw.stop(drain)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
