"""What the decoders hand conversion, and the one rule that tells its kinds apart.

A traces-and-logs input decodes to spans (``Span``), bare span heads (``SpanHead``: spans no
dialect reads, see ``dialects.INTEREST``), with the compiled core the spans it read the facts
of (``FactSpan``, or runs of them and of heads: ``TracePart``; see ``convert.engine``)
and log records (``LogRecord``: content a span's instrumentation sent as a log).
``is_log_record`` is a ``TypeIs``, so a type checker narrows
both branches: a log record in one, a span in the other, with no ``type: ignore``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tooltrail.convert.facts import FactSpan, TracePart
from tooltrail.otlp.decode.log_records import LogRecord
from tooltrail.otlp.decode.span import Span, SpanHead

if TYPE_CHECKING:
    from typing_extensions import TypeIs

#: One decoded item of a traces-and-logs input.
Decoded = Span | SpanHead | FactSpan | TracePart | LogRecord


def is_log_record(item: Decoded) -> TypeIs[LogRecord]:
    """Whether ``item`` is a log record rather than a span (an exact class test: the hot
    paths of conversion ask it once per item)."""
    return item.__class__ is LogRecord
