"""In-memory OpenTelemetry providers for a recording, and the files they are written to.

``Telemetry.install()`` sets the global tracer and logger providers once per process (the
frameworks' instrumentations use the globals); ``take()`` hands over and clears what was
exported since the last call, so one process records several scenarios. ``write()`` writes:

- ``<scenario>.otlp.pb``: one ``ExportTraceServiceRequest`` with every span (no prefix);
- ``<scenario>.otlp.jsonl``: OTLP/JSON, one request per trace per line, as the collector's
  file exporter writes (hex ids, int64 as strings, integer enums);
- ``<scenario>.logs.otlp.pb`` / ``.logs.otlp.jsonl``: the log records, when there are any;
- ``<scenario>.truth.json``.

Encoding uses opentelemetry-exporter-otlp-proto-common's public ``encode_spans`` /
``encode_logs``, never tooltrail.
"""

from __future__ import annotations

import base64
import json
import platform
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

#: Where the recordings go (``tests/data/recorded/<variant>/``).
RECORDED = Path(__file__).resolve().parents[2] / "tests" / "data" / "recorded"


@dataclass
class Telemetry:
    spans: InMemorySpanExporter
    logs: Any  # InMemoryLogExporter (its module moved between SDK releases)
    tracer_provider: TracerProvider
    logger_provider: Any

    @classmethod
    def install(cls, service: str) -> Telemetry:
        """Global providers exporting to memory (call once, before the framework is set up)."""
        resource = Resource.create({"service.name": service})
        spans = InMemorySpanExporter()
        provider = TracerProvider(resource=resource)
        provider.add_span_processor(SimpleSpanProcessor(spans))
        trace.set_tracer_provider(provider)
        from opentelemetry import _logs
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

        try:
            from opentelemetry.sdk._logs.export import InMemoryLogExporter
        except ImportError:  # older SDKs
            from opentelemetry.sdk._logs.export.in_memory_log_exporter import (  # type: ignore
                InMemoryLogExporter,
            )
        logs = InMemoryLogExporter()
        logger_provider = LoggerProvider(resource=resource)
        logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
        _logs.set_logger_provider(logger_provider)
        return cls(spans, logs, provider, logger_provider)

    def take(self) -> tuple[list[ReadableSpan], list[Any]]:
        self.tracer_provider.force_flush()
        self.logger_provider.force_flush()
        spans = list(self.spans.get_finished_spans())
        logs = list(self.logs.get_finished_logs())
        self.spans.clear()
        self.logs.clear()
        return spans, logs


_ID_FIELDS = ("traceId", "spanId", "parentSpanId")


def _hex_ids(node: Any) -> Any:
    """MessageToDict writes ids as base64; OTLP/JSON writes them as hex."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_FIELDS and isinstance(value, str):
                node[key] = base64.b64decode(value).hex()
            else:
                _hex_ids(value)
    elif isinstance(node, list):
        for item in node:
            _hex_ids(item)
    return node


def _json_line(message: Any) -> str:
    body = MessageToDict(message, use_integers_for_enums=True)
    return json.dumps(_hex_ids(body), separators=(",", ":"), ensure_ascii=False)


def _by_trace(spans: Iterable[ReadableSpan]) -> list[list[ReadableSpan]]:
    groups: dict[int, list[ReadableSpan]] = {}
    for span in spans:
        groups.setdefault(span.context.trace_id, []).append(span)
    return list(groups.values())


def write(
    folder: Path,
    scenario: str,
    spans: list[ReadableSpan],
    logs: list[Any],
    truth: dict[str, Any],
) -> list[Path]:
    """Write one scenario's files into ``folder``; returns the paths written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    pb = folder / f"{scenario}.otlp.pb"
    pb.write_bytes(encode_spans(spans).SerializeToString())
    jsonl = folder / f"{scenario}.otlp.jsonl"
    jsonl.write_text(
        "".join(_json_line(encode_spans(group)) + "\n" for group in _by_trace(spans)),
        encoding="utf-8",
    )
    written += [pb, jsonl]
    if logs:
        logs_pb = folder / f"{scenario}.logs.otlp.pb"
        logs_pb.write_bytes(encode_logs(logs).SerializeToString())
        logs_jsonl = folder / f"{scenario}.logs.otlp.jsonl"
        logs_jsonl.write_text(_json_line(encode_logs(logs)) + "\n", encoding="utf-8")
        written += [logs_pb, logs_jsonl]
    truth_path = folder / f"{scenario}.truth.json"
    truth_path.write_text(json.dumps(truth, indent=2, ensure_ascii=False) + "\n", "utf-8")
    written.append(truth_path)
    return written


def write_versions(folder: Path, framework: str, packages: Iterable[str], how: str) -> None:
    """``VERSIONS.txt``: the exact versions of the packages that made the folder."""
    frozen = subprocess.run(
        [sys.executable, "-m", "pip", "freeze"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    wanted = tuple(p.lower() for p in packages)
    kept = [line for line in frozen if line.lower().startswith(wanted)]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "VERSIONS.txt").write_text(
        f"framework: {framework}\n"
        f"platform: {platform.platform()}\n"
        f"python: {sys.version.split()[0]}\n"
        "packages (filtered):\n"
        + "".join(f"  {line}\n" for line in kept)
        + f"recorded by: {how}\n",
        encoding="utf-8",
    )
