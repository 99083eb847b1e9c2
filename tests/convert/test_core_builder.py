"""The compiled core's trace builder (``core/src/build.rs``) builds what the Python builder
(``convert.build.build_in_python``, the reference) builds, trace for trace.

Every trace of every fixture (``tests/data``, the shared corpus, the external corpus when
present), collected with the core's facts mode and without it, with and without usage and
content, alone and grouped into conversations, is built by both builders and compared whole:
``repr`` (every field, ``spans`` included, each dict's key order, each value's type) and
the identity of the argument objects. ``test_core_builder_generated.py`` does the same for
generated ``TraceFacts``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from core_paths import engine_reading
from replay import fixture_name, fixture_paths

from tooltrail.convert import engine as core
from tooltrail.convert.build import build_eval_trace, build_in_python
from tooltrail.convert.collect import TraceCollector, conversations
from tooltrail.convert.decoded import is_log_record
from tooltrail.convert.engine import SPANS, Needs, decoding_for
from tooltrail.convert.facts import OpenTrace, TraceFacts, as_trace_facts
from tooltrail.convert.logjoin import join_logs
from tooltrail.model import EvalTrace
from tooltrail.otlp.read.mixed import read_spans_and_logs

try:
    import tooltrail_core
except ImportError:
    HAS_BUILDER = False
else:
    HAS_BUILDER = hasattr(tooltrail_core, "Builder")

needs_builder = pytest.mark.skipif(
    not HAS_BUILDER, reason="the compiled core (tooltrail-core, core/) with a builder is absent"
)


@pytest.fixture
def with_core(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The core in use (the switch cleared), chosen afresh; its builder."""
    monkeypatch.delenv(core.CORE_ENV, raising=False)
    core.reset()
    yield core.engine().builder()
    core.reset()


def collect(path: Path, facts: bool, usage: bool, content: bool) -> list[OpenTrace]:
    """The facts of every trace of ``path``, log content joined (``facts``: the core's mode,
    in parts: a trace made only of parts stays a ``CoreTrace``)."""
    collector = TraceCollector(usage=usage, content=content, diagnostics=[])
    decoding = decoding_for(Needs(content=content)) if facts else SPANS
    for item in read_spans_and_logs([path], **engine_reading(decoding), diagnostics=[]):
        if is_log_record(item):
            collector.add_log(item)
        else:
            collector.add(item)
    traces = collector.take_all()
    for trace in traces:
        if isinstance(trace, TraceFacts) and trace.log_events:
            join_logs(trace)
    return traces


def assert_same_build(builder: Any, traces: list[OpenTrace]) -> EvalTrace:
    """The core's build of ``traces`` equals the Python builder's, whole: from what the core
    keeps (``build_core``) when it keeps them all, else of their ``TraceFacts``. The core's
    build comes first (the Python builder marks a model span's final answer on its fact)."""
    if any(isinstance(trace, TraceFacts) for trace in traces):
        traces = [as_trace_facts(trace) for trace in traces]
        got = builder.build(traces)
    else:
        got = builder.build_core(traces)
    assert got is not None, "the core declined a trace"
    want = build_in_python([as_trace_facts(trace) for trace in traces])
    assert_same_trace(got, want)
    return got


def assert_same_trace(got: EvalTrace, want: EvalTrace) -> None:
    assert type(got) is EvalTrace
    assert got == want
    assert repr(got) == repr(want)  # every field: types, key order, spans
    for mine, theirs in zip(got.tool_calls, want.tool_calls, strict=True):
        assert mine.args is theirs.args  # the recorded objects, shared, not copies
        assert mine.result is theirs.result


def _fixtures() -> list[Any]:
    return [pytest.param(path, id=fixture_name(path)) for path in fixture_paths()]


@needs_builder
@pytest.mark.parametrize("path", _fixtures())
def test_fixture_builds_the_same_both_ways(path: Path, with_core: Any) -> None:
    before = core.build_counts()
    built = 0
    for facts, usage, content in (
        (True, False, False),  # ``eval``'s default
        (True, True, False),
        (False, True, True),  # content: spans, no facts
        (False, False, False),
    ):
        for group in [[t] for t in collect(path, facts, usage, content)]:
            assert_same_build(with_core, group)
            built += 1
        for group in conversations(collect(path, facts, usage, content)):
            assert_same_build(with_core, group)
            built += 1
    after = core.build_counts()
    assert after[0] - before[0] == built and after[1:] == before[1:]


@needs_builder
def test_the_python_switch_builds_in_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """``TOOLTRAIL_CORE=python``: ``build_eval_trace`` does not ask the core."""
    path = Path(__file__).parents[1] / "data/corpus/mlflow-genai-semconv/a_refund_ok.otlp.pb"
    monkeypatch.setenv(core.CORE_ENV, core.PYTHON)
    core.reset()
    try:
        assert core.engine().builder() is None
        traces = collect(path, False, False, False)
        before = core.build_counts()
        built = build_eval_trace(traces)
        assert core.build_counts() == before
        assert built.tool_calls
    finally:
        core.reset()
    monkeypatch.delenv(core.CORE_ENV)
    core.reset()
    try:
        before = core.build_counts()
        assert repr(build_eval_trace(traces)) == repr(built)
        assert core.build_counts()[0] == before[0] + 1  # the core built it
    finally:
        core.reset()


@needs_builder
def test_a_declined_trace_is_built_by_python(with_core: Any) -> None:
    """A trace the loader cannot read as the Python builder does (a count that is not an
    int) is declined, counted, and built by the Python builder."""
    path = Path(__file__).parents[1] / "data/corpus/mlflow-genai-semconv/a_refund_ok.otlp.pb"
    (trace,) = map(as_trace_facts, collect(path, True, False, False))
    want = build_in_python([trace])
    trace.dropped = 0.0  # type: ignore[assignment]
    assert with_core.build([trace]) is None
    before = core.build_counts()
    got = build_eval_trace([trace])
    assert core.build_counts()[1] == before[1] + 1 and core.build_counts()[0] == before[0]
    assert repr(got) == repr(want)
    assert with_core.build([]) is None  # no trace: the Python builder's (empty) trace
    assert core.build_counts()[3] == before[3] + 1
    assert repr(build_eval_trace([])) == repr(build_in_python([]))


@needs_builder
def test_traces_the_core_builds_share_their_repeated_strings(with_core: Any) -> None:
    """Held traces (a report's, ``read_traces`` into a list) cost memory by the object: the
    core's builder hands out one object for each tool name, source, agent name and metadata
    key however many traces repeat it, and a trace's id once for ``trace_id`` and
    ``metadata["trace_ids"]``. New strings per call held traces at ~1 KB more a trace than
    the Python builder's (``benchmarks/bench_core_memory.py``)."""
    from fixtures import REFUND_DUMP

    traces = collect(REFUND_DUMP, facts=True, usage=True, content=False)
    before = core.build_counts()[0]  # (the process's count: other tests built traces before)
    built = [build_eval_trace([trace]) for trace in traces]
    assert core.build_counts()[0] - before == len(traces) > 1
    seen: dict[str, int] = {}
    for trace in built:
        assert trace.metadata["trace_ids"][0] is trace.trace_id
        texts = [key for key in trace.metadata] + [key for key in trace.metadata["attributes"]]
        for call in trace.tool_calls:
            texts += [call.name, call.source] + ([call.agent] if call.agent else [])
        for text in texts:
            assert seen.setdefault(text, id(text)) == id(text), text
    assert "issue_refund" in seen and "turn_count" in seen
