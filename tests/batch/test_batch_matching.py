"""Which cases a batch pass applies to which traces, and how the rows read."""

from __future__ import annotations

from pathlib import Path

from fixtures import CORPUS, LOOKUP, REFUND, VERIFY, refund_case
from test_batch_support import SEED_RUNS, Run, jsonl, record, write

from tooltrail.batch import run_batch
from tooltrail.suite import TestSuite


def suite(*cases: dict) -> TestSuite:
    return TestSuite.from_dict({"name": "policies", "cases": list(cases)})


def rows(result) -> list[tuple[str, str, bool]]:  # type: ignore[no-untyped-def]
    return [(r.case_id, r.label, r.passed) for r in result.results]


def two_services(tmp_path: Path) -> str:
    refunds = record([Run("r1", [LOOKUP, VERIFY, REFUND])], service="refund-service")
    billing = record(
        [Run("b1", [LOOKUP], agent="billing-agent", attributes={"tenant": "acme"})],
        service="billing-service",
    )
    return write(tmp_path / "mixed.jsonl", jsonl(refunds + billing))


def test_policy_by_service_name_selects_only_that_services_traces(tmp_path: Path) -> None:
    dump = two_services(tmp_path)
    s = suite(
        {
            "id": "refunds",
            "match": {"service_name": "refund-service"},
            "required_tools": ["issue_refund"],
        }
    )
    result = run_batch(s, [dump], workers=1)
    assert rows(result) == [("refunds", "r1", True)]
    assert [u.case_id for u in result.unmatched] == ["b1"]


def test_policy_by_agent_name(tmp_path: Path) -> None:
    dump = two_services(tmp_path)
    s = suite(
        {
            "id": "billing",
            "match": {"agent_name": "billing-agent"},
            "forbidden_tools": ["issue_refund"],
        }
    )
    assert rows(run_batch(s, [dump], workers=1)) == [("billing", "b1", True)]


def test_policy_by_root_span_name(tmp_path: Path) -> None:
    dump = two_services(tmp_path)
    s = suite(
        {
            "id": "root",
            "match": {"root_span_name": "invoke_agent refund-agent"},
            "required_tools": ["lookup_order"],
        }
    )
    assert rows(run_batch(s, [dump], workers=1)) == [("root", "r1", True)]


def test_policy_by_span_attribute(tmp_path: Path) -> None:
    dump = two_services(tmp_path)
    s = suite(
        {
            "id": "acme",
            "match": {"attributes": {"tenant": "acme"}},
            "required_tools": ["issue_refund"],
        }
    )
    assert rows(run_batch(s, [dump], workers=1)) == [("acme", "b1", False)]


def test_policy_by_resource_attribute(tmp_path: Path) -> None:
    dump = two_services(tmp_path)
    s = suite(
        {"id": "svc", "match": {"attributes": {"service.name": "billing-service"}}, "max_turns": 1}
    )
    assert rows(run_batch(s, [dump], workers=1)) == [("svc", "b1", True)]


def test_combined_selector_needs_every_condition(tmp_path: Path) -> None:
    dump = two_services(tmp_path)
    s = suite(
        {
            "id": "both",
            "match": {"service_name": "billing-service", "agent_name": "refund-agent"},
            "max_turns": 1,
        }
    )
    result = run_batch(s, [dump], workers=1)
    assert result.results == []
    assert len(result.unmatched) == 2


def test_match_all_selects_every_trace(tmp_path: Path) -> None:
    dump = two_services(tmp_path)
    s = suite({"id": "any", "match": "all", "max_turns": 1})
    assert [label for _, label, _ in rows(run_batch(s, [dump], workers=1))] == ["r1", "b1"]


def test_case_without_match_applies_to_traces_tagged_with_its_id(tmp_path: Path) -> None:
    dump = write(tmp_path / "seed.jsonl", jsonl(record(SEED_RUNS)))
    s = suite(
        {"id": "correct", "required_tools": ["verify_identity"]},
        {"id": "skipped-verification", "required_tools": ["verify_identity"]},
    )
    result = run_batch(s, [dump], workers=1)
    assert rows(result) == [
        ("correct", "correct", True),
        ("skipped-verification", "skipped-verification", False),
    ]
    assert sorted(u.case_id or "" for u in result.unmatched) == ["looping", "wrong-amount"]


def test_a_trace_two_cases_select_gives_two_rows_labelled_by_case(tmp_path: Path) -> None:
    dump = write(tmp_path / "seed.jsonl", jsonl(record(SEED_RUNS[:1])))
    s = suite(
        {"id": "correct", "required_tools": ["lookup_order"]},
        {"id": "no-search", "match": "all", "forbidden_tools": ["web_search"]},
    )
    assert rows(run_batch(s, [dump], workers=1)) == [
        ("correct", "correct", True),
        ("no-search", "correct [no-search]", True),
    ]


def test_policy_rows_of_untagged_traces_are_labelled_by_trace_id(tmp_path: Path) -> None:
    spans = record([Run(None, [LOOKUP])])
    dump = write(tmp_path / "untagged.jsonl", jsonl(spans))
    s = suite({"id": "p", "match": "all", "required_tools": ["lookup_order"]})
    (row,) = run_batch(s, [dump], workers=1).results
    assert row.label == row.trace_id == format(spans[0][0].context.trace_id, "032x")


def test_runs_of_one_tagged_case_are_numbered(tmp_path: Path) -> None:
    dump = write(tmp_path / "runs.jsonl", jsonl(record([Run("refund", [LOOKUP])] * 3)))
    s = suite({"id": "refund", "required_tools": ["lookup_order"], "runs": 3, "threshold": 0.6})
    assert [label for _, label, _ in rows(run_batch(s, [dump], workers=1))] == [
        "refund run 1",
        "refund run 2",
        "refund run 3",
    ]


def test_unmatched_trace_is_described_by_service_and_root_span(tmp_path: Path) -> None:
    dump = two_services(tmp_path)
    s = suite({"id": "nothing", "match": {"service_name": "nope"}, "max_turns": 1})
    first = run_batch(s, [dump], workers=1).unmatched[0]
    assert first.service_name == "refund-service"
    assert first.root_span_name == "invoke_agent refund-agent"
    assert "case_id='r1' (no such case)" in first.describe()


def test_corpus_refund_scenarios_get_the_seed_verdicts() -> None:
    s = suite(refund_case("required_tools", "expected_tool_arguments", match="all"))
    for framework in ("pydantic-ai", "google-adk", "strands", "traceloop", "vercel-ai"):
        folder = CORPUS / framework
        verdicts = [
            run_batch(s, [str(folder / f"{scenario}.otlp.pb")], workers=1).results[0].passed
            for scenario in ("a_refund_ok", "b_refund_skip_verify", "c_refund_wrong_amount")
        ]
        assert verdicts == [True, False, False], framework


def test_policies_sharing_a_trace_give_the_rows_each_gives_alone(tmp_path: Path) -> None:
    """Cases on one trace share its call index (``evaluate_cases``): same rows as one by one."""
    dump = write(tmp_path / "seed.jsonl", jsonl(record(SEED_RUNS)))
    policies = [
        {"id": "no-loops", "match": "all", "evaluators": [{"name": "no_redundant_tool_calls"}]},
        {"id": "precise", "match": "all", "evaluators": [{"name": "tool_call_precision"}]},
        {"id": "order", "match": "all", "required_tool_order": ["lookup_order", "issue_refund"]},
        {"id": "failed-ignored", "match": "all", "ignore_failed_calls": True,
         "evaluators": [{"name": "no_redundant_tool_calls"}]},
    ]  # fmt: skip
    together = run_batch(suite(*policies), [dump], workers=1).results
    alone = [r for p in policies for r in run_batch(suite(p), [dump], workers=1).results]
    assert len(together) == 4 * len(SEED_RUNS)
    assert verdicts(together) == verdicts(alone)


def verdicts(results) -> list[str]:  # type: ignore[no-untyped-def]
    """Each row's trace, case, verdict and scores, in a fixed order."""
    return sorted(
        repr((r.trace_id, r.case_id, r.passed, [s.to_dict() for s in r.scores])) for r in results
    )
