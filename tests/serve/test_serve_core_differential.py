"""``tooltrail serve`` answers and judges the same through the compiled core and the Python path.

Two real ``tooltrail serve`` processes on loopback, one reading requests through the core and
one with ``TOOLTRAIL_CORE=python``, are sent the same requests in the same order: every record
of ``tests/data``, the shared corpus and the external corpus (when present) as protobuf (over
HTTP and gRPC) or as OTLP/JSON (each line of a JSON-lines file as it is written, each whole
document, each record in the canonical shape), bad requests, and mutations of good ones. Both
must give the same responses (status, ``partial_success`` and its text, error text), the same
results file (every verdict and explanation; only the time of each line differs) and the same
counters.

Deterministic: the grace period and ``--max-age`` are longer than the test, so no trace is
judged before SIGTERM; shutdown then judges everything held, in the order it arrived, which is
the same for both. Waits are bounded and on conditions.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import orjson
import pytest
from fixtures import wait_until
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from replay import fixture_paths
from serve_helpers import post

from tooltrail.convert.engine import CORE_ENV, PYTHON
from tooltrail.otlp import encode_request, json_line
from tooltrail.otlp.read.records import iter_records

try:
    import tooltrail_core  # noqa: F401
except ImportError:
    HAVE_CORE = False
else:
    HAVE_CORE = True

pytestmark = [
    pytest.mark.skipif(not HAVE_CORE, reason="the compiled core (tooltrail-core) is not installed"),
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals"),
]

#: Checks whose verdicts and explanations show what was read: calls and their order, argument
#: values (duplicates compare canonical arguments), replies, usage, latency and turns.
SUITE = """\
name: differential
cases:
  - id: everything
    match: all
    required_tools: [lookup_order, issue_refund, get_weather]
    forbidden_tools: [delete_account]
    required_tool_order: [lookup_order, issue_refund]
    expected_tool_arguments:
      issue_refund: {amount: 49.99}
    required_tool_arguments:
      issue_refund: [order_id, amount]
    expected_contains: [refund]
    max_turns: 1
    max_latency_ms: 1000
    max_llm_calls: 2
    max_tokens: 100
    max_tool_calls: 2
    evaluators:
      - name: no_redundant_tool_calls
        threshold: 1.0
      - name: tool_call_precision
        config: {allowed_tools: [lookup_order, issue_refund]}
      - name: trajectory_match
        config: {expected: [lookup_order], mode: exact}
"""
HTTP = re.compile(r"OTLP/HTTP on http://127\.0\.0\.1:(\d+)")
GRPC = re.compile(r"OTLP/gRPC on 127\.0\.0\.1:(\d+)")
STOPPED = re.compile(r"tooltrail serve: stopped; (\{.*\})")
CONTENT_TYPES = {"protobuf": "application/x-protobuf", "json": "application/json"}
#: Counters that depend on the transport or the clock, not on what was read.
UNCOMPARED = {
    "reading_path",
    "connections_open",
    "connections_evicted",
    "connections_refused",
    "connections_timed_out",
    # the console's lines per second are the clock's, not the reading path's
    "console_lines",
    "console_lines_left_out",
}
#: Mutated copies of good requests per encoding.
MUTATIONS = 60


@dataclass
class Server:
    """One ``tooltrail serve`` process, its ports and its files."""

    process: subprocess.Popen[bytes]
    http_port: int
    grpc_port: int
    results: Path
    stderr: Path

    def stop(self) -> dict[str, Any]:
        """SIGTERM: judge everything held, exit; the counters it printed on the way out."""
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=300)
        found = STOPPED.search(self.stderr.read_text(encoding="utf-8"))
        assert found is not None, self.stderr.read_text(encoding="utf-8")
        stats: dict[str, Any] = orjson.loads(found.group(1))
        return stats


def start(directory: Path, path: str) -> Server:
    """``tooltrail serve`` reading with ``path`` (``core`` or ``python``) into ``directory``."""
    directory.mkdir()
    suite = directory / "suite.yaml"
    suite.write_text(SUITE, encoding="utf-8")
    env = dict(os.environ)
    env.pop(CORE_ENV, None)
    if path == PYTHON:
        env[CORE_ENV] = PYTHON
    stderr = directory / "stderr.txt"
    with stderr.open("wb") as err:
        process = subprocess.Popen(
            [sys.executable, "-c", "from tooltrail.cli import main; main()", "serve",
             "--suite", str(suite), "--http-port", "0", "--grpc-port", "0",
             "--results", str(directory / "results.jsonl"), "--explanations",
             "--grace", "3600", "--max-age", "7200", "--shutdown-timeout", "120"],
            stdout=subprocess.DEVNULL, stderr=err, env=env,
        )  # fmt: skip

    def listening() -> bool:
        assert process.poll() is None, stderr.read_text(encoding="utf-8")
        return HTTP.search(stderr.read_text(encoding="utf-8")) is not None

    wait_until(listening, "tooltrail serve to listen", timeout=120)
    text = stderr.read_text(encoding="utf-8")
    http_found, grpc_found = HTTP.search(text), GRPC.search(text)
    assert http_found is not None and grpc_found is not None
    return Server(
        process, int(http_found.group(1)), int(grpc_found.group(1)), directory / "results.jsonl",
        stderr,
    )  # fmt: skip


def _records() -> Iterator[tuple[Path, Any]]:
    """Every record with spans of every fixture, read by the Python path (with the wire form)."""
    for path in fixture_paths():
        for record in iter_records(path, diagnostics=[]):
            if record.spans:
                yield path, record


def good_bodies(encoding: str) -> list[bytes]:
    """The fixtures as requests of ``encoding``."""
    bodies: list[bytes] = []
    if encoding == "json":
        for path in fixture_paths():
            if path.suffix == ".jsonl":  # each line as it is written
                bodies.extend(line for line in path.read_bytes().splitlines() if line.strip())
            elif path.suffix == ".json":  # the whole document, pretty-printed or not
                bodies.append(path.read_bytes())
    for _, record in _records():
        request = encode_request(record.spans)
        bodies.append(request.SerializeToString() if encoding == "protobuf" else json_line(request))
    return bodies


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field, encoded by hand."""
    size, length = len(payload), bytearray()
    while size > 0x7F:
        length.append(size & 0x7F | 0x80)
        size >>= 7
    length.append(size)
    return bytes([number << 3 | 2]) + bytes(length) + payload


def _attribute(key: str, value: AnyValue) -> KeyValue:
    return KeyValue(key=key, value=value)


def bad_protobuf() -> list[bytes]:
    """Requests the Python path reports on, or that are not OTLP at all."""
    base = trace_service_pb2.ExportTraceServiceRequest()
    spans = base.resource_spans.add().scope_spans.add().spans
    good = spans.add(trace_id=b"\x01" * 16, span_id=b"\x02" * 8, name="execute_tool lookup_order")
    good.attributes.append(_attribute("gen_ai.tool.name", AnyValue(string_value="lookup_order")))
    out = [b"", b"\xff\xff\xff", b"not protobuf at all", base.SerializeToString()[:-3]]
    for change in (
        lambda s: setattr(s, "trace_id", b"\x01" * 8),  # a short trace id
        lambda s: setattr(s, "span_id", b""),  # no span id
        lambda s: setattr(s, "trace_id", b"\x00" * 16),  # an all-zero trace id
        lambda s: setattr(s, "parent_span_id", b"\x03" * 4),  # a short parent id
    ):
        request = trace_service_pb2.ExportTraceServiceRequest()
        request.CopyFrom(base)
        bad = request.resource_spans[0].scope_spans[0].spans.add()
        bad.CopyFrom(good)
        bad.span_id = b"\x04" * 8
        change(bad)
        out.append(request.SerializeToString())
    # Nesting past the depth limit (64), written by hand: upb refuses to build it.
    deep = AnyValue(string_value="x").SerializeToString()
    for _ in range(70):
        deep = _field(5, _field(1, deep))  # AnyValue.array_value { values: ... }
    span = good.SerializeToString() + _field(9, _field(1, b"deep") + _field(2, deep))
    out.append(_field(1, _field(2, _field(2, span))))
    # A string field holding invalid UTF-8: the span name (field 5 of Span), patched in.
    named = base.SerializeToString()
    out.append(named.replace(b"execute_tool lookup_order", b"execute_tool lookup\xff\xfeder"))
    big = trace_service_pb2.ExportTraceServiceRequest()
    big.CopyFrom(base)
    big.resource_spans[0].scope_spans[0].spans[0].attributes.append(
        _attribute("big", AnyValue(string_value="x" * (5 << 20)))
    )
    out.append(big.SerializeToString())
    return out


def bad_json() -> list[bytes]:
    """OTLP/JSON requests the Python path reports on, or reads through an unusual spelling."""
    span = (
        '{"traceId": "%s", "spanId": "%s", "name": "execute_tool lookup_order",'  # noqa: UP031
        ' "attributes": [{"key": "gen_ai.tool.name", "value": {"stringValue": "lookup_order"}}]}'
    )
    ok_trace, ok_span = "01" * 16, "02" * 8

    def request(*spans: str, resource: str = "{}") -> bytes:
        listed = ", ".join(spans)
        return (
            f'{{"resourceSpans": [{{"resource": {resource}, "scopeSpans": '
            f'[{{"spans": [{listed}]}}]}}]}}'
        ).encode()

    deep = '{"stringValue": "x"}'
    for _ in range(200):
        deep = '{"arrayValue": {"values": [' + deep + "]}}"
    return [
        b"",
        b"not json",
        b"[]",
        b'{"resourceSpans": 5}',
        request(span % (ok_trace, ok_span)) + b" trailing",
        request(span % ("zz" * 16, ok_span)),  # a bad hex id
        request(span % (ok_trace, "02" * 4)),  # a short span id
        request(span % ("AQEBAQEBAQEBAQEBAQEBAQ==", ok_span)),  # a base64 id
        request(span % (ok_trace, ok_span)).replace(b"traceId", b"trace_id"),  # snake_case
        request(span % (ok_trace, ok_span)).replace(b'"name"', b'"name": "x", "name"'),  # twice
        request(span % (ok_trace, ok_span)).replace(
            b'{"stringValue": "lookup_order"}', b'{"intValue": "not a number"}'
        ),
        request(span % (ok_trace, ok_span)).replace(
            b'{"stringValue": "lookup_order"}', b'{"doubleValue": "NaN"}'
        ),
        request(span % (ok_trace, ok_span)).replace(b"lookup_order", deep.encode(), 1),
        request(span % (ok_trace, ok_span)).replace(b"lookup_order", b"lookup\xff\xfeorder"),
        request(
            span % (ok_trace, ok_span),
            resource='{"attributes": [{"key": "k", "value": {"kvlistValue": 3}}]}',
        ),
        request(span % (ok_trace, ok_span)).replace(b'"name"', b'"startTimeUnixNano": -1, "name"'),
    ]


def mutated(bodies: list[bytes], count: int, seed: int) -> list[bytes]:
    """``count`` copies of the bodies with a few bytes changed, cut or repeated: most of them
    the core declines, some it reads (bytes of a string value changed)."""
    pick = random.Random(seed)
    out: list[bytes] = []
    candidates = [b for b in bodies if len(b) > 8]
    for _ in range(count):
        data = bytearray(pick.choice(candidates))
        for _ in range(pick.randint(1, 3)):
            at = pick.randrange(len(data))
            kind = pick.choice(("flip", "cut", "repeat"))
            if kind == "flip":
                data[at] ^= pick.randint(1, 255)
            elif kind == "cut":
                del data[at : at + pick.randint(1, 16)]
            else:
                data[at:at] = data[at : at + pick.randint(1, 16)]
        out.append(bytes(data))
    return out


def send_http(server: Server, encoding: str, body: bytes) -> tuple[int, bytes]:
    status, _, answer = post(server.http_port, body, {"Content-Type": CONTENT_TYPES[encoding]})
    return status, answer


def send_grpc(stub: Any, body: bytes) -> tuple[str, str, str, int]:
    """One gRPC export of serialized ``body`` (sent as it is, not parsed here)."""
    try:
        response = stub(body, timeout=60)
    except grpc.RpcError as exc:
        return str(exc.code()), exc.details() or "", "", -1
    answer = trace_service_pb2.ExportTraceServiceResponse.FromString(response)
    partial = answer.partial_success
    return "OK", "", partial.error_message, partial.rejected_spans


def results(server: Server) -> list[bytes]:
    """The results lines without their time, in a canonical order."""
    lines = []
    for raw in server.results.read_bytes().splitlines():
        line = orjson.loads(raw)
        line.pop("time_unix_nano")
        lines.append(orjson.dumps(line, option=orjson.OPT_SORT_KEYS))
    return sorted(lines)


@pytest.mark.parametrize("encoding", ["protobuf", "json"])
def test_serve_reads_every_request_the_same_through_the_core_and_the_python_path(
    tmp_path: Path, encoding: str
) -> None:
    good = good_bodies(encoding)
    bodies = [*good, *(bad_protobuf() if encoding == "protobuf" else bad_json())]
    bodies += mutated(good, MUTATIONS, seed=25)
    servers = {path: start(tmp_path / path, path) for path in ("core", PYTHON)}
    try:
        for path, server in servers.items():
            stats = orjson.loads(post(server.http_port, b"", path="/stats", method="GET")[2])
            assert stats["reading_path"].split()[0] == path
        channels = {
            path: grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}")
            for path, server in servers.items()
        }
        stubs = {
            path: channel.unary_unary(
                "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
                request_serializer=None,
                response_deserializer=None,
            )
            for path, channel in channels.items()
        }
        for n, body in enumerate(bodies):
            answers = {}
            for path, server in servers.items():
                if encoding == "protobuf" and n % 2:  # every other request over gRPC
                    answers[path] = send_grpc(stubs[path], body)
                else:
                    answers[path] = send_http(server, encoding, body)
            assert answers["core"] == answers[PYTHON], f"request {n}: {body[:200]!r}"
        for channel in channels.values():
            channel.close()
    finally:
        stopped = {}
        for path, server in servers.items():
            if server.process.poll() is None:
                stopped[path] = server.stop()
    assert len(stopped) == 2
    core_stats, python_stats = (
        {k: v for k, v in stopped[p].items() if k not in UNCOMPARED} for p in ("core", PYTHON)
    )
    assert core_stats == python_stats
    # the floor is what the repository (and ../shared, when beside it) holds, not a number
    # that only a checkout with ../shared reaches
    sent = [record for _, record in _records()]
    sent_spans = sum(len(record.spans) for record in sent)
    sent_traces = {span.trace_id for record in sent for span in record.spans}
    assert core_stats["spans_received"] >= sent_spans > 0
    assert core_stats["traces_evaluated"] >= len(sent_traces) > 0
    assert core_stats["spans_rejected"] > 0, "the bad requests were rejected in part"
    core_results, python_results = results(servers["core"]), results(servers[PYTHON])
    # a line per trace a case selected (a trace that only builds an agent records no run:
    # ``convert.runs``; serve counts it evaluated and unmatched)
    assert len(core_results) == core_stats["traces_evaluated"] - core_stats["traces_unmatched"]
    assert core_results == python_results
