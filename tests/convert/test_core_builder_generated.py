"""The core's trace builder and the Python builder build the same ``EvalTrace`` of generated
``TraceFacts``: random trees of span facts of every role (parents missing, parent cycles,
equal start times), tool calls with and without ids and arguments, positional arguments,
numbers a JavaScript runtime rounded, model spans asking for calls (id-less, repeated names,
final-answer tools, wrapped model spans), agents and workflows (turns, aliases of turns whose
parent never arrived), labels, usage, content, and conversations of several traces whose
span ids may repeat across traces. ``test_core_builder.py`` holds the fixtures.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_core_builder import assert_same_trace, needs_builder

from tooltrail.convert import engine as core
from tooltrail.convert.build import build_in_python
from tooltrail.convert.facts import SpanFact, TraceFacts
from tooltrail.dialects import DialectCall, ModelCall

ROLES = st.sampled_from([0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 5, 5])
#: Few distinct times: ties are common, as clocks cut to the millisecond make them.
TIMES = st.sampled_from([0, 1, 2, 2, 3, 5, 8, 13])
NAMES = st.sampled_from(["a", "b", "c", "final_result", "final_answer"])
CALL_IDS = st.sampled_from([None, None, "c1", "c2", "c3"])
TEXTS = st.sampled_from([None, None, "", "x", "y"])
SOURCES = st.sampled_from(["genai:gen_ai.tool.call.arguments", "oi:input.value", "plain"])
ARGS = st.sampled_from(
    [
        None,
        {},
        {"q": 1},
        {"q": 1.0},
        {"q": "1"},
        {"q": True},
        {"args": [1, 2]},
        {"args": [1]},
        {"args": [1], "b": 2},
        {"a": 1, "b": 2},
        {"n": 9007199254740993},
        {"n": 9007199254740992.0},
        {"n": [9007199254740993]},
        {"n": [9007199254740992.0]},
        {"d": {"e": 1}},
        {"d": {"e": 1.0}},
    ]
)
SCOPES = st.sampled_from(["", "pydantic-ai", "openinference.instrumentation.smolagents", "x"])
LABELS = st.sampled_from([None, {}, {"k": 1}, {"k": "v", "j": True}, {"j": 2.5, "k": "w"}])
USAGE = st.one_of(
    st.none(),
    st.tuples(
        st.integers(0, 10**6), st.integers(0, 2**64 - 1), st.sampled_from([None, "m1", "m2", ""])
    ),
)


def _copy(value: Any) -> Any:
    """A fresh copy of a drawn value (strategies hand out shared objects)."""
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


@st.composite
def span_facts(draw: st.DrawFn, span_id: str, ids: list[str], at: int, shaped: bool) -> SpanFact:
    """The fact of ``span_id``, the ``at``-th of ``ids``: its parent mostly one before it (a
    tree), else none, one after it (parent cycles), one that never arrived or a plain span.
    ``shaped``: an agent system (a workflow or agent first, agents under it, then models and
    tools under those), where turns, members and replies meet."""
    role = draw(ROLES)
    if shaped:
        role = draw(st.sampled_from([5, 5, 2])) if at == 0 else role
        role = 2 if at in (1, 2) else role
    if shaped and at:
        parent = ids[0] if at <= 2 else ids[draw(st.integers(0, at - 1))]
    elif at and draw(st.integers(0, 4)):
        parent = ids[draw(st.integers(0, at - 1))]
    else:
        parent = draw(st.sampled_from(["", "", *ids, "gone1", "gone2", "other1"]))
    start = draw(TIMES)
    end = start + draw(st.sampled_from([0, 0, 1, 4, 20]))
    if shaped and at in (1, 2):  # two agents of a workflow, often ending together
        start, end = draw(st.sampled_from([1, 2])), draw(st.sampled_from([9, 9, 10]))
    fact = SpanFact(
        span_id,
        parent,
        role,
        draw(st.sampled_from(["span", "execute_tool a", "chat"])),
        start,
        end,
        draw(st.sampled_from([0, 1, 2])),
    )
    fact.error = draw(st.sampled_from([None, None, "boom"]))
    if role in (1, 4) and draw(st.integers(0, 5)):
        fact.call = DialectCall(
            draw(NAMES),
            _copy(draw(ARGS)),
            draw(CALL_IDS),
            draw(SOURCES),
            failure=draw(st.sampled_from([None, None, "", "failed"])),
            positional=draw(st.booleans()),
        )
    if role == 4 and fact.call is not None:
        fact.final = draw(st.sampled_from([None, "", "done"]))
    fact.agent = draw(TEXTS)
    fact.reply = draw(TEXTS)
    if shaped and at < 3:  # replies that only the choice among them tells apart
        fact.reply = draw(st.sampled_from([None, "x", "y"] if at else [None, None, "w"]))
    if role == 3:
        asked = draw(st.lists(st.tuples(NAMES, CALL_IDS, ARGS, st.integers(0, 3)), max_size=4))
        if asked:
            fact.model_calls = [
                ModelCall(name, call_id, _copy(args), position, draw(SOURCES))
                for name, call_id, args, position in asked
            ]
            fact.scope = draw(SCOPES)
        fact.asked_unlisted = draw(st.booleans())
        fact.usage = draw(USAGE)
    fact.labels = _copy(draw(LABELS))
    fact.result = _copy(draw(st.sampled_from([None, None, "out", {"r": 1}])))
    fact.input = draw(TEXTS)
    return fact


@st.composite
def trace_facts(draw: st.DrawFn, trace_id: str, shaped: bool | None = None) -> TraceFacts:
    if shaped is None:
        shaped = draw(st.booleans())
    count = draw(st.integers(3 if shaped else 0, 11))
    ids = [f"s{i}" for i in draw(st.permutations(range(12)))[:count]]
    trace = TraceFacts(trace_id)
    for at, span_id in enumerate(ids):
        fact = draw(span_facts(span_id, ids, at, shaped))
        trace.parents[span_id] = fact.parent_id
        if fact.role or not fact.parent_id or draw(st.booleans()):
            trace.facts[span_id] = fact
    for extra in draw(st.lists(st.sampled_from(["other1", "other2", "gone1"]), max_size=2)):
        trace.parents.setdefault(extra, draw(st.sampled_from(["", *ids])))
    starts = [f.start_ns for f in trace.facts.values() if f.start_ns]
    trace.start_ns = min(starts) if starts and draw(st.booleans()) else draw(TIMES)
    trace.end_ns = max([f.end_ns for f in trace.facts.values()] + [0])
    failed = [fact for fact in trace.facts.values() if fact.status_code == 2]
    trace.error_spans = [(fact.start_ns, fact.span_id) for fact in failed]
    if draw(st.booleans()):
        trace.error_spans.append((draw(TIMES), draw(st.sampled_from(["s1", "other1"]))))
    trace.resource = draw(
        st.sampled_from(
            [{}, {"service.name": "shop", "n": 1, "l": [1]}, {"service.name": 5, "f": 1.5}]
        )
    )
    conversation = draw(st.sampled_from([None, "conv1", "conv2", ""]))
    if conversation is not None:
        trace.conversation = (draw(TIMES), draw(st.integers(0, 1)), conversation)
    trace.case_id = draw(st.sampled_from([None, "", "case1"]))
    trace.dropped = draw(st.sampled_from([0, 0, 2]))
    trace.read_usage = draw(st.booleans())
    trace.read_content = draw(st.booleans())
    if draw(st.booleans()):
        trace.tool_responses = {"c1": "sent back", "c3": {"v": 2}}
    return trace


@st.composite
def conversations(draw: st.DrawFn, shaped: bool | None = None) -> list[TraceFacts]:
    count = draw(st.integers(1, 3))
    return [draw(trace_facts(f"t{draw(st.integers(0, 9))}{i}", shaped)) for i in range(count)]


@pytest.fixture(scope="module")
def builder() -> Any:
    """The core's builder (the switch cleared for the module)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(core.CORE_ENV, raising=False)
        core.reset()
        try:
            yield core.engine().builder()
        finally:
            core.reset()


@needs_builder
@settings(
    max_examples=700,
    deadline=None,
    derandomize=True,  # the same examples every run: a failure is a difference, never luck
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(traces=conversations())
def test_generated_facts_build_the_same_both_ways(builder: Any, traces: list[TraceFacts]) -> None:
    got = builder.build(traces)  # first: the Python builder marks final answers on its facts
    assert got is not None, "the core declined a generated trace"
    assert_same_trace(got, build_in_python(traces))


@needs_builder
@settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(traces=conversations(shaped=True))
def test_generated_agent_systems_build_the_same_both_ways(
    builder: Any, traces: list[TraceFacts]
) -> None:
    """Agent systems only: a workflow or agent first, two agents under it (turns, their
    members, replies chosen among agents that end together)."""
    got = builder.build(traces)
    assert got is not None, "the core declined a generated trace"
    assert_same_trace(got, build_in_python(traces))
