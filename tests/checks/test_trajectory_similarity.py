"""``trajectory_similarity``: 1 - the cost of the cheapest alignment / the longer trajectory's
length, where an inserted, a missing and a replaced call cost 1 and a call of the right tool
with other arguments ``argument_cost`` (0.5) (docs/checks.md, "trajectory_similarity"). Each
row's value is worked out by hand in its comment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tooltrail.checks import default_registry
from tooltrail.checks.protocol import case_context
from tooltrail.checks.score import Score
from tooltrail.checks.similarity import TrajectorySimilarity
from tooltrail.model import EvalTrace, ToolCall
from tooltrail.score import evaluate_trace
from tooltrail.suite import SuiteError, TestCase, TestSuite
from tooltrail.suite.case import EvaluatorConfig
from tooltrail.suite.reference import Reference


def calls(spec: str) -> list[ToolCall]:
    """``"A B{y=2} C"``: tool names, each with its one argument when it has one."""
    found = []
    for n, item in enumerate(spec.split()):
        name, _, arg = item.partition("{")
        args = None
        if arg:
            key, _, value = arg.rstrip("}").partition("=")
            args = {key: int(value)}
        found.append(ToolCall(name, args, span_id=f"s{n + 1}"))
    return found


def similarity(run: str, reference: str, **config: Any) -> Score:
    check = TrajectorySimilarity(**config)
    case = TestCase(id="c", max_tool_calls=99, reference=Reference(calls=tuple(calls(reference))))
    result = check.evaluate(case_context(case, EvalTrace("t", tool_calls=calls(run))))
    assert isinstance(result, Score)
    return result


@pytest.mark.parametrize(
    ("run", "reference", "config", "value"),
    [
        # one call of another tool in B's place: cost 1 over 4 calls
        ("A D C A", "A B C A", {}, 1 - 1 / 4),
        ("A B C A", "A B C A", {}, 1.0),
        # the last reference call missing: cost 1 over 4
        ("A B C", "A B C A", {}, 1 - 1 / 4),
        # one call more than the reference: cost 1 over 5
        ("A B C A X", "A B C A", {}, 1 - 1 / 5),
        ("", "", {}, 1.0),
        # nothing done: 2 missing over 2
        ("", "A B", {}, 0.0),
        ("A B", "", {}, 0.0),
        # swapped: two replacements (or a missing and an inserted call), cost 2 over 2
        ("B A", "A B", {}, 0.0),
        # A called twice: one inserted, cost 1 over 3
        ("A A B", "A B", {}, 1 - 1 / 3),
        # B with other arguments: cost 0.5 over 3
        ("A{x=1} B{y=2} C", "A{x=1} B{y=1} C", {}, 1 - 0.5 / 3),
        # ... at an argument cost of 1: cost 1 over 3
        ("A{x=1} B{y=2} C", "A{x=1} B{y=1} C", {"argument_cost": 1}, 1 - 1 / 3),
        # ... at an argument cost of 0.25: cost 0.25 over 3
        ("A{x=1} B{y=2} C", "A{x=1} B{y=1} C", {"argument_cost": 0.25}, 1 - 0.25 / 3),
        # other arguments and a replacement: 0.5 + 1 over 3
        ("A{x=2} D C", "A{x=1} B C", {}, 1 - 1.5 / 3),
        # other arguments cost less than a missing and an inserted call (2)
        ("A{x=2}", "A{x=1}", {}, 1 - 0.5 / 1),
        # a reference call without arguments matches any arguments of its tool
        ("A{x=2} B", "A B", {}, 1.0),
        # under args: ignore, arguments never differ
        ("A{x=2} B{y=9}", "A{x=1} B{y=1}", {"args": "ignore"}, 1.0),
        # B{y=2} A against A B{y=1}: B/A and A/B replaced (2) beat B{y=2}/B{y=1} (0.5) with
        # the A's left over (2): cost 2 over 2
        ("B{y=2} A", "A B{y=1}", {}, 0.0),
    ],
)
def test_the_score_is_the_hand_computed_one(
    run: str, reference: str, config: dict[str, Any], value: float
) -> None:
    score = similarity(run, reference, **config)
    assert score.value == pytest.approx(value)
    assert score.passed is (value == 1.0)


def test_the_explanation_counts_the_edits_and_names_the_first() -> None:
    assert similarity("A D C A", "A B C A").explanation == (
        "Tool calls ['A', 'D', 'C', 'A'] are 0.75 similar to the reference ['A', 'B', 'C', "
        "'A'] (arguments exact): 1 replaced, edit cost 1 over 4 calls; first: call 2 is 'D', "
        "the reference has 'B'."
    )
    assert similarity("A B C", "A B C A").explanation.endswith(
        "1 missing, edit cost 1 over 4 calls; first: reference call 4 'A' is missing."
    )
    assert similarity("A B C A X", "A B C A").explanation.endswith(
        "1 inserted, edit cost 1 over 5 calls; first: call 5 'X' is not in the reference."
    )
    assert similarity("A{x=2} D C", "A{x=1} B C").explanation.endswith(
        "1 replaced, 1 with other arguments, edit cost 1.5 over 3 calls; first: call 1 'A': "
        "argument {'x': 2} where the reference has {'x': 1}."
    )
    assert similarity("A B", "A B").explanation == (
        "Tool calls ['A', 'B'] are the same as the reference ['A', 'B'] (arguments exact): "
        "similarity 1.00."
    )


def test_the_first_edit_is_the_evidence() -> None:
    assert similarity("A D C A", "A B C A").span_ids == ("s2",)
    assert similarity("A B C", "A B C A").span_ids == ()  # a missing call has no span


def test_names_alone_and_a_scope_and_failed_calls() -> None:
    check = TrajectorySimilarity(expected=["lookup", "refund"], tools=["refund", "lookup"])
    trace = EvalTrace(
        "t",
        tool_calls=[
            ToolCall("lookup", {}),
            ToolCall("web_search", {}),
            ToolCall("refund", {}, status="error"),
            ToolCall("refund", {}),
        ],
    )
    ctx = case_context(TestCase(id="c", max_tool_calls=9), trace)
    score = check.evaluate(ctx)
    assert isinstance(score, Score) and score.value == pytest.approx(1 - 1 / 3)
    assert score.explanation.startswith(
        "Tool calls ['lookup', 'refund', 'refund'] (tools ['refund', 'lookup']) are 0.67 similar"
    )
    dropped = TrajectorySimilarity(
        expected=["lookup", "refund"], tools=["refund", "lookup"], ignore_failed_calls=True
    ).evaluate(ctx)
    assert isinstance(dropped, Score) and dropped.value == 1.0
    assert dropped.explanation == (
        "Tool calls ['lookup', 'refund'] (tools ['refund', 'lookup'], failed calls left out) "
        "are the same as the reference ['lookup', 'refund'] (arguments exact): similarity 1.00."
    )


def suite_case(tmp_path: Path, config: str, threshold: str = "") -> TestCase:
    path = tmp_path / "suite.yaml"
    path.write_text(
        "name: s\ncases:\n  - id: c\n    reference: {calls: [A, B, C, A]}\n    evaluators:\n"
        f"      - name: trajectory_similarity\n{threshold}        config: {config}\n",
        "utf-8",
    )
    suite = TestSuite.load(path)
    default_registry().check(suite)
    return suite.cases[0]


def test_a_threshold_passes_a_close_run(tmp_path: Path) -> None:
    run = EvalTrace("t", tool_calls=calls("A D C A"))
    (close,) = evaluate_trace(suite_case(tmp_path, "{}", "        threshold: 0.75\n"), run).scores
    assert (close.value, close.passed) == (0.75, True)
    (strict,) = evaluate_trace(suite_case(tmp_path, "{}", "        threshold: 0.8\n"), run).scores
    assert (strict.value, strict.passed) == (0.75, False)


@pytest.mark.parametrize(
    ("config", "error"),
    [
        ("{argument_cost: 2}", "config.argument_cost: expected a number between 0 and 1"),
        ("{tools: issue_*}", "config.tools: expected a list of tool names or patterns (issue_*)"),
        ("{ignore_failed_calls: sure}", "config.ignore_failed_calls: expected true or false"),
        (
            "{mode: strict}",
            "config.mode: unknown key 'mode'; allowed keys: abs, args, argument_cost, "
            "exclude_tools, expected, ignore, ignore_failed_calls, nested, rel, tool_args, tools",
        ),
    ],
)
def test_a_bad_config_in_a_file_names_file_line_and_key(
    tmp_path: Path, config: str, error: str
) -> None:
    with pytest.raises(SuiteError) as caught:
        suite_case(tmp_path, config)
    assert f"suite.yaml:7: cases[0].evaluators[0].{error}" in str(caught.value)


def similarity_scenarios() -> list[list[Score]]:
    """Every branch that explains (the contract test runs these too)."""
    out = [
        [similarity("A D C A", "A B C A")],
        [similarity("A B", "A B")],
        [similarity("A", "A", argument_cost=2)],
        [similarity("A{x=2} B", "A{x=1} B", tools=["A"])],
    ]
    no_reference = TrajectorySimilarity().evaluate(
        case_context(TestCase(id="c", max_tool_calls=1), EvalTrace("t"))
    )
    assert isinstance(no_reference, Score)
    out.append([no_reference])
    case = TestCase(
        id="c",
        reference=Reference(calls=(ToolCall("A"),)),
        evaluators=[EvaluatorConfig(name="trajectory_similarity", config={"tools": "A"})],
    )
    out.append(evaluate_trace(case, EvalTrace("t")).scores)
    return out
