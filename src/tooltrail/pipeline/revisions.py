"""What was judged of each trace, kept for a while, so that late data can revise the verdict.

The ``TraceBuffer`` hands a trace on once it looks complete; spans or log records of it that
arrive later come as a further piece (reason ``late``). The evaluator merges such a piece with
what it judged of the trace (kept here), judges the whole again and writes a revision. This
module only keeps and bounds; the evaluator (``pipeline.inline``) judges.

Bounds, each counted:

- ``window_s``: a trace is kept this long after its first verdict; later data is named in a
  ``late_unjudged`` results line (why ``window_passed``).
- ``max_revisions``: a trace is judged again at most this many times; later data is named
  the same way (why ``revision_limit``).
- ``max_items``: spans and log records kept, all traces together. Past it the oldest kept
  trace is let go early (``evicted``; its later data: why ``not_kept``).

What was let go is remembered (trace id and why, a few dozen bytes each, at most
``_MAX_GONE`` of them) so its late data is named with the right reason, once per trace.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

#: The OpenTelemetry SDK's BatchSpanProcessor exports every 5 s (``schedule_delay``) and gives
#: one export up to 30 s (``export_timeout``): another process's spans of a trace arrive at
#: most about that long after the root's. Its BatchLogRecordProcessor exports every 1 s (the
#: same 30 s export timeout).
SDK_SCHEDULE_DELAY_S = 5.0
SDK_LOGS_SCHEDULE_DELAY_S = 1.0
SDK_EXPORT_TIMEOUT_S = 30.0
DEFAULT_REVISION_WINDOW_S = SDK_SCHEDULE_DELAY_S + SDK_EXPORT_TIMEOUT_S
DEFAULT_MAX_REVISIONS = 3
#: Spans and log records kept of judged traces in ``tooltrail serve``: a 35 s window at about
#: 300 spans/s. Serve keeps each judged trace packed (``serve.kept``): about 200 bytes per
#: small span (2 MB; more with large content attributes), one ``bytes`` per trace that the
#: cyclic garbage collector never walks, so a larger cap costs memory, not time (kept as
#: decoded spans, 50,000 made each full collection take twice as long). docs/serve.md.
DEFAULT_MAX_KEPT_ITEMS = 10_000
#: The same in-process (``InlineEvaluator``, ``tooltrail.live``): SDK spans are about 2.7 KB
#: each, and they live in the agent's own memory (about 22 MB).
LIVE_MAX_KEPT_SPANS = 8_192

#: Why late data was not judged (the ``why`` of a ``late_unjudged`` line).
REVISION_LIMIT = "revision_limit"
WINDOW_PASSED = "window_passed"
NOT_KEPT = "not_kept"

#: Traces kept between two looks for those past the window (a look costs a clock read).
_EXPIRE_EVERY = 64
#: Traces let go that are remembered (for the ``why`` and the once-per-trace line).
_MAX_GONE = 1 << 16


@dataclass(slots=True, eq=False)
class Judged:
    """What was judged of one trace, and what that judgment said."""

    #: The spans and log records judged, as the buffer delivered them, in the evaluator's
    #: kept form (``pipeline.trace_items``, ``TraceItems.pack``: the items themselves
    #: in-process, one ``bytes`` in ``tooltrail serve``, see ``serve.kept``).
    kept: Any
    #: How many spans and log records ``kept`` holds.
    size: int
    #: Whether the merged trace is still incomplete.
    partial: bool
    judged_at: float
    #: Revision of the last results line written (``-1``: none yet, no case applied).
    revision: int = -1
    #: Times the trace was judged again (the first judgment not counted).
    rejudged: int = 0
    #: Whether a trace was converted yet (a piece of log records alone is kept, not judged).
    converted: bool = False
    verdict: str | None = None
    calls: int = 0
    #: How many of the items the last line written was judged on (a revision judges them
    #: again for what it ``changed``: nothing more is kept).
    judged_items: int = 0
    #: De-duplication keys of the items, built when the first late piece comes.
    keys: set[Hashable] | None = None
    #: ``size`` as the store counted it in ``items_kept`` (a revised trace is kept again
    #: with a larger ``size``: the store takes off what it counted, not the new size).
    counted: int = 0
    #: ``kept`` as the store holds it (a revision replaces ``kept`` before it is kept again:
    #: the store hands the form it held to ``on_release``).
    held: Any = None


class RevisionStore:
    """Judged traces by trace id, oldest first, within ``window_s`` and ``max_items``.

    ``on_release(kept)`` is called with each kept form (``Judged.kept``) the store lets go or
    is not given to hold (replaced, past a bound, or revisions off), once each: a kept form
    may hold something counted elsewhere (``serve.kept.KeptBodies``)."""

    def __init__(
        self,
        *,
        window_s: float = DEFAULT_REVISION_WINDOW_S,
        max_revisions: int = DEFAULT_MAX_REVISIONS,
        max_items: int = DEFAULT_MAX_KEPT_ITEMS,
        clock: Callable[[], float] = time.monotonic,
        on_release: Callable[[Any], None] | None = None,
    ) -> None:
        if window_s < 0 or max_revisions < 0 or max_items < 0:
            raise ValueError("window_s, max_revisions and max_items must be >= 0")
        self.window_s = window_s
        self.max_revisions = max_revisions
        self.max_items = max_items
        self._clock = clock
        self._on_release = on_release
        self._kept: OrderedDict[int, Judged] = OrderedDict()
        #: Traces let go (trace id -> why), and whether their late data was named already.
        self._gone: OrderedDict[int, tuple[str, bool]] = OrderedDict()
        self._enabled = window_s > 0 and max_revisions > 0 and max_items > 0
        #: Keeps until the next look for traces past the window (``keep`` looks every
        #: ``_EXPIRE_EVERY``; ``find`` every time).
        self._until_expire = 0
        self.items_kept = 0
        #: Kept traces let go before their window ended (``max_items``).
        self.traces_evicted = 0

    @property
    def enabled(self) -> bool:
        return self._enabled

    @property
    def traces_kept(self) -> int:
        return len(self._kept)

    def keep(self, trace_id: int, judged: Judged) -> None:
        """Keep (or replace) what was judged of ``trace_id``; the oldest go past the bounds."""
        if not self._enabled:
            self._release(judged.kept)
            return
        earlier = self._kept.get(trace_id)
        if earlier is not None:
            self.items_kept -= earlier.counted
            self._release(earlier.held)
        if judged.rejudged >= self.max_revisions:
            self._kept.pop(trace_id, None)
            self._release(judged.kept)
            self._let_go(trace_id, REVISION_LIMIT)
            return
        self._kept[trace_id] = judged  # a revised trace keeps its place: window from its first
        judged.counted = judged.size
        judged.held = judged.kept
        self.items_kept += judged.size
        self._until_expire -= 1
        if self._until_expire < 0:
            self._until_expire = _EXPIRE_EVERY
            self.expire()
        while self.items_kept > self.max_items and self._kept:
            oldest = next(iter(self._kept))
            let_go = self._kept.pop(oldest)
            self.items_kept -= let_go.counted
            self._release(let_go.held)
            self.traces_evicted += 1
            self._let_go(oldest, NOT_KEPT)

    def find(self, trace_id: int) -> Judged | str:
        """What was judged of ``trace_id``, or why it can no longer be revised."""
        self.expire()
        judged = self._kept.get(trace_id)
        if judged is not None:
            return judged
        gone = self._gone.get(trace_id)
        return gone[0] if gone is not None else NOT_KEPT

    def name_once(self, trace_id: int, why: str) -> bool:
        """True the first time late data of a trace let go is named (one results line each)."""
        gone = self._gone.get(trace_id)
        if gone is not None and gone[1]:
            return False
        self._remember(trace_id, why, named=True)
        return True

    def expire(self) -> None:
        """Let go of every trace judged more than ``window_s`` ago (kept in judgment order)."""
        kept = self._kept
        if not kept:
            return
        too_old = self._clock() - self.window_s
        while kept:
            trace_id, judged = next(iter(kept.items()))
            if judged.judged_at > too_old:
                return
            del kept[trace_id]
            self.items_kept -= judged.counted
            self._release(judged.held)
            self._let_go(trace_id, WINDOW_PASSED)

    def _release(self, kept: Any) -> None:
        if self._on_release is not None and kept is not None:
            self._on_release(kept)

    def _let_go(self, trace_id: int, why: str) -> None:
        self._remember(trace_id, why, named=False)

    def _remember(self, trace_id: int, why: str, *, named: bool) -> None:
        self._gone[trace_id] = (why, named)
        self._gone.move_to_end(trace_id)
        while len(self._gone) > _MAX_GONE:
            self._gone.popitem(last=False)
