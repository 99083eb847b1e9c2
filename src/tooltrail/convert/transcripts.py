"""Transcripts as input: chat logs of agent runs (lists of messages), read into the same spans
the converter reads from OpenTelemetry.

Many users have transcripts, not traces: LangChain's agentevals, Ragas and agent benchmarks
keep runs as lists of OpenAI-style messages. A file of them is recognised by its content
(``is_transcript_file``), as the Jaeger and Tempo downloads are, and each run becomes the
spans a GenAI-instrumented agent would have recorded (``run_spans``): one ``invoke_agent``
span per turn (a turn starts at each user message with text), a ``chat`` span per assistant
message (its request, the history before it, and its response, as GenAI messages), and an
``execute_tool`` span per call, holding its arguments and, once a later message returns it,
its result (an error result marks the span failed). The converter then builds the
``EvalTrace`` from them as from any recording, so a check gives the same verdict on a run's
transcript and on its traces.

Accepted, in a JSON document or JSON lines (one run per line):
- a run: a list of messages, or an object with the list under ``messages`` (also
  ``trajectory``, ``conversation``, Ragas' ``user_input``) and optionally ``id`` (also
  ``run_id``, ``trace_id``), ``case_id`` and ``metadata`` (scalars; ``case_id`` or
  ``tooltrail.case_id`` there names the case);
- a document: one run, or a list of runs, or an object with the runs under ``runs``.
Messages are any shape ``dialects.messages`` reads (OpenAI chat and Responses, Anthropic,
Gemini, Bedrock Converse, GenAI parts, LangChain). Trace ids come from the run's id (kept
when it is a trace id's hex digits, else hashed), else from the file's name and the run's place;
times are synthetic (a millisecond per message, from a fixed start), so latencies mean
nothing. A record that holds no run is a diagnostic with its file and line.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from tooltrail.dialects import messages
from tooltrail.dialects.messages import ASSISTANT, TOOL, USER, Message, ToolResult
from tooltrail.otlp import DEFAULT_LIMITS, Diagnostic, Limits, Span
from tooltrail.otlp.decode.ids import SPAN_ID_HEX, TRACE_ID_HEX

#: Keys a run object holds its messages under, in the order tried.
RUN_MESSAGE_KEYS = ("messages", "trajectory", "conversation", "user_input")
_RUN_ID_KEYS = ("id", "run_id", "trace_id")
#: How much of a file is read to tell a transcript from an OTLP dump.
_SNIFF_BYTES = 1 << 16
#: Synthetic times: a fixed start and one millisecond per message.
_START_NS = 1_700_000_000_000_000_000
_STEP_NS = 1_000_000
_STATUS_ERROR = 2
_SCOPE = "tooltrail.transcript"
_CASE_KEY = "tooltrail.case_id"
_OTLP_KEYS = (
    b'"resourceSpans"',
    b'"resource_spans"',
    b'"resourceLogs"',
    b'"resource_logs"',
    b'"batches"',
    b'"traceID"',
    b'"spans"',
)


@dataclass(slots=True)
class Run:
    """One transcript run: its messages and what names it."""

    messages: list[Message]
    run_id: str | None = None
    case_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


# --- recognising and reading files -----------------------------------------------------------


def is_transcript_file(path: str, limits: Limits = DEFAULT_LIMITS) -> bool:
    """Whether ``path`` holds transcripts rather than telemetry: its first record (a JSON
    document or line) is a run or a list of runs. Cheap for OTLP dumps: protobuf is told by
    its first byte, OTLP/JSON by the keys near its start."""
    if path == "-":
        return False
    try:
        with open(path, "rb") as stream:
            head = stream.read(_SNIFF_BYTES)
            if head.lstrip()[:1] not in (b"[", b"{"):
                return False
            if any(key in head[:4096] for key in _OTLP_KEYS):
                return False
            size = os.fstat(stream.fileno()).st_size
            first = head.lstrip()
            if size <= min(limits.max_record_bytes, 1 << 26):
                stream.seek(0)
                try:
                    return _runs_of(orjson.loads(stream.read())) is not None
                except orjson.JSONDecodeError:
                    pass
            line = first.split(b"\n", 1)[0]
            try:
                return _runs_of(orjson.loads(line)) is not None
            except orjson.JSONDecodeError:
                return False
    except OSError:
        return False


def read_runs(
    path: str,
    limits: Limits = DEFAULT_LIMITS,
    diagnostics: list[Diagnostic] | None = None,
) -> Iterator[tuple[int, Run]]:
    """``(index, run)`` of each run of a transcript file, in file order: the document's runs,
    or one per JSON line. A line (or document) over ``limits.max_record_bytes``, that is not
    JSON, or that holds no run is a diagnostic; reading goes on."""

    def problem(line: int | None, message: str) -> None:
        if diagnostics is not None:
            diagnostics.append(Diagnostic(path, line, None, message))

    try:
        size = os.path.getsize(path)
        stream = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        problem(None, f"cannot read this file: {exc.strerror or exc}")
        return
    with stream:
        if size <= limits.max_record_bytes:
            data = stream.read()
            try:
                runs = _runs_of(orjson.loads(data))
            except orjson.JSONDecodeError:
                runs = None  # JSON lines, read below
            else:
                if runs is None:
                    problem(1, "not a transcript: no list of messages")
                    return
                yield from enumerate(runs)
                return
            stream.seek(0)
        index = 0
        for number, line in enumerate(_lines(stream, limits, problem), start=1):
            if line is None or not line.strip():
                continue
            try:
                doc = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                problem(number, f"not JSON ({exc}); skipped")
                continue
            found = _runs_of(doc)
            if not found:
                problem(number, "holds no transcript run (a list of messages); skipped")
                continue
            for run in found:
                yield index, run
                index += 1


def _lines(stream: Any, limits: Limits, problem: Any) -> Iterator[bytes | None]:
    limit = limits.max_record_bytes
    number = 0
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        number += 1
        if len(line) > limit and not line.endswith(b"\n"):
            while True:  # the rest of the long line
                rest = stream.readline(limit)
                if not rest or rest.endswith(b"\n"):
                    break
            problem(number, f"line longer than the {limit} byte record limit; skipped")
            yield None
            continue
        yield line


def _runs_of(doc: Any) -> list[Run] | None:
    """The runs a parsed JSON document holds, or ``None`` when it is no transcript."""
    if isinstance(doc, dict):
        held = doc.get("runs")
        if isinstance(held, list):
            runs = [_run(item) for item in held]
            return [r for r in runs if r is not None] if all(runs) and runs else None
        run = _run(doc)
        return [run] if run is not None else None
    if not isinstance(doc, list) or not doc:
        return None
    if all(isinstance(item, dict) and _is_run_object(item) for item in doc) or all(
        isinstance(item, list) for item in doc
    ):
        runs = [_run(item) for item in doc]
        return [r for r in runs if r is not None] if all(runs) else None
    run = _run(doc)
    return [run] if run is not None else None


def _is_run_object(item: dict[str, Any]) -> bool:
    return any(isinstance(item.get(key), list) for key in RUN_MESSAGE_KEYS)


def _run(item: Any) -> Run | None:
    if isinstance(item, list):
        listed = _messages(item)
        return Run(listed) if listed else None
    if not isinstance(item, dict) or not _is_run_object(item):
        return None
    held = next(item[key] for key in RUN_MESSAGE_KEYS if isinstance(item.get(key), list))
    listed = _messages(held)
    if not listed:
        return None
    metadata = item.get("metadata")
    metadata = (
        {k: v for k, v in metadata.items() if _scalar(v)} if isinstance(metadata, dict) else {}
    )
    run_id = next((_ident(item[k]) for k in _RUN_ID_KEYS if _ident(item.get(k))), None)
    case = (
        _ident(item.get("case_id"))
        or _ident(metadata.pop("case_id", None))
        or _ident(metadata.pop(_CASE_KEY, None))
    )
    return Run(listed, run_id=run_id, case_id=case, metadata=metadata)


def _messages(items: list[Any]) -> list[Message] | None:
    """The messages of a run's list: every item must be one message of a shape
    ``dialects.messages`` reads, so that no other list passes for a transcript."""
    found: list[Message] = []
    for item in items:
        one = messages.read([item]) if isinstance(item, (dict, str)) else []
        if len(one) != 1:
            return None
        found.extend(one)
    return found or None


def _ident(value: Any) -> str | None:
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, bool, int, float))


# --- runs into spans -------------------------------------------------------------------------


def run_spans(run: Run, *, source: str, index: int) -> list[Span]:
    """The spans a GenAI-instrumented agent would have recorded for ``run`` (module
    docstring). ``source`` (the file) and ``index`` name the run when it has no id."""
    trace_id = _trace_id(run.run_id, f"{os.path.basename(source)}:{index}")
    resource = {"service.name": str(run.metadata.get("service.name", "transcript"))}
    origin = f"{source}:{index + 1}"
    builder = _Spans(trace_id, resource, origin)
    history: list[dict[str, Any]] = []
    pending: list[_Pending] = []  # calls asked for and not answered yet
    turn: _Turn | None = None
    for message in run.messages:
        if message.role == USER and message.text is not None:
            if turn is not None:
                builder.close_turn(turn)
            turn = builder.open_turn(message, run, first=not builder.spans)
        elif turn is None and (message.role == ASSISTANT or message.results):
            turn = builder.open_turn(None, run, first=True)  # a run that starts unprompted
        if message.role == ASSISTANT and turn is not None:
            builder.chat(turn, history, message, pending)
        for result in message.results:
            builder.answer(pending, result)
        history.append(_genai(message))
    if turn is not None:
        builder.close_turn(turn)
    builder.end_tools(pending)
    return builder.spans


@dataclass(slots=True)
class _Turn:
    span: Span
    reply: str | None = None


@dataclass(slots=True)
class _Pending:
    span: Span
    call_id: str | None
    name: str


class _Spans:
    """The spans of one run, with ids and times handed out in order."""

    def __init__(self, trace_id: str, resource: dict[str, Any], origin: str) -> None:
        self.trace_id = trace_id
        self.resource = resource
        self.origin = origin
        self.spans: list[Span] = []
        self.clock = _START_NS

    def _span(self, name: str, parent: str, attributes: dict[str, Any]) -> Span:
        self.clock += _STEP_NS
        seed = f"{self.trace_id}/{len(self.spans)}".encode()
        span_id = hashlib.sha256(seed).hexdigest()[:SPAN_ID_HEX]
        span = Span(
            trace_id=self.trace_id,
            span_id=span_id,
            parent_span_id=parent,
            name=name,
            kind=1,
            start_ns=self.clock,
            end_ns=self.clock + _STEP_NS // 2,
            attributes=attributes,
            resource=self.resource,
            scope_name=_SCOPE,
            origin=self.origin,
        )
        self.spans.append(span)
        return span

    def open_turn(self, said: Message | None, run: Run, first: bool) -> _Turn:
        attributes: dict[str, Any] = {"gen_ai.operation.name": "invoke_agent"}
        agent = run.metadata.get("agent_name")
        if isinstance(agent, str) and agent:
            attributes["gen_ai.agent.name"] = agent
        if said is not None:
            attributes["gen_ai.input.messages"] = _json([_genai(said)])
        if first:
            attributes.update(run.metadata)
            if run.case_id is not None:
                attributes[_CASE_KEY] = run.case_id
            if run.run_id is not None:
                attributes["gen_ai.conversation.id"] = run.run_id
        name = f"invoke_agent {agent}" if isinstance(agent, str) and agent else "invoke_agent"
        return _Turn(self._span(name, "", attributes))

    def close_turn(self, turn: _Turn) -> None:
        span = turn.span
        if turn.reply is not None:
            reply = {"role": ASSISTANT, "parts": [{"type": "text", "content": turn.reply}]}
            span.attributes["gen_ai.output.messages"] = _json([reply])  # type: ignore[index]
        span.end_ns = self.clock + _STEP_NS // 2

    def chat(
        self,
        turn: _Turn,
        history: list[dict[str, Any]],
        message: Message,
        pending: list[_Pending],
    ) -> None:
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": _json(history),
            "gen_ai.output.messages": _json([_genai(message)]),
            "gen_ai.response.finish_reasons": ["tool_calls" if message.calls else "stop"],
        }
        self._span("chat", turn.span.span_id, attributes)
        for call in message.calls:
            tool: dict[str, Any] = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": call.name,
            }
            if call.call_id is not None:
                tool["gen_ai.tool.call.id"] = call.call_id
            if call.args is not None:
                tool["gen_ai.tool.call.arguments"] = _json(call.args)
            span = self._span(f"execute_tool {call.name}", turn.span.span_id, tool)
            pending.append(_Pending(span, call.call_id, call.name))
        if message.text is not None and not message.calls:  # (text beside calls: intermediate)
            turn.reply = message.text

    def answer(self, pending: list[_Pending], result: ToolResult) -> None:
        """Put ``result`` on the call it answers: by call id, else the earliest unanswered
        call of its tool, else the earliest unanswered call."""
        match = next((p for p in pending if result.call_id and p.call_id == result.call_id), None)
        if match is None and result.call_id is None:
            match = next((p for p in pending if result.name and p.name == result.name), None)
            if match is None and result.name is None and pending:
                match = pending[0]
        if match is None:
            return
        pending.remove(match)
        attributes = match.span.attributes
        attributes["gen_ai.tool.call.result"] = _json(result.value)  # type: ignore[index]
        match.span.end_ns = self.clock
        if result.error:
            match.span.status_code = _STATUS_ERROR
            match.span.status_message = (
                result.value if isinstance(result.value, str) else _json(result.value)
            )

    def end_tools(self, pending: list[_Pending]) -> None:
        for waiting in pending:
            waiting.span.end_ns = waiting.span.start_ns + _STEP_NS // 2


def _genai(message: Message) -> dict[str, Any]:
    """A message in the GenAI form (``role``, ``parts``) the converter reads everywhere."""
    parts: list[dict[str, Any]] = []
    if message.text is not None:
        parts.append({"type": "text", "content": message.text})
    for call in message.calls:
        part: dict[str, Any] = {"type": "tool_call", "name": call.name}
        if call.call_id is not None:
            part["id"] = call.call_id
        if call.args is not None:
            part["arguments"] = call.args
        parts.append(part)
    for result in message.results:
        answer: dict[str, Any] = {"type": "tool_call_response", "response": result.value}
        if result.call_id is not None:
            answer["id"] = result.call_id
        parts.append(answer)
    role = message.role if message.role in (USER, ASSISTANT, TOOL) else "system"
    return {"role": role, "parts": parts}


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


def _trace_id(run_id: str | None, fallback: str) -> str:
    if run_id is not None and len(run_id) == TRACE_ID_HEX:
        try:
            int(run_id, 16)
        except ValueError:
            pass
        else:
            return run_id.lower()
    return hashlib.sha256((run_id or fallback).encode()).hexdigest()[:TRACE_ID_HEX]


def transcript_spans(
    path: str,
    limits: Limits = DEFAULT_LIMITS,
    diagnostics: list[Diagnostic] | None = None,
    *,
    first: int = 0,
    last: int | None = None,
) -> Iterator[tuple[int, list[Span]]]:
    """``(index, spans)`` of each run of the transcript file ``path`` (runs ``first`` up to,
    not including, ``last``: a batch chunk's part)."""
    for index, run in read_runs(path, limits, diagnostics):
        if index < first or (last is not None and index >= last):
            continue
        yield index, run_spans(run, source=path, index=index)
