"""A mapped span finds its attributes' wire order through an outline of its request.

The outline lists each resource's scope groups (``scopeSpans``, then the pre-2022
``instrumentationLibrarySpans``, field 1000) with their spans left as bytes; the span at
(resource, group, index) is then parsed alone. Every span of a request with several
resources, groups of both kinds and spans must come out with its own keys in wire order.
"""

from __future__ import annotations

from pathlib import Path

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans

from tooltrail.otlp import frame, read_spans
from tooltrail.otlp.decode.mapped import MappedAttributes


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _scope(prefix: str, span_ids: list[int]) -> ScopeSpans:
    scope = ScopeSpans()
    for n in span_ids:
        span = scope.spans.add()
        span.trace_id, span.span_id, span.name = b"\xab" * 16, bytes([n]) * 8, f"{prefix}{n}"
        for key in _keys(n):
            pair = span.attributes.add()
            pair.key = key
            pair.value.string_value = f"v{n}"
    return scope


def _keys(n: int) -> list[str]:
    """Keys in an order of their own per span (neither sorted nor the same twice)."""
    keys = [f"k{i}.{n}" for i in range(6)]
    return keys[n % 6 :] + keys[: n % 6][::-1]


def _request() -> bytes:
    """Two resources, each with two ``scopeSpans`` groups and one old-style group."""
    data = b""
    n = 1
    for resource_index in range(2):
        resource = ResourceSpans()
        for group in range(2):
            resource.scope_spans.append(_scope(f"r{resource_index}g{group}-", [n, n + 1, n + 2]))
            n += 3
        old_style = _scope(f"r{resource_index}old-", [n, n + 1])
        n += 2
        payload = resource.SerializeToString() + _field(1000, old_style.SerializeToString())
        data += _field(1, payload)
    ExportTraceServiceRequest.FromString(data)  # a well-formed request
    return data


def test_every_span_of_several_resources_and_groups_iterates_its_own_keys_in_wire_order(
    tmp_path: Path,
) -> None:
    path = tmp_path / "t.pb"
    path.write_bytes(frame(_request()))
    spans = list(read_spans(path))
    assert len(spans) == 16
    assert all(isinstance(span.attributes, MappedAttributes) for span in spans)
    for span in spans:
        n = bytes.fromhex(span.span_id)[0]
        assert list(span.attributes) == _keys(n), span.name
        assert span.attributes.get(_keys(n)[0]) == f"v{n}"
