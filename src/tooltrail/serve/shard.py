"""Split an OTLP traces request by trace id, for the worker processes.

Every span of a trace must reach the same worker, whichever request carried it, so a worker
sees whole traces. Splitting works on the opentelemetry-proto message classes (resource and
scope are copied into each part); spans with invalid ids are left out here, as the decoder
would, so the router can answer ``partial_success`` before any worker has seen the request.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from google.protobuf.message import DecodeError as ProtobufDecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tooltrail.otlp import DecodeError, Limits, decode_json_request, encode_request
from tooltrail.otlp.decode.ids import bad_span_ids
from tooltrail.serve.outcome import Undecodable


@dataclass(slots=True)
class SplitRequest:
    """The serialized part of a request for each worker (``None``: nothing for it)."""

    parts: list[bytes | None]
    spans: list[int]
    rejected: list[str] = field(default_factory=list)

    @property
    def accepted(self) -> int:
        return sum(self.spans)


def worker_of(trace_id: bytes, workers: int) -> int:
    """Which worker a trace goes to: stable for a trace id, even across restarts."""
    return int.from_bytes(trace_id[-4:], "big") % workers


def split_protobuf(data: bytes, workers: int) -> SplitRequest:
    try:
        request = ExportTraceServiceRequest.FromString(data)
    except (ProtobufDecodeError, RecursionError, ValueError) as exc:
        raise Undecodable(f"not an OTLP traces request: not valid protobuf ({exc})") from None
    parts = [ExportTraceServiceRequest() for _ in range(workers)]
    counts = [0] * workers
    rejected: list[str] = []
    for ri, resource_spans in enumerate(request.resource_spans):
        by_worker: list = [None] * workers
        for si, scope_spans in enumerate(resource_spans.scope_spans):
            scoped: list = [None] * workers
            for pi, span in enumerate(scope_spans.spans):
                problem = bad_span_ids(span.trace_id, span.span_id, span.parent_span_id)
                if problem:
                    rejected.append(f"resourceSpans[{ri}].scopeSpans[{si}].spans[{pi}].{problem}")
                    continue
                w = worker_of(span.trace_id, workers)
                target = scoped[w]
                if target is None:
                    group = by_worker[w]
                    if group is None:
                        group = by_worker[w] = parts[w].resource_spans.add()
                        group.resource.CopyFrom(resource_spans.resource)
                        group.schema_url = resource_spans.schema_url
                    target = scoped[w] = group.scope_spans.add()
                    target.scope.CopyFrom(scope_spans.scope)
                    target.schema_url = scope_spans.schema_url
                target.spans.append(span)
                counts[w] += 1
    return SplitRequest(
        [p.SerializeToString() if n else None for p, n in zip(parts, counts, strict=True)],
        counts,
        rejected,
    )


def split_json(data: bytes, workers: int, limits: Limits) -> SplitRequest:
    """OTLP/JSON: decoded by ``tooltrail.otlp`` (with its per-span checks), re-encoded as
    protobuf per worker."""
    diagnostics: list = []
    try:
        spans = decode_json_request(data, limits=limits, diagnostics=diagnostics)
    except DecodeError as exc:
        raise Undecodable(f"not an OTLP traces request: {exc}") from None
    groups: list[list] = [[] for _ in range(workers)]
    for span in spans:
        groups[worker_of(bytes.fromhex(span.trace_id), workers)].append(span)
    return SplitRequest(
        [encode_request(g).SerializeToString() if g else None for g in groups],
        [len(g) for g in groups],
        [d.message for d in diagnostics if "rejected" in d.message],
    )
