"""A per-trace index of the tool calls, built once per evaluation and shared by every check
(it travels in ``CheckContext.view``).

Checks ask "was t called?", "where was t first called?", "which calls of t?", "which calls
repeat an earlier one?". The index is a list of names and a count per name (both built at C speed);
positions are found with ``list.index`` on demand. This is the hot path of every evaluation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from orjson import OPT_SORT_KEYS, JSONEncodeError, dumps

from tooltrail.equality import args_fingerprint
from tooltrail.model import EvalTrace, ToolCall
from tooltrail.results.tally import tally


class CallView:
    """The tool calls of one trace (optionally without failed attempts), indexed by name."""

    __slots__ = ("calls", "size", "names", "counts", "_duplicates", "_turns", "_ok")

    def __init__(self, calls: list[ToolCall]) -> None:
        self.calls = calls
        self.size = len(calls)
        #: The tool name of each call, in order.
        self.names = names = [call.name for call in calls]
        #: tool name -> number of calls.
        self.counts: dict[str, int] = {}
        tally(self.counts, names)
        self._duplicates: list[int] | None = None
        self._turns: dict[int, CallView] | None = None
        self._ok: CallView | None = None

    def __contains__(self, tool: object) -> bool:
        return tool in self.counts

    def first(self, tool: str) -> int | None:
        """Position of the first call of ``tool``, or ``None`` when it was never called."""
        if tool not in self.counts:
            return None
        return self.names.index(tool)

    def positions(self, tool: str) -> list[int]:
        """Positions of every call of ``tool``, in order."""
        count = self.counts.get(tool, 0)
        if not count:
            return []
        index = self.names.index
        found = [index(tool)]
        for _ in range(count - 1):
            found.append(index(tool, found[-1] + 1))
        return found

    def iter_calls(self, tool: str) -> Iterator[ToolCall]:
        """Every call of ``tool``, in order, found lazily (for checks that stop at a match)."""
        count = self.counts.get(tool, 0)
        if not count:
            return
        index = self.names.index
        calls = self.calls
        i = index(tool)
        yield calls[i]
        for _ in range(count - 1):
            i = index(tool, i + 1)
            yield calls[i]

    def calls_of(self, tool: str) -> list[ToolCall]:
        """Every call of ``tool``, in order."""
        calls = self.calls
        return [calls[i] for i in self.positions(tool)]

    def duplicates(self) -> list[int]:
        """Positions of calls that exactly repeat an earlier call (same name, same canonical
        arguments, see ``args_fingerprint``). Only tools called more than once are looked at."""
        if self._duplicates is None:
            self._duplicates = self._find_duplicates()
        return self._duplicates

    def _find_duplicates(self) -> list[int]:
        calls = self.calls
        if len(self.counts) == self.size:  # every tool called once: nothing can repeat
            return []
        first: dict[tuple[str, bytes], int] = {}  # (name, canonical args) -> first position
        claim = first.setdefault
        counts = self.counts
        # A call of a tool called once repeats nothing: its arguments are not spelled (the
        # spelling is most of this function's time, and most tools of a trace are called once).
        try:  # canonical arguments: one C call per call
            candidates = [
                i
                for i, c in enumerate(calls)
                if counts[c.name] > 1
                and claim((c.name, dumps(c.args, option=OPT_SORT_KEYS)), i) != i
            ]
            exact_key: Callable[[Any], bytes] = _exact_key
        except (TypeError, JSONEncodeError):  # wide ints, odd keys: spell everything exactly
            first.clear()
            candidates = [
                i
                for i, c in enumerate(calls)
                if counts[c.name] > 1 and claim((c.name, args_fingerprint(c.args)), i) != i
            ]
            exact_key = args_fingerprint
        if not candidates:
            return []
        # orjson writes None, NaN and infinities all as null: settle those on the exact spelling.
        exact: dict[tuple[str, bytes], set[bytes]] = {}
        dups = []
        for i in candidates:
            call = calls[i]
            key = (call.name, exact_key(call.args))
            if key[1].find(b"null") < 0:
                dups.append(i)
                continue
            seen = exact.get(key)
            if seen is None:
                seen = exact[key] = {args_fingerprint(calls[first[key]].args)}
            spelled = args_fingerprint(call.args)
            if spelled in seen:
                dups.append(i)
            else:
                seen.add(spelled)
        return dups

    def without_failed(self) -> CallView:
        """The view without failed attempts (``status == "error"``); ``self`` if there are none."""
        if self._ok is None:
            kept = [c for c in self.calls if c.status != "error"]
            if len(kept) == self.size:
                return self  # not stored: a view holding itself would be a reference cycle
            self._ok = CallView(kept)
        return self._ok

    def turn(self, number: int) -> CallView:
        """The view of one turn's calls (``ToolCall.turn == number``)."""
        if self._turns is None:
            grouped: dict[int, list[ToolCall]] = {}
            for call in self.calls:
                grouped.setdefault(call.turn, []).append(call)
            self._turns = {n: CallView(c) for n, c in grouped.items()}
        view = self._turns.get(number)
        return view if view is not None else CallView([])


def _exact_key(args: Any) -> bytes:
    return dumps(args, option=OPT_SORT_KEYS)


def trace_view(trace: EvalTrace, *, ignore_failed: bool = False) -> CallView:
    """A fresh call view of a trace (without failed attempts when ``ignore_failed``).

    An evaluation builds one view and hands it to every check in its ``CheckContext``; views
    are not kept on traces: holding an index per trace for every trace of a batch costs more
    memory than rebuilding it costs time.
    """
    view = CallView(trace.tool_calls)
    return view.without_failed() if ignore_failed else view
