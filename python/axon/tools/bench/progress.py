"""The progress bar over a sweep's sizes, on long sweeps run on a terminal."""

from __future__ import annotations

from .sizes import size_label

#: Show the progress bar once a sweep has run this long (seconds), on a terminal only.
PROGRESS_AFTER_S = 2.0


class SweepProgress:
    """A rich progress bar over the sizes, started only once the sweep has run a while."""

    def __init__(self, enabled: bool, sizes: list[int], test: str) -> None:
        self._enabled = enabled
        self._sizes = sizes
        self._test = test
        self._done = 0
        self._bar = None
        self._task = None

    def tick(self, elapsed: float, done: int | None = None) -> None:
        if done is not None:
            self._done = done
        if not self._enabled:
            return
        if self._bar is None and elapsed >= PROGRESS_AFTER_S:
            try:
                from rich.console import Console
                from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
            except ImportError:
                self._enabled = False
                return
            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 console=Console(stderr=True), transient=True)
            self._bar.start()
            self._task = self._bar.add_task("", total=len(self._sizes), completed=self._done)
        if self._bar is not None:
            running = self._sizes[self._done] if self._done < len(self._sizes) else None
            desc = (f"axon bench {self._test}" + (f"  {size_label(running)}" if running else "")
                    + f"  {elapsed:.0f} s")
            self._bar.update(self._task, completed=self._done, description=desc)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
