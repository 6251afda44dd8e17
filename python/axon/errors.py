"""Exceptions raised by axon. Every one is an axon.Error; the code says which kind."""

import builtins


class Error(Exception):
    """Base class of every error axon raises."""

    code = 0


class InvalidArgumentError(Error, ValueError):
    code = -1


class InvalidPeError(Error, ValueError):
    code = -2


class OutOfBoundsError(Error, IndexError):
    code = -3


class NotInitializedError(Error, RuntimeError):
    code = -4


class AlreadyInitializedError(Error, RuntimeError):
    code = -5


class TimeoutError(Error, builtins.TimeoutError):  # noqa: A001 - mirrors the C++ code name
    code = -6


class PeerDeadError(Error, RuntimeError):
    code = -7


class BootstrapError(Error, ConnectionError):
    code = -8


class CollectiveMismatchError(Error, RuntimeError):
    code = -9


class OutOfMemoryError(Error, MemoryError):
    code = -10


class SystemError(Error, OSError):  # noqa: A001
    code = -11


class UnsupportedError(Error, NotImplementedError):
    code = -12


class InternalError(Error, RuntimeError):
    code = -13


class CudaError(Error, RuntimeError):
    code = -14


class UcxError(Error, RuntimeError):
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
    """A staging server died, shut down or cannot be reached; the message names it."""
    code = -20


class PermissionDeniedError(Error, PermissionError):
    """A connection did not prove the job's or the space's key; the message says which key and where."""
    code = -21


ALL = [
    InvalidArgumentError, InvalidPeError, OutOfBoundsError, NotInitializedError,
    AlreadyInitializedError, TimeoutError, PeerDeadError, BootstrapError,
    CollectiveMismatchError, OutOfMemoryError, SystemError, UnsupportedError, InternalError,
    CudaError, UcxError, TruncatedError, FullError, EvictedError, IncompleteError, ServerLostError,
    PermissionDeniedError,
]
BY_CODE = {cls.code: cls for cls in ALL}
