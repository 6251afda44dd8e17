"""Work objects: what async_op=True returns, and what send/recv return to torch.

Collectives on CPU tensors run at the call, so their Work is complete when returned. Collectives
on CUDA tensors are enqueued on torch's current stream: their Work (AxonCudaWork) keeps
ProcessGroupNCCL's meaning, wait() making the caller's current stream wait, not the host. Sends and
receives are axon requests: the Work completes them in wait() (bounded by axon's timeout), so that
batch_isend_irecv can post every message before any waits.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Callable, Optional

import torch
import torch.distributed as dist


class AxonWork(dist.Work):
    """A Work whose result is `tensors`; `finish`, when given, completes it (called once, by the
    first wait, get_future or a completed test)."""

    def __init__(self, tensors: list[torch.Tensor], finish: Optional[Callable[[], None]] = None,
                 test: Optional[Callable[[], bool]] = None, source: Callable[[], int] = lambda: -1):
        super().__init__()
        self._tensors = tensors
        self._finish = finish
        self._test = test
        self._source = source
        self._error: Optional[BaseException] = None
        self._future: Optional[torch.futures.Future] = None

    def _complete(self) -> None:
        if self._finish is not None:
            finish, self._finish = self._finish, None
            try:
                finish()
            except BaseException as e:  # noqa: BLE001 - kept, raised by this and every later wait
                self._error = e
            if self._future is not None and not self._future.done():
                self._settle(self._future)
        if self._error is not None:
            raise self._error

    def _settle(self, fut: torch.futures.Future) -> None:
        if self._error is not None:
            fut.set_exception(self._error)
        else:
            fut.set_result(self._tensors)

    def wait(self, timeout: timedelta = timedelta(0)) -> bool:
        # torch's timeout argument is not honoured per call: axon's own bound (AXON_TIMEOUT, the
        # group's timeout at init) ends every wait.
        self._complete()
        return True

    def is_completed(self) -> bool:
        if self._finish is not None and self._test is not None and self._test():
            try:
                self._complete()
            except BaseException:  # noqa: BLE001 - reported by wait() and exception()
                pass
        return self._finish is None

    def is_success(self) -> bool:
        return self.is_completed() and self._error is None

    def exception(self):
        return self._error

    def result(self) -> list[torch.Tensor]:
        self.wait()
        return self._tensors

    def synchronize(self) -> None:
        self.wait()

    def get_future(self) -> torch.futures.Future:
        """A future of the result tensors. A pending send or receive is completed first: nothing
        else would progress it while the caller waits on the future."""
        if self._future is None:
            self._future = torch.futures.Future()
            try:
                self._complete()
            except BaseException:  # noqa: BLE001 - the future carries it
                pass
            if not self._future.done():
                self._settle(self._future)
        return self._future

    def _source_rank(self) -> int:
        self.wait()
        return self._source()

    def source_rank(self) -> int:
        return self._source_rank()


class AxonCudaWork(dist.Work):
    """A collective enqueued on a stream.

    Its event is recorded when first needed (a wait from another stream, is_completed,
    get_future), so that a call waited for on its own stream, which torch does for every
    synchronous call, costs none. Recorded later than the collective, it may also cover work
    queued after it on that stream: a wait is then longer, never wrong."""

    _event: Optional[torch.cuda.Event] = None
    _future: Optional[torch.futures.Future] = None

    def __init__(self, tensors: list[torch.Tensor], cur):
        super().__init__()
        self._tensors = tensors
        self._cur = cur  # _cuda.CurrentStream: the stream, its handle and device

    def _done_event(self) -> "torch.cuda.Event":
        if self._event is None:
            self._event = torch.cuda.Event()
            self._event.record(self._cur.stream)
        return self._event

    def wait(self, timeout: timedelta = timedelta(0)) -> bool:
        # The caller's current stream waits for the collective (nothing to do when it ran there);
        # the host does not. A kernel that meets a timeout or a mismatch stops the team, and the
        # group's next call raises it (axon's stream forms report so).
        cur = self._cur
        if torch._C._cuda_getCurrentRawStream(cur.device) != cur.handle:
            torch.cuda.current_stream(cur.device).wait_event(self._done_event())
        return True

    def synchronize(self) -> None:
        self.wait()

    def is_completed(self) -> bool:
        return self._done_event().query()

    def is_success(self) -> bool:
        return self.is_completed()

    def exception(self):
        return None

    def result(self) -> list[torch.Tensor]:
        return self._tensors

    def get_future(self) -> torch.futures.Future:
        """A CUDA-aware future of the result tensors (as ProcessGroupNCCL's): its value is set on
        the collective's stream, so waiting on it, or a callback's work, is ordered after the
        collective on the device."""
        if self._future is None:
            stream = self._cur.stream
            fut = torch.futures.Future(devices=[stream.device])
            with torch.cuda.stream(stream):
                fut.set_result(self._tensors)
            self._future = fut
        return self._future


def done(tensors: list[torch.Tensor]) -> AxonWork:
    """The Work of an operation that already ran."""
    return AxonWork(tensors)
