"""``read_traces`` works with the cyclic garbage collector paused, and only while it works:
the caller's code between two traces runs with the collector as the caller left it."""

from __future__ import annotations

import gc
from typing import Any

import pytest
from fixtures import CORPUS

from tooltrail.convert import collect, read_traces

#: Two traces (two turns of one conversation), so there is caller code between two steps.
TWO_TRACES = CORPUS / "pydantic-ai" / "e_booking_multiturn_ok.otlp.jsonl"


@pytest.fixture()
def collector_state_while_building(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """``gc.isenabled()`` at every trace ``read_traces`` builds."""
    seen: list[bool] = []
    build = collect.build_eval_trace

    def recording(facts: Any) -> Any:
        seen.append(gc.isenabled())
        return build(facts)

    monkeypatch.setattr(collect, "build_eval_trace", recording)
    return seen


@pytest.mark.parametrize("two_pass", [False, True])
def test_traces_are_built_with_the_collector_paused_and_handed_out_with_it_on(
    collector_on: None, collector_state_while_building: list[bool], two_pass: bool
) -> None:
    between: list[bool] = []
    for _ in read_traces(str(TWO_TRACES), two_pass=two_pass):
        between.append(gc.isenabled())
    assert collector_state_while_building == [False, False]
    assert between == [True, True]
    assert gc.isenabled()


def test_a_collector_the_caller_turned_off_stays_off(
    collector_on: None, collector_state_while_building: list[bool]
) -> None:
    gc.disable()
    between = [gc.isenabled() for _ in read_traces(str(TWO_TRACES))]
    assert between == [False, False]
    assert not gc.isenabled()


def test_the_collector_is_back_on_after_a_failing_step(
    collector_on: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(facts: Any) -> Any:
        raise RuntimeError("boom")

    monkeypatch.setattr(collect, "build_eval_trace", failing)
    with pytest.raises(RuntimeError, match="boom"):
        next(read_traces(str(TWO_TRACES)))
    assert gc.isenabled()


def test_the_collector_is_back_on_when_the_caller_stops_early(collector_on: None) -> None:
    traces = read_traces(str(TWO_TRACES), two_pass=True)
    next(traces)
    assert gc.isenabled()
    traces.close()
    assert gc.isenabled()


def test_the_caller_can_collect_between_two_traces(collector_on: None) -> None:
    """The caller's own collections run between steps (the pause is not left on)."""
    collected: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collected.append(info["generation"])

    gc.callbacks.append(count)
    try:
        for _ in read_traces(str(TWO_TRACES)):
            before = len(collected)
            gc.collect()
            assert len(collected) == before + 1
    finally:
        gc.callbacks.remove(count)
