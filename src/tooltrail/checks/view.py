"""A per-trace index of the tool calls, built once and shared by every check on that trace.

Checks ask "which calls of tool t?", "where was t first called?", "which calls repeat an
earlier one?"; answering each from the raw list would rescan it once per check.
"""

from __future__ import annotations

from tooltrail.checks.equality import args_fingerprint
from tooltrail.model import EvalTrace, ToolCall


class CallView:
    """The tool calls of one trace (optionally without failed attempts), indexed by name."""

    __slots__ = ("calls", "size", "by_name", "_duplicates", "_turns", "_ok")

    def __init__(self, calls: list[ToolCall]) -> None:
        self.calls = calls
        self.size = len(calls)
        by_name: dict[str, list[int]] = {}
        get = by_name.get
        for i, call in enumerate(calls):
            positions = get(call.name)
            if positions is None:
                by_name[call.name] = [i]
            else:
                positions.append(i)
        #: tool name -> positions of its calls in ``calls``, in order.
        self.by_name = by_name
        self._duplicates: list[int] | None = None
        self._turns: dict[int, CallView] | None = None
        self._ok: CallView | None = None

    def calls_of(self, tool: str) -> list[ToolCall]:
        """Every call of ``tool``, in order."""
        calls = self.calls
        return [calls[i] for i in self.by_name.get(tool, ())]

    def first(self, tool: str) -> int | None:
        """Position of the first call of ``tool``, or ``None`` when it was never called."""
        positions = self.by_name.get(tool)
        return positions[0] if positions else None

    def duplicates(self) -> list[int]:
        """Positions of calls that exactly repeat an earlier call (same name, same arguments).

        Only tools called more than once can repeat, so only their arguments are fingerprinted.
        """
        if self._duplicates is None:
            calls = self.calls
            dups: list[int] = []
            for positions in self.by_name.values():
                if len(positions) < 2:
                    continue
                seen: set[bytes] = set()
                for i in positions:
                    fingerprint = call_fingerprint(calls[i])
                    if fingerprint in seen:
                        dups.append(i)
                    else:
                        seen.add(fingerprint)
            dups.sort()
            self._duplicates = dups
        return self._duplicates

    def without_failed(self) -> CallView:
        """The view without failed attempts (``status == "error"``); ``self`` if there are none."""
        if self._ok is None:
            kept = [c for c in self.calls if c.status != "error"]
            self._ok = self if len(kept) == self.size else CallView(kept)
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


def call_fingerprint(call: ToolCall) -> bytes:
    """The canonical arguments of a call, cached on the call while its ``args`` object stays."""
    cached = call.fingerprint_cache
    if cached is not None and cached[0] is call.args:
        return cached[1]
    fingerprint = args_fingerprint(call.args)
    call.fingerprint_cache = (call.args, fingerprint)
    return fingerprint


def trace_view(trace: EvalTrace, *, ignore_failed: bool = False) -> CallView:
    """The (cached) call view of a trace; rebuilt when ``trace.tool_calls`` was replaced."""
    calls = trace.tool_calls
    view = trace.view_cache
    if view is None or view.calls is not calls or view.size != len(calls):
        view = CallView(calls)
        trace.view_cache = view
    return view.without_failed() if ignore_failed else view
