"""Sampling per check (issue 35, item 1): deterministic draws, a rarer sample inside a commoner
one, per-key samples, test traffic apart, and a check sampled out giving no score but a named
skip. The serve end of it: tests/serve/test_serve_sampling.py."""

from __future__ import annotations

from hashlib import sha256
from pathlib import Path

import pytest

from tooltrail.checks.score import Score
from tooltrail.model import EvalTrace, ToolCall
from tooltrail.results import CaseResult
from tooltrail.sampling import (
    Sampler,
    TestTraffic,
    in_sample,
    is_test_traffic,
    sample_key,
    sampled_out_names,
)
from tooltrail.suite import SuiteError, TestSuite
from tooltrail.suite.sample import Sample

TRACES = 2000


def trace_id(n: int) -> str:
    return sha256(f"trace {n}".encode()).hexdigest()[:32]


def traces(count: int = TRACES, **metadata: object) -> list[EvalTrace]:
    return [EvalTrace(trace_id(n), tool_calls=[], metadata=dict(metadata)) for n in range(count)]


def test_a_rate_takes_its_share_and_a_rarer_sample_is_inside_a_commoner_one() -> None:
    every = traces()
    rare = {t.trace_id for t in every if in_sample(t, Sample(0.1))}
    common = {t.trace_id for t in every if in_sample(t, Sample(0.5))}
    assert 0.08 * TRACES <= len(rare) <= 0.12 * TRACES
    assert 0.48 * TRACES <= len(common) <= 0.52 * TRACES
    assert rare <= common
    assert all(in_sample(t, Sample(1.0)) for t in every)
    assert not any(in_sample(t, Sample(0.0)) for t in every)


def test_the_draw_is_the_same_for_every_copy_of_a_trace() -> None:
    first = [in_sample(t, Sample(0.3)) for t in traces(200)]
    again = [in_sample(t, Sample(0.3)) for t in traces(200)]
    assert first == again and 30 < sum(first) < 90


def test_by_an_attribute_samples_every_trace_of_a_key_or_none() -> None:
    tenants = [f"tenant-{n}" for n in range(40)]
    every = [
        EvalTrace(trace_id(n), tool_calls=[], metadata={"attributes": {"tenant.id": tenant}})
        for n, tenant in enumerate(tenants * 10)
    ]
    sample = Sample(0.25, by="tenant.id")
    chosen: dict[str, set[bool]] = {}
    for trace in every:
        chosen.setdefault(trace.metadata["attributes"]["tenant.id"], set()).add(
            in_sample(trace, sample)
        )
    assert all(len(decisions) == 1 for decisions in chosen.values())  # all of a tenant, or none
    assert 0 < sum(True in d for d in chosen.values()) < len(tenants)
    # Without the attribute the trace is drawn as any other.
    lone = EvalTrace(trace_id(9999), tool_calls=[], metadata={})
    assert sample_key(lone, "tenant.id") == f"trace={lone.trace_id}"


def test_a_conversations_traces_are_drawn_together() -> None:
    turns = traces(50, conversation_id="conv-1")
    assert len({in_sample(t, Sample(0.5)) for t in turns}) == 1


def test_test_traffic_is_marked_by_attribute_or_listed_environment() -> None:
    marked = EvalTrace("a" * 32, tool_calls=[], metadata={"attributes": {"tooltrail.test": True}})
    otel = EvalTrace("b" * 32, tool_calls=[], metadata={"attributes": {"test.case.name": "t1"}})
    staging = EvalTrace(
        "c" * 32, tool_calls=[], metadata={"attributes": {"deployment.environment": "staging"}}
    )
    production = EvalTrace(
        "d" * 32, tool_calls=[], metadata={"attributes": {"deployment.environment": "prod"}}
    )
    off = EvalTrace("e" * 32, tool_calls=[], metadata={"attributes": {"tooltrail.test": False}})
    assert is_test_traffic(marked) and is_test_traffic(otel)
    assert not is_test_traffic(staging)  # only the environments the user lists
    assert is_test_traffic(staging, TestTraffic(environments=("staging",)))
    assert not is_test_traffic(production, TestTraffic(environments=("staging",)))
    assert not is_test_traffic(off)


SUITE = {
    "name": "sampled",
    "cases": [
        {
            "id": "refund",
            "match": "all",
            "required_tools": ["issue_refund"],
            "evaluators": [
                {"name": "no_redundant_tool_calls", "sample": 0.1},
                {"name": "tool_call_precision", "sample": {"rate": 0.5}},
            ],
        },
        {
            "id": "sampled_only",
            "match": "all",
            "evaluators": [{"name": "no_redundant_tool_calls", "sample": 0.1}],
        },
    ],
}


def test_a_check_sampled_out_is_not_run_gives_no_verdict_and_is_named() -> None:
    from tooltrail.score import evaluate_cases

    suite = TestSuite.from_dict(SUITE)
    sampler = Sampler(suite.cases)
    calls = [ToolCall(name="issue_refund", args={})]
    seen_out = seen_in = 0
    for n in range(300):
        trace = EvalTrace(trace_id(n), tool_calls=list(calls), metadata={})
        run = sampler.decide(suite.cases, trace, test=False)
        rows = sampler.finish(run, evaluate_cases(run.cases, trace), trace)
        assert [r.case_id for r in rows] == ["refund", "sampled_only"]
        names = [s.name for s in rows[0].scores]
        if in_sample(trace, Sample(0.1)):
            seen_in += 1
            assert "no_redundant_tool_calls" in names
            assert not rows[0].scores[names.index("no_redundant_tool_calls")].skipped
        else:
            seen_out += 1
            skipped = rows[0].scores[names.index("no_redundant_tool_calls")]
            assert skipped.skipped and not skipped.failed and skipped.metadata["sampled_out"]
            assert skipped.explanation.startswith("Not sampled:")
            assert "refund/no_redundant_tool_calls" in sampled_out_names(rows)
            # The case left with nothing: a row of skipped scores, passing nothing by itself.
            assert [s.skipped for s in rows[1].scores] == [True]
        assert rows[0].passed  # the required tool was called; a skip fails nothing
    assert seen_in and seen_out


def test_test_traffic_runs_every_check_whatever_the_sample() -> None:
    from tooltrail.score import evaluate_cases

    suite = TestSuite.from_dict(SUITE)
    sampler = Sampler(suite.cases)
    for n in range(100):
        trace = EvalTrace(trace_id(n), tool_calls=[ToolCall(name="issue_refund")], metadata={})
        run = sampler.decide(suite.cases, trace, test=True)
        rows = sampler.finish(run, evaluate_cases(run.cases, trace), trace)
        assert not any(s.skipped for r in rows for s in r.scores)
        assert run.sampled_out == [] and run.sampled_in == []


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("1.5", "expected a share of traces from 0 to 1"),
        ("true", "expected a share of traces from 0 to 1"),
        ("{by: tenant}", "missing key 'rate'"),
        ("{rate: 0.1, per: tenant}", "unknown key 'per'"),
        ("{rate: 0.1, by: ''}", "expected the name of a trace attribute"),
    ],
)
def test_a_bad_sample_names_its_file_line_and_key(tmp_path: Path, value: str, message: str) -> None:
    path = tmp_path / "suite.yaml"
    path.write_text(
        "name: s\ncases:\n  - id: c\n    match: all\n    evaluators:\n"
        f"      - name: no_redundant_tool_calls\n        sample: {value}\n"
    )
    with pytest.raises(SuiteError) as raised:
        TestSuite.load(path)
    text = str(raised.value)
    assert message in text and str(path) in text and "cases[0].evaluators[0].sample" in text
    assert ":7:" in text or ":6:" in text


def test_a_sample_read_from_a_file_is_a_sample() -> None:
    suite = TestSuite.from_dict(
        {
            "name": "s",
            "cases": [
                {
                    "id": "c",
                    "match": "all",
                    "evaluators": [
                        {"name": "no_redundant_tool_calls", "sample": {"rate": 0.2, "by": "t"}}
                    ],
                }
            ],
        }
    )
    assert suite.cases[0].evaluators[0].sample == Sample(0.2, by="t")


def test_sampled_out_names_reads_only_sampling_skips() -> None:
    rows = [
        CaseResult(
            "c",
            True,
            [
                Score.skip("a", "did not apply"),
                Score.skip("b", "Not sampled", metadata={"sampled_out": True}),
            ],
        )
    ]
    assert sampled_out_names(rows) == ["c/b"]
