"""OTLP wire formats: decoding and encoding protobuf and JSON, collector file framings, compression.

Three wings, one job each (docs/architecture.md): ``read`` (files, streams, framings, the
byte ranges of the batch pass), ``decode`` (one record into spans and log records), ``write``
(spans and log records into requests and files). Nothing outside ``read`` knows what a length
prefix is. Reading: ``read_spans`` (files, directories, globs, stdin), ``iter_records`` (record
by record), ``decode_request`` / ``decode_json_request`` (one request body). Writing:
``encode_request``, ``json_line``, ``frame``, ``OtlpFileWriter``; the same for logs
(evaluation events).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tooltrail.lazy import lazy_exports

#: Public name -> the module that defines it, imported on first use (PEP 562): a module that
#: needs one wing (``decode.ids`` for the id rules) does not load the others.
_EXPORTS: dict[str, str] = {
    "decode_json_request": "tooltrail.otlp.decode.otlpjson",
    "decode_request": "tooltrail.otlp.decode.pb",
    "DecodeError": "tooltrail.otlp.decode.decode_error",
    "DEFAULT_LIMITS": "tooltrail.otlp.decode.limits",
    "Diagnostic": "tooltrail.otlp.decode.span",
    "encode_for_file": "tooltrail.otlp.write.writer",
    "encode_logs_request": "tooltrail.otlp.write.encode",
    "encode_request": "tooltrail.otlp.write.encode",
    "expand_paths": "tooltrail.otlp.read.records",
    "frame": "tooltrail.otlp.write.encode",
    "Interest": "tooltrail.otlp.decode.span",
    "iter_records": "tooltrail.otlp.read.records",
    "json_line": "tooltrail.otlp.write.encode",
    "Limits": "tooltrail.otlp.decode.limits",
    "LogRecord": "tooltrail.otlp.decode.log_records",
    "logs_json_line": "tooltrail.otlp.write.encode",
    "OtlpFileWriter": "tooltrail.otlp.write.writer",
    "read_log_records": "tooltrail.otlp.read.log_files",
    "read_spans": "tooltrail.otlp.read.records",
    "Record": "tooltrail.otlp.read.records",
    "Span": "tooltrail.otlp.decode.span",
    "SpanEvent": "tooltrail.otlp.decode.span",
    "SpanHead": "tooltrail.otlp.decode.span",
    "TRUNCATED_MARKER": "tooltrail.otlp.decode.limits",
}

if TYPE_CHECKING:
    from tooltrail.otlp.decode.decode_error import DecodeError
    from tooltrail.otlp.decode.limits import DEFAULT_LIMITS, TRUNCATED_MARKER, Limits
    from tooltrail.otlp.decode.log_records import LogRecord
    from tooltrail.otlp.decode.otlpjson import decode_json_request
    from tooltrail.otlp.decode.pb import decode_request
    from tooltrail.otlp.decode.span import Diagnostic, Interest, Span, SpanEvent, SpanHead
    from tooltrail.otlp.read.log_files import read_log_records
    from tooltrail.otlp.read.records import Record, expand_paths, iter_records, read_spans
    from tooltrail.otlp.write.encode import (
        encode_logs_request,
        encode_request,
        frame,
        json_line,
        logs_json_line,
    )
    from tooltrail.otlp.write.writer import OtlpFileWriter, encode_for_file

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

__all__ = [
    "DEFAULT_LIMITS",
    "DecodeError",
    "Diagnostic",
    "Interest",
    "Limits",
    "LogRecord",
    "OtlpFileWriter",
    "Record",
    "Span",
    "SpanEvent",
    "SpanHead",
    "TRUNCATED_MARKER",
    "decode_json_request",
    "decode_request",
    "encode_for_file",
    "encode_logs_request",
    "encode_request",
    "expand_paths",
    "frame",
    "iter_records",
    "json_line",
    "logs_json_line",
    "read_log_records",
    "read_spans",
]
