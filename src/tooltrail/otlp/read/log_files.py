"""Reading OTLP logs files: every log record, in any format, framing and compression a trace
file may have."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import cast

from tooltrail.otlp.decode.limits import DEFAULT_LIMITS, Limits
from tooltrail.otlp.decode.log_records import LOGS, LogRecord
from tooltrail.otlp.decode.span import Diagnostic
from tooltrail.otlp.read.records import expand_paths, file_records


def read_log_records(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    limits: Limits = DEFAULT_LIMITS,
    diagnostics: list[Diagnostic] | None = None,
) -> Iterator[LogRecord]:
    """Every log record in OTLP logs files (JSON lines or protobuf, any framing/compression).

    Lines holding spans or metrics are skipped; bad records go to ``diagnostics``."""
    for path, named in expand_paths(paths, diagnostics):
        for record in file_records(path, limits, diagnostics, named, LOGS):
            yield from cast("list[LogRecord]", record.spans)  # this signal's records
