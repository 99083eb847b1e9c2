"""Evaluation events counted by what the exporter confirmed, not by what was handed to it.

The SDK's batch processor hands records to the exporter and forgets them; an unreachable
endpoint only shows in the exporter's result. ``ConfirmedExporter`` wraps any
``LogRecordExporter`` and counts each batch as sent or failed by that result, so ``/stats``
reports ``scores_sent`` and ``scores_failed`` truthfully.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult


class ConfirmedExporter(LogRecordExporter):
    """``exporter``, counting records it reported exported (``sent``) or not (``failed``)."""

    def __init__(self, exporter: LogRecordExporter) -> None:
        self.exporter = exporter
        self.sent = 0
        self.failed = 0
        self._lock = threading.Lock()

    def export(self, batch: Sequence[Any]) -> LogRecordExportResult:
        try:
            result = self.exporter.export(batch)
        except Exception:
            self._count(failed=len(batch))
            raise
        # By name: the SDK has two result enums (LogExportResult, LogRecordExportResult).
        if getattr(result, "name", None) == "SUCCESS":
            self._count(sent=len(batch))
        else:
            self._count(failed=len(batch))
        return result

    def _count(self, *, sent: int = 0, failed: int = 0) -> None:
        with self._lock:
            self.sent += sent
            self.failed += failed

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return bool(self.exporter.force_flush(timeout_millis))

    def shutdown(self) -> None:
        self.exporter.shutdown()
