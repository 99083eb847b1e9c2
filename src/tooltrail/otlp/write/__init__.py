"""Writing: spans and log records to OTLP requests, the collector's JSON lines and framed
protobuf, and the file writer with size rotation. Uses ``decode`` for the span types and the
value conversions; reads nothing.
"""
