"""Exceptions raised by axon. Every one is an axon.Error; the code says which kind."""

import builtins

# TimeoutError and SystemError stay out: `from axon import *` would rebind the builtins of those
# names, and `except TimeoutError` would then miss the builtin one. Name them axon.TimeoutError.
__all__ = [
    "Error", "InvalidArgumentError", "InvalidPeError", "OutOfBoundsError", "NotInitializedError",
    "AlreadyInitializedError", "PeerDeadError", "BootstrapError", "CollectiveMismatchError",
    "OutOfMemoryError", "UnsupportedError", "InternalError", "CudaError", "UcxError",
    "TruncatedError", "FullError", "EvictedError", "IncompleteError", "ServerLostError", "PermissionDeniedError",
    "ServerUnreachableError",
]


class Error(Exception):
    """Base class of every error axon raises."""

    code = 0


class InvalidArgumentError(Error, ValueError):
    """A bad value (buffer, dtype, size, name, option) that is not one of the more specific errors."""
    code = -1


class InvalidPeError(Error, ValueError):
    """A PE number outside the world or the team."""
    code = -2


class OutOfBoundsError(Error, IndexError):
    """An address outside the symmetric heap, or a range past its allocation."""
    code = -3


class NotInitializedError(Error, RuntimeError):
    """A call that needs the runtime before axon.init() or after axon.finalize()."""
    code = -4


class AlreadyInitializedError(Error, RuntimeError):
    """axon.init() called while the runtime is running."""
    code = -5


class TimeoutError(Error, builtins.TimeoutError):  # noqa: A001 - mirrors the C++ code name
    """A wait passed AXON_TIMEOUT; the message names the PE, the address, the expected and the seen value."""
    code = -6


class PeerDeadError(Error, RuntimeError):
    """A PE this one depends on exited or was killed; the message names it."""
    code = -7


class BootstrapError(Error, ConnectionError):
    """The job's key-value store could not be reached or failed."""
    code = -8


class CollectiveMismatchError(Error, RuntimeError):
    """PEs called a collective (or an allocation) with different arguments; the message names both calls."""
    code = -9


class OutOfMemoryError(Error, MemoryError):
    """The heap cap (AXON_HEAP_MAX) or the memory behind it is exhausted."""
    code = -10


class SystemError(Error, OSError):  # noqa: A001
    """An operating-system call failed; the message names it."""
    code = -11


class UnsupportedError(Error, NotImplementedError):
    """No transport or build feature supports the request (a stream call on the host backend, ...)."""
    code = -12


class InternalError(Error, RuntimeError):
    """A broken invariant inside axon: a bug; please report it with the message."""
    code = -13


class CudaError(Error, RuntimeError):
    """A CUDA driver call failed; the message names the call and the error."""
    code = -14


class UcxError(Error, RuntimeError):
    """A UCX call (the network across nodes) failed; the message names the call, the PE and the status."""
    code = -15


class TruncatedError(Error, ValueError):
    """A message was longer than the receive buffer; the message names both sizes."""
    code = -16


class FullError(Error, RuntimeError):
    """A staging server's memory is full: policy reject, or block past the put's timeout."""
    code = -17


class EvictedError(Error, LookupError):
    """The staging-space version asked for was dropped (evicted, or past keep_versions)."""
    code = -18


class IncompleteError(Error, builtins.TimeoutError):
    """A box was not fully written within the timeout; the message lists the missing boxes."""
    code = -19


class ServerLostError(Error, ConnectionError):
    """A staging server this client reached died or shut down; the message names it. Also the base of
    :class:`ServerUnreachableError`, so that one handler catches both."""
    code = -20


class PermissionDeniedError(Error, PermissionError):
    """A connection did not prove the job's or the space's key; the message says which key and where."""
    code = -21


class ServerUnreachableError(ServerLostError):
    """A staging server was never reached (connection refused, no such host, no greeting, a stale or
    missing contact file); the message names the address and the cause. A subclass of
    :class:`ServerLostError`, so that handlers written for that one still catch it."""
    code = -22


ALL = [
    InvalidArgumentError, InvalidPeError, OutOfBoundsError, NotInitializedError,
    AlreadyInitializedError, TimeoutError, PeerDeadError, BootstrapError,
    CollectiveMismatchError, OutOfMemoryError, SystemError, UnsupportedError, InternalError,
    CudaError, UcxError, TruncatedError, FullError, EvictedError, IncompleteError, ServerLostError,
    PermissionDeniedError, ServerUnreachableError,
]
BY_CODE = {cls.code: cls for cls in ALL}
