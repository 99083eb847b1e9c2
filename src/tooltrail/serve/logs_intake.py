"""OTLP logs requests: the content of traces (model replies, the tool calls a model asked for).

GenAI instrumentations (OpenAI v2, google-genai, the newer semantic conventions) write message
content as log records, not span attributes; without them a trace has model spans but no calls
and no reply. ``decode_logs`` reads a ``POST /v1/logs`` body or a ``LogsService/Export``
request and sorts its records: those with a trace id and content (``gen_ai.choice``, inference
operation details) are kept and ride with their trace through the buffer, to be joined to their
spans by ``to_eval_trace``; the rest (no trace id, prompts, plain logs) are taken and counted,
not kept. Bad records (ids of the wrong size, wrong-typed JSON fields) are left out and named
for ``partial_success``, like bad spans.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import orjson

from tooltrail.dialects.genai_logs import CONTENT_EVENTS, event_name
from tooltrail.otlp import DecodeError, Diagnostic, Limits, encode_logs_request
from tooltrail.otlp.decode.lazy import Where
from tooltrail.otlp.decode.log_records import LogRecord, logs_from_bytes, logs_from_json
from tooltrail.serve.outcome import Undecodable

#: ``LogRecord.origin`` of received records (named in unjoined-record diagnostics).
ORIGIN = "logs request"
_SIGNALS = ("resourceSpans", "resource_spans", "resourceMetrics", "resource_metrics")


@dataclass(slots=True)
class DecodedLogs:
    """A logs request, sorted: ``records`` to keep; counts of the ones taken but not kept."""

    records: list[LogRecord] = field(default_factory=list)
    #: Why records were left out (``partial_success``), one message per record.
    rejected: list[str] = field(default_factory=list)
    without_trace: int = 0
    not_content: int = 0


def decode_logs(encoding: str, body: bytes, limits: Limits) -> DecodedLogs:
    """Decode an ``ExportLogsServiceRequest`` (``"protobuf"`` or ``"json"``) and sort it.

    Raises ``Undecodable`` when the body is not an OTLP logs request."""
    diagnostics: list[Diagnostic] = []
    where = Where(ORIGIN, None, None, limits, diagnostics)
    if len(body) > limits.max_record_bytes:
        raise Undecodable(
            f"not an OTLP logs request: {len(body)} bytes exceed the "
            f"{limits.max_record_bytes}-byte limit"
        )
    try:
        if encoding == "json":
            records = _from_json(body, where)
        else:
            records = logs_from_bytes(body, where)
    except DecodeError as exc:
        raise Undecodable(f"not an OTLP logs request: {exc}") from None
    except RecursionError:
        raise Undecodable("not an OTLP logs request: nested too deeply") from None
    out = DecodedLogs(rejected=[d.message for d in diagnostics if "rejected" in d.message])
    keep = out.records.append
    for record in records:
        if not record.trace_id:
            out.without_trace += 1
        elif event_name(record.event_name, record.attributes) not in CONTENT_EVENTS:
            out.not_content += 1
        else:
            keep(record)
    return out


def _from_json(body: bytes, where: Where) -> list[LogRecord]:
    try:
        doc: Any = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise DecodeError(f"invalid JSON ({exc})") from None
    if isinstance(doc, dict) and "resourceLogs" not in doc and "resource_logs" not in doc:
        if any(key in doc for key in _SIGNALS):
            raise DecodeError(
                "this is a traces or metrics request (no resourceLogs): send traces to /v1/traces"
            )
        if not doc:
            return []  # the empty request, as OTLP/JSON writes it
    return logs_from_json(doc, where)


def logs_request(records: list[LogRecord]) -> Any:
    """Records as one ``ExportLogsServiceRequest`` (for a worker process or a dump), under the
    first record's resource; each keeps its ids, time, event name, attributes and body."""
    resource = records[0].resource if records else None
    return encode_logs_request(records, resource=resource)


def record_key(record: LogRecord) -> tuple[str, str, str, int, str, bytes]:
    """What a retried copy of a log record keeps: trace id, span id, time, event name and a
    hash of its body and attributes. An exporter's retry re-sends the same bytes, so every part
    is equal; two distinct records of one span differ at least in time or content. (The
    observed time is not part of it: ``LogRecord`` does not keep it, and the time the record
    was emitted already tells a record from the next.)"""
    content = orjson.dumps(
        [record.body, record.attributes],
        option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS,
        default=repr,
    )
    digest = hashlib.blake2b(content, digest_size=16).digest()
    return ("log", record.trace_id, record.span_id, record.time_ns, record.event_name, digest)
