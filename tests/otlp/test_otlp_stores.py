"""Trace-store downloads (Jaeger JSON, Grafana Tempo JSON) read exactly like OTLP.

Fixtures in tests/data/stores/ are hand-written: ``jaeger_agent.json`` (a pretty-printed Jaeger
API response with two traces: a travel agent's, with GenAI tool spans, and a 64-bit-id trace
linked by FOLLOWS_FROM), ``jaeger_bad.json`` (one good span among broken ones),
``tempo_batches.json`` (``{"batches": ...}``, hex ids) and ``tempo_trace_base64.json``
(``{"trace": {"resourceSpans": ...}}``, base64 ids).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixtures import DATA, EXTERNAL, ROOT

from tooltrail.batch import run_batch
from tooltrail.cli import main
from tooltrail.convert import read_traces
from tooltrail.otlp import (
    Diagnostic,
    Interest,
    Limits,
    Span,
    SpanHead,
    decode_json_request,
    iter_records,
    read_spans,
)
from tooltrail.otlp.decode.span import STATUS_ERROR, STATUS_OK, STATUS_UNSET
from tooltrail.otlp.read.census import span_counts
from tooltrail.suite import TestSuite

STORES = DATA / "stores"
JAEGER = STORES / "jaeger_agent.json"
BAD = STORES / "jaeger_bad.json"
TEMPO = STORES / "tempo_batches.json"
TEMPO_B64 = STORES / "tempo_trace_base64.json"
SAMPLES = EXTERNAL / "samples"

T1 = "4bf92f3577b34da6a3ce929d0e0e4736"
T2 = "0000000000000000a3ce929d0e0e4736"
ROOT_ID = "00f067aa0ba902b7"
T0_NS = 1767225600000000000

POLICY = TestSuite.from_dict(
    {
        "name": "stores",
        "cases": [
            {
                "id": "travel",
                "match": {"agent_name": "travel_agent"},
                "required_tools": ["get_weather", "book_hotel"],
                "expected_tool_arguments": {"book_hotel": {"city": "Paris", "nights": 2}},
            },
            {"id": "shop", "match": {"agent_name": "shop_agent"}, "required_tools": ["search"]},
            {"id": "mail", "match": {"agent_name": "mail_agent"}, "required_tools": ["send_mail"]},
        ],
    }
)


def spans_of(path: Path | str, **kwargs: object) -> tuple[dict[str, Span], list[Diagnostic]]:
    found: list[Diagnostic] = []
    spans = list(read_spans([str(path)], diagnostics=found, **kwargs))  # type: ignore[arg-type]
    return {s.span_id: s for s in spans}, found


# --- Jaeger: every field ---------------------------------------------------------------------


def test_jaeger_spans_keep_ids_parents_and_times_in_nanoseconds() -> None:
    spans, found = spans_of(JAEGER)
    assert found == []
    assert len(spans) == 6  # both traces of `data`
    root = spans[ROOT_ID]
    assert (root.trace_id, root.parent_span_id, root.name) == (T1, "", "invoke_agent travel_agent")
    assert (root.start_ns, root.end_ns) == (T0_NS, T0_NS + 2_500_000_000)
    chat = spans["b7ad6b7169203331"]
    assert chat.parent_span_id == ROOT_ID
    assert (chat.start_ns, chat.end_ns) == (T0_NS + 100_000_000, T0_NS + 1_000_000_000)
    # Jaeger dropped leading zeros: ids come back at full width
    assert "0a2fb4a1d1a96d31" in spans
    assert spans["0000000000000001"].trace_id == T2
    assert spans["0000000000000001"].parent_span_id == ""
    # FOLLOWS_FROM is the parent when there is no CHILD_OF
    assert spans["0000000000000002"].parent_span_id == "0000000000000001"
    assert root.origin == f"{JAEGER}:1"


def test_jaeger_derived_tags_go_back_to_kind_status_and_scope() -> None:
    spans, _ = spans_of(JAEGER)
    root, chat = spans[ROOT_ID], spans["b7ad6b7169203331"]
    tool, booking = spans["5fb397be34d26b51"], spans["0a2fb4a1d1a96d31"]
    assert (root.kind, chat.kind, tool.kind, booking.kind) == (2, 3, 1, 0)
    assert (spans["0000000000000001"].kind, spans["0000000000000002"].kind) == (5, 4)
    assert (root.status_code, root.status_message) == (STATUS_OK, "")
    assert (booking.status_code, booking.status_message) == (STATUS_ERROR, "payment declined")
    assert tool.status_code == STATUS_UNSET
    assert spans["0000000000000001"].status_code == STATUS_ERROR  # `error=true` alone
    assert root.scope_name == "travel.agent"
    for span in (root, chat, tool, booking):
        for derived in ("span.kind", "otel.status_code", "otel.status_description", "error"):
            assert derived not in span.attributes
        for dropped in ("otel.scope.name", "otel.scope.version", "internal.span.format"):
            assert dropped not in span.attributes


def test_jaeger_tags_are_typed_attributes() -> None:
    spans, _ = spans_of(JAEGER)
    chat, booking = spans["b7ad6b7169203331"], spans["0a2fb4a1d1a96d31"]
    assert dict(chat.attributes) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.request.temperature": 0.2,
        "gen_ai.usage.input_tokens": 412,
        "gen_ai.usage.output_tokens": 9007199254740993,  # past 2**53: Jaeger writes a string
        "llm.is_streaming": False,
    }
    assert type(chat.attributes["gen_ai.usage.input_tokens"]) is int
    assert booking.attributes["booking.receipt"] == b"\x00\x01HX-42"  # binary: base64
    assert json.loads(booking.attributes["gen_ai.tool.call.arguments"]) == {
        "city": "Paris",
        "nights": 2,
    }


def test_jaeger_logs_are_events_named_by_their_event_field() -> None:
    spans, _ = spans_of(JAEGER)
    (prompt,) = spans["b7ad6b7169203331"].events
    assert prompt.name == "gen_ai.content.prompt"
    assert prompt.time_ns == T0_NS + 150_000_000
    assert dict(prompt.attributes) == {"gen_ai.prompt": "Weather in Paris?"}
    (exception,) = spans["0a2fb4a1d1a96d31"].events
    assert exception.name == "exception"
    assert dict(exception.attributes) == {
        "exception.type": "PaymentError",
        "exception.escaped": False,
    }


def test_jaeger_process_is_the_resource() -> None:
    spans, _ = spans_of(JAEGER)
    resource = spans[ROOT_ID].resource
    assert dict(resource) == {
        "service.name": "travel-agent",
        "host.name": "agent-7",
        "process.pid": 4242,
        "deployment.canary": True,
    }
    assert spans["b7ad6b7169203331"].resource is resource  # shared, as OTLP's is
    assert dict(spans["0000000000000002"].resource) == {"service.name": "orders"}


def test_a_bare_trace_and_a_span_with_its_process_inline(tmp_path: Path) -> None:
    doc = json.loads(JAEGER.read_text())
    bare = tmp_path / "trace.json"
    bare.write_text(json.dumps(doc["data"][1]))
    spans, found = spans_of(bare)
    assert found == [] and sorted(spans) == ["0000000000000001", "0000000000000002"]
    # Jaeger's storage exporters: one span per line, process inline, values as text
    inline = {
        "traceID": "a3ce929d0e0e4736",
        "spanID": "0b",
        "parentSpanID": "0a",
        "operationName": "execute_tool lookup",
        "startTime": 1767225600000000,
        "duration": 5,
        "tags": [
            {"key": "gen_ai.tool.name", "type": "string", "value": "lookup"},
            {"key": "attempt", "type": "int64", "value": "2"},
            {"key": "cached", "type": "bool", "value": "true"},
            {"key": "score", "type": "float64", "value": "0.5"},
            {"key": "blob", "type": "binary", "value": "00ff"},
        ],
        "process": {
            "serviceName": "tools",
            "tags": [{"key": "pid", "type": "int64", "value": "7"}],
        },
    }
    lines = tmp_path / "spans.jsonl"
    lines.write_text(json.dumps(inline) + "\n" + json.dumps({**inline, "spanID": "0c"}) + "\n")
    spans, found = spans_of(lines)
    assert found == [] and sorted(spans) == ["000000000000000b", "000000000000000c"]
    span = spans["000000000000000b"]
    assert span.parent_span_id == "000000000000000a"
    assert dict(span.attributes) == {
        "gen_ai.tool.name": "lookup",
        "attempt": 2,
        "cached": True,
        "score": 0.5,
        "blob": b"\x00\xff",
    }
    assert dict(span.resource) == {"service.name": "tools", "pid": 7}
    assert span.origin == f"{lines}:1" and spans["000000000000000c"].origin == f"{lines}:2"


def test_a_reference_to_another_trace_is_not_the_parent(tmp_path: Path) -> None:
    span = {
        "traceID": "a1",
        "spanID": "b1",
        "operationName": "x",
        "startTime": 1,
        "duration": 1,
        "references": [
            {"refType": "CHILD_OF", "traceID": "ff", "spanID": "c1"},
            {"refType": "FOLLOWS_FROM", "traceID": "a1", "spanID": "d1"},
        ],
    }
    (read,) = decode_json_request(json.dumps({"data": [{"spans": [span]}]}))
    assert read.parent_span_id == "00000000000000d1"


# --- bad input --------------------------------------------------------------------------------


def test_bad_jaeger_spans_are_diagnostics_naming_file_line_and_field() -> None:
    spans, found = spans_of(BAD)
    assert list(spans) == ["b7ad6b7169203331", "00f067aa0ba902bb"]
    good = spans["b7ad6b7169203331"]
    assert dict(good.attributes) == {"gen_ai.tool.name": "lookup"}  # bad tags dropped
    assert spans["00f067aa0ba902bb"].resource == {}  # unknown processID
    assert all(d.path == str(BAD) and d.line == 1 for d in found)
    messages = [d.message for d in found]
    expected = [
        r"data\[0\]\.spans\[0\]\.tags\[1\]\.value: expected an int64 value, got str; dropped",
        r"data\[0\]\.spans\[0\]\.tags\[2\]\.key: expected a string, got int; dropped",
        r"data\[0\]\.spans\[1\]\.spanID: span rejected: expected a hex string, got null",
        r"data\[0\]\.spans\[2\]\.spanID: span rejected: expected up to 16 hex digits",
        r"data\[0\]\.spans\[3\]\.traceID: span rejected: expected up to 32 hex digits",
        r"data\[0\]\.spans\[4\]\.startTime: span rejected: expected an integer",
        r"data\[0\]\.spans\[5\]\.references\[0\]\.spanID: span rejected",
        r"data\[0\]\.spans\[6\]\.tags: span rejected: expected a list, got dict",
        r"data\[0\]\.spans\[7\]\.processID: no such process",
        r"data\[0\]\.spans\[8\]: span rejected: expected a span object, got str",
        r"data\[1\]: expected a trace object, got int; skipped",
    ]
    assert len(messages) == len(expected)
    for message, pattern in zip(messages, expected, strict=True):
        assert re.match(pattern, message), message
    assert "many" not in " ".join(messages)  # values are never echoed, only ids


def test_an_error_response_is_reported_and_reads_no_spans(tmp_path: Path) -> None:
    path = tmp_path / "missing.json"
    path.write_text(
        '{"data": null, "total": 0, "limit": 0, "offset": 0,'
        ' "errors": [{"code": 404, "msg": "trace not found"}]}'
    )
    spans, found = spans_of(path)
    assert spans == {}
    assert [str(d) for d in found] == [
        f"{path}:1: errors[0]: the trace store reported an error: 404 trace not found"
    ]


def test_a_json_file_that_is_neither_is_still_not_otlp(tmp_path: Path) -> None:
    (tmp_path / "notes.json").write_text('{"data": {"what": "not a trace"}}\n')
    assert spans_of(tmp_path) == ({}, [])  # found in a directory: skipped quietly
    _, found = spans_of(tmp_path / "notes.json")
    assert [d.message for d in found] == [
        "not an OTLP traces file: not an OTLP traces document (no resourceSpans)"
    ]


def test_limits_apply_to_jaeger_tags_and_logs(tmp_path: Path) -> None:
    span = {
        "traceID": "a1",
        "spanID": "b1",
        "operationName": "x",
        "startTime": 1,
        "duration": 1,
        "tags": [{"key": f"k{i}", "type": "string", "value": "v" * 50} for i in range(5)],
        "logs": [{"timestamp": 1, "fields": [{"key": "event", "value": "e"}]}] * 4,
    }
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"data": [{"spans": [span]}]}))
    limits = Limits(max_attributes=3, max_events_per_span=2, max_attribute_value_bytes=10)
    spans, found = spans_of(path, limits=limits)
    (read,) = spans.values()
    assert list(read.attributes) == ["k0", "k1", "k2"]
    assert read.attributes["k0"].startswith("v" * 10) and read.attributes["k0"].endswith("]")
    assert len(read.events) == 2
    messages = " | ".join(d.message for d in found)
    assert "more than 3 attributes; rest dropped" in messages
    assert "more than 2 events; rest dropped" in messages
    assert "truncated to 10" in messages


# --- Tempo --------------------------------------------------------------------------------------


def test_tempo_batches_with_hex_ids() -> None:
    spans, found = spans_of(TEMPO)
    assert found == []
    root, tool = spans["eee19b7ec3c1b174"], spans["eee19b7ec3c1b175"]
    assert root.trace_id == tool.trace_id == "5b8efff798038103d269b633813fc60c"
    assert (root.parent_span_id, tool.parent_span_id) == ("", "eee19b7ec3c1b174")
    assert (root.kind, tool.kind, tool.status_code) == (2, 1, STATUS_OK)
    assert (root.scope_name, tool.scope_name) == ("shop.agent", "shop.tools")
    assert root.resource == {"service.name": "shop-agent"}
    assert tool.start_ns == 1767225600100000000 and tool.attributes["result.count"] == 3


def test_tempo_trace_with_base64_ids() -> None:
    spans, found = spans_of(TEMPO_B64)
    assert found == []
    root, tool = spans["1112131415161718"], spans["2122232425262728"]
    assert root.trace_id == tool.trace_id == "0102030405060708090a0b0c0d0e0f10"
    assert tool.parent_span_id == "1112131415161718"
    assert (tool.kind, tool.status_code, tool.status_message) == (3, STATUS_ERROR, "smtp timeout")


def test_tempo_diagnostics_name_the_wrapper_field(tmp_path: Path) -> None:
    doc = json.loads(TEMPO.read_text())
    doc["batches"][1]["scopeSpans"][0]["spans"][0]["spanId"] = "nothex"
    path = tmp_path / "tempo.json"
    path.write_text(json.dumps(doc))
    spans, found = spans_of(path)
    assert list(spans) == ["eee19b7ec3c1b174"]
    (problem,) = found
    assert problem.message.startswith("batches[1].scopeSpans[0].spans[0].spanId: span rejected")
    wrapped = tmp_path / "trace.json"
    wrapped.write_text(json.dumps({"trace": {"resourceSpans": "no"}}))
    _, found = spans_of(wrapped)
    assert [d.message for d in found] == ["trace.resourceSpans: expected a list"]


# --- every reading path -------------------------------------------------------------------------


ALL = [JAEGER, BAD, TEMPO, TEMPO_B64]


def test_the_census_counts_what_read_spans_reads() -> None:
    for path in ALL:
        counted = span_counts([str(path)])
        read: dict[str, int] = {}
        for span in read_spans([str(path)]):
            read[span.trace_id] = read.get(span.trace_id, 0) + 1
        assert counted == read, path


def test_spans_outside_an_interest_come_as_heads() -> None:
    interest = Interest(frozenset(), ("execute_tool",), ("gen_ai.tool.name",))
    spans, _ = spans_of(JAEGER, interest=interest)
    assert type(spans[ROOT_ID]) is Span  # a root is always read
    assert type(spans["5fb397be34d26b51"]) is Span
    head = spans["b7ad6b7169203331"]
    assert type(head) is SpanHead and head.parent_span_id == ROOT_ID
    assert head.resource["service.name"] == "travel-agent"


def test_iter_records_and_decode_json_request() -> None:
    (record,) = iter_records(JAEGER)
    assert (record.line, len(record.spans)) == (1, 6)
    assert len(decode_json_request(TEMPO.read_bytes())) == 2
    assert len(decode_json_request(json.loads(TEMPO_B64.read_text()))) == 2


@pytest.mark.parametrize("two_pass", [False, True])
def test_read_traces_finds_the_tool_calls(two_pass: bool) -> None:
    found: list[Diagnostic] = []
    traces = {
        t.trace_id: t
        for t in read_traces([str(p) for p in ALL], diagnostics=found, two_pass=two_pass)
    }
    travel = traces[T1]
    assert [(c.name, c.args) for c in travel.tool_calls] == [
        ("get_weather", {"city": "Paris", "unit": "C"}),
        ("book_hotel", {"city": "Paris", "nights": 2}),
    ]
    assert travel.tool_calls[1].span_id == "0a2fb4a1d1a96d31"
    assert [c.name for c in traces["5b8efff798038103d269b633813fc60c"].tool_calls] == ["search"]
    mail = traces["0102030405060708090a0b0c0d0e0f10"]
    assert [(c.name, c.args) for c in mail.tool_calls] == [("send_mail", {"to": "ops@example.com"})]
    assert len(found) == 11  # jaeger_bad.json's, once each


# --- CLI and batch ------------------------------------------------------------------------------


def test_cli_convert_prints_the_calls_of_a_jaeger_download() -> None:
    result = CliRunner().invoke(main, ["convert", str(JAEGER)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [row["trace_id"] for row in rows] == [T1, T2]
    assert [c["name"] for c in rows[0]["tool_calls"]] == ["get_weather", "book_hotel"]


def _eval(workers: str, *paths: Path | str) -> tuple[int, str]:
    options = ["--workers", workers, "-q", "--format", "json"]
    result = CliRunner().invoke(main, ["eval", *options, str(_suite_file()), *map(str, paths)])
    return result.exit_code, result.stdout


def _suite_file() -> Path:
    return ROOT / "examples" / "jaeger" / "suite.yaml"


def test_cli_eval_reads_jaeger_and_tempo_with_one_and_two_workers() -> None:
    example = ROOT / "examples" / "jaeger" / "refund_traces.json"
    one = _eval("1", example, TEMPO, TEMPO_B64)
    two = _eval("2", example, TEMPO, TEMPO_B64)
    assert one == two
    code, out = one
    assert code == 1  # the wrong-amount run fails the policy
    report = json.loads(out)
    rows = report.get("cases") or report.get("results")
    assert [(r["label"], r["passed"]) for r in rows] == [
        ("correct", True),
        ("wrong-amount", False),
    ]


def test_batch_cuts_a_big_file_of_jaeger_lines_across_two_workers(tmp_path: Path) -> None:
    doc = json.loads(JAEGER.read_text())
    travel = doc["data"][0]
    lines = []
    for i in range(40):
        trace_id = f"{i + 1:032x}"
        spans = [{**s, "traceID": trace_id} for s in travel["spans"]]
        lines.append(json.dumps({"data": [{**travel, "traceID": trace_id, "spans": spans}]}))
    path = tmp_path / "downloads.jsonl"
    path.write_text("\n".join(lines) + "\n")
    one = run_batch(POLICY, [str(path)], workers=1)
    two = run_batch(POLICY, [str(path)], workers=2, chunk_bytes=20_000)
    assert two.chunk_count > 1
    assert len(one.results) == len(two.results) == 40
    assert all(r.passed for r in two.results) and two.diagnostics == []
    assert two.span_count == 40 * 4


def test_batch_on_a_dask_cluster_reads_store_downloads() -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        result = run_batch(POLICY, [str(p) for p in ALL], dask_address=cluster.scheduler_address)
    by_case = sorted((r.case_id, r.passed) for r in result.results)
    assert by_case == [("mail", True), ("shop", True), ("travel", True)]
    assert len(result.diagnostics) == 11


# --- the README section ------------------------------------------------------------------------


def _readme_section() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("## Evaluate a trace from Jaeger or Grafana")
    end = readme.index("\n## ", start + 1)
    return readme[start:end]


def test_readme_section_commands_run_verbatim_and_print_what_it_shows() -> None:
    section = _readme_section()
    fences = re.findall(r"^```(\w*)\n(.*?)^```$", section, re.S | re.M)
    commands = [line for info, body in fences if info == "bash" for line in body.splitlines()]
    shown = next(body for info, body in fences if info == "text")
    assert commands and all(c.startswith("tooltrail ") for c in commands)
    exe = shutil.which("tooltrail", path=str(Path(sys.executable).parent)) or "tooltrail"
    outputs = []
    for command in commands:
        proc = subprocess.run(
            [exe, *command.split()[1:]], cwd=ROOT, capture_output=True, text=True, timeout=120
        )
        assert proc.returncode in (0, 1), proc.stderr
        outputs.append(proc.stdout)
    assert shown in outputs


# --- real downloads (read from the shared checkout, never copied) ---------------------------------


def _sample(name: str) -> Path:
    path = SAMPLES / name
    if not path.exists():
        pytest.skip(f"real Jaeger/Tempo downloads not present at {SAMPLES}")
    return path


def _count_spans(doc: dict) -> int:
    if "data" in doc:
        return sum(len(trace["spans"]) for trace in doc["data"])
    return sum(
        len(scope["spans"])
        for batch in doc["batches"]
        for scope in batch.get("scopeSpans", []) + batch.get("instrumentationLibrarySpans", [])
    )


@pytest.mark.parametrize(
    "name",
    ["helm.json", "helm_2.json", "helm_3.json", "k8s.json", "tempo_export_with_batches.json"],
)
def test_real_downloads_read_every_span(name: str) -> None:
    path = _sample(name)
    expected = _count_spans(json.loads(path.read_text()))
    spans, found = spans_of(path)
    assert found == []
    assert len(spans) == expected
    assert sum(span_counts([str(path)]).values()) == expected


def test_real_download_with_made_up_span_ids_is_reported_span_by_span() -> None:
    # helm_reversed_order.json is hand-made: its span ids ("invoke00000001") are not hex,
    # which no Jaeger writes; each span is rejected with a diagnostic naming it.
    path = _sample("helm_reversed_order.json")
    expected = _count_spans(json.loads(path.read_text()))
    spans, found = spans_of(path)
    assert spans == {}
    assert len(found) == expected
    assert all(".spanID: span rejected" in d.message for d in found)
