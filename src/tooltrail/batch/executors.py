"""Where batch tasks run: in this process, on a local process pool, or on a Dask cluster.

Every executor runs the same module-level task functions on the same picklable task objects,
so the three give identical results; they differ only in where the work happens. Results are
yielded as they complete; the driver puts them back in a deterministic order.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, Protocol, TypeVar

T = TypeVar("T")
R = TypeVar("R")


#: How long to wait for a Dask scheduler before giving up.
CONNECT_TIMEOUT_S = 10


class DaskUnavailableError(RuntimeError):
    """``--dask`` was asked for but ``dask.distributed`` is not installed."""


class Executor(Protocol):
    """Runs ``fn`` over ``items`` and yields each result as soon as it is ready."""

    def run(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]: ...

    def close(self) -> None: ...


class InlineExecutor:
    """Runs tasks one after another in this process: ``--workers 1``, no pickling, no startup."""

    def run(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        for item in items:
            yield fn(item)

    def close(self) -> None:
        pass


class ProcessExecutor:
    """A local process pool. At most ``2 * workers`` tasks are in flight, so results stay few."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pool = ProcessPoolExecutor(max_workers=workers, initializer=_interrupt_tasks_only)

    def run(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        pending: set[Future[R]] = set()
        source = iter(items)
        exhausted = False
        while True:
            while not exhausted and len(pending) < 2 * self.workers:
                try:
                    pending.add(self._pool.submit(_as_task, fn, next(source)))
                except StopIteration:
                    exhausted = True
            if not pending:
                return
            try:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
            except KeyboardInterrupt:
                _interrupt_workers()
                raise
            for future in done:
                yield future.result()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


#: In a pool's worker: whether a task is running (SIGINT then interrupts it).
_in_task = False


def _interrupt_tasks_only() -> None:
    """A pool worker's SIGINT handler: interrupt the task running, if any. Ctrl-C reaches
    every process of the terminal's group, and the driver sends SIGINT to its workers when it
    is interrupted (``_interrupt_workers``): a task ends at once, with ``KeyboardInterrupt``
    as its outcome, so the pool shuts down without waiting for it; an idle worker goes on
    waiting (no traceback of its own)."""
    signal.signal(signal.SIGINT, _on_sigint)


def _on_sigint(signum: int, frame: Any) -> None:
    if _in_task:
        raise KeyboardInterrupt


def _as_task(fn: Callable[[T], R], item: T) -> R:
    """``fn(item)`` in a pool worker, interruptible by SIGINT while it runs."""
    global _in_task
    _in_task = True
    try:
        return fn(item)
    finally:
        _in_task = False


def _interrupt_workers() -> None:
    """SIGINT to this process's worker processes (``multiprocessing.active_children``: the
    pool's; the batch driver starts no others)."""
    for child in multiprocessing.active_children():
        if child.pid is not None:
            with contextlib.suppress(OSError):
                os.kill(child.pid, signal.SIGINT)


class DaskExecutor:
    """Submits the tasks to a Dask distributed scheduler at ``address`` (``tcp://host:8786``).

    Workers must have tooltrail installed and see the input files at the same absolute paths
    (the driver makes relative paths absolute before submitting tasks).
    """

    def __init__(self, address: str) -> None:
        try:
            from distributed import Client
        except ImportError as exc:  # pragma: no cover - exercised only without the extra
            raise DaskUnavailableError(
                "--dask needs dask.distributed: pip install 'tooltrail[dask]'"
            ) from exc
        self._client: Any = Client(address, timeout=CONNECT_TIMEOUT_S)

    def run(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        from distributed import as_completed

        futures = self._client.map(fn, list(items), pure=False)
        if not futures:
            return
        for _future, result in as_completed(futures, with_results=True):
            yield result

    def parallelism(self) -> int:
        """Threads across the cluster's workers (at least 1)."""
        return max(1, sum(self._client.nthreads().values()))

    def close(self) -> None:
        self._client.close()


def default_workers() -> int:
    """All cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
