"""With ``--workers 2``, a flood of traces whose root never comes does not lock complete traces
out until ``--max-age``: the router, refusing, asks its workers to evict their rootless traces
past the grace period, as one process's admission does (issue 22).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from serve_traces import agent_trace, rootless_trace
from test_serve_overload import FOUR_CALLS, results_of, send, start, stats_of, wait_until

from tooltrail.serve import RunningReceiver

__all__ = ["start"]  # the fixture, shared with test_serve_overload

GRACE = 0.3
#: Generous against a loaded machine; without eviction the refusals last ``--max-age``.
ADMITTED_WITHIN_S = 20.0


def _flood(receiver: RunningReceiver, taken: list[str]) -> int:
    """Rootless traces until the receiver refuses (it is full); how many requests it took."""
    for sent in range(40):
        spans = rootless_trace(spans=5) + rootless_trace(spans=5)
        if send(receiver, spans) != 200:
            return sent
        taken.extend({s.trace_id for s in spans})
    pytest.fail("the receiver never filled up")


def _admit(receiver: RunningReceiver, spans: list[Any]) -> float:
    """Send ``spans`` until they are taken (as an exporter retries); seconds it took."""
    started = time.monotonic()
    while send(receiver, spans) != 200:
        assert time.monotonic() - started < ADMITTED_WITHIN_S, stats_of(receiver)
        time.sleep(0.1)
    return time.monotonic() - started


def test_a_rootless_flood_does_not_lock_out_complete_traces_with_two_workers(
    start: Callable[..., RunningReceiver], tmp_path: Path
) -> None:
    receiver = start(workers=2, max_buffered_spans=60, grace=GRACE, max_age=600)
    rootless: list[str] = []
    complete: list[str] = []
    waits = []
    for _ in range(4):
        _flood(receiver, rootless)  # full: the next complete trace is refused at first
        trace = agent_trace(tool_attributes=FOUR_CALLS)
        waits.append(_admit(receiver, trace))
        complete.append(trace[0].trace_id)
    print(f"complete traces admitted after {', '.join(f'{w:.2f}' for w in waits)} s")

    def evaluated() -> set[str]:
        lines = results_of(tmp_path / "results.jsonl")
        return {line["trace_id"] for line in lines if line["reason"] == "complete"}

    wait_until(lambda: set(complete) <= evaluated())
    assert stats_of(receiver)["traces_evicted_rootless"] > 0

    final = receiver.stop()
    by_id: dict[str, list[dict[str, Any]]] = {}
    for line in results_of(tmp_path / "results.jsonl"):
        by_id.setdefault(line["trace_id"], []).append(line)
    assert all(len(by_id[t]) == 1 and by_id[t][0]["verdict"] == "pass" for t in complete)
    # Every rootless trace taken is evaluated exactly once: evicted, or partial at shutdown.
    assert all(len(by_id[t]) == 1 and by_id[t][0]["partial"] for t in rootless)
    reasons = [by_id[t][0]["reason"] for t in rootless]
    assert set(reasons) <= {"evicted", "shutdown"}
    assert reasons.count("evicted") == final["traces_evicted_rootless"] > 0
