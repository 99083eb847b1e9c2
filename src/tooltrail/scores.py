"""Scores as OpenTelemetry ``gen_ai.evaluation.result`` events, and evaluation events read back.

Pure: no OpenTelemetry import, no I/O (``explanations_from_env`` reads one variable).
``evaluation_events`` decides, for each score of a case, which span it judges (the calls that
caused the verdict, else the trace's agent or root span) and which attributes the event
carries. The live emitter (``tooltrail.pipeline.evaluation_events``) and the offline writers
(``tooltrail.annotate``) only deliver what this module builds, so both paths put the same
verdict on the same span.

Explanations can quote argument values (customer data), so they are left out unless asked
for (``TOOLTRAIL_EVALUATION_EXPLANATIONS=true``, or explicitly). Those that are put on events
were redacted when evaluation made them (``tooltrail.redact.redacted_explanations``): secret
keys' values are hidden, the rest of what a call was given is not.
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tooltrail.model import EvalTrace
from tooltrail.otlp.decode.ids import SPAN_ID_HEX, TRACE_ID_HEX

_log = logging.getLogger(__name__)

#: Event name of one evaluation result (OpenTelemetry GenAI semantic conventions >= 1.38).
EVENT_NAME = "gen_ai.evaluation.result"
#: ``gen_ai.evaluation.name`` of the case verdict, emitted on the trace's root span.
CASE_SCORE_NAME = "tooltrail.case"

EVALUATION_NAME = "gen_ai.evaluation.name"
SCORE_VALUE = "gen_ai.evaluation.score.value"
SCORE_LABEL = "gen_ai.evaluation.score.label"
EXPLANATION = "gen_ai.evaluation.explanation"
ERROR_TYPE = "error.type"
CASE_ID = "tooltrail.case_id"
SUITE = "tooltrail.suite"
METRIC = "tooltrail.metric"
REQUIRED = "tooltrail.required"
FAILED_SCORES = "tooltrail.failed_scores"
#: On the events of a revised verdict (late data judged with its trace): which revision they
#: are (1, 2, ...) and which earlier revision's events of the same trace they supersede.
#: Events without them are a trace's first verdict (revision 0).
REVISION = "tooltrail.revision"
SUPERSEDES_REVISION = "tooltrail.supersedes_revision"

LABEL_PASS = "pass"
LABEL_FAIL = "fail"

#: OpenTelemetry log severities used for events: INFO for a pass, WARN for a fail.
SEVERITY_INFO = (9, "INFO")
SEVERITY_WARN = (13, "WARN")

#: Set to ``true`` to include ``gen_ai.evaluation.explanation`` (it may quote argument values).
#: Read by the live emitter and by ``tooltrail eval --annotate``.
ENV_EXPLANATIONS = "TOOLTRAIL_EVALUATION_EXPLANATIONS"

_TRACE_ID = re.compile(f"[0-9a-f]{{{TRACE_ID_HEX}}}")
_SPAN_ID = re.compile(f"[0-9a-f]{{{SPAN_ID_HEX}}}")


class ScoreLike(Protocol):
    """What an event needs of ``tooltrail.checks.Score`` (also ``span_ids`` and ``error`` when
    present). ``failed`` is ``Score.failed``, the one rule of a score that fails its case
    (``checks/score.py``): this layer sits below ``checks`` and asks the score, never spells
    the rule again."""

    @property
    def name(self) -> str: ...
    @property
    def metric(self) -> str: ...
    @property
    def value(self) -> float: ...
    @property
    def passed(self) -> bool: ...
    @property
    def explanation(self) -> str: ...
    @property
    def failed(self) -> bool: ...


class CaseResultLike(Protocol):
    """What an event needs of ``tooltrail.results.CaseResult``."""

    @property
    def case_id(self) -> str: ...
    @property
    def passed(self) -> bool: ...
    @property
    def scores(self) -> Sequence[ScoreLike]: ...


@dataclass(slots=True)
class EvaluationEvent:
    """One ``gen_ai.evaluation.result`` log record, before it is sent or written.

    ``trace_id``/``span_id`` are lower-case hex of the judged span, or ``""`` when the trace
    carries no OpenTelemetry ids (a hand-built EvalTrace): such an event has no span context.
    """

    trace_id: str
    span_id: str
    attributes: dict[str, Any]
    time_ns: int = 0
    severity_number: int = SEVERITY_INFO[0]
    severity_text: str = SEVERITY_INFO[1]
    name: str = EVENT_NAME

    @property
    def evaluation_name(self) -> str:
        return str(self.attributes.get(EVALUATION_NAME, ""))


class OriginsLike(Protocol):
    """The provenance of results (``tooltrail.origins.Origins``: the check's version, a hash of
    its configuration, the judge model and a hash of its prompt template, whether the trace was
    sampled): what every event of a trace shares, asked once per trace, then per score and per
    case verdict. A protocol: this layer knows no suite."""

    def trace_attributes(self, trace: EvalTrace) -> dict[str, Any]: ...

    def score_attributes(
        self, trace: EvalTrace, case_id: str, score: ScoreLike, common: dict[str, Any]
    ) -> dict[str, Any]: ...

    def case_attributes(
        self, trace: EvalTrace, result: CaseResultLike, common: dict[str, Any]
    ) -> dict[str, Any]: ...


@dataclass(slots=True)
class EventOptions:
    """How events are built. ``explanations`` is opt-in: explanations may echo argument values."""

    explanations: bool = False
    suite: str | None = None
    #: Emit the ``tooltrail.case`` verdict event of each case.
    case_verdicts: bool = True
    #: The provenance attributes put on every event (``tooltrail.origins.Origins``); ``None``:
    #: none.
    origins: OriginsLike | None = None


@dataclass(slots=True)
class _Targets:
    """Where the spans of one trace live: the trace id of each tool-call span, and anchors."""

    default_trace_id: str
    root: tuple[str, str]
    agent: tuple[str, str]
    #: Conversations only: the trace (turn) each tool-call span belongs to.
    trace_of_span: dict[str, str] = field(default_factory=dict)
    conversation: bool = False

    def locate(self, span_id: str) -> tuple[str, str]:
        """The (trace id, span id) of a blamed span; the agent anchor when it cannot be placed."""
        sid = _hex_id(span_id, _SPAN_ID)
        if not sid:
            return self.agent
        if self.conversation:
            trace_id = self.trace_of_span.get(sid)
            return (trace_id, sid) if trace_id else self.agent
        return (self.default_trace_id, sid) if self.default_trace_id else self.agent


def explanations_from_env(default: bool = False) -> bool:
    """``TOOLTRAIL_EVALUATION_EXPLANATIONS`` as a bool; a bad value warns and keeps the default."""
    raw = os.environ.get(ENV_EXPLANATIONS)
    if raw is None or not raw.strip():
        return default
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    _log.warning("Ignoring %s=%r: expected true or false", ENV_EXPLANATIONS, raw)
    return default


def evaluation_events(
    trace: EvalTrace,
    results: Iterable[CaseResultLike],
    *,
    options: EventOptions | None = None,
    time_ns: int = 0,
) -> list[EvaluationEvent]:
    """The evaluation events of every case evaluated on ``trace``, in score order.

    A score that names the spans that caused its verdict (``Score.span_ids``) yields one event
    per such span (each duplicate call, each forbidden call, ...); any other score yields one
    event on the trace's agent span (else its root span). Each case ends with its
    ``tooltrail.case`` verdict on the root span. Skipped scores have no verdict and no event.
    """
    opts = options or EventOptions()
    targets = _targets(trace)
    origins = opts.origins
    common = origins.trace_attributes(trace) if origins is not None else {}
    events: list[EvaluationEvent] = []
    for result in results:
        case_id = str(result.case_id)
        for score in result.scores:
            if getattr(score, "skipped", False):
                continue
            attributes = _score_attributes(score, case_id, opts)
            if origins is not None:
                attributes.update(origins.score_attributes(trace, case_id, score, common))
            severity = SEVERITY_INFO if score.passed else SEVERITY_WARN
            span_ids = tuple(getattr(score, "span_ids", ()) or ())
            places = [targets.locate(s) for s in span_ids] if span_ids else [targets.agent]
            for trace_id, span_id in dict.fromkeys(places):
                events.append(
                    EvaluationEvent(trace_id, span_id, dict(attributes), time_ns, *severity)
                )
        if opts.case_verdicts:
            trace_id, span_id = targets.root
            severity = SEVERITY_INFO if result.passed else SEVERITY_WARN
            verdict = case_attributes(result, opts)
            if origins is not None:
                verdict.update(origins.case_attributes(trace, result, common))
            events.append(EvaluationEvent(trace_id, span_id, verdict, time_ns, *severity))
    return events


def case_attributes(result: CaseResultLike, options: EventOptions | None = None) -> dict[str, Any]:
    """Attributes of a case verdict: pass/fail, value 1.0/0.0 and the names of failed scores."""
    opts = options or EventOptions()
    failed = failed_score_names(result)
    attributes: dict[str, Any] = {
        EVALUATION_NAME: CASE_SCORE_NAME,
        SCORE_VALUE: 1.0 if result.passed else 0.0,
        SCORE_LABEL: LABEL_PASS if result.passed else LABEL_FAIL,
        CASE_ID: str(result.case_id),
        METRIC: "case",
        FAILED_SCORES: failed,
    }
    if opts.suite:
        attributes[SUITE] = opts.suite
    if opts.explanations:
        attributes[EXPLANATION] = (
            "All scores passed." if not failed else f"Failed scores: {', '.join(failed)}."
        )
    return attributes


def failed_score_names(result: CaseResultLike) -> list[str]:
    """Names of the scores that failed the case (``Score.failed``)."""
    return [s.name for s in result.scores if s.failed]


def _score_attributes(score: ScoreLike, case_id: str, opts: EventOptions) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        EVALUATION_NAME: score.name,
        SCORE_VALUE: _as_double(score.value),
        SCORE_LABEL: LABEL_PASS if score.passed else LABEL_FAIL,
        CASE_ID: case_id,
        METRIC: score.metric,
    }
    if opts.suite:
        attributes[SUITE] = opts.suite
    if not getattr(score, "required", True):
        attributes[REQUIRED] = False
    error = getattr(score, "error", None)
    if error:
        attributes[ERROR_TYPE] = str(error)
    if opts.explanations and score.explanation:
        attributes[EXPLANATION] = score.explanation
    return attributes


def _as_double(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _hex_id(value: Any, pattern: re.Pattern[str]) -> str:
    text = value.lower() if isinstance(value, str) else ""
    return text if pattern.fullmatch(text) and text.strip("0") else ""


def _targets(trace: EvalTrace) -> _Targets:
    """Anchor spans of a trace, from the converter's metadata (``root_span_id``,
    ``agent_span_ids``, ``trace_ids``) and the tool calls' span ids.

    A conversation (several ``trace_ids``) has one trace per turn when ``turn_count`` equals
    the number of traces: each call is then placed in the trace of its turn. Otherwise a
    call's trace is unknown and its events fall back to the first trace's agent/root span.
    """
    meta = trace.metadata
    trace_ids = [t for t in (_hex_id(t, _TRACE_ID) for t in meta.get("trace_ids") or ()) if t]
    own = _hex_id(trace.trace_id, _TRACE_ID)
    default = trace_ids[0] if trace_ids else own

    trace_of_span: dict[str, str] = {}
    conversation = len(trace_ids) > 1
    if conversation and trace.turn_count == len(trace_ids):
        for call in trace.tool_calls:
            sid = _hex_id(call.span_id, _SPAN_ID)
            if sid and 1 <= call.turn <= len(trace_ids):
                trace_of_span[sid] = trace_ids[call.turn - 1]

    if not default:
        return _Targets("", ("", ""), ("", ""), {})
    root = (default, _hex_id(meta.get("root_span_id"), _SPAN_ID))
    agent = root
    for span_id in meta.get("agent_span_ids") or ():
        sid = _hex_id(span_id, _SPAN_ID)
        if sid:
            agent = (default, sid)
            break
    return _Targets(default, root, agent, trace_of_span, conversation)


# --- reading evaluation events back --------------------------------------------------------


def evaluation_from_record(record: Any) -> dict[str, Any] | None:
    """A log record (anything with ``trace_id``, ``span_id``, ``time_ns``, ``event_name``,
    ``attributes``) as an evaluation dict, or ``None`` when it is not an evaluation result.

    Producers that predate ``event_name`` put it in an ``event.name`` attribute; both count.
    """
    attributes = getattr(record, "attributes", None) or {}
    event_name = getattr(record, "event_name", "") or attributes.get("event.name", "")
    if event_name != EVENT_NAME or EVALUATION_NAME not in attributes:
        return None
    value = attributes.get(SCORE_VALUE)
    return {
        "name": str(attributes[EVALUATION_NAME]),
        "value": _as_double(value) if value is not None else None,
        "label": attributes.get(SCORE_LABEL),
        "explanation": attributes.get(EXPLANATION),
        "case_id": attributes.get(CASE_ID),
        "trace_id": _hex_id(getattr(record, "trace_id", ""), _TRACE_ID),
        "span_id": _hex_id(getattr(record, "span_id", ""), _SPAN_ID),
        "time_ns": int(getattr(record, "time_ns", 0) or 0),
        "attributes": dict(attributes),
    }


def attach_evaluations(traces: Iterable[EvalTrace], log_records: Iterable[Any]) -> int:
    """Append the evaluation events among ``log_records`` to ``EvalTrace.evaluations``.

    An event belongs to the trace whose id (or, for a conversation, one of whose
    ``metadata["trace_ids"]``) equals the event's trace id. Events are kept in record order;
    events of traces not given are ignored. Returns how many events were attached.
    """
    by_trace_id: dict[str, list[EvalTrace]] = {}
    for trace in traces:
        ids = {_hex_id(trace.trace_id, _TRACE_ID)}
        ids.update(_hex_id(t, _TRACE_ID) for t in trace.metadata.get("trace_ids") or ())
        for trace_id in ids - {""}:
            by_trace_id.setdefault(trace_id, []).append(trace)
    attached = 0
    for record in log_records:
        evaluation = evaluation_from_record(record)
        if evaluation is None:
            continue
        for trace in by_trace_id.get(evaluation["trace_id"], ()):
            trace.evaluations.append(evaluation)
            attached += 1
    return attached
