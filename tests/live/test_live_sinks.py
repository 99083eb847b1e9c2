"""Sinks: OTLP files that read back to the same calls, and any SDK exporter downstream."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult

from tooltrail.convert import read_traces
from tooltrail.live import ExporterSink, OtlpFileSink, ToolArgsProcessor, TraceBuffer, tool
from tooltrail.otlp import decode_request

RUNS = {
    "correct": [
        ("lookup_order", "ORD-7731"),
        ("verify_identity", "C-118"),
        ("issue_refund", 49.99),
    ],
    "looping": [("lookup_order", "ORD-7731")] * 3 + [("web_search", "refund policy")],
}


def run_agent(provider: TracerProvider) -> dict[str, list[tuple[str, dict[str, Any]]]]:
    """Emit one trace per run through ``provider``; return the calls made, by trace id."""
    tracer = provider.get_tracer("agent")
    made: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for run, calls in RUNS.items():
        with tracer.start_as_current_span(
            "invoke_agent refund_agent",
            attributes={"gen_ai.operation.name": "invoke_agent", "tooltrail.case_id": run},
        ) as root:
            trace_id = f"{root.get_span_context().trace_id:032x}"
            made[trace_id] = []
            for name, value in calls:
                args = {"value": value, "password": "hunter2"}
                with tool(name, args, tracer=tracer):
                    pass
                made[trace_id].append((name, {"value": value, "password": "[REDACTED]"}))
    return made


def file_pipeline(sink: OtlpFileSink) -> tuple[TracerProvider, TraceBuffer]:
    buffer = TraceBuffer(sink, grace_s=0)
    provider = TracerProvider()
    provider.add_span_processor(ToolArgsProcessor(buffer))
    return provider, buffer


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("dump.otlp.jsonl", {}),
        ("dump.otlp.pb", {"format": "proto"}),
        ("dump.otlp.zst", {"format": "proto", "compression": "zstd"}),
        ("dump.otlp.jsonl.gz", {"compression": "gzip"}),
    ],
)
def test_the_written_file_reads_back_to_the_same_calls(
    tmp_path: Path, name: str, options: Any
) -> None:
    sink = OtlpFileSink(tmp_path / name, **options)
    provider, _ = file_pipeline(sink)
    made = run_agent(provider)
    provider.shutdown()
    read = {
        t.trace_id: [(c.name, c.args) for c in t.tool_calls]
        for t in read_traces(str(tmp_path / name))
    }
    assert read == made
    cases = {t.metadata.get("case_id") for t in read_traces(str(tmp_path / name))}
    assert cases == {"correct", "looping"}


def test_json_files_hold_one_request_line_per_trace(tmp_path: Path) -> None:
    sink = OtlpFileSink(tmp_path / "dump.otlp.jsonl")
    provider, _ = file_pipeline(sink)
    run_agent(provider)
    provider.shutdown()
    lines = (tmp_path / "dump.otlp.jsonl").read_bytes().splitlines()
    assert len(lines) == 2 and all(line.startswith(b'{"resourceSpans"') for line in lines)


def test_gzip_output_is_one_gzip_stream(tmp_path: Path) -> None:
    sink = OtlpFileSink(tmp_path / "dump.jsonl.gz", compression="gzip")
    provider, _ = file_pipeline(sink)
    run_agent(provider)
    provider.shutdown()
    assert len(gzip.decompress((tmp_path / "dump.jsonl.gz").read_bytes()).splitlines()) == 2


def test_files_rotate_at_the_size_limit_and_every_trace_reads_back_once(tmp_path: Path) -> None:
    sink = OtlpFileSink(tmp_path / "dump.otlp.jsonl", max_bytes=2000)
    provider, _ = file_pipeline(sink)
    made: dict[str, Any] = {}
    for _ in range(5):
        made.update(run_agent(provider))
    provider.shutdown()
    assert len(sink.rotated) >= 2
    read = [t.trace_id for t in read_traces(str(tmp_path / "*.otlp.jsonl"))]
    assert sorted(read) == sorted(made)


def test_the_file_sink_creates_missing_directories(tmp_path: Path) -> None:
    sink = OtlpFileSink(tmp_path / "a" / "b" / "dump.otlp.jsonl")
    assert sink.path == str(tmp_path / "a" / "b" / "dump.otlp.jsonl")
    sink.shutdown()


class _Collector(BaseHTTPRequestHandler):
    bodies: list[bytes]

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        length = int(self.headers["Content-Length"])
        self.server.bodies.append(self.rfile.read(length))  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def otlp_http_collector() -> Iterator[tuple[str, list[bytes]]]:
    server = HTTPServer(("127.0.0.1", 0), _Collector)
    server.bodies = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/v1/traces", server.bodies  # type: ignore[attr-defined]
    server.shutdown()
    server.server_close()


def test_an_otlp_exporter_downstream_receives_every_span_with_tool_args(
    otlp_http_collector: tuple[str, list[bytes]],
) -> None:
    endpoint, bodies = otlp_http_collector
    sink = ExporterSink(OTLPSpanExporter(endpoint=endpoint, timeout=5))
    provider, _ = file_pipeline(sink)  # type: ignore[arg-type]
    made = run_agent(provider)
    provider.shutdown()
    received = [span for body in bodies for span in decode_request(body)]
    assert len(received) == sum(len(calls) + 1 for calls in made.values())
    tool_spans = [s for s in received if "tool_name" in s.attributes]
    assert sorted(s.attributes["tool_args"] for s in tool_spans) == sorted(
        '{"password":"[REDACTED]","value":' + (f'"{v}"' if isinstance(v, str) else str(v)) + "}"
        for calls in RUNS.values()
        for _, v in calls
    )


def test_without_batching_each_trace_is_one_export_call() -> None:
    exports: list[int] = []

    class Counting(InMemorySpanExporter):
        def export(self, spans: Any) -> Any:
            exports.append(len(spans))
            return super().export(spans)

    sink = ExporterSink(Counting(), batch=False)
    provider, _ = file_pipeline(sink)  # type: ignore[arg-type]
    run_agent(provider)
    provider.shutdown()
    assert exports == [4, 5]


class RecordOnly(Sampler):
    """Records every span (processors see it) without sampling it (exporters must not)."""

    def should_sample(self, *args: Any, **kwargs: Any) -> SamplingResult:
        return SamplingResult(Decision.RECORD_ONLY)

    def get_description(self) -> str:
        return "RecordOnly"


@pytest.mark.parametrize("batch", [True, False])
def test_recorded_but_unsampled_spans_are_not_exported(batch: bool) -> None:
    exporter = InMemorySpanExporter()
    buffer = TraceBuffer(ExporterSink(exporter, batch=batch), grace_s=0)
    provider = TracerProvider(sampler=RecordOnly())
    provider.add_span_processor(buffer)
    with provider.get_tracer("t").start_as_current_span("agent"):
        pass
    provider.shutdown()
    assert buffer.stats().spans_delivered == 1
    assert exporter.get_finished_spans() == ()
