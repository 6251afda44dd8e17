"""The staging space: named, versioned n-dimensional arrays held by staging servers between
loosely coupled programs.

Writers put blocks; readers get any box [lo, hi) into host or GPU memory, in any decomposition::

    import axon.space
    c = axon.space.connect()                 # AXON_SPACE_ADDR (+ AXON_SPACE_KEY), else the file AXON_SPACE_FILE names
    c.define("temperature", (512, 512, 512), "float64")
    c.put("temperature", step, (0, 0, 0), block)            # NumPy, CuPy, torch or symmetric arrays
    box = c.get("temperature", step, (10, 0, 0), (20, 512, 512))   # a NumPy array
    c.release("temperature", step)

A client is not a PE: any process may connect, without axon.init(). Servers run as their own
processes (``axon space serve``) or inside a program (:class:`Server`). Every call is bounded by its
timeout, else by AXON_TIMEOUT. Errors: :class:`FullError` (a server's --mem is used up),
:class:`EvictedError` (the version was dropped), :class:`IncompleteError` (not fully written within
the timeout; lists the missing boxes), :class:`ServerLostError` (a server died, shut down or cannot
be reached), axon.PermissionDeniedError (no key, a wrong one, or a server that could not prove it)
and axon.InvalidArgumentError for bad boxes, dtypes, names or buffers.

Every client proves the space's key (docs/security.md): ``key=`` given to :func:`connect`, else
AXON_SPACE_KEY, else the key in the server's contact file when the client finds the server through
it (AXON_SPACE_FILE). An embedded :class:`Server` tells its key as ``server.key``.
"""

from __future__ import annotations

import numpy as np

from . import _axon
from .collectives import DTYPES
from .errors import EvictedError, FullError, IncompleteError, InvalidArgumentError, ServerLostError
from .gpu import as_buffer
from .tools.bench.sizes import parse_size

__all__ = ["connect", "Client", "Server", "Request", "FullError", "EvictedError", "IncompleteError",
           "ServerLostError"]

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


class Request:
    """A nonblocking put or get. ``wait()`` returns the get's array (None for a put) or raises its
    failure; the arrays involved stay alive until then."""

    def __init__(self, raw, keep, result=None):
        self._raw, self._keep, self._result = raw, keep, result

    def wait(self):
        self._raw.wait()
        self._keep = None
        return self._result

    def test(self) -> bool:
        done = self._raw.test()
        if done:
            self._keep = None
        return done


class Client:
    """A connection to a staging space; see :func:`connect`."""

    def __init__(self, raw):
        self._raw = raw
        self._dtypes: dict[str, int] = {}

    # -- variables ---------------------------------------------------------------------------

    def define(self, name: str, shape, dtype, keep_versions: int = 2) -> None:
        """Defines `name` on every server (a repeat must be identical)."""
        code = _dtype_code(dtype, "define")
        self._raw.define(name, _index(shape, "define", "shape"), code, int(keep_versions))
        self._dtypes[name] = code

    def _dtype_of(self, name: str) -> int:
        if name not in self._dtypes:
            self._dtypes[name] = self._raw.dtype_of(name)
        return self._dtypes[name]

    def _check_dtype(self, name: str, array_dtype, api: str) -> None:
        want = DTYPES[self._dtype_of(name)]
        have = np.dtype(array_dtype)
        size = 2 if want in ("float16", "bfloat16") else np.dtype(want).itemsize
        if have.itemsize != size or (want not in ("bfloat16",) and have.name != want and have.kind != "V"):
            raise InvalidArgumentError(f"axon.space.{api}: '{name}' holds {want}, but the array is {have.name}")

    # -- puts --------------------------------------------------------------------------------

    def _put_args(self, name, offset, array, api):
        buf = as_buffer(array, f"space.{api}", "array")
        self._check_dtype(name, buf.dtype, api)
        shape = tuple(int(s) for s in getattr(array, "shape", (buf.size,)))
        offset = _index(offset, api, "offset")
        if len(offset) != len(shape):
            raise InvalidArgumentError(f"axon.space.{api}: offset has {len(offset)} entries but the array has "
                                       f"{len(shape)} dimensions")
        return buf, offset, list(shape)

    def put(self, name: str, version: int, offset, array, timeout: float | None = None) -> None:
        """Stores `array` as the block at `offset`; returns when the servers own the data."""
        buf, offset, count = self._put_args(name, offset, array, "put")
        self._raw.put(name, int(version), offset, count, buf.addr, _timeout(timeout))

    def iput(self, name: str, version: int, offset, array, timeout: float | None = None) -> Request:
        """A nonblocking put; small ones travel in batches (AXON_SPACE_BATCH)."""
        buf, offset, count = self._put_args(name, offset, array, "iput")
        return Request(self._raw.iput(name, int(version), offset, count, buf.addr, _timeout(timeout)), array)

    # -- gets --------------------------------------------------------------------------------

    def _get_args(self, name, lo, hi, out, api):
        lo, hi = _index(lo, api, "lo"), _index(hi, api, "hi")
        if out is None:
            if len(lo) != len(hi):
                raise InvalidArgumentError(f"axon.space.{api}: lo has {len(lo)} entries but hi has {len(hi)}")
            dims = [h - l for l, h in zip(lo, hi)]
            if any(d <= 0 for d in dims):
                raise InvalidArgumentError(f"axon.space.{api}: the box [{lo}, {hi}) is empty (lo >= hi)")
            name_dtype = DTYPES[self._dtype_of(name)]
            out = np.empty(dims, dtype=np.uint16 if name_dtype == "bfloat16" else name_dtype)
        buf = as_buffer(out, f"space.{api}", "out", writable=True)
        self._check_dtype(name, buf.dtype, api)
        return lo, hi, out, buf

    def get(self, name: str, version: int, lo, hi, out=None, timeout: float | None = None):
        """The box [lo, hi) of the version, into `out` (host or GPU), or a new NumPy array. Waits up to
        the timeout for parts still being written; holds the version until release()."""
        lo, hi, out, buf = self._get_args(name, lo, hi, out, "get")
        self._raw.get(name, int(version), lo, hi, buf.addr, buf.nbytes, _timeout(timeout))
        return out

    def iget(self, name: str, version: int, lo, hi, out=None, timeout: float | None = None) -> Request:
        lo, hi, out, buf = self._get_args(name, lo, hi, out, "iget")
        raw = self._raw.iget(name, int(version), lo, hi, buf.addr, buf.nbytes, _timeout(timeout))
        return Request(raw, out, out)

    # -- versions, stats ---------------------------------------------------------------------

    def wait_version(self, name: str, at_least: int, timeout: float | None = None) -> int:
        """Waits until a version >= at_least is complete; returns the newest complete one."""
        return self._raw.wait_version(name, int(at_least), _timeout(timeout))

    def release(self, name: str, version: int) -> None:
        """Lets the servers drop the version when keep_versions or memory asks for it."""
        self._raw.release(name, int(version))

    def stats(self) -> dict:
        """{'servers': [per server: bytes_in_use, high_water, pieces, ...], 'client': {puts, gets,
        batches, paths taken, copies, fused_kernels, last_path, ...}}"""
        return self._raw.stats()

    @property
    def servers(self) -> list[str]:
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
        return self._raw.address

    @property
    def epoch(self) -> int:
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
        return self._raw.stats()

    def stop(self, drain: float = 5.0) -> None:
        """Stops taking requests, lets transfers under way finish for up to `drain` seconds, fails the
        rest (clients get ServerLostError)."""
        self._raw.stop(drain)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
