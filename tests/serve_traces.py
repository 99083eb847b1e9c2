"""Agent traces built span by span for the ``tooltrail serve`` hardening tests, as OTLP bodies."""

from __future__ import annotations

import os
import socket

from tooltrail.otlp import Span, encode_request

PROTOBUF = {"Content-Type": "application/x-protobuf"}


def new_trace_id() -> str:
    return os.urandom(16).hex()


def new_span_id() -> str:
    return os.urandom(8).hex()


def agent_trace(
    trace_id: str | None = None, *, tool_attributes: list[dict[str, object]] | None = None
) -> list[Span]:
    """A root agent span and one tool span per entry of ``tool_attributes`` (default: one
    GenAI ``lookup_order`` call)."""
    trace_id = trace_id or new_trace_id()
    root = new_span_id()
    spans = [
        Span(
            trace_id=trace_id,
            span_id=root,
            name="invoke_agent refund_agent",
            start_ns=1_000,
            end_ns=9_000,
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "agent"},
        )
    ]
    for i, attributes in enumerate(
        tool_attributes
        or [
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "lookup_order",
                "gen_ai.tool.call.arguments": '{"order_id": "ORD-1"}',
            }
        ]
    ):
        spans.append(
            Span(
                trace_id=trace_id,
                span_id=new_span_id(),
                parent_span_id=root,
                name=str(attributes.get("span.name", "execute_tool")),
                start_ns=2_000 + i,
                end_ns=3_000 + i,
                attributes={k: v for k, v in attributes.items() if k != "span.name"},
            )
        )
    return spans


def rootless_trace(spans: int = 1) -> list[Span]:
    """Spans of a trace whose root never comes (each names a parent that is not sent)."""
    trace_id = new_trace_id()
    missing = new_span_id()
    return [
        Span(
            trace_id=trace_id,
            span_id=new_span_id(),
            parent_span_id=missing,
            name="orphan",
            start_ns=1_000,
            end_ns=2_000,
        )
        for _ in range(spans)
    ]


def body_of(spans: list[Span]) -> bytes:
    return encode_request(spans).SerializeToString()


#: Sockets bound and never listening, kept open until the process ends: see ``closed_port``.
_HELD_PORTS: list[socket.socket] = []


def closed_port() -> int:
    """A loopback port nothing listens on: bound and never listening, and kept so (released,
    another process on the machine could take it and listen)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    _HELD_PORTS.append(sock)
    return int(sock.getsockname()[1])
