"""Sinks for complete traces: any SDK ``SpanExporter``, and OTLP files in the collector's formats.

The inline evaluator (``tooltrail.pipeline.inline``) is the third kind. A sink is anything with
``export_trace(trace)``, ``force_flush(timeout_millis)`` and ``shutdown()``; the trace
buffer calls it from one thread at a time.
"""

from __future__ import annotations

import logging
import os

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from tooltrail.otlp import OtlpFileWriter
from tooltrail.pipeline.buffer import CompletedTrace
from tooltrail.pipeline.throttle import ThrottledWarning
from tooltrail.pipeline.verdicts import stamped_sdk_spans

_log = logging.getLogger(__name__)


class ExporterSink:
    """Hands each complete trace to an SDK ``SpanExporter`` (say ``OTLPSpanExporter()``).

    With ``batch=True`` (default) spans go through the SDK's own ``BatchSpanProcessor``
    (``max_queue_size`` spans queued, exported in the background with its retries and
    timeouts). With ``batch=False`` each trace is one ``export`` call on the buffer's thread.
    Unsampled spans are not exported, as with the SDK's processors. A trace handed on by the
    inline evaluator once judged (its ``forward_to``; live ``install(verdict_exporter=)``)
    carries its verdict, which goes on its root span (``pipeline.verdicts``).
    """

    def __init__(
        self,
        exporter: SpanExporter,
        *,
        batch: bool = True,
        max_queue_size: int = 8192,
        schedule_delay_millis: float | None = None,
    ) -> None:
        self.exporter = exporter
        self._batch = (
            BatchSpanProcessor(
                exporter,
                max_queue_size=max_queue_size,
                schedule_delay_millis=schedule_delay_millis,
                max_export_batch_size=min(512, max_queue_size),
            )
            if batch
            else None
        )
        self._warn = ThrottledWarning(_log)
        self.failed_exports = 0

    def export_trace(self, trace: CompletedTrace) -> None:
        spans = trace.spans
        if trace.verdict is not None:
            spans = stamped_sdk_spans(spans, trace.verdict)
        if self._batch is not None:
            for span in spans:
                self._batch.on_end(span)
            return
        sampled = [s for s in spans if s.context is not None and s.context.trace_flags.sampled]
        if sampled and self.exporter.export(sampled) is not SpanExportResult.SUCCESS:
            self.failed_exports += 1
            self._warn.warn(
                "export", "tooltrail: %s failed to export a trace", type(self.exporter).__name__
            )

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        if self._batch is not None:
            return self._batch.force_flush(timeout_millis)
        return self.exporter.force_flush(timeout_millis) is not False

    def shutdown(self) -> None:
        if self._batch is not None:
            self._batch.shutdown()
        else:
            self.exporter.shutdown()


class OtlpFileSink:
    """Writes each complete trace as one OTLP request to a file the collector could have written.

    ``format="json"``: one ``ExportTraceServiceRequest`` per line (``.jsonl``); ``"proto"``:
    length-prefixed protobuf. ``compression``: ``None``, ``"zstd"`` (per message) or
    ``"gzip"``. ``max_bytes``: rotate to ``<stem>-<n><suffix>`` at that size. Both formats
    read back with ``tooltrail.convert.read_traces``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        format: str = "json",
        compression: str | None = None,
        max_bytes: int | None = None,
    ) -> None:
        directory = os.path.dirname(os.fspath(path))
        if directory:
            os.makedirs(directory, exist_ok=True)
        self.writer = OtlpFileWriter(
            path,
            format=format,  # type: ignore[arg-type]  # checked by the writer
            compression=compression,  # type: ignore[arg-type]
            max_bytes=max_bytes,
        )
        self.path = self.writer.path
        self.traces_written = 0

    @property
    def rotated(self) -> list[str]:
        """Files already rotated away from ``path``, oldest first."""
        return list(self.writer.rotated)

    def export_trace(self, trace: CompletedTrace) -> None:
        if trace.spans:
            self.writer.write(encode_spans(trace.spans))
            self.traces_written += 1

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        self.writer.flush()
        return True

    def shutdown(self) -> None:
        self.writer.close()

    def __repr__(self) -> str:
        return f"OtlpFileSink({self.path!r})"
