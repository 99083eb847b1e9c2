"""The cyclic garbage collector, paused while a pass over OTLP input works.

Reading a dump keeps a growing heap of long-lived objects: the facts of every open trace
(``read_traces``, a batch task's chunk) and every report row (the batch driver). CPython's
collector rescans that heap every time it grows by a quarter, and scans every young container
(a decoded JSON attribute value is one) at least once: on JSON lines that was about 30% of a
batch pass's CPU time and 8% of ``read_traces``', on protobuf 2-10%. The passes themselves
leave (next to) no reference cycles behind (a few dozen objects per 32 MB chunk, found by the
collector after the run), so little is lost by not looking for them while they run; and what
a batch task does leave (a check that keeps an exception with its traceback, say) is freed
when the task ends by ``collect_young``, which scans only the objects made since the last
collection: the task's surviving rows, not the driver's. ``read_traces`` pauses the collector
only while it works on the next trace, never while the caller's code runs.

The pause is counted: overlapping pauses (the driver and an inline task, or tasks on threads of
one Dask worker) restore the collector only when the last one ends, and only when it was on
before the first one began. A process forked during a pause (a local worker pool) starts with
no pause of its own and the collector as it was before the pause.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Run the body with the cyclic garbage collector off; its previous state comes back after."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()


def collect_young() -> None:
    """Free the reference cycles among the objects made since the last collection (with the
    collector paused: everything a task made that is still referenced, or in a cycle)."""
    gc.collect(0)


def _reset_in_child() -> None:
    """A forked child inherits the parent's pause, but none of the code that would end it."""
    global _depth, _lock
    _lock = threading.Lock()  # another thread of the parent may have held it
    if _depth:
        _depth = 0
        if _was_enabled:
            gc.enable()


if hasattr(os, "register_at_fork"):  # not on Windows
    os.register_at_fork(after_in_child=_reset_in_child)
