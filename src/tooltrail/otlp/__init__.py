"""OTLP wire formats: decoding and encoding protobuf and JSON, collector file framings, compression.

Nothing outside this package knows what a length prefix is.
"""

from tooltrail.otlp.errors import DecodeError
from tooltrail.otlp.limits import DEFAULT_LIMITS, TRUNCATED_MARKER, Limits
from tooltrail.otlp.otlpjson import decode_json_request
from tooltrail.otlp.pb import decode_request
from tooltrail.otlp.records import Record, expand_paths, iter_records, read_spans
from tooltrail.otlp.span import Diagnostic, Span, SpanEvent

__all__ = [
    "DEFAULT_LIMITS",
    "TRUNCATED_MARKER",
    "DecodeError",
    "Diagnostic",
    "Limits",
    "Record",
    "Span",
    "SpanEvent",
    "decode_json_request",
    "decode_request",
    "expand_paths",
    "iter_records",
    "read_spans",
]
