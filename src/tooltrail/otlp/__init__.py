"""OTLP wire formats: decoding and encoding protobuf and JSON, collector file framings, compression.

Three wings, one job each (docs/architecture.md): ``read`` (files, streams, framings, the
byte ranges of the batch pass), ``decode`` (one record into spans and log records), ``write``
(spans and log records into requests and files). Nothing outside ``read`` knows what a length
prefix is. Reading: ``read_spans`` (files,
directories, globs, stdin), ``iter_records`` (record by record), ``decode_request`` /
``decode_json_request`` (one request body). Writing: ``encode_request``, ``json_line``,
``frame``, ``OtlpFileWriter``; the same for logs (evaluation events).
"""

from tooltrail.otlp.decode.errors import DecodeError
from tooltrail.otlp.decode.limits import DEFAULT_LIMITS, TRUNCATED_MARKER, Limits
from tooltrail.otlp.decode.logs import LogRecord
from tooltrail.otlp.decode.otlpjson import decode_json_request
from tooltrail.otlp.decode.pb import decode_request
from tooltrail.otlp.decode.span import Diagnostic, Interest, Span, SpanEvent, SpanHead
from tooltrail.otlp.read.logs import read_log_records
from tooltrail.otlp.read.records import Record, expand_paths, iter_records, read_spans
from tooltrail.otlp.write.encode import (
    encode_logs_request,
    encode_request,
    frame,
    json_line,
    logs_json_line,
)
from tooltrail.otlp.write.writer import OtlpFileWriter, encode_for_file

__all__ = [
    "DEFAULT_LIMITS",
    "TRUNCATED_MARKER",
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
