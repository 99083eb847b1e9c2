"""Decoding one record: OTLP protobuf and JSON (with the typed ``msgspec`` path), Jaeger and
Tempo documents, log records, attribute values and ids, into the ``Span`` every format turns
into (``span``), with the diagnostics of bad input and the limits that bound it. Knows no
files and no framing, and nothing of the other wings.
"""
