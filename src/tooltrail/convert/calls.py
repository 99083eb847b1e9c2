"""The tool calls of one trace: nested spans of one call collapsed, model-side records joined.

A call is the outermost of a chain of tool spans of the same call (MCP nests up to three:
framework ``execute_tool X`` -> MCP client -> MCP server). The model span that asked for a
call (matched by call id, else by name in order) fills what the tool span lacks: a call id,
argument names (positional Python calls), or the exact text of numbers a JavaScript runtime
re-serialised. Calls a model asked for that have no tool span at all become calls of their own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from tooltrail.convert.facts import (
    ROLE_AGENT,
    ROLE_EXCLUDED,
    ROLE_MODEL,
    ROLE_TOOL,
    SpanFact,
    TraceFacts,
)
from tooltrail.dialects import ROLE_WORKFLOW, ModelCall
from tooltrail.dialects.final import final_text, is_final_answer
from tooltrail.otlp.decode.span import STATUS_ERROR, STATUS_OK

#: Bound on an ancestry walk (parent cycles and absurd depths in hostile input).
MAX_HOPS = 10_000


@dataclass(slots=True)
class CallRecord:
    """One call of a trace, before turns are numbered across a conversation. ``_record`` builds
    it by position in the loop over every call (keywords cost about three times as much
    there); ``tests/convert/test_convert.py`` pins the field order: change both together."""

    fact: SpanFact
    name: str
    args: dict[str, Any] | None
    call_id: str | None
    source: str
    status: str
    error: str | None
    agent: str | None
    start_ns: int
    end_ns: int
    depth: int
    #: The top-level agent span (or ``None``) the call ran under: its turn.
    turn_root: SpanFact | None
    positional: bool = False
    #: (model span start, model span end, model span id, position in the response) when a
    #: model span listed the call.
    emitted: tuple[int, int, str, int] | None = None
    #: When the first call of the same model response started (``_set_group_starts``);
    #: ``None``: the call's own start (the only call of its response, or of none).
    group_start: int | None = None
    #: The key of the turn the call belongs to (set when the trace is built).
    turn: Any = None
    #: What the tool returned (read only with content; see ``SpanFact.result``).
    result: Any = None
    #: The nearest tool span above the call's span with no agent or model span in between.
    within: SpanFact | None = None


@dataclass(slots=True)
class Kinds:
    """The kept spans of one trace by role, in ``trace.facts`` order: sorted out in one pass
    that every step of building the trace shares (each used to scan all facts itself)."""

    #: Tool spans with a call.
    tools: list[SpanFact]
    agents: list[SpanFact]
    models: list[SpanFact]
    #: Tool spans that are not calls (``ROLE_EXCLUDED``) with a call record.
    excluded: list[SpanFact]
    #: Spans without a parent.
    parentless: list[SpanFact]
    #: Model spans that asked for calls.
    asking: list[SpanFact]
    #: Workflow spans (one run of an agent system for one user message).
    workflows: list[SpanFact]
    #: Spans that carry a built-in final-answer tool's reply (``SpanFact.final``): tool spans
    #: that ran one, and (added by ``tool_calls``) model spans that asked for one no span ran.
    finals: list[SpanFact]
    #: Ids of the model spans that may run inside another model span (``enclosing_models``):
    #: their parent is a model span, or a span not kept. Nearly always none: the model join
    #: and the usage count walk up from these only, not from every model span (a call of
    #: ``enclosing_models`` per model span was about 5% of building a trace).
    maybe_wrapped: set[str]


def kinds(trace: TraceFacts) -> Kinds:
    """``trace``'s kept spans sorted out by role (see ``Kinds``)."""
    tools: list[SpanFact] = []
    agents: list[SpanFact] = []
    models: list[SpanFact] = []
    excluded: list[SpanFact] = []
    parentless: list[SpanFact] = []
    asking: list[SpanFact] = []
    workflows: list[SpanFact] = []
    finals: list[SpanFact] = []
    maybe_wrapped: set[str] = set()
    facts = trace.facts
    for fact in facts.values():
        role = fact.role
        if role == ROLE_TOOL:
            if fact.call is not None:
                tools.append(fact)
        elif role == ROLE_MODEL:
            models.append(fact)
            if fact.model_calls:
                asking.append(fact)
            if fact.parent_id:  # (``enclosing_models``'s first step)
                parent = facts.get(fact.parent_id)
                if parent is None or parent.role == ROLE_MODEL:
                    maybe_wrapped.add(fact.span_id)
        elif role == ROLE_AGENT:
            agents.append(fact)
        elif role == ROLE_EXCLUDED and fact.call is not None:
            excluded.append(fact)
            if fact.final:
                finals.append(fact)
        elif role == ROLE_WORKFLOW:
            workflows.append(fact)
        if not fact.parent_id:
            parentless.append(fact)
    return Kinds(
        tools, agents, models, excluded, parentless, asking, workflows, finals, maybe_wrapped
    )


def lineage(links: Mapping[str, str], start: str) -> list[str]:
    """The ids above ``start`` in ``links`` (span id -> parent id), nearest first: the one walk
    up of the converter, and its one cycle guard. It stops at an id with no parent (``""``) or
    not in ``links`` (a span that never arrived, which is still listed), before an id it has
    passed (a parent cycle, ``start`` included), and after ``MAX_HOPS`` ids (absurd depths in
    hostile input)."""
    chain: list[str] = []
    current = links.get(start, "")
    while current and current != start and current not in chain:  # (a short list: in C)
        chain.append(current)
        if len(chain) == _SHORT:
            return _long_lineage(links, start, chain)
        current = links.get(current, "")
    return chain


#: Past this many ids, ``lineage`` tells passed ids by a set (a list's ``in`` would be
#: quadratic); short walks, nearly all, do without building one.
_SHORT = 32


def _long_lineage(links: Mapping[str, str], start: str, chain: list[str]) -> list[str]:
    """``lineage`` past its first ``_SHORT`` ids: the same guard, with the passed ids in a set."""
    passed = {start, *chain}
    current = links.get(chain[-1], "")
    while current and current not in passed and len(chain) < MAX_HOPS:
        chain.append(current)
        passed.add(current)
        current = links.get(current, "")
    return chain


def enclosing_models(trace: TraceFacts, span_id: str) -> list[str]:
    """The model spans that wrap ``span_id``, nearest first: a framework's model call span and
    the provider's span inside it are one model call. The walk passes spans no role keeps (an
    HTTP call) and stops at the first kept span that is not a model span."""
    facts = trace.facts
    parent = facts.get(trace.parents.get(span_id, ""))
    if parent is not None and parent.role != ROLE_MODEL:  # the common case, without a walk
        return []
    found: list[str] = []
    for current in lineage(trace.parents, span_id):
        above = facts.get(current)
        if above is not None:
            if above.role != ROLE_MODEL:
                break
            found.append(current)
    return found


def placement(trace: TraceFacts, span_id: str) -> tuple[SpanFact | None, SpanFact | None, int]:
    """(nearest agent above, top-level agent or workflow above: the turn, depth) of a span."""
    facts = trace.facts
    nearest = top = None
    chain = lineage(trace.parents, span_id)
    for current in chain:
        above = facts.get(current)
        if above is not None:
            role = above.role
            if role == ROLE_AGENT:
                if nearest is None:
                    nearest = above
                top = above
            elif role == ROLE_WORKFLOW:
                top = above
    return nearest, top, len(chain)


def tool_calls(trace: TraceFacts, kept: Kinds | None = None) -> list[CallRecord]:
    """Every call of ``trace``: tool spans (collapsed), then model-only calls; unordered.
    ``kept``: ``kinds(trace)`` when the caller has it."""
    if kept is None:
        kept = kinds(trace)
    records: list[CallRecord] = []
    into: dict[str, str] = {}  # tool span id -> id of the outer span of the same call
    for fact in kept.tools:
        record = _record(trace, fact)
        records.append(record)
        outer = record.within
        if outer is None or outer.call is None or fact.call is None:
            continue
        same_id = fact.call.call_id is not None and fact.call.call_id == outer.call.call_id
        if same_id or outer.call.name == fact.call.name:
            into[fact.span_id] = outer.span_id
    if into:  # spans nested in another of the same call (rare): one record per call
        records = _collapse(trace, records, into)
    _join_model_calls(trace, records, kept)
    return records


def _record(trace: TraceFacts, fact: SpanFact) -> CallRecord:
    """The call of the tool span ``fact``, placed by one walk up: the nearest agent above (its
    agent), the top-level agent or workflow above (its turn: ``placement``), its depth, and the
    nearest tool span above with no agent or model span in between (``within``: the call it
    may be part of). Walk and record in one function, with no tuple nor dict of positions
    between them: it runs for every call (as two, building a trace took 3.7% more callgrind
    instructions on ``bench_eval``'s traces, about a tenth of ``tool_calls``)."""
    facts = trace.facts
    within = nearest = top = None
    searching = True  # for the enclosing tool: until a tool, agent or model span is met
    chain = lineage(trace.parents, fact.span_id)
    for current in chain:
        above = facts.get(current)
        if above is not None:
            role = above.role
            if role == ROLE_AGENT:
                if nearest is None:
                    nearest = above
                top = above
                searching = False
            elif role == ROLE_WORKFLOW:
                top = above
                searching = False
            elif searching and (role == ROLE_TOOL or role == ROLE_MODEL):
                within = above if role == ROLE_TOOL else None
                searching = False
    call = fact.call
    assert call is not None
    code = fact.status_code
    if call.failure or code == STATUS_ERROR:
        status = "error"
    else:
        status = "ok" if code == STATUS_OK else "unset"
    # fields by position (keywords make this call ~3x dearer, and it runs for every call)
    record = CallRecord(
        fact,
        call.name,
        call.args,
        call.call_id,
        call.source,
        status,
        fact.error,
        # the agent: the nearest agent span's (the span the GenAI conventions give an agent's
        # identity to), else the tool span's own; an instrumentation may stamp one default
        # name on every span (the contrib OpenAI Agents instrumentation: "OpenAI Agent")
        nearest.agent if nearest is not None and nearest.agent else fact.agent,
        fact.start_ns,
        fact.end_ns,
        len(chain),  # depth
        top,  # turn_root
        call.positional,
    )
    record.result = fact.result
    record.within = within
    return record


def _collapse(
    trace: TraceFacts, records: list[CallRecord], into: dict[str, str]
) -> list[CallRecord]:
    """One record per call: the record of each chain's outermost span (in the order the chains
    are first met), completed by the spans of the same call nested in it, in their order
    (``into``: span id -> the outer span of the same call)."""
    by_span = {record.fact.span_id: record for record in records}
    owners: dict[str, CallRecord] = {}
    for record in records:
        inner = record.fact
        outers = lineage(into, inner.span_id)
        owner_id = outers[-1] if outers else inner.span_id
        owner = owners.setdefault(owner_id, by_span[owner_id])
        if owner is record:
            continue
        inner_call = inner.call
        assert inner_call is not None
        # fill what the outer span lacks (read from the inner span's facts, never its record)
        if owner.args is None and inner_call.args is not None:
            owner.args, owner.source = inner_call.args, inner_call.source
            owner.positional = inner_call.positional
        if owner.call_id is None:
            owner.call_id = inner_call.call_id
        if owner.result is None:
            owner.result = inner.result
        if owner.status == "unset" and inner.error is not None:
            owner.status, owner.error = "error", inner.error
    return list(owners.values())


#: Model spans in start order; calls in the order of their outermost spans (sort keys).
_MODEL_ORDER = attrgetter("start_ns", "span_id")
_RECORD_ORDER = attrgetter("start_ns", "depth", "fact.span_id")


def sort_by_start(items: list[Any], key: Callable[[Any], Any]) -> None:
    """Sort spans' facts or calls by ``key``, whose first field is their ``start_ns``, unless
    their starts already increase: spans are sent as they end, and the model calls and tool
    calls of an agent run one after another, so they nearly always arrive in start order.
    Testing that costs less than making a key per item and sorting by it (the two sorts of
    the model join were 5% of building a trace; callgrind, ``benchmarks/bench_build.py``)."""
    previous = -1
    for item in items:
        start = item.start_ns
        if start <= previous:  # a tie or an item out of order: only the full key orders them
            items.sort(key=key)
            return
        previous = start


def _join_model_calls(trace: TraceFacts, records: list[CallRecord], kept: Kinds) -> None:
    """Match each call to the model response that asked for it (by call id, else by name in
    order), add the calls a model asked for that have no tool span, and set ``group_start``
    when some response asked for several calls.
    ``records`` ends up sorted by start when any model span listed calls."""
    models = kept.asking
    if not models:
        return
    if len(models) > 1:
        sort_by_start(models, _MODEL_ORDER)
        if kept.maybe_wrapped:
            models = _without_wrappers(trace, models, kept.maybe_wrapped)
    by_id: dict[str, tuple[SpanFact, ModelCall]] = {}
    asked_count = 0
    id_less = False  # whether some request has no call id (ADK's own response record)
    for model in models:
        for asked in model.model_calls:
            asked_count += 1
            if asked.call_id is None:
                id_less = True
            elif asked.call_id not in by_id:
                by_id[asked.call_id] = (model, asked)
    used: set[int] = set()
    for fact in kept.excluded:  # output functions, deferred calls: asked for, not run
        call = fact.call
        assert call is not None
        _consume(call.call_id, call.name, fact.start_ns, models, by_id, used)
    sort_by_start(records, _RECORD_ORDER)
    unmatched: list[CallRecord] = []
    for record in records:
        if record.call_id is None:
            unmatched.append(record)
            continue
        found = by_id.get(record.call_id)
        if found is not None and id(found[1]) not in used:
            used.add(id(found[1]))
            _enrich(record, *found)
        elif id_less:  # a call id the model's record does not know: matched by name
            unmatched.append(record)
    if unmatched:
        _match_by_name(models, unmatched, used)
    if len(used) < asked_count:  # every id in ``used`` is of a distinct call in ``models``
        for model in models:
            for asked in model.model_calls:
                if id(asked) not in used:
                    if is_final_answer(model.scope, asked.name):  # the reply, not a call
                        if model.final is None:
                            kept.finals.append(model)
                        model.final = final_text(asked.args) or model.final or ""
                        continue
                    records.append(_model_only(trace, model, asked))
    if asked_count > len(models):  # else each response asked for one call: its own start
        _set_group_starts(records)  # (two loops and a dict: a tenth of the join's cost)


def _match_by_name(models: list[SpanFact], records: list[CallRecord], used: set[int]) -> None:
    """Calls without an id take, in order, the first request of the same name not taken yet
    by a model span that started no later than them."""
    queues: dict[str, list[tuple[SpanFact, ModelCall]]] = {}
    for model in models:
        for asked in model.model_calls:
            if id(asked) not in used:
                queues.setdefault(asked.name, []).append((model, asked))
    for record in records:
        queue = queues.get(record.name)
        if not queue:
            continue
        index = -1
        for i, (model, asked) in enumerate(queue):
            if model.start_ns > record.start_ns:
                break
            if record.call_id is not None and asked.call_id is not None:
                continue  # a call with an id takes only a request without one
            if index < 0:
                index = i  # the first request of that name not taken yet
            if asked.args == record.args:  # parallel calls of one name: the same arguments
                index = i
                break
        if index >= 0:
            model, asked = queue.pop(index)
            used.add(id(asked))
            _enrich(record, model, asked)


def _without_wrappers(
    trace: TraceFacts, models: list[SpanFact], maybe_wrapped: set[str]
) -> list[SpanFact]:
    """``models`` without the model spans that wrap another of them: a framework's model
    call span (ADK ``call_llm``) and the provider's span inside it are one model call, and
    the inner one's record of the requests is kept. ``maybe_wrapped``: ``Kinds.maybe_wrapped``
    (no other model span is inside a model span)."""
    asking = {model.span_id: model for model in models}
    wrappers: set[str] = set()
    for model in models:
        if model.span_id not in maybe_wrapped:
            continue
        for above in enclosing_models(trace, model.span_id):
            if above in asking:
                wrappers.add(above)
    if not wrappers:
        return models
    return [model for model in models if model.span_id not in wrappers]


def _set_group_starts(records: list[CallRecord]) -> None:
    """Calls of one model response start, for ordering, when the first of them started."""
    groups: dict[str, int] = {}
    for record in records:
        emitted = record.emitted
        if emitted is not None:
            known = groups.get(emitted[2])
            if known is None or record.start_ns < known:
                groups[emitted[2]] = record.start_ns
    for record in records:
        emitted = record.emitted
        if emitted is not None:
            record.group_start = groups[emitted[2]]


def _consume(
    call_id: str | None,
    name: str,
    start_ns: int,
    models: list[SpanFact],
    by_id: dict[str, tuple[SpanFact, ModelCall]],
    used: set[int],
) -> None:
    """Mark the model's request for a tool span that is not a call as accounted for."""
    if call_id is not None:
        found = by_id.get(call_id)
        if found is not None:
            used.add(id(found[1]))
        return
    for model in models:
        if model.start_ns > start_ns:
            return
        for asked in model.model_calls:
            if asked.name == name and id(asked) not in used:
                used.add(id(asked))
                return


def _enrich(record: CallRecord, model: SpanFact, asked: ModelCall) -> None:
    record.emitted = (model.start_ns, model.end_ns, model.span_id, asked.position)
    if record.call_id is None:
        record.call_id = asked.call_id
    if asked.args is None:
        return
    if record.args is None or (record.positional and fits(record.args, asked.args)):
        record.args, record.positional = asked.args, False
        record.source = _taken_from(record.source, asked.source)
    elif lost_precision(record.args, asked.args):
        record.args = asked.args  # the model's exact text; the span's copy lost precision
        record.source = _taken_from(record.source, asked.source)


def _taken_from(source: str, asked_source: str) -> str:
    """The call's dialect, with the attribute of the model span its arguments came from."""
    return f"{source.partition(':')[0]}:{asked_source.partition(':')[2]}"


def lost_precision(recorded: dict[str, Any], asked: dict[str, Any]) -> bool:
    """Whether ``recorded`` is ``asked`` with numbers rounded to float64 (and not equal)."""
    try:
        if recorded == asked:  # the common case: both records agree
            return False
        return not _same(recorded, asked) and _same_as_float64(recorded, asked)
    except RecursionError:  # absurdly deep arguments: keep what the tool span recorded
        return False


def _model_only(trace: TraceFacts, model: SpanFact, asked: ModelCall) -> CallRecord:
    nearest, top, depth = placement(trace, model.span_id)
    return CallRecord(
        fact=model,
        name=asked.name,
        args=asked.args,
        call_id=asked.call_id,
        source=asked.source,
        status="unset",
        error=None,
        agent=nearest.agent if nearest is not None else None,
        start_ns=model.end_ns or model.start_ns,
        end_ns=model.end_ns,
        depth=depth,
        turn_root=top,
        emitted=(model.start_ns, model.end_ns, model.span_id, asked.position),
    )


def order_key(record: CallRecord) -> tuple[int, int, int, str, int, int, int, int, str]:
    """Calls run in the order their outermost spans start. Calls of one model response keep
    the model's emission order. Ties (clocks cut to the millisecond) go to the call whose
    model span started, then ended, first (a model call ends before the next one starts),
    then to the outer span, the one that ended first, and last the span id."""
    if record.emitted is not None:
        model_start, model_end, model_id, position = record.emitted
    else:
        model_start, model_end, model_id, position = record.start_ns, 0, "", 0
    group_start = record.group_start
    return (
        record.start_ns if group_start is None else group_start,
        model_start,
        model_end,
        model_id,
        position,
        record.start_ns,
        record.depth,
        record.end_ns,
        record.fact.span_id,
    )


def sort_calls(records: list[CallRecord]) -> None:
    """Sort the calls of one trace by ``order_key``, unless they are in that order already.

    They nearly always are: the model join leaves them in start order (``_join_model_calls``)
    and calls seldom start at the same time, so ``order_key``'s first field orders them all.
    Testing that costs half of making a key of nine fields per call and sorting by it, which
    was 3.5% of building a trace (callgrind, ``benchmarks/bench_build.py``)."""
    previous = -1
    for record in records:
        group_start = record.group_start
        first = record.start_ns if group_start is None else group_start
        if first <= previous:  # a tie or a call out of order: only the full key orders them
            records.sort(key=order_key)
            return
        previous = first


def fits(recorded: dict[str, Any], asked: dict[str, Any]) -> bool:
    """Whether positional ``recorded`` arguments fit the named ``asked`` ones (also the
    compiled builder's rule: ``core/src/build.rs`` asks it through ``convert.build``)."""
    try:
        return _fits_positional(recorded, asked)
    except RecursionError:
        return False


def _fits_positional(recorded: dict[str, Any], asked: dict[str, Any]) -> bool:
    """Whether positional values (under ``"args"``) plus keywords agree with named ``asked``."""
    positional = recorded.get("args")
    if not isinstance(positional, list):
        return False
    keywords = {k: v for k, v in recorded.items() if k != "args"}
    for key, value in keywords.items():
        if key not in asked or not _same_as_float64(value, asked[key]):
            return False
    rest = [v for k, v in asked.items() if k not in keywords]
    if len(rest) < len(positional):
        return False
    return all(_same_as_float64(a, b) for a, b in zip(positional, rest, strict=False))


def _same(a: Any, b: Any) -> bool:
    """Equal as the checks compare values: numbers numerically, booleans only to booleans."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _same_as_float64(a: Any, b: Any) -> bool:
    """Equal once every number is rounded to a float64, as a JavaScript runtime rounds them."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        try:
            return float(a) == float(b)
        except OverflowError:
            return False
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_as_float64(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_as_float64(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
