"""Dumps for the batch tests: agent runs recorded with the real OpenTelemetry SDK, written to
disk in the collector file exporter's framings. The tests at the bottom check the helpers."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fixtures import REPLY, SEED_CALLS
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

from tooltrail.convert import read_traces
from tooltrail.otlp import frame, json_line


@dataclass
class Run:
    """One agent run: its tag (``tooltrail.case_id``), its tool calls, extra root attributes."""

    name: str | None
    calls: Sequence[tuple[str, dict[str, Any]]]
    agent: str = "refund-agent"
    attributes: dict[str, Any] = field(default_factory=dict)
    conversation: str | None = None
    #: Plain (non-agent) spans under each tool call: an HTTP call, a query, ... as real tools make.
    plain: int = 0


#: Plain spans a tool makes: (name, kind, attributes, error?). No dialect reader looks at them.
PLAIN_SPANS = [
    ("GET", SpanKind.CLIENT, {"http.request.method": "GET", "url.full": "https://x.test/o"}, False),
    ("SELECT", SpanKind.CLIENT, {"db.system.name": "postgresql", "db.query.text": "SELECT"}, True),
    ("cache.get", SpanKind.INTERNAL, {"cache.key": "order:ORD-7731"}, False),
]


#: The seed's four runs, tagged with their names.
SEED_RUNS = [Run(name, calls) for name, calls in SEED_CALLS.items()]


def record(runs: Iterable[Run], service: str = "refund-service") -> list[list[ReadableSpan]]:
    """The finished spans of each run (children first, as the SDK ends them)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("tooltrail-tests")
    out: list[list[ReadableSpan]] = []
    for run in runs:
        root_attrs: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": run.agent,
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": REPLY}]}]
            ),
            **run.attributes,
        }
        if run.name is not None:
            root_attrs["tooltrail.case_id"] = run.name
        if run.conversation is not None:
            root_attrs["gen_ai.conversation.id"] = run.conversation
        with tracer.start_as_current_span(f"invoke_agent {run.agent}", attributes=root_attrs):
            for n, (tool, args) in enumerate(run.calls):
                attrs = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": tool,
                    "gen_ai.tool.call.id": f"call-{n}",
                    "gen_ai.tool.call.arguments": json.dumps(args),
                }
                with tracer.start_as_current_span(f"execute_tool {tool}", attributes=attrs):
                    for k in range(run.plain):
                        name, kind, plain_attrs, failed = PLAIN_SPANS[k % len(PLAIN_SPANS)]
                        with tracer.start_as_current_span(
                            name, kind=kind, attributes=plain_attrs
                        ) as plain:
                            if failed:
                                plain.set_status(Status(StatusCode.ERROR, "timeout"))
        out.append(list(exporter.get_finished_spans()))
        exporter.clear()
    provider.shutdown()
    return out


def jsonl(batches: Iterable[Sequence[ReadableSpan]]) -> bytes:
    """One OTLP/JSON line per batch of spans, as the collector ``file`` exporter writes."""
    return b"".join(json_line(encode_spans(batch)) for batch in batches)


def prefixed_pb(batches: Iterable[Sequence[ReadableSpan]]) -> bytes:
    """Length-prefixed protobuf, one message per batch (``format: proto``)."""
    return b"".join(frame(encode_spans(batch).SerializeToString()) for batch in batches)


def write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


def interleaved(traces: list[list], concurrent: int = 4, per_line: int = 2) -> list[list]:
    """Batches mixing the spans of ``concurrent`` traces in flight, as a busy exporter sends
    them: any cut between two batches is likely to fall inside some trace."""
    batches: list[list] = []
    for start in range(0, len(traces), concurrent):
        queues = [list(t) for t in traces[start : start + concurrent]]
        while any(queues):
            for queue in queues:
                if queue:
                    batches.append(queue[:per_line])
                    del queue[:per_line]
    return batches


def test_recorded_runs_read_back_with_their_calls(tmp_path: Path) -> None:
    dump = write(tmp_path / "runs.jsonl", jsonl(record(SEED_RUNS)))
    traces = list(read_traces(dump))
    assert [t.metadata["case_id"] for t in traces] == [r.name for r in SEED_RUNS]
    assert [c.name for c in traces[0].tool_calls] == [
        "lookup_order",
        "verify_identity",
        "issue_refund",
    ]
    assert traces[0].tool_calls[2].args == {"order_id": "ORD-7731", "amount": 49.99}
    assert traces[0].output == REPLY


def test_prefixed_protobuf_reads_back_like_json_lines(tmp_path: Path) -> None:
    runs = record(SEED_RUNS)
    from_json = list(read_traces(write(tmp_path / "a.jsonl", jsonl(runs))))
    from_pb = list(read_traces(write(tmp_path / "a.pb", prefixed_pb(runs))))
    assert [t.tool_calls for t in from_pb] == [t.tool_calls for t in from_json]
