"""Content carried in OTLP log records, joined to its spans: one document, separate files,
JSON lines and length-prefixed protobuf, the CLI and the batch pass.

The fixture ``data/logs/openai_v2_weather.json`` is written from the GenAI semantic
conventions' event records (OpenAI v2 instrumentation style): a turn span, two ``chat`` spans,
and their ``gen_ai.*`` log records; the first response asks for two calls, the second answers.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from external_truth import split_fixture
from fixtures import DATA
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tooltrail.cli import main
from tooltrail.convert import read_traces
from tooltrail.otlp.decode.span import Diagnostic
from tooltrail.otlp.read.mixed import is_logs_message

FIXTURE = DATA / "logs" / "openai_v2_weather.json"
TRACE = "5b8efff798038103d269b633813fc60c"
REPLY = "Oslo: rain, 7C. Bergen: sun, 12C."
CALLS = [
    ("get_weather", {"city": "Oslo"}, "call_oslo"),
    ("get_weather", {"city": "Bergen"}, "call_bergen"),
]


def _doc() -> dict[str, Any]:
    return json.loads(FIXTURE.read_text())


def _records(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"]  # type: ignore[no-any-return]


def _spans(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return doc["resourceSpans"][0]["scopeSpans"][0]["spans"]  # type: ignore[no-any-return]


def _write(tmp_path: Path, doc: dict[str, Any], name: str = "dump.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def _read(*paths: Path, group: str = "trace") -> tuple[list[Any], list[Diagnostic]]:
    diagnostics: list[Diagnostic] = []
    traces = list(read_traces([str(p) for p in paths], group=group, diagnostics=diagnostics))  # type: ignore[arg-type]
    return traces, diagnostics


def _calls(trace: Any) -> list[tuple[str, Any, Any]]:
    return [(c.name, c.args, c.call_id) for c in trace.tool_calls]


def test_content_in_log_records_gives_calls_and_reply() -> None:
    traces, diagnostics = _read(FIXTURE)
    assert diagnostics == []
    [trace] = traces
    assert _calls(trace) == CALLS
    assert trace.output == REPLY
    assert trace.turn_count == 1
    # the calls are the first model span's request: the echo in the second prompt adds none
    assert {c.span_id for c in trace.tool_calls} == {"eee19b7ec3c1b175"}


def test_without_the_logs_the_trace_has_no_calls_or_reply(tmp_path: Path) -> None:
    doc = _doc()
    del doc["resourceLogs"]
    [trace], _ = _read(_write(tmp_path, doc))
    assert trace.tool_calls == [] and trace.output is None


@pytest.mark.parametrize("framing", ["jsonl", "pb"])
@pytest.mark.parametrize("logs_first", [False, True])
def test_separate_traces_and_logs_files_read_as_one_document(
    tmp_path: Path, framing: str, logs_first: bool
) -> None:
    files = split_fixture(FIXTURE, tmp_path, framing)
    assert len(files) == 2
    if logs_first:
        files.reverse()
    for group in ("trace", "conversation"):
        traces, diagnostics = _read(*files, group=group)
        assert diagnostics == []
        [trace] = traces
        assert (_calls(trace), trace.output) == (CALLS, REPLY)


def test_is_logs_message_tells_the_two_requests_apart(tmp_path: Path) -> None:
    traces_file, logs_file = split_fixture(FIXTURE, tmp_path, "pb")
    traces_body, logs_body = traces_file.read_bytes()[4:], logs_file.read_bytes()[4:]
    assert ExportTraceServiceRequest.FromString(traces_body).resource_spans
    assert ExportLogsServiceRequest.FromString(logs_body).resource_logs
    assert not is_logs_message(traces_body)
    assert is_logs_message(logs_body)
    assert not is_logs_message(b"")
    assert not is_logs_message(b"\x0a\xff")  # truncated: read as traces, which report it


def test_record_without_span_id_joins_the_only_model_span(tmp_path: Path) -> None:
    doc = _doc()
    spans = _spans(doc)
    del spans[2]  # one chat span left
    records = [r for r in _records(doc) if r["spanId"] == "eee19b7ec3c1b175"]
    for record in records:
        del record["spanId"]
    doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"] = records
    traces, diagnostics = _read(_write(tmp_path, doc))
    assert diagnostics == []
    assert _calls(traces[0]) == CALLS


def test_record_without_span_id_and_several_model_spans_is_not_guessed(tmp_path: Path) -> None:
    doc = _doc()
    for record in _records(doc):
        del record["spanId"]
    path = _write(tmp_path, doc)
    [trace], diagnostics = _read(path)
    assert trace.tool_calls == [] and trace.output is None
    messages = [str(d) for d in diagnostics]
    assert len(messages) == 2  # the two gen_ai.choice records; prompts carry nothing read
    assert all(
        m.startswith(f"{path}:1: log record gen_ai.choice of trace {TRACE}") for m in messages
    )
    assert all("2 model spans could own it: not joined" in m for m in messages)


def test_record_naming_a_span_not_read_is_reported(tmp_path: Path) -> None:
    doc = _doc()
    _records(doc)[1]["spanId"] = "00000000000000aa"
    path = _write(tmp_path, doc)
    [trace], diagnostics = _read(path)
    assert trace.tool_calls == []
    assert [str(d) for d in diagnostics] == [
        f"{path}:1: log record gen_ai.choice names span 00000000000000aa of trace {TRACE}, "
        "which was not read: not joined, its content is not read"
    ]


def test_logs_of_a_trace_without_spans_are_reported(tmp_path: Path) -> None:
    doc = _doc()
    logs = {"resourceLogs": doc["resourceLogs"]}
    other = copy.deepcopy(doc)
    del other["resourceLogs"]
    for span in _spans(other):
        span["traceId"] = "0" * 31 + "1"
    traces, diagnostics = _read(_write(tmp_path, other, "t.json"), _write(tmp_path, logs, "l.json"))
    assert len(traces) == 1 and traces[0].tool_calls == []
    assert len(diagnostics) == 2
    assert all(f"of trace {TRACE}: no span of that trace was read" in str(d) for d in diagnostics)


def test_corrupt_log_record_is_a_diagnostic_and_the_rest_is_read(tmp_path: Path) -> None:
    doc = _doc()
    bad = copy.deepcopy(_records(doc)[1])
    bad["spanId"] = "not-hex!"
    _records(doc).insert(0, bad)
    _records(doc).insert(0, "not a record")
    path = _write(tmp_path, doc)
    [trace], diagnostics = _read(path)
    assert (_calls(trace), trace.output) == (CALLS, REPLY)
    messages = [str(d) for d in diagnostics]
    assert len(messages) == 2
    assert messages[0].startswith(f"{path}:1: resourceLogs[0].scopeLogs[0].logRecords[0]")
    assert messages[1].startswith(f"{path}:1: resourceLogs[0].scopeLogs[0].logRecords[1].spanId")


def test_inference_details_records_with_the_older_event_name_attribute(tmp_path: Path) -> None:
    asking = [
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "content": "Two cities."},
                {
                    "type": "tool_call",
                    "id": "c1",
                    "name": "get_weather",
                    "arguments": {"city": "Oslo"},
                },
            ],
        }
    ]
    answering = [
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "content": "Summarise."},
                {"type": "text", "content": "Rain in Oslo."},
            ],
        }
    ]

    def record(span_id: str, output: list[dict[str, Any]]) -> dict[str, Any]:
        name = "gen_ai.client.inference.operation.details"
        return {
            "timeUnixNano": "1700000000900000000",
            "traceId": TRACE,
            "spanId": span_id,
            "attributes": [
                {"key": "otel.event.name", "value": {"stringValue": name}},
                {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(output)}},
            ],
        }

    doc = _doc()
    doc["resourceLogs"][0]["scopeLogs"][0]["logRecords"] = [
        record("eee19b7ec3c1b175", asking),
        record("eee19b7ec3c1b176", answering),
    ]
    [trace], diagnostics = _read(_write(tmp_path, doc))
    assert diagnostics == []
    assert _calls(trace) == [("get_weather", {"city": "Oslo"}, "c1")]
    assert trace.output == "Rain in Oslo."  # reasoning is not reply text


def test_elided_content_is_not_a_reply(tmp_path: Path) -> None:
    doc = _doc()
    last = _records(doc)[-1]
    message = last["body"]["kvlistValue"]["values"][2]["value"]["kvlistValue"]["values"]
    message[1]["value"]["stringValue"] = "<elided>"
    [trace], _ = _read(_write(tmp_path, doc))
    assert trace.output is None
    assert _calls(trace) == CALLS


def test_span_attributes_win_over_log_content(tmp_path: Path) -> None:
    doc = _doc()
    output = [{"role": "assistant", "parts": [{"type": "text", "content": "From the span."}]}]
    _spans(doc)[2]["attributes"].append(
        {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps(output)}}
    )
    [trace], _ = _read(_write(tmp_path, doc))
    assert trace.output == "From the span."


def test_cli_convert_reads_traces_and_logs_files(tmp_path: Path) -> None:
    files = split_fixture(FIXTURE, tmp_path, "jsonl")
    result = CliRunner().invoke(main, ["convert", "--group", "conversation", *map(str, files)])
    assert result.exit_code == 0, result.output
    [line] = result.output.splitlines()
    out = json.loads(line)
    assert [(c["name"], c["args"]) for c in out["tool_calls"]] == [(n, a) for n, a, _ in CALLS]
    assert out["output"] == REPLY


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("framing", ["jsonl", "pb"])
def test_eval_batch_joins_logs_read_in_another_file(
    tmp_path: Path, framing: str, workers: str
) -> None:
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "name: weather\nversion: '1'\ncases:\n  - id: weather\n    match: all\n"
        "    required_tool_order: [get_weather]\n    expected_contains: ['Bergen: sun']\n"
        "    expected_tool_arguments: {get_weather: {city: Oslo}}\n"
    )
    files = split_fixture(FIXTURE, tmp_path, framing)
    out = tmp_path / "report.json"
    args = ["eval", str(suite), *map(str, files), "--workers", workers]
    result = CliRunner().invoke(main, [*args, "--format", "json", "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["passed"] is True, report
    # without the logs file the same suite fails: the content is only in the logs
    alone = CliRunner().invoke(main, ["eval", str(suite), str(files[0]), "--workers", workers])
    assert alone.exit_code == 1


def test_to_eval_trace_joins_log_records_given_among_spans_in_any_order() -> None:
    from tooltrail.convert import to_eval_trace
    from tooltrail.otlp.read.mixed import read_spans_and_logs

    items = list(read_spans_and_logs([str(FIXTURE)]))
    assert {type(i).__name__ for i in items} == {"Span", "SpanHead", "LogRecord"} - {"SpanHead"}
    for order in (items, items[::-1]):
        trace = to_eval_trace(order)
        assert (_calls(trace), trace.output) == (CALLS, REPLY)


def _as_lines(tmp_path: Path, name: str, records: list[dict[str, Any]]) -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.mark.parametrize("framing", ["jsonl", "pb"])
def test_two_passes_wait_for_a_traces_log_records(tmp_path: Path, framing: str) -> None:
    """A big input is read twice and each trace emitted after its last record: the census
    counts log records too, so content in a later logs file still reaches its trace."""
    from tooltrail.otlp.read.mixed import read_spans_and_logs, trace_counts

    files = split_fixture(FIXTURE, tmp_path, framing)
    counts = trace_counts([str(f) for f in files])
    items = list(read_spans_and_logs([str(f) for f in files]))
    assert counts == {TRACE: len(items)} and len(items) == 3 + 5
    paths = [str(f) for f in files]
    for two_pass in (False, True):
        diagnostics: list[Diagnostic] = []
        [trace] = read_traces(paths, two_pass=two_pass, diagnostics=diagnostics)
        assert diagnostics == []
        assert (_calls(trace), trace.output) == (CALLS, REPLY), two_pass


def test_two_passes_with_spans_and_logs_in_one_line_and_traces_in_order(tmp_path: Path) -> None:
    first = _doc()
    second = copy.deepcopy(first)
    other = "0" * 31 + "2"
    for item in _spans(second) + _records(second):
        item["traceId"] = other
    _records(second)[-1]["body"]["kvlistValue"]["values"][2]["value"]["kvlistValue"]["values"][1][
        "value"
    ]["stringValue"] = "Second."
    # the first trace's content comes last, after the second trace's whole line
    spans_only = {"resourceSpans": first["resourceSpans"]}
    logs_only = {"resourceLogs": first["resourceLogs"]}
    path = _as_lines(tmp_path, "mixed.jsonl", [spans_only, second, logs_only])
    outputs = {}
    for two_pass in (False, True):
        traces = list(read_traces([str(path)], two_pass=two_pass))
        outputs[two_pass] = [(t.trace_id, t.output, len(t.tool_calls)) for t in traces]
    assert outputs[False] == outputs[True] == [(other, "Second.", 2), (TRACE, REPLY, 2)]


def _many_traces(count: int) -> list[dict[str, Any]]:
    """``count`` copies of the fixture's trace, each with trace ids of its own."""
    docs = []
    for n in range(count):
        doc = _doc()
        trace_id = f"{n + 1:032x}"
        for item in _spans(doc) + _records(doc):
            item["traceId"] = trace_id
        docs.append(doc)
    return docs


@pytest.mark.parametrize("workers", [1, 2])
def test_batch_chunks_join_log_records_read_in_another_chunk(tmp_path: Path, workers: int) -> None:
    """All spans first, then all log records, in one file cut into many chunks: each trace's
    content lies in another chunk than its spans, and is joined by the merge."""
    from tooltrail.batch import plan_chunks, run_batch
    from tooltrail.suite import TestSuite

    docs = _many_traces(40)
    lines = [{"resourceSpans": d["resourceSpans"]} for d in docs]
    lines += [{"resourceLogs": d["resourceLogs"]} for d in docs]
    path = _as_lines(tmp_path, "dump.jsonl", lines)
    suite = TestSuite.from_dict(
        {
            "name": "weather",
            "version": "1",
            "cases": [
                {
                    "id": "weather",
                    "match": "all",
                    "required_tool_order": ["get_weather"],
                    "expected_contains": ["Bergen: sun"],
                }
            ],
        }
    )
    chunk_bytes = 16 << 10
    assert len(plan_chunks([str(path)], chunk_bytes=chunk_bytes)) > 4
    with run_batch(suite, [str(path)], workers=workers, chunk_bytes=chunk_bytes) as result:
        rows = list(result.results)
        assert result.diagnostics == []
    assert len(rows) == 40
    assert all(row.passed for row in rows), [r for r in rows if not r.passed][:1]


def test_two_passes_with_a_log_record_the_reader_rejects_still_emit_the_trace(
    tmp_path: Path,
) -> None:
    doc = _doc()
    bad = copy.deepcopy(_records(doc)[0])
    bad["body"] = 7  # not an AnyValue: the census (ids only) counts it, the reader rejects it
    _records(doc).append(bad)
    path = _as_lines(tmp_path, "dump.jsonl", [doc])
    for two_pass in (False, True):
        diagnostics: list[Diagnostic] = []
        [trace] = read_traces([str(path)], two_pass=two_pass, diagnostics=diagnostics)
        assert (_calls(trace), trace.output) == (CALLS, REPLY)
        assert [d.message.split(":")[0] for d in diagnostics] == [
            "resourceLogs[0].scopeLogs[0].logRecords[5].body"
        ]


def _plain(value: dict[str, Any]) -> Any:
    """An OTLP/JSON ``AnyValue`` as the plain value it stands for."""
    ((kind, inner),) = value.items()
    if kind == "kvlistValue":
        return {kv["key"]: _plain(kv["value"]) for kv in inner.get("values", [])}
    if kind == "arrayValue":
        return [_plain(v) for v in inner.get("values", [])]
    return int(inner) if kind == "intValue" else inner


def test_a_body_that_is_the_json_text_of_an_object_is_read_as_that_object(
    tmp_path: Path,
) -> None:
    """A logging bridge (Python's ``logging`` through OpenTelemetry's ``LoggingHandler``, as
    Semantic Kernel sends its GenAI events) makes every body a string, the event's name an
    ``event.name`` attribute: the JSON text of the body's object is read as the object."""
    doc = _doc()
    for record in _records(doc):
        body = json.dumps(_plain(record["body"]))
        record["body"] = {"stringValue": body}
        name = record.pop("eventName")
        record["attributes"] = [{"key": "event.name", "value": {"stringValue": name}}]
    for content in (False, True):
        [trace] = list(read_traces(str(_write(tmp_path, doc)), content=content))
        assert _calls(trace) == CALLS
        assert trace.output == REPLY
    assert trace.turns[0].input == "Weather in Oslo and Bergen?"
    assert trace.tool_calls[0].result == {"temp_c": 7, "sky": "rain"}


def test_a_body_of_plain_text_is_no_object(tmp_path: Path) -> None:
    """Text that is not a JSON object stays the record's ``body``: nothing is read from it."""
    doc = _doc()
    for record in _records(doc):
        if record["eventName"] == "gen_ai.choice":
            record["body"] = {"stringValue": "{not json: the reply was Oslo rain"}
    [trace] = list(read_traces(str(_write(tmp_path, doc))))
    assert trace.tool_calls == [] and trace.output is None


def test_a_log_record_read_twice_counts_once(tmp_path: Path) -> None:
    """A record sent twice (an exporter retrying a request that did arrive, a logs file given
    twice) is one record, as a span read twice is one span: its model response asks for its
    calls once. Records that differ in anything stay apart."""
    doc = _doc()
    records = _records(doc)
    records.extend(copy.deepcopy(records))
    path = _write(tmp_path, doc)
    traces, diagnostics = _read(path)
    [trace] = traces
    assert _calls(trace) == CALLS and trace.output == REPLY and diagnostics == []
    logs_only = copy.deepcopy(_doc())
    del logs_only["resourceSpans"]
    logs = _write(tmp_path, logs_only, "logs.json")
    [again], _ = _read(FIXTURE, logs, logs)
    assert _calls(again) == CALLS
    later = copy.deepcopy(_doc())
    choice = next(r for r in _records(later) if r["eventName"] == "gen_ai.choice")
    choice["timeUnixNano"] = str(int(choice["timeUnixNano"]) + 1)  # another response
    del later["resourceSpans"]
    [other], _ = _read(FIXTURE, _write(tmp_path, later, "later.json"))
    assert len(other.tool_calls) == len(CALLS) + 2  # its calls are asked for a second time


def _wrapped(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with a plain span around each model span (as LangGraph's ``execute_task model``
    node span is around its model call), the log records naming the span around theirs."""
    spans = _spans(doc)
    for n, model in enumerate([s for s in spans if s["name"].startswith("chat ")]):
        wrapper = copy.deepcopy(model)
        wrapper.update(name=f"node {n}", spanId=f"aaaa0000000000{n:02d}", attributes=[])
        wrapper.pop("events", None)
        spans.append(wrapper)
        for record in _records(doc):
            if record["spanId"] == model["spanId"]:
                record["spanId"] = wrapper["spanId"]
        model["parentSpanId"] = wrapper["spanId"]
    return doc


def test_a_record_of_the_span_around_one_model_call_joins_that_call(tmp_path: Path) -> None:
    [trace] = list(read_traces(str(_write(tmp_path, _wrapped(_doc()))), content=True))
    assert _calls(trace) == CALLS and trace.output == REPLY
    assert trace.turns[0].input == "Weather in Oslo and Bergen?"


def test_a_record_of_a_span_around_two_model_calls_is_not_guessed(tmp_path: Path) -> None:
    doc = _wrapped(_doc())
    spans = _spans(doc)
    first, second = (s for s in spans if s["name"].startswith("chat "))
    second["parentSpanId"] = first["parentSpanId"]  # both under one span: either could own it
    for record in _records(doc):
        if record["spanId"] != first["parentSpanId"]:
            record["spanId"] = first["parentSpanId"]
    traces, diagnostics = _read(_write(tmp_path, doc))
    [trace] = traces
    assert trace.tool_calls == [] and trace.output is None
    assert diagnostics and all("not a model or agent span" in d.message for d in diagnostics)
