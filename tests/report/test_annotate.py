"""Offline annotation: evaluation events as an OTLP logs file, and a trace copy with
``tooltrail.evaluation`` spans, both read back with tooltrail's reader and as plain JSON.

Inputs are real ADK refund and booking runs from the corpus, evaluated by tooltrail's engine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures import CORPUS, refund_test_case

from tooltrail import TestCase, evaluate_trace
from tooltrail.annotate import (
    EVALUATION_SPAN_NAME,
    annotate_run,
    read_evaluations,
    read_traces_with_evaluations,
    write_annotated_traces,
    write_annotations,
)
from tooltrail.convert import read_traces
from tooltrail.otlp import read_log_records, read_spans
from tooltrail.otlp.decode.span import STATUS_ERROR, STATUS_UNSET
from tooltrail.results import CaseResult
from tooltrail.scores import attach_evaluations

ADK = CORPUS / "google-adk"
REFUND_RUNS = [
    str(ADK / f"{name}.otlp.jsonl")
    for name in (
        "a_refund_ok",
        "b_refund_skip_verify",
        "c_refund_wrong_amount",
        "d_loop_web_search",
    )
]
BOOKING = str(ADK / "e_booking_multiturn_bad.otlp.jsonl")

REFUND = refund_test_case(
    "required_tools", "required_tool_order", "expected_tool_arguments", "evaluators"
)


def evaluated(paths, case=REFUND, group="trace"):
    traces = list(read_traces(paths, group=group))
    return traces, [evaluate_trace(case, t) for t in traces]


def spans_by_trace(path):
    out: dict[str, list] = {}
    for span in read_spans(path):
        out.setdefault(span.trace_id, []).append(span)
    return out


@pytest.fixture
def refund_copy(tmp_path):
    traces, results = evaluated(REFUND_RUNS)
    out = tmp_path / "annotated.otlp.jsonl"
    added = write_annotated_traces(out, read_spans(REFUND_RUNS), results, traces=traces)
    return out, traces, results, added


def test_one_evaluation_span_per_case_under_the_root_span(refund_copy):
    out, traces, _, added = refund_copy
    assert added == 4
    copy = spans_by_trace(out)
    for trace in traces:
        evaluations = [s for s in copy[trace.trace_id] if s.name == EVALUATION_SPAN_NAME]
        roots = [s for s in copy[trace.trace_id] if not s.parent_span_id]
        assert len(evaluations) == 1
        assert [r.span_id for r in roots] == [trace.metadata["root_span_id"]]
        assert evaluations[0].parent_span_id == roots[0].span_id


def test_evaluation_span_carries_the_case_verdict(refund_copy):
    out, traces, _, _ = refund_copy
    wrong = next(t for t in traces if t.trace_id == "e562ea0902561c76b362a32db16b4bd3")
    [span] = [s for s in spans_by_trace(out)[wrong.trace_id] if s.name == EVALUATION_SPAN_NAME]
    attributes = dict(span.attributes)
    assert attributes["tooltrail.case_id"] == "refund"
    assert attributes["tooltrail.passed"] is False
    assert attributes["tooltrail.failed_scores"] == ["tool_arg_values:issue_refund"]
    assert attributes["gen_ai.evaluation.name"] == "tooltrail.case"
    assert attributes["gen_ai.evaluation.score.value"] == 0.0
    assert attributes["gen_ai.evaluation.score.label"] == "fail"
    assert span.status_code == STATUS_ERROR
    assert "gen_ai.evaluation.explanation" not in attributes


def test_a_passing_case_span_has_unset_status(refund_copy):
    out, _, _, _ = refund_copy
    ok = spans_by_trace(out)["a167b3814626cfe5be2c86e28c1d7290"]
    [span] = [s for s in ok if s.name == EVALUATION_SPAN_NAME]
    assert span.attributes["tooltrail.passed"] is True
    assert span.status_code == STATUS_UNSET


def test_evaluation_span_lists_each_score_as_an_event_with_the_judged_span(refund_copy):
    out, _, _, _ = refund_copy
    wrong = spans_by_trace(out)["e562ea0902561c76b362a32db16b4bd3"]
    [span] = [s for s in wrong if s.name == EVALUATION_SPAN_NAME]
    [event] = [
        e
        for e in span.events
        if e.attributes["gen_ai.evaluation.name"] == "tool_arg_values:issue_refund"
    ]
    assert event.name == "gen_ai.evaluation.result"
    assert event.attributes["tooltrail.judged_span_id"] == "0a8a013a65f28cce"
    assert event.attributes["gen_ai.evaluation.score.label"] == "fail"


def test_the_copy_keeps_every_span_of_the_evaluated_traces(refund_copy):
    out, _, _, _ = refund_copy
    original = spans_by_trace(REFUND_RUNS)
    copy = spans_by_trace(out)
    assert copy.keys() == original.keys()
    for trace_id, spans in original.items():
        kept = {s.span_id for s in copy[trace_id] if s.name != EVALUATION_SPAN_NAME}
        assert kept == {s.span_id for s in spans}


def test_the_copy_converts_to_the_same_tool_calls(refund_copy):
    out, traces, _, _ = refund_copy
    again = {t.trace_id: t for t in read_traces([str(out)])}
    for trace in traces:
        calls = [(c.name, c.args, c.span_id) for c in trace.tool_calls]
        assert [(c.name, c.args, c.span_id) for c in again[trace.trace_id].tool_calls] == calls


def test_traces_without_a_result_are_not_copied(tmp_path):
    traces, results = evaluated(REFUND_RUNS)
    out = tmp_path / "one.jsonl"
    write_annotated_traces(out, read_spans(REFUND_RUNS), results[:1], traces=traces)
    assert set(spans_by_trace(out)) == {traces[0].trace_id}


def test_annotating_twice_writes_the_same_file(tmp_path):
    traces, results = evaluated(REFUND_RUNS)
    first, second = tmp_path / "1.jsonl", tmp_path / "2.jsonl"
    write_annotated_traces(first, read_spans(REFUND_RUNS), results, traces=traces)
    write_annotated_traces(second, read_spans(REFUND_RUNS), results, traces=traces)
    assert first.read_bytes() == second.read_bytes()


def test_without_traces_the_root_is_found_among_the_spans(tmp_path):
    traces, results = evaluated(REFUND_RUNS[:1])
    out = tmp_path / "copy.jsonl"
    assert write_annotated_traces(out, read_spans(REFUND_RUNS[:1]), results) == 1
    [span] = [s for s in read_spans(out) if s.name == EVALUATION_SPAN_NAME]
    assert span.parent_span_id == traces[0].metadata["root_span_id"]


def test_a_conversation_verdict_goes_under_its_first_trace_and_copies_every_turn(tmp_path):
    case = TestCase(id="booking", forbidden_tools=["create_booking"])
    traces, results = evaluated([BOOKING], case, group="conversation")
    first, second = traces[0].metadata["trace_ids"]
    out = tmp_path / "conversation.jsonl"
    assert write_annotated_traces(out, read_spans(BOOKING), results, traces=traces) == 1
    copy = spans_by_trace(out)
    assert set(copy) == {first, second}
    [span] = [s for s in copy[first] if s.name == EVALUATION_SPAN_NAME]
    assert span.parent_span_id == traces[0].metadata["root_span_id"]


def test_protobuf_output_reads_back(tmp_path):
    traces, results = evaluated(REFUND_RUNS)
    out = tmp_path / "annotated.pb"
    write_annotated_traces(out, read_spans(REFUND_RUNS), results, traces=traces)
    assert out.read_bytes()[:1] != b"{"
    names = [s.name for s in read_spans(out)]
    assert names.count(EVALUATION_SPAN_NAME) == 4


def test_an_existing_output_file_is_replaced(tmp_path):
    traces, results = evaluated(REFUND_RUNS)
    out = tmp_path / "annotated.jsonl"
    out.write_text('{"resourceSpans": []}\n' * 3)
    write_annotated_traces(out, read_spans(REFUND_RUNS), results, traces=traces)
    assert [s.name for s in read_spans(out)].count(EVALUATION_SPAN_NAME) == 4
    assert not out.read_text().startswith('{"resourceSpans": []}')


# --- the events file ----------------------------------------------------------------------


@pytest.fixture
def refund_events(tmp_path):
    traces, results = evaluated(REFUND_RUNS)
    out = tmp_path / "events.jsonl"
    count = write_annotations(out, traces, results, suite="refund-agent", time_ns=1_000)
    return out, traces, results, count


def test_every_event_record_points_at_an_existing_span(refund_events):
    out, _, _, count = refund_events
    existing = {(s.trace_id, s.span_id) for s in read_spans(REFUND_RUNS)}
    records = list(read_log_records(out))
    assert len(records) == count > 0
    assert all((r.trace_id, r.span_id) in existing for r in records)


def test_events_file_holds_the_wrong_amount_verdict_on_the_refund_call(refund_events):
    out, _, _, _ = refund_events
    [record] = [
        r
        for r in read_log_records(out)
        if r.attributes["gen_ai.evaluation.name"] == "tool_arg_values:issue_refund"
        and r.trace_id == "e562ea0902561c76b362a32db16b4bd3"
    ]
    assert record.span_id == "0a8a013a65f28cce"
    assert record.event_name == "gen_ai.evaluation.result"
    assert record.attributes["gen_ai.evaluation.score.value"] == 0.0
    assert record.attributes["gen_ai.evaluation.score.label"] == "fail"
    assert record.attributes["tooltrail.suite"] == "refund-agent"
    assert record.resource["service.name"] == "corpus-google-adk"


def test_events_file_has_one_case_verdict_per_case_on_its_root(refund_events):
    out, traces, _, _ = refund_events
    verdicts = [
        (r.trace_id, r.span_id)
        for r in read_log_records(out)
        if r.attributes["gen_ai.evaluation.name"] == "tooltrail.case"
    ]
    assert verdicts == [(t.trace_id, t.metadata["root_span_id"]) for t in traces]


def test_events_file_is_plain_otlp_json_with_hex_ids(refund_events):
    out, _, _, _ = refund_events
    lines = out.read_text().splitlines()
    assert len(lines) == 4
    first = json.loads(lines[0])
    record = first["resourceLogs"][0]["scopeLogs"][0]["logRecords"][0]
    assert record["eventName"] == "gen_ai.evaluation.result"
    assert record["traceId"] == "a167b3814626cfe5be2c86e28c1d7290"
    assert len(record["spanId"]) == 16
    assert isinstance(record["timeUnixNano"], str)
    value = next(a for a in record["attributes"] if a["key"] == "gen_ai.evaluation.score.value")
    assert value["value"] == {"doubleValue": 1.0}


def test_explanations_stay_out_of_the_events_file_by_default(refund_events):
    out, _, _, _ = refund_events
    text = out.read_text()
    assert "gen_ai.evaluation.explanation" not in text
    assert "499.9" not in text


def test_explanations_are_written_when_enabled(tmp_path):
    traces, results = evaluated(REFUND_RUNS)
    out = tmp_path / "events.jsonl"
    write_annotations(out, traces, results, explanations=True)
    explained = [
        r.attributes.get("gen_ai.evaluation.explanation")
        for r in read_log_records(out)
        if r.attributes["gen_ai.evaluation.name"] == "tool_arg_values:issue_refund"
        and r.trace_id == "e562ea0902561c76b362a32db16b4bd3"
    ]
    assert explained == [
        "Tool 'issue_refund' was called with [{'order_id': 'ORD-7731', 'amount': 499.9}], "
        "not {'order_id': 'ORD-7731', 'amount': 49.99}."
    ]


def test_a_result_whose_trace_is_missing_keeps_its_trace_id(tmp_path):
    out = tmp_path / "events.jsonl"
    result = CaseResult("refund", False, [], "0123456789abcdef0123456789abcdef")
    assert write_annotations(out, [], [result]) == 1
    [record] = read_log_records(out)
    assert (record.trace_id, record.span_id) == ("0123456789abcdef0123456789abcdef", "")


def test_events_read_back_attach_to_their_traces(refund_events):
    out, _, _, count = refund_events
    fresh = list(read_traces(REFUND_RUNS))
    assert attach_evaluations(fresh, read_log_records(out)) == count
    wrong = next(t for t in fresh if t.trace_id == "e562ea0902561c76b362a32db16b4bd3")
    [verdict] = [e for e in wrong.evaluations if e["name"] == "tooltrail.case"]
    assert (verdict["label"], verdict["value"], verdict["case_id"]) == ("fail", 0.0, "refund")


def test_read_evaluations_skips_other_log_records(refund_events):
    out, _, _, count = refund_events
    assert len(list(read_evaluations([str(out)]))) == count


def test_annotate_run_writes_both_files_from_the_inputs(tmp_path):
    _, results = evaluated(REFUND_RUNS)
    events, copy = tmp_path / "events.jsonl", tmp_path / "traces.jsonl"
    counts = annotate_run(REFUND_RUNS, results, annotate=events, annotate_traces=copy)
    assert counts.evaluation_spans == 4
    assert counts.events == len(list(read_log_records(events)))
    assert [s.name for s in read_spans(copy)].count(EVALUATION_SPAN_NAME) == 4


# --- earlier verdicts read back with the traces ---------------------------------------------

OTHER_PRODUCER_EVENT = {
    "resourceLogs": [
        {
            "resource": {
                "attributes": [{"key": "service.name", "value": {"stringValue": "judge"}}]
            },
            "scopeLogs": [
                {
                    "scope": {"name": "some-llm-judge"},
                    "logRecords": [
                        {
                            "timeUnixNano": "1796003452484441000",
                            "eventName": "gen_ai.evaluation.result",
                            "traceId": "E562EA0902561C76B362A32DB16B4BD3",
                            "spanId": "08d609656bbb20a3",
                            "attributes": [
                                {
                                    "key": "gen_ai.evaluation.name",
                                    "value": {"stringValue": "relevance"},
                                },
                                {
                                    "key": "gen_ai.evaluation.score.value",
                                    "value": {"doubleValue": 0.25},
                                },
                                {
                                    "key": "gen_ai.evaluation.score.label",
                                    "value": {"stringValue": "irrelevant"},
                                },
                            ],
                        }
                    ],
                }
            ],
        }
    ]
}


def test_traces_read_with_an_events_file_carry_earlier_verdicts(refund_events):
    out, _, _, _ = refund_events
    traces = list(read_traces_with_evaluations(REFUND_RUNS, evaluations=[str(out)]))
    assert len(traces) == 4
    for trace in traces:
        [verdict] = [e for e in trace.evaluations if e["name"] == "tooltrail.case"]
        assert verdict["span_id"] == trace.metadata["root_span_id"]


def test_events_of_another_producer_in_the_input_directory_are_attached(tmp_path):
    for path in REFUND_RUNS:
        (tmp_path / Path(path).name).write_bytes(Path(path).read_bytes())
    (tmp_path / "judge.logs.jsonl").write_text(json.dumps(OTHER_PRODUCER_EVENT) + "\n")
    diagnostics: list = []
    traces = {
        t.trace_id: t
        for t in read_traces_with_evaluations([str(tmp_path)], diagnostics=diagnostics)
    }
    assert diagnostics == []
    assert len(traces) == 4
    [evaluation] = traces["e562ea0902561c76b362a32db16b4bd3"].evaluations
    assert (evaluation["name"], evaluation["value"], evaluation["label"]) == (
        "relevance",
        0.25,
        "irrelevant",
    )
    assert evaluation["span_id"] == "08d609656bbb20a3"
    assert all(
        not t.evaluations for k, t in traces.items() if k != "e562ea0902561c76b362a32db16b4bd3"
    )


def test_the_copy_is_redacted_with_the_configured_keys(tmp_path, monkeypatch):
    """Without ``redaction=``, the copy takes the redaction settings (``TOOLTRAIL_REDACT_*``)
    from ``settings.redaction_from_env``, as every runner does."""
    traces, results = evaluated(REFUND_RUNS[:1])
    plain, redacted = tmp_path / "plain.otlp.jsonl", tmp_path / "redacted.otlp.jsonl"
    write_annotated_traces(plain, read_spans(REFUND_RUNS[:1]), results, traces=traces)
    monkeypatch.setenv("TOOLTRAIL_REDACT_KEYS", "order_id")
    monkeypatch.setenv("TOOLTRAIL_REDACT_MARKER", "<hidden>")
    write_annotated_traces(redacted, read_spans(REFUND_RUNS[:1]), results, traces=traces)

    def arguments(path):
        return [
            json.loads(args)
            for span in read_spans(str(path))
            if (args := span.attributes.get("gen_ai.tool.call.arguments")) is not None
        ]

    assert {"order_id": "ORD-7731"} in arguments(plain)
    assert {"order_id": "<hidden>"} in arguments(redacted)
    assert all(a.get("order_id") in (None, "<hidden>") for a in arguments(redacted))
