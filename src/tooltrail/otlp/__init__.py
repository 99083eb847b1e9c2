"""OTLP wire formats: decoding and encoding protobuf and JSON, collector file framings, compression.

Nothing outside this package knows what a length prefix is.
"""

from tooltrail.otlp.span import Diagnostic, Span, SpanEvent

__all__ = ["Diagnostic", "Span", "SpanEvent"]
