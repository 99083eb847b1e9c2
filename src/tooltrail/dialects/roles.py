"""What a span is (tool call, agent invocation, model call, other), in as few lookups as possible.

Every span of the live path and of every dump goes through ``classify``, so the tables are
ordered for the common case: one dict lookup of the span name, one set test over the
attribute keys, then one ``get`` per marker attribute the span actually has.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from tooltrail.dialects import rules
from tooltrail.dialects.final import FINAL_TOOL_NAMES, is_final_answer, scope_of
from tooltrail.dialects.tools import (
    DialectCall,
    SpanLike,
    read_genai,
    read_langsmith,
    read_mlflow,
    read_openinference,
    read_pydantic_v2,
    read_traceloop,
    read_vercel,
)
from tooltrail.otlp.decode.span import Interest

ROLE_OTHER = 0
ROLE_TOOL = 1
ROLE_AGENT = 2
ROLE_MODEL = 3
#: A tool span that is not a call the agent made (``DialectCall.excluded`` says why).
ROLE_EXCLUDED = 4
#: One run of an agent system for one user message (GenAI ``invoke_workflow``, Google ADK's
#: runner span ``invocation``): the agents it runs (handoffs, transfers) are one turn.
ROLE_WORKFLOW = 5

Reader = Callable[[SpanLike, Mapping[str, Any]], "DialectCall | None"]
#: A table entry: a tool-call reader, or the role of a span that is not a tool call.
Meaning = Reader | int

#: The reader of each ``tool:<reader>`` role of ``rules.json``.
READERS: dict[str, Reader] = {
    "genai": read_genai,
    "vercel": read_vercel,
    "pydantic_v2": read_pydantic_v2,
    "openinference": read_openinference,
    "traceloop": read_traceloop,
    "mlflow": read_mlflow,
    "langsmith": read_langsmith,
}
_ROLES = {"agent": ROLE_AGENT, "model": ROLE_MODEL, "workflow": ROLE_WORKFLOW}


def _meaning(role: str) -> Meaning:
    """A role of ``rules.json`` (``agent``, ``tool:genai``, ...) as a table entry."""
    if role.startswith("tool:"):
        return READERS[role[len("tool:") :]]
    return _ROLES[role]


def _table(roles: Mapping[str, str]) -> dict[str, Meaning]:
    return {name: _meaning(role) for name, role in roles.items()}


#: Spans recognised by their exact name (checked first: one dict lookup): ``rules.json``
#: ``roles.by_span_name``.
BY_SPAN_NAME: dict[str, Meaning] = _table(rules.at("roles", "by_span_name"))

#: Spans recognised by a marker attribute, in this order: the first row whose value is known
#: decides (``roles.by_marker``). OpenLLMetry's LangChain spans carry GenAI and Traceloop
#: markers and are read as GenAI (which unwraps their envelope).
BY_MARKER: tuple[tuple[str, dict[str, Meaning]], ...] = tuple(
    (row["key"], _table(row["values"]))
    for row in rules.rows("roles", "by_marker", encodings={"text"})
)

#: Spans named ``execute_tool {name}`` without a GenAI operation (ADK legacy) are GenAI too
#: (``roles.by_name_prefix``: one prefix, tested inline by ``classify``).
((EXECUTE_TOOL_PREFIX, _PREFIX_ROLE),) = rules.at("roles", "by_name_prefix").items()
_PREFIX_MEANING = _meaning(_PREFIX_ROLE)
_PREFIX_LEN = len(EXECUTE_TOOL_PREFIX)

#: The spans ``classify`` can tell from "other": by name, name prefix or marker attribute. A
#: reader given this interest hands out every other span (with a parent) as a ``SpanHead``.
INTEREST = Interest(
    frozenset(BY_SPAN_NAME), (EXECUTE_TOOL_PREFIX,), tuple(key for key, _ in BY_MARKER)
)

_FIRST_KEY, _FIRST_TABLE = BY_MARKER[0]
_OTHER_ROWS = BY_MARKER[1:]


def _other_marker(attrs: Mapping[str, Any]) -> Meaning | None:
    """The meaning of the first marker after ``gen_ai.operation.name`` that ``attrs`` has.
    Markers are looked up one by one (``in`` / ``get``), never by iterating the keys: a
    decoder's mapping answers a lookup without indexing the span's other attributes."""
    for key, table in _OTHER_ROWS:
        if key in attrs:
            value = attrs.get(key)
            if value.__class__ is str:
                meaning = table.get(value)
                if meaning is not None:
                    return meaning
    return None


def classify(span: SpanLike) -> tuple[int, DialectCall | None]:
    """``(role, call)``: ``(ROLE_TOOL, call)`` for a tool call, ``(ROLE_EXCLUDED, record)`` for
    a tool span that is not a call, else ``(role, None)``."""
    attrs = span.attributes
    # the span name, then the GenAI marker (most spans of a dump), inline: every span comes
    # here. ``attrs is not None``, not ``attrs``: a lazy mapping's ``__bool__`` is a Python
    # call, and an empty mapping answers every lookup with nothing anyway.
    meaning = BY_SPAN_NAME.get(span.name)
    if meaning is None and attrs is not None:
        value = attrs.get(_FIRST_KEY)
        if value.__class__ is str:
            meaning = _FIRST_TABLE.get(value)
        if meaning is None:
            meaning = _other_marker(attrs)
    if meaning is None:
        if span.name[:_PREFIX_LEN] != EXECUTE_TOOL_PREFIX:
            return ROLE_OTHER, None
        meaning = _PREFIX_MEANING
    if meaning.__class__ is int:
        return meaning, None  # type: ignore[return-value]
    call = meaning(span, attrs if attrs is not None else {})  # type: ignore[operator]
    if call is None:
        return ROLE_OTHER, None
    if call.name in FINAL_TOOL_NAMES and call.excluded is None:  # a name test first: cheap
        if is_final_answer(scope_of(span), call.name):
            call.excluded = "final"  # the run's reply, not a call (``dialects.final``)
    return (ROLE_TOOL if call.excluded is None else ROLE_EXCLUDED), call


def read_tool_call(span: SpanLike) -> DialectCall | None:
    """The tool call ``span`` records, or ``None`` when it is not a tool call.

    ``span`` needs ``.name``, ``.attributes`` (a Mapping) and ``.events`` (objects with
    ``.name`` and ``.attributes``): an otlp ``Span`` and an SDK ``ReadableSpan`` both work.
    A span that is not a tool call costs a name lookup and a set test over its keys (plus one
    ``get`` per marker attribute it has).
    """
    role, call = classify(span)
    return call if role == ROLE_TOOL else None


def is_agent_span(span: SpanLike) -> bool:
    """An agent invocation: GenAI ``invoke_agent``, OpenInference ``AGENT``, Traceloop
    ``agent``, a Vercel ``ai.generateText``-family call, MLflow ``AGENT``, LangSmith ``agent``,
    Pydantic AI v2 ``agent run``."""
    return classify(span)[0] == ROLE_AGENT


def is_model_span(span: SpanLike) -> bool:
    """A model call: GenAI ``chat``/``generate_content``, Vercel ``doGenerate``/``doStream``,
    OpenInference ``LLM``, MLflow ``CHAT_MODEL``/``LLM``, LangSmith ``llm``."""
    return classify(span)[0] == ROLE_MODEL
