"""The progress bar of ``tooltrail eval`` on a terminal (tqdm, already a dependency).

Shown on stderr only when a person watches: stderr is a terminal, the ``CI`` variable is not
set (CI services set it, and their logs are not terminals anyway), ``--quiet`` was not given,
and the run has taken a second (tqdm's ``delay``: a quick run draws nothing). The bar counts
the input's bytes out of their total (so it has an end and an estimate), and says the files,
traces, spans and judge requests so far; it moves as each task of the batch pass finishes
(``batch.run_batch``'s ``on_progress`` and ``on_outcome``) and leaves nothing behind.

No thread of its own (tqdm's monitor thread is turned off): the batch pass forks its worker
processes after the bar exists, and a thread holding a lock at a fork leaves the lock held in
the child.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from tooltrail.otlp import expand_paths

#: Seconds a run must take before the bar is drawn.
DELAY_S = 1.0


def progress_wanted(quiet: bool, stream: Any = None) -> bool:
    """Whether a person is watching ``stream`` (default stderr): a terminal, not CI, not
    ``--quiet``."""
    stream = sys.stderr if stream is None else stream
    if quiet or stream is None or os.environ.get("CI"):
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # closed, or not a real stream
        return False


def input_bytes(paths: Sequence[str]) -> tuple[int, int]:
    """The files ``paths`` name and their bytes (what the batch pass reads and reports)."""
    files = list(expand_paths(list(paths), [], unreadable=[]))
    total = 0
    for path, _named in files:
        try:
            total += os.path.getsize(path)
        except OSError:
            continue
    return len(files), total


def judge_requests(outcome: Any) -> int:
    """Requests sent to judge models for a finished task's rows (each judge score's record:
    its attempts, none for a cached or skipped verdict)."""
    count = 0
    for group in outcome.groups:
        for result in group.results:
            for score in result.scores:
                record = score.judge
                if record and not record.get("cached") and not record.get("skipped"):
                    count += int(record.get("attempts") or 0)
    return count


def _width(stream: Any) -> int:
    """The terminal's columns (80 when it says 0, as a fresh pseudo-terminal does: tqdm
    would then draw nothing)."""
    try:
        return os.get_terminal_size(stream.fileno()).columns or 80
    except (AttributeError, OSError, ValueError):
        return 80


@dataclass
class Counts:
    files: int = 0
    traces: int = 0
    spans: int = 0
    judge_requests: int = 0

    def text(self) -> str:
        words = [
            f"{self.files} file{'' if self.files == 1 else 's'}",
            f"{self.traces} traces",
            f"{self.spans} spans",
        ]
        if self.judge_requests:
            words.append(f"{self.judge_requests} judge requests")
        return ", ".join(words)


ProgressHooks = tuple[
    Callable[[int, int, int], None] | None,
    Callable[[Any], None] | None,
]


@contextmanager
def eval_progress(paths: Sequence[str], *, enabled: bool) -> Iterator[ProgressHooks]:
    """``(on_progress, on_outcome)`` for ``run_batch`` drawing the bar, or ``(None, None)``."""
    if not enabled:
        yield None, None
        return
    from tqdm import tqdm

    files, total = input_bytes(paths)
    counts = Counts(files=files)
    tqdm.monitor_interval = 0  # no monitor thread: worker processes are forked after this
    bar = tqdm(
        total=total or None,
        file=sys.stderr,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        desc="evaluating",
        leave=False,
        delay=DELAY_S,
        ncols=_width(sys.stderr),
        postfix=counts.text(),
    )

    def on_progress(groups: int, spans: int, read: int) -> None:
        counts.traces += groups
        counts.spans += spans
        bar.set_postfix_str(counts.text(), refresh=False)
        bar.update(read)

    def on_outcome(outcome: Any) -> None:
        counts.judge_requests += judge_requests(outcome)

    try:
        yield on_progress, on_outcome
    finally:
        bar.close()
