"""Benchmark: decoding + conversion of OTLP dumps against the raw parse of the same bytes.

Generates ~200k spans of GenAI-dialect agent traces (an ``invoke_agent`` root, ``chat`` model
spans with growing message histories, ``execute_tool`` spans: about 40% tool spans), writes
them as length-prefixed protobuf and as collector JSON lines (512 spans per request, like a
BatchSpanProcessor), then times in one run:

- raw protobuf: ``ExportTraceServiceRequest.ParseFromString`` of every record;
- raw JSON: ``orjson.loads`` of every line;
- ``tooltrail.otlp.read_spans`` (decoding only) on each file;
- ``tooltrail.convert.read_traces`` end to end on each file (when the converter is installed);
- a floor for each format: the least work any converter does per span in Python (group by
  trace, read the kind, parse the tool arguments and model output JSON; see ``FLOOR``). Its
  ratio is a ceiling for what ``read_traces`` can reach in Python with these parsers.

A last row reads the JSON-lines dump together with a logs file holding one ``gen_ai.choice``
record per model span (content carried in log records, joined to its spans).

Usage: ``python benchmarks/bench_convert.py [--spans N] [--repeat R] [--dir DIR] [--plain K]``.
Goals (issue 3): read_traces >= 40% of the raw protobuf rate, >= 50% of the orjson rate.
``--plain K`` adds K plain spans (an HTTP client call, a database query, ...) under every tool
call, as instrumented libraries do in real agents; the issue's figures use the default, 0.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import orjson
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span as PbSpan

from tooltrail.otlp import encode_for_file
from tooltrail.otlp.decode.values import set_attributes
from tooltrail.otlp.decode.wire import MappedTraces


def _refund(r: random.Random) -> dict:
    return {"order_id": f"ORD-{r.randrange(10**4)}", "amount": r.randrange(10**4) / 100}


def _flight(r: random.Random) -> dict:
    passengers = [{"name": "A. Martin", "age": 41}]
    return {"from": "CDG", "to": "SFO", "date": "2026-03-01", "passengers": passengers}


TOOLS = {
    "lookup_order": lambda r: {"order_id": f"ORD-{r.randrange(10**4)}"},
    "verify_identity": lambda r: {"customer_id": f"C-{r.randrange(999)}", "method": "sms"},
    "issue_refund": _refund,
    "web_search": lambda r: {"query": "refund policy for damaged items", "max_results": 5},
    "book_flight": _flight,
}
SYSTEM = "You are a support agent for an online shop. Be brief."
USER = "I want a refund for order ORD-7731, customer C-118."
BATCH = 512
#: Distinct traces generated the slow way; the rest are copies of them with fresh ids.
TEMPLATES = 64


def _ids(rng: random.Random, n: int) -> bytes:
    return rng.getrandbits(8 * n).to_bytes(n, "big") or b"\x01" * n


def _span(name: str, kind: int, attrs: dict, start: int, end: int) -> PbSpan:
    span = PbSpan(name=name, start_time_unix_nano=start, end_time_unix_nano=end)
    span.kind = kind  # type: ignore[assignment]
    set_attributes(span.attributes, attrs)
    span.status.SetInParent()
    return span


def _text(role: str, content: str) -> dict:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def _chat_attrs(rng: random.Random, step: int, history: list, out_parts: list) -> dict:
    final = out_parts[0]["type"] == "text"
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
        "gen_ai.response.id": f"chatcmpl-{rng.getrandbits(64):x}",
        "gen_ai.usage.input_tokens": 250 + 40 * step,
        "gen_ai.usage.output_tokens": 25,
        "gen_ai.response.finish_reasons": ["stop" if final else "tool_calls"],
        "gen_ai.input.messages": orjson.dumps(history[-6:]).decode(),
        "gen_ai.output.messages": orjson.dumps(
            [{"role": "assistant", "parts": out_parts}]
        ).decode(),
        "server.address": "api.openai.com",
    }


_PLAIN = (
    ("GET", 3, {"http.request.method": "GET", "url.full": "https://api.shop.example/orders/7731",
                "http.response.status_code": 200, "server.address": "api.shop.example"}),
    ("SELECT orders", 3, {"db.system": "postgresql", "db.operation.name": "SELECT",
                          "db.query.text": "SELECT * FROM orders WHERE id = $1"}),
)  # fmt: skip


def agent_trace(rng: random.Random, n_tools: int, plain: int = 0) -> list[tuple[PbSpan, int]]:
    """One agent run: root ``invoke_agent``, then (chat, tool) x n_tools, then a final chat;
    ``plain`` plain spans under each tool. Spans come out in end order (children first), as
    SDKs export them, each with the index of its parent span (-1: the root)."""
    common = {
        "gen_ai.agent.name": "support_agent",
        "gen_ai.conversation.id": f"conv-{rng.getrandbits(64):016x}",
    }
    t = 1_796_000_000_000_000_000 + rng.randrange(10**15)
    history = [_text("system", SYSTEM), _text("user", USER)]
    spans: list[tuple[PbSpan, int]] = []
    names = list(TOOLS)
    for step in range(n_tools + 1):
        tool = names[rng.randrange(len(names))]
        call_id = f"call_{rng.getrandbits(48):012x}"
        args = TOOLS[tool](rng)
        if step == n_tools:
            out_parts = [{"type": "text", "content": "Your refund of 49.99 was issued."}]
        else:
            out_parts = [{"type": "tool_call", "id": call_id, "name": tool, "arguments": args}]
        chat = {**_chat_attrs(rng, step, history, out_parts), **common}
        spans.append((_span("chat gpt-4o-mini", 3, chat, t, t + 900_000_000), -1))
        t += 901_000_000
        history.append({"role": "assistant", "parts": out_parts})
        if step == n_tools:
            break
        result = {"status": "ok", "detail": "done", "order": {"id": "ORD-7731", "total": 49.99}}
        attrs = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "function",
            "gen_ai.tool.call.arguments": orjson.dumps(args).decode(),
            "gen_ai.tool.call.result": orjson.dumps(result).decode(),
            **common,
        }
        tool_index = len(spans) + plain  # its children end (and come) first
        for k in range(plain):
            name, kind, plain_attrs = _PLAIN[k % len(_PLAIN)]
            start = t + 1_000_000 + k * 2_000_000
            spans.append((_span(name, kind, plain_attrs, start, start + 1_500_000), tool_index))
        spans.append((_span(f"execute_tool {tool}", 1, attrs, t, t + 30_000_000), -1))
        t += 31_000_000
        part = {"type": "tool_call_response", "id": call_id, "response": result}
        history.append({"role": "tool", "parts": [part]})
    root = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.usage.input_tokens": 2000,
        "gen_ai.usage.output_tokens": 200,
        **common,
    }
    start = spans[0][0].start_time_unix_nano - 1_000_000
    spans.append((_span("invoke_agent support_agent", 1, root, start, t), -1))
    return spans


def _with_fresh_ids(rng: random.Random, template: list[tuple[PbSpan, int]], scope: Any) -> None:
    """Copies of ``template`` appended to ``scope.spans``, with new trace and span ids."""
    trace_id = _ids(rng, 16)
    ids = [_ids(rng, 8) for _ in template]
    root_id = ids[-1]
    last = len(template) - 1
    for i, (span, parent) in enumerate(template):
        copy = scope.spans.add()
        copy.CopyFrom(span)
        copy.trace_id = trace_id
        copy.span_id = ids[i]
        if i != last:
            copy.parent_span_id = root_id if parent < 0 else ids[parent]


def generate(n_spans: int, seed: int = 7, plain: int = 0) -> list[ExportTraceServiceRequest]:
    """Requests of about ``BATCH`` spans (whole traces) holding about ``n_spans`` spans."""
    rng = random.Random(seed)
    templates = [agent_trace(rng, 4, plain) for _ in range(TEMPLATES)]  # 40% tool spans at 0
    requests: list[ExportTraceServiceRequest] = []
    total = 0
    scope: Any = None
    while total < n_spans:
        if scope is None or len(scope.spans) >= BATCH:
            request = ExportTraceServiceRequest()
            group = request.resource_spans.add()
            resource = {
                "service.name": "support-agent",
                "telemetry.sdk.language": "python",
                "telemetry.sdk.name": "opentelemetry",
                "telemetry.sdk.version": "1.45.0",
            }
            set_attributes(group.resource.attributes, resource)
            scope = group.scope_spans.add()
            scope.scope.name, scope.scope.version = "pydantic-ai", "1.0.0"
            requests.append(request)
        template = templates[rng.randrange(TEMPLATES)]
        _with_fresh_ids(rng, template, scope)
        total += len(template)
    return requests


#: What the floor rows do per span, and nothing more: keep its head under its trace (spans of
#: a trace arrive over many records), read its kind, and parse the JSON the result needs (a tool
#: call's name, id and arguments; a model call's output messages). No dialects, limits,
#: diagnostics or EvalTrace, the garbage collector off, JSON parsed into structs declaring only
#: what is read: their rate is a ceiling for any converter written in Python over the same
#: parsers, not a target.
FLOOR = "group by trace, read the kind, parse tool arguments and model output"


def choice_logs(requests: list[ExportTraceServiceRequest]) -> list[Any]:
    """One ``gen_ai.choice`` log record per model span (its reply, as the OpenAI v2
    instrumentation writes it), 512 records per request like a batch log processor."""
    from tooltrail.otlp import LogRecord, encode_logs_request

    found = [
        LogRecord(
            trace_id=span.trace_id.hex(),
            span_id=span.span_id.hex(),
            time_ns=span.end_time_unix_nano,
            event_name="gen_ai.choice",
            body={"index": 0, "finish_reason": "stop", "message": {"content": "Done."}},
        )
        for request in requests
        for span in request.resource_spans[0].scope_spans[0].spans
        if span.name.startswith("chat")
    ]
    return [encode_logs_request(found[i : i + 512]) for i in range(0, len(found), 512)]


def _floor_protobuf(records: list[bytes]) -> int:
    """Spans of ``records`` given the least work any converter does in Python (``FLOOR``),
    over the C-parsed attribute map tooltrail reads protobuf with."""
    traces: dict[str, list[tuple]] = {}
    loads = orjson.loads
    for b in records:
        for resource_spans in MappedTraces.FromString(b).resource_spans:
            for scope_spans in resource_spans.scope_spans:
                for s in scope_spans.spans:
                    a = s.attributes
                    v = a.get("gen_ai.operation.name")
                    operation = v.string_value if v is not None else None
                    found: Any = None
                    if operation == "execute_tool":
                        found = (
                            a["gen_ai.tool.name"].string_value,
                            a["gen_ai.tool.call.id"].string_value,
                            loads(a["gen_ai.tool.call.arguments"].string_value),
                        )
                    elif operation == "chat":
                        found = loads(a["gen_ai.output.messages"].string_value)
                    head = (s.span_id.hex(), s.parent_span_id.hex(), s.name,
                            s.start_time_unix_nano, s.end_time_unix_nano, s.status)  # fmt: skip
                    trace_id = s.trace_id.hex()
                    spans = traces.get(trace_id)
                    if spans is None:
                        traces[trace_id] = spans = []
                    spans.append((head, operation, found))
    return sum(len(t) for t in traces.values())


class _Value(msgspec.Struct):
    stringValue: str | None = None


class _KeyValue(msgspec.Struct):
    key: str
    value: _Value | None = None


class _Span(msgspec.Struct):
    traceId: str
    spanId: str
    name: str
    startTimeUnixNano: str
    endTimeUnixNano: str
    parentSpanId: str = ""
    attributes: list[_KeyValue] = []
    status: dict = {}


class _ScopeSpans(msgspec.Struct):
    spans: list[_Span] = []


class _ResourceSpans(msgspec.Struct):
    scopeSpans: list[_ScopeSpans] = []


class _Request(msgspec.Struct):
    resourceSpans: list[_ResourceSpans] = []


def _floor_json(lines: list[bytes]) -> int:
    """Spans of ``lines`` given the fastest parse into Python objects at hand (``msgspec``
    into structs declaring only what is read, not ``orjson.loads``) and the same least work
    (``FLOOR``)."""
    traces: dict[str, list[tuple]] = {}
    loads = orjson.loads
    decode = msgspec.json.Decoder(_Request).decode
    for line in lines:
        for resource_spans in decode(line).resourceSpans:
            for scope_spans in resource_spans.scopeSpans:
                for s in scope_spans.spans:
                    a = {kv.key: kv.value for kv in s.attributes}
                    v = a.get("gen_ai.operation.name")
                    operation = v.stringValue if v is not None else None
                    found: Any = None
                    if operation == "execute_tool":
                        found = (
                            a["gen_ai.tool.name"].stringValue,  # type: ignore[union-attr]
                            a["gen_ai.tool.call.id"].stringValue,  # type: ignore[union-attr]
                            loads(a["gen_ai.tool.call.arguments"].stringValue),  # type: ignore[union-attr]
                        )
                    elif operation == "chat":
                        found = loads(a["gen_ai.output.messages"].stringValue)  # type: ignore[union-attr]
                    head = (s.spanId.lower(), s.parentSpanId, s.name,
                            int(s.startTimeUnixNano), int(s.endTimeUnixNano), s.status)  # fmt: skip
                    trace_id = s.traceId.lower()
                    spans = traces.get(trace_id)
                    if spans is None:
                        traces[trace_id] = spans = []
                    spans.append((head, operation, found))
    return sum(len(t) for t in traces.values())


def floor_protobuf(records: list[bytes]) -> int:
    """``_floor_protobuf`` with the cyclic garbage collector off (a ceiling gets every edge)."""
    return _without_gc(_floor_protobuf, records)


def floor_json(lines: list[bytes]) -> int:
    """``_floor_json`` with the cyclic garbage collector off (a ceiling gets every edge)."""
    return _without_gc(_floor_json, lines)


def _without_gc(fn: Callable[[list[bytes]], int], data: list[bytes]) -> int:
    enabled = gc.isenabled()
    gc.disable()
    try:
        return fn(data)
    finally:
        if enabled:
            gc.enable()


def timed(fn: Callable[[], int], repeat: int) -> tuple[float, int]:
    """Best wall time of ``repeat`` runs, and what the function counted."""
    best, result = float("inf"), 0
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--spans", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", help="write the dumps here (default: a temporary directory)")
    parser.add_argument("--plain", type=int, default=0, help="plain spans under each tool call")
    options = parser.parse_args()

    t0 = time.perf_counter()
    requests = generate(options.spans, plain=options.plain)
    n = sum(len(r.resource_spans[0].scope_spans[0].spans) for r in requests)
    tools = sum(
        1 for r in requests for s in r.resource_spans[0].scope_spans[0].spans
        if s.name.startswith("execute_tool")
    )  # fmt: skip
    directory = Path(options.dir or tempfile.mkdtemp(prefix="tooltrail-bench-"))
    directory.mkdir(parents=True, exist_ok=True)
    pb_path, json_path = directory / "dump.pb", directory / "dump.jsonl"
    with open(pb_path, "wb") as out:
        for request in requests:
            out.write(encode_for_file(request, "proto"))
    with open(json_path, "wb") as out:
        for request in requests:
            out.write(encode_for_file(request, "json"))
    logs_path = directory / "logs.jsonl"
    with open(logs_path, "wb") as out:
        for logs_request in choice_logs(requests):
            out.write(encode_for_file(logs_request, "json"))
    records = [r.SerializeToString() for r in requests]
    lines = json_path.read_bytes().splitlines()
    del requests
    print(
        f"{n} spans ({tools / n:.0%} tool spans) in {len(records)} requests, generated in "
        f"{time.perf_counter() - t0:.1f}s; protobuf {pb_path.stat().st_size / 1e6:.0f} MB, "
        f"JSON {json_path.stat().st_size / 1e6:.0f} MB"
    )

    def raw_pb() -> int:
        parse = ExportTraceServiceRequest.FromString
        return sum(len(parse(b).resource_spans[0].scope_spans[0].spans) for b in records)

    def raw_json() -> int:
        loads = orjson.loads
        return sum(len(loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]) for line in lines)

    from tooltrail.otlp import read_spans

    def spans_of(path: Path) -> Callable[[], int]:
        return lambda: sum(1 for _ in read_spans(path))

    rows: list[tuple[str, Callable[[], int]]] = [
        ("raw protobuf ParseFromString", raw_pb),
        ("tooltrail.otlp.read_spans, protobuf", spans_of(pb_path)),
        ("floor: least conversion work, protobuf", lambda: floor_protobuf(records)),
        ("raw orjson.loads per line", raw_json),
        ("floor: least conversion work, JSON lines", lambda: floor_json(lines)),
        ("tooltrail.otlp.read_spans, JSON lines", spans_of(json_path)),
    ]
    try:
        from tooltrail.convert import read_traces
    except ImportError:
        read_traces = None  # type: ignore[assignment]
    if read_traces is not None:

        def traces_of(path: Path) -> Callable[[], int]:
            return lambda: sum(len(t.tool_calls) for t in read_traces(str(path)))

        def traces_and_logs() -> int:
            paths = [str(json_path), str(logs_path)]
            return sum(len(t.tool_calls) for t in read_traces(paths))

        rows.insert(2, ("tooltrail.convert.read_traces, protobuf", traces_of(pb_path)))
        rows.append(("tooltrail.convert.read_traces, JSON lines", traces_of(json_path)))
        rows.append(("read_traces, JSON lines + logs file", traces_and_logs))

    rates: dict[str, float] = {}
    print(f"{'':42s} {'seconds':>8s} {'spans/s':>10s}")
    for label, fn in rows:
        seconds, _count = timed(fn, options.repeat)
        rates[label] = n / seconds
        print(f"{label:42s} {seconds:8.3f} {n / seconds:10,.0f}")
    baselines = (
        ("protobuf", "raw protobuf ParseFromString"),
        ("JSON lines", "raw orjson.loads per line"),
    )
    for fmt, raw in baselines:
        for what in (
            "floor: least conversion work",
            "tooltrail.otlp.read_spans",
            "tooltrail.convert.read_traces",
            "read_traces",
        ):
            label = f"{what}, {fmt}" if what != "read_traces" else f"{what}, {fmt} + logs file"
            if label in rates:
                print(f"{label:42s} {rates[label] / rates[raw]:7.0%} of {raw}")
    if not options.dir:
        for path in (pb_path, json_path, logs_path):
            os.unlink(path)
        os.rmdir(directory)


if __name__ == "__main__":
    main()
