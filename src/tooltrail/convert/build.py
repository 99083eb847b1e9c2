"""Facts of one trace (or of the traces of one conversation) -> one ``EvalTrace``.

Turns: a turn is one user exchange: a workflow span (GenAI ``invoke_workflow``, ADK's runner
``invocation``) or an agent span with no workflow or agent above it. The agents a workflow runs
(handoffs, transfers) and the agents an agent runs (agents as tools, sub-agents) are in its
turn. A trace without agent or workflow spans is one turn. Across a conversation, turns are
numbered in start order. The reply is the last turn's reply (its workflow's or agent's, else
that of its top-level agent that ended last), else the last root's, else the argument of the
turn's last built-in final-answer call (``dialects.final``), else the text of the last model
response of the last turn that asked for no tool call.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
from typing import Any

from tooltrail.convert.calls import (
    CallRecord,
    Kinds,
    enclosing_models,
    kinds,
    lineage,
    order_key,
    placement,
    sort_calls,
    tool_calls,
)
from tooltrail.convert.engine import engine
from tooltrail.convert.facts import (
    ROLE_AGENT,
    ROLE_MODEL,
    ROLE_TOOL,
    OpenTrace,
    SpanFact,
    TraceFacts,
    as_trace_facts,
)
from tooltrail.convert.handoffs import (
    find_handoffs,
    named_handoffs,
    names_a_handoff,
    without_handoff_records,
)
from tooltrail.model import AgentSpan, CallRow, EvalTrace, ToolCall, Turn, deferred_spans

_TurnKey = tuple[int, int, str]  # (start, trace index, span id)
#: An agent span of a trace being built: its fact, the nearest agent above it, its turn's key
#: and its trace's index.
_AgentRow = tuple[SpanFact, SpanFact | None, _TurnKey, int]

#: Sort keys: traces and spans in start order (ties by id).
_TRACE_ORDER = attrgetter("start_ns", "trace_id")
_SPAN_ORDER = attrgetter("start_ns", "span_id")
_SPAN_ID = attrgetter("span_id")
#: Spans by end time.
_END_ORDER = attrgetter("end_ns")


def build_eval_trace(traces: Sequence[OpenTrace]) -> EvalTrace:
    """One ``EvalTrace`` from the facts of one trace, or of several traces of a conversation.

    ``traces`` may come in any order; they are taken in start order. The engine's builder
    (``convert.engine``: the compiled core's port, ``core/src/build.rs``) when it has one,
    else, and for every trace the port declines, ``build_in_python``, the reference. Traces the core
    collected (``CoreTrace``) are built from what it keeps (``Builder.build_core``) when they
    all are, and exported otherwise.
    """
    builder = engine().builder()
    if builder is not None:
        built: EvalTrace | None
        if traces and not any(isinstance(trace, TraceFacts) for trace in traces):
            built = builder.build_core(traces)  # (no span of a core's trace names a handoff)
            if built is not None:
                return _with_handoffs(built, ())
        else:
            traces = [as_trace_facts(trace) for trace in traces]
            built = builder.build(traces)
        if built is not None:
            return _with_handoffs(built, traces)  # type: ignore[arg-type]
    facts = [as_trace_facts(trace) for trace in traces]
    return _with_handoffs(build_in_python(facts), facts)


def _with_handoffs(trace: EvalTrace, facts: Sequence[TraceFacts]) -> EvalTrace:
    """``trace`` with its handoffs (``convert.handoffs``), found from what either builder
    made (its calls and agent spans) and the semconv handoff attributes of ``facts``' tool
    spans: one step after both builders, so they are not found twice."""
    calls, agents = trace.tool_calls, trace.agent_spans
    named = named_handoffs(facts) if facts else None
    if named is None and len(agents) < 2 and not names_a_handoff(calls):
        return trace  # the common case: one agent (or none), no handoff tool called
    trace.handoffs = find_handoffs(calls, agents, named)
    if trace.content_missing is not None and calls:
        trace.content_missing = without_handoff_records(calls, trace.content_missing)
    return trace


def build_in_python(traces: Sequence[TraceFacts]) -> EvalTrace:
    """``build_eval_trace`` by the Python builder: the reference the core's port is held to."""
    ordered = sorted(traces, key=_TRACE_ORDER) if len(traces) > 1 else list(traces)
    records: list[CallRecord] = []
    turns: dict[_TurnKey, SpanFact | None] = {}
    #: turn root span id -> its top-level agents (agent spans with no agent above them)
    members: dict[str, list[SpanFact]] = {}
    kept = list(map(kinds, ordered))
    #: turn roots whose parent never arrived, inside another turn of their trace -> that turn
    alias: dict[str, SpanFact] = {}
    #: agent span id -> (the nearest agent above it, the top-level agent or workflow above it)
    placed: dict[str, tuple[SpanFact | None, SpanFact | None]] = {}
    agent_rows: list[_AgentRow] = []
    for index, trace in enumerate(ordered):
        tops = _turn_roots(trace, kept[index], members, alias, placed)
        trace_turn = (trace.start_ns, index, "")
        #: span id of each turn's span -> the turn's key
        turn_of_top: dict[str, _TurnKey] = {}
        for top in tops:
            key = turn_of_top[top.span_id] = (top.start_ns, index, top.span_id)
            turns[key] = top
        if not tops:
            turns[trace_turn] = None
        for fact in kept[index].agents:  # each agent's turn, as a call's below
            nearest, above = placed[fact.span_id]
            its_root = above if above is not None else fact
            if alias:
                its_root = alias.get(its_root.span_id, its_root)
            its_turn = turn_of_top.get(its_root.span_id)
            if its_turn is None:
                its_turn = _turn_at(fact.start_ns, tops, trace_turn)
            agent_rows.append((fact, nearest, its_turn, index))
        responses = trace.tool_responses
        for record in tool_calls(trace, kept[index]):
            if responses and record.result is None and record.call_id in responses:
                record.result = responses[record.call_id]
            root = record.turn_root
            if alias and root is not None:
                root = record.turn_root = alias.get(root.span_id, root)
            turn = turn_of_top.get(root.span_id) if root is not None else None
            if turn is None:  # outside every turn's span, or above one in a parent cycle
                turn = _turn_at(record.start_ns, tops, trace_turn)
            record.turn = turn
            records.append(record)
    turn_keys = sorted(turns)
    numbers = dict(zip(turn_keys, range(1, len(turn_keys) + 1), strict=True))
    if len(ordered) == 1:  # every call is of trace 0
        sort_calls(records)
    else:
        records.sort(key=lambda record: (record.turn[1], order_key(record)))
    calls: list[ToolCall] = []
    rows: list[CallRow] = []
    for record in records:
        _add_call(record, numbers[record.turn], calls, rows)
    first = ordered[0] if ordered else None
    conversation: str | None = None
    partial = read_content = False
    for trace in ordered:  # loops, not generator expressions: this runs once per trace
        if conversation is None and trace.conversation_id:
            conversation = trace.conversation_id
        partial = partial or trace.dropped > 0
        read_content = read_content or trace.read_content
    if len(ordered) == 1 and first is not None:
        trace_id = first.trace_id
    else:
        trace_id = conversation or (first.trace_id if first is not None else "")
    first_root = _root(first, kept[0]) if first is not None else None
    output = _reply(ordered, kept, turns, turn_keys, first_root, members)
    return EvalTrace(
        trace_id=trace_id,
        spans=deferred_spans(rows),  # made when first read: see ``_add_call``
        metadata=_metadata(
            ordered, kept, turns, turn_keys, calls, conversation, first_root, members
        ),
        output=output,
        tool_calls=calls,
        evaluations=[],
        partial=partial,
        content_missing=_content_missing(calls, kept),
        turns=_turns(kept, turns, turn_keys, members, output) if read_content else [],
        agent_spans=_agent_spans(ordered, agent_rows, numbers) if agent_rows else [],
    )


def _agent_spans(
    ordered: list[TraceFacts], rows: list[_AgentRow], numbers: dict[_TurnKey, int]
) -> list[AgentSpan]:
    """``EvalTrace.agent_spans``: each agent span with the agent above it, the tool span it
    runs under below that agent (the outermost, as a call is its outermost span) and its turn,
    in start order (ties by span id), as ``metadata["agent_span_ids"]``."""
    if len(rows) > 1:
        rows = sorted(rows, key=lambda row: (row[0].start_ns, row[0].span_id))
    spans: list[AgentSpan] = []
    for fact, nearest, key, index in rows:
        tool = None
        if nearest is not None:  # the walk up to it, for the tool spans in between
            trace = ordered[index]
            for current in lineage(trace.parents, fact.span_id):
                if current == nearest.span_id:
                    break
                above = trace.facts.get(current)
                if above is not None and above.role == ROLE_TOOL:
                    tool = current
        spans.append(
            AgentSpan(
                span_id=fact.span_id,
                name=fact.agent,
                parent_span_id=nearest.span_id if nearest is not None else None,
                tool_span_id=tool,
                start_ns=fact.start_ns,
                end_ns=fact.end_ns,
                turn=numbers[key],
            )
        )
    return spans


def _content_missing(calls: list[ToolCall], kept: list[Kinds]) -> str | None:
    """Why the calls cannot be judged (``EvalTrace.content_missing``): calls whose arguments
    were not recorded (a tool span with content capture off, and no model request that lists
    them), or, when no call is recorded at all, a model response whose finish reason says it
    asked for tools."""
    uncaptured = 0
    for call in calls:
        if call.args is None:
            uncaptured += 1
    if uncaptured:
        return f"{uncaptured} of {len(calls)} tool calls have no recorded arguments"
    if not calls:
        for trace_kinds in kept:
            for fact in trace_kinds.models:
                if fact.asked_unlisted:
                    return (
                        "a model response asked for tools (its finish reason), "
                        "but no tool call is recorded"
                    )
    return None


def _turn_roots(
    trace: TraceFacts,
    kept: Kinds,
    members: dict[str, list[SpanFact]],
    alias: dict[str, SpanFact],
    placed: dict[str, tuple[SpanFact | None, SpanFact | None]],
) -> list[SpanFact]:
    """The turns of ``trace``: its workflow and agent spans with no workflow or agent span
    above them, in start order. Adds to ``members`` the top-level agents (no agent above)
    of each turn, and to ``placed`` each agent's nearest agent and top-level agent or
    workflow above it. A candidate whose parent never arrived (its ancestry is unknown) and
    that runs within another turn of the trace is part of that turn: it goes to ``alias``."""
    tops = []
    for fact in kept.workflows:
        if placement(trace, fact.span_id)[1] is None:
            tops.append(fact)
    for fact in kept.agents:
        nearest, top, _ = placement(trace, fact.span_id)
        placed[fact.span_id] = (nearest, top)
        if top is None:
            tops.append(fact)
            members.setdefault(fact.span_id, []).append(fact)
        elif nearest is None:  # an agent a workflow runs
            members.setdefault(top.span_id, []).append(fact)
    if len(tops) > 1:
        tops.sort(key=_SPAN_ORDER)
        for top in tops[1:]:
            if not top.parent_id or _rooted(trace, top.parent_id):
                continue
            for other in tops:  # the earliest turn running all the time this one runs
                if other is top or other.span_id in alias or other.start_ns > top.start_ns:
                    continue
                if other.end_ns >= top.end_ns:
                    alias[top.span_id] = other
                    members.setdefault(other.span_id, []).extend(members.pop(top.span_id, ()))
                    break
        if alias:
            tops = [top for top in tops if top.span_id not in alias]
    return tops


def _rooted(trace: TraceFacts, span_id: str) -> bool:
    """Whether the ancestry of ``span_id`` reaches a root span (not a span that never
    arrived, nor a parent cycle)."""
    chain = lineage(trace.parents, span_id)
    return trace.parents.get(chain[-1] if chain else span_id) == ""  # None: never arrived


def _turn_at(start_ns: int, tops: list[SpanFact], trace_turn: _TurnKey) -> _TurnKey:
    """The turn of a call under no turn's span: the turn running when it started (the first
    turn when it started before them all); ``trace_turn`` when the trace has no turn span."""
    if not tops:
        return trace_turn
    top = tops[0]
    for candidate in tops:
        if candidate.start_ns <= start_ns:
            top = candidate
    return (top.start_ns, trace_turn[1], top.span_id)


def _add_call(record: CallRecord, turn: int, calls: list[ToolCall], rows: list[CallRow]) -> None:
    """The ``ToolCall`` of a call, and the row its ``EvalSpan`` is made of if ``spans`` is read.

    Checks read ``tool_calls``; ``EvalTrace.spans`` (one span per call, with an attribute dict)
    hardly any: a row (a tuple) in place of the span and its dict cut the builder's CPU time
    by about a tenth (``benchmarks/bench_eval.py``'s traces: 4 calls in 10 spans)."""
    fact = record.fact
    row: CallRow = (
        record.name,
        record.args,
        record.call_id,
        fact.span_id,
        fact.parent_id or None,  # parent_span_id
        record.start_ns,
        record.end_ns,
        record.status,  # type: ignore[assignment]
        record.error,
        turn,
        record.agent,
        record.source,
        record.result,
        fact.name,  # the span's name
    )
    calls.append(ToolCall(*row[:13]))  # by position (``CallRow`` holds the fields in order)
    rows.append(row)


def _root(trace: TraceFacts, kept: Kinds) -> SpanFact | None:
    """The span without a parent; else the earliest kept span whose parent is missing."""
    if kept.parentless:  # the common case; such a span comes before every orphan
        best = kept.parentless[0]
        for fact in kept.parentless:
            if (fact.start_ns, fact.span_id) < (best.start_ns, best.span_id):
                best = fact
        return best
    earliest: SpanFact | None = None
    for fact in trace.facts.values():  # every kept span has a parent: find the orphans
        if fact.parent_id in trace.parents:
            continue
        if earliest is None or (fact.start_ns, fact.span_id) < (
            earliest.start_ns,
            earliest.span_id,
        ):
            earliest = fact
    return earliest


def _reply(
    ordered: list[TraceFacts],
    kept: list[Kinds],
    turns: dict[_TurnKey, SpanFact | None],
    turn_keys: list[_TurnKey],
    first_root: SpanFact | None,
    members: dict[str, list[SpanFact]],
) -> str | None:
    """The last turn's reply (its own, else its top-level agent's that ended last), else the
    last root's, else the text of the last turn's last model response that asked for no tool
    call. ``turn_keys`` are the keys of ``turns`` sorted; ``first_root`` the root of
    ``ordered[0]``."""
    if not ordered:
        return None
    last_turn = turns[turn_keys[-1]] if turn_keys else None
    if last_turn is not None:
        if last_turn.reply:
            return last_turn.reply
        best_agent: SpanFact | None = None
        for agent in members.get(last_turn.span_id, ()):
            if agent.reply and (best_agent is None or agent.end_ns > best_agent.end_ns):
                best_agent = agent
        if best_agent is not None:
            return best_agent.reply
    root = first_root if len(ordered) == 1 else _root(ordered[-1], kept[-1])
    if root is not None and root.reply and root.role != ROLE_MODEL:
        return root.reply
    # the model responses of the last turn: of its trace, from its start on
    turn_start, turn_trace = (turn_keys[-1][0], turn_keys[-1][1]) if turn_keys else (0, 0)
    final = _final_answer(kept[turn_trace].finals, turn_start, None)
    if final is not None:
        return final
    best: tuple[int, int, str] | None = None
    for fact in kept[turn_trace].models:
        if fact.reply and not fact.model_calls and fact.start_ns >= turn_start:
            rank = (fact.end_ns, fact.start_ns, fact.reply)
            if best is None or rank[:2] > best[:2]:
                best = rank
    return best[2] if best is not None else None


def _final_answer(finals: list[SpanFact], start: int, end: int | None) -> str | None:
    """The reply of the last built-in final-answer call (``dialects.final``) that started in
    ``[start, end)`` (``end`` ``None``: no bound), else ``None``."""
    best: SpanFact | None = None
    for fact in finals:
        if fact.start_ns >= start and (end is None or fact.start_ns < end):
            if best is None or (fact.end_ns, fact.start_ns) > (best.end_ns, best.start_ns):
                best = fact
    return best.final if best is not None else None


def _turns(
    kept: list[Kinds],
    turns: dict[_TurnKey, SpanFact | None],
    turn_keys: list[_TurnKey],
    members: dict[str, list[SpanFact]],
    output: str | None,
) -> list[Turn]:
    """Each turn's input and reply, in turn order. The input: what its workflow or agent span
    (else its top-level agent that started first; in a trace with neither, its root span) was
    given, else the user's text in the first model request of the turn. The reply: the last
    turn's is ``output``; another turn's is its own span's or its top-level agent's that ended
    last, else the text of its last model response that asked for no tool call. The model
    spans of a turn are those of its trace from its start to the start of the next turn of
    that trace."""
    result: list[Turn] = []
    for number, key in enumerate(turn_keys, start=1):
        top = turns[key]
        start, index = key[0], key[1]
        following = [k[0] for k in turn_keys[number:] if k[1] == index]
        end = following[0] if following else None
        models = [
            fact
            for fact in kept[index].models
            if fact.start_ns >= start and (end is None or fact.start_ns < end)
        ]
        models.sort(key=_SPAN_ORDER)
        agents = sorted(members.get(top.span_id, ()) if top is not None else (), key=_SPAN_ORDER)
        said = top.input if top is not None else None
        if top is None:  # a trace with no agent or workflow span: what its root was given
            for root in sorted(kept[index].parentless, key=_SPAN_ORDER):
                said = said or root.input
        for agent in agents:
            said = said or agent.input
        for model in models:
            said = said or model.input
        if number == len(turn_keys):
            reply = output
        else:
            reply = top.reply if top is not None else None
            for agent in sorted(agents, key=_END_ORDER, reverse=True):
                reply = reply or agent.reply
            if reply is None:
                reply = _final_answer(kept[index].finals, start, end)
            for model in reversed(models):
                if reply is None and model.reply and not model.model_calls:
                    reply = model.reply
        result.append(
            Turn(
                number=number,
                input=said,
                reply=reply,
                span_id=top.span_id if top is not None else None,
            )
        )
    return result


def _metadata(
    ordered: list[TraceFacts],
    kept: list[Kinds],
    turns: dict[_TurnKey, SpanFact | None],
    turn_keys: list[_TurnKey],
    calls: list[ToolCall],
    conversation: str | None,
    root: SpanFact | None,
    members: dict[str, list[SpanFact]],
) -> dict[str, Any]:
    """``EvalTrace.metadata``; ``turn_keys`` are the keys of ``turns`` sorted, ``root`` the
    root of ``ordered[0]``."""
    meta: dict[str, Any] = {"turn_count": (len(turns) or 1) if ordered else 0}
    first = ordered[0] if ordered else None
    attributes: dict[str, Any] = {}
    if first is not None:
        attributes = {
            key: value
            for key, value in first.resource.items()
            if isinstance(value, (str, bool, int, float))
        }
        service = first.resource.get("service.name")
        if isinstance(service, str):
            meta["service.name"] = service
        if root is not None:
            meta["root_span_name"] = root.name
            meta["root_span_id"] = root.span_id
            if root.labels:
                attributes.update(root.labels)
    if len(kept) == 1:
        agents = list(kept[0].agents)
    else:
        agents = [fact for trace_kinds in kept for fact in trace_kinds.agents]
    if len(agents) > 1:
        agents.sort(key=_SPAN_ORDER)
    for agent in agents:
        if agent.labels:
            attributes.update(agent.labels)
    first_top = None
    for turn_key in turn_keys:
        first_top = turns[turn_key]
        if first_top is not None:
            break
    if first_top is not None and first_top.role != ROLE_AGENT:  # a workflow: its first agent
        first_top = min(members.get(first_top.span_id, ()), key=_SPAN_ORDER, default=None)
    agent_name = first_top.agent if first_top is not None and first_top.agent else None
    if agent_name is None:
        agent_name = next((c.agent for c in calls if c.agent), None)
    if agent_name is not None:
        meta["agent_name"] = agent_name
    trace_ids: list[str] = []
    case_id: str | None = None
    start = end = 0  # the earliest start and the latest end that are set
    errors: dict[str, int] = {}
    span_count = 0
    read_usage = False
    for trace in ordered:  # one loop for every per-trace fact
        trace_ids.append(trace.trace_id)
        if case_id is None and trace.case_id:
            case_id = trace.case_id
        if trace.start_ns and (not start or trace.start_ns < start):
            start = trace.start_ns
        if trace.end_ns > end:
            end = trace.end_ns
        for error_start, span_id in trace.error_spans:
            errors[span_id] = error_start
        span_count += len(trace.parents)  # (``TraceFacts.span_count``)
        read_usage = read_usage or trace.read_usage
    meta["trace_ids"] = trace_ids
    if conversation is not None:
        meta["conversation_id"] = conversation
    if case_id is not None:
        meta["case_id"] = case_id
    meta["attributes"] = attributes
    if start and end:
        meta["total_latency_ms"] = max(0, end - start) / 1e6
    for call in calls:  # failures only the instrumentation's attributes show (ADK retries)
        if call.status == "error" and call.span_id and call.span_id not in errors:
            errors[call.span_id] = call.start_ns
    if len(errors) > 1:
        meta["error_span_ids"] = sorted(errors, key=lambda sid: (errors[sid], sid))
    else:
        meta["error_span_ids"] = list(errors)
    meta["agent_span_ids"] = list(map(_SPAN_ID, agents))
    meta["span_count"] = span_count
    if read_usage:
        meta["turn_latency_ms"] = _turn_latencies(ordered, turns, turn_keys)
        _note_model_usage(ordered, kept, meta)
    return meta


def _turn_latencies(
    ordered: list[TraceFacts], turns: dict[_TurnKey, SpanFact | None], turn_keys: list[_TurnKey]
) -> list[float]:
    """Each turn's wall time in ms, in turn order: its top span's duration, else (a trace that
    is one turn) its trace's, from the first start to the last end."""
    latencies: list[float] = []
    for key in turn_keys:
        top = turns[key]
        if top is not None:
            start, end = top.start_ns, top.end_ns
        else:
            trace = ordered[key[1]]
            start, end = trace.start_ns, trace.end_ns
        latencies.append(max(0, end - start) / 1e6 if start and end else 0.0)
    return latencies


def _note_model_usage(ordered: list[TraceFacts], kept: list[Kinds], meta: dict[str, Any]) -> None:
    """``meta["llm_calls"]``: logical model calls (a model span inside another model span, a
    provider's span under a framework's wrapper, is part of that call); ``meta["token_usage"]``
    (``input_tokens``, ``output_tokens``, ``by_model``) when some call records its tokens. A
    call's tokens are those of its outermost span that records any (the wrapper repeats the
    provider's count). ``llm_calls`` is 0 for a trace without model spans; ``token_usage`` is
    set only when some call records its tokens."""
    calls = 0
    #: outermost model span id -> (depth below it, start, usage) of the span counted for it
    counted: dict[str, tuple[int, int, Any]] = {}
    for trace, trace_kinds in zip(ordered, kept, strict=True):
        if not trace_kinds.models:
            continue
        maybe_wrapped = trace_kinds.maybe_wrapped
        for fact in trace_kinds.models:
            if fact.span_id in maybe_wrapped:
                wrapping = enclosing_models(trace, fact.span_id)
                depth = len(wrapping)
                outer = wrapping[-1] if wrapping else fact.span_id
            else:  # inside no model span (``Kinds.maybe_wrapped``)
                depth, outer = 0, fact.span_id
            if depth == 0:
                calls += 1
            usage = fact.usage
            if usage is not None:
                best = counted.get(outer)
                if best is None or (depth, fact.start_ns) < best[:2]:
                    counted[outer] = (depth, fact.start_ns, usage)
    meta["llm_calls"] = calls
    if not counted:
        return
    total_in = total_out = 0
    by_model: dict[str, dict[str, int]] = {}
    for _, _, (tokens_in, tokens_out, model) in counted.values():
        total_in += tokens_in
        total_out += tokens_out
        entry = by_model.setdefault(model or "", {"input_tokens": 0, "output_tokens": 0})
        entry["input_tokens"] += tokens_in
        entry["output_tokens"] += tokens_out
    meta["token_usage"] = {
        "input_tokens": total_in,
        "output_tokens": total_out,
        "by_model": dict(sorted(by_model.items())),
    }
