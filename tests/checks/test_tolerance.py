"""A tolerance on numbers (``abs``, ``rel``), ignored argument paths (``ignore``) and ``nested``
subsets, in every argument check (``tool_arg_values``, a turn's ``tool_calls_args``) and every
mode of the reference checks (docs/checks.md, "Tolerance, ignored paths and nested
arguments"): each run below fails without the rule and passes with it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tooltrail.checks import Registry, default_registry
from tooltrail.checks.argmatch import difference
from tooltrail.checks.score import Score
from tooltrail.equality import Tolerance, numbers_close, values_close
from tooltrail.model import EvalTrace, ToolCall
from tooltrail.score import evaluate_trace
from tooltrail.suite import Expect, SuiteError, TestCase, TestSuite, ToolCallArgs, Turn
from tooltrail.suite.argrules import CompareArgs
from tooltrail.suite.case import EvaluatorConfig
from tooltrail.suite.reference import Reference

#: What the reference (or the expectation) says, and what a later run sent: the amount 0.004
#: off (a rounding), a fresh request id and timestamp (volatile values).
GOLD = {"order_id": "ORD-7731", "amount": 49.99, "request_id": "r-1", "meta": {"ts": 1, "by": "a"}}
RUN = {"order_id": "ORD-7731", "amount": 49.994, "request_id": "r-2", "meta": {"ts": 2, "by": "a"}}
RULE = {"abs": 0.01, "ignore": ["request_id", "meta.ts"]}


def run_trace(args: dict[str, Any] = RUN) -> EvalTrace:
    calls = [
        ToolCall("lookup_order", {"order_id": "ORD-7731"}, span_id="s1"),
        ToolCall("issue_refund", args, span_id="s2"),
    ]
    return EvalTrace("t" * 32, tool_calls=calls, output="Refunded.")


def scores(case: TestCase, trace: EvalTrace | None = None) -> list[Score]:
    return evaluate_trace(case, trace if trace is not None else run_trace()).scores


# -- the number rule ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "tolerance", "close"),
    [
        (49.99, 49.994, Tolerance(abs=0.01), True),
        (49.99, 50.01, Tolerance(abs=0.01), False),
        (1000, 1009, Tolerance(rel=0.01), True),
        (1000, 1011, Tolerance(rel=0.01), False),
        (0.0, 0.001, Tolerance(rel=0.5), False),  # rel alone never reaches zero
        (0.0, 0.001, Tolerance(abs=0.01, rel=0.5), True),  # the looser of the two
        (10**400, 10**400 + 1, Tolerance(abs=5), False),  # too wide for floats: exact only
        (float("nan"), float("nan"), Tolerance(abs=1), False),
    ],
)
def test_numbers_are_close_within_the_looser_bound(
    a: float, b: float, tolerance: Tolerance, close: bool
) -> None:
    assert numbers_close(a, b, tolerance) is close


def test_a_tolerance_never_makes_a_boolean_a_number_and_applies_at_any_depth() -> None:
    loose = Tolerance(abs=1)
    assert not values_close(True, 1, loose) and not values_close(1, True, loose)
    assert values_close({"a": [1.0, {"b": 2}]}, {"a": [1.5, {"b": 2.5}]}, loose)
    assert not values_close({"a": [1.0]}, {"a": [1.0, 2]}, loose)


# -- tool_arg_values and tool_calls_args ------------------------------------------------------


def test_tool_arg_values_takes_the_cases_rule() -> None:
    expected = {"issue_refund": GOLD}
    (plain,) = scores(TestCase(id="c", expected_tool_arguments=expected))
    assert not plain.passed
    (loose,) = scores(TestCase(id="c", expected_tool_arguments=expected, compare_args=RULE))
    assert loose.passed, loose.explanation
    assert loose.explanation == f"Tool 'issue_refund' was called with {GOLD}."


@pytest.mark.parametrize("mode", ["subset", "exact"])
def test_tool_calls_args_takes_the_entrys_rule_in_both_modes(mode: str) -> None:
    def turn_case(**rule: Any) -> TestCase:
        entry = ToolCallArgs(tool="issue_refund", args=GOLD, mode=mode, **rule)  # type: ignore[arg-type]
        return TestCase(id="c", turns=[Turn(user="Refund", expect=Expect(tool_calls_args=[entry]))])

    (plain,) = scores(turn_case())
    assert not plain.passed
    (loose,) = scores(turn_case(**RULE))
    assert loose.passed, loose.explanation
    assert loose.explanation == (
        f"Tool 'issue_refund' was called with {GOLD} ({mode}, abs 0.01, ignoring "
        "['request_id', 'meta.ts'])"
    )


def test_an_ignored_key_may_be_absent_on_either_side() -> None:
    rule = CompareArgs(ignore=("request_id",))
    assert difference({"a": 1, "request_id": "x"}, {"a": 1}, "exact", rule) is None
    assert difference({"a": 1}, {"a": 1, "request_id": "y"}, "exact", rule) is None
    every = CompareArgs(ignore=("items[*].id", "*.ts"))
    gold = {"items": [{"id": 1, "sku": "A"}], "meta": {"ts": 1}}
    assert (
        difference(gold, {"items": [{"id": 9, "sku": "A"}], "meta": {"ts": 5}}, "exact", every)
        is None
    )
    found = difference(gold, {"items": [{"id": 9, "sku": "B"}], "meta": {}}, "exact", every)
    assert found is not None and (found.kind, found.where) == ("value", "items[0].sku")


# -- every mode of the reference checks -------------------------------------------------------

REFERENCE = Reference(
    calls=(ToolCall("lookup_order", {"order_id": "ORD-7731"}), ToolCall("issue_refund", GOLD))
)
MODES = ["strict", "unordered", "subset", "superset", "exact", "in_order", "any_order"]


def reference_case(name: str, **config: Any) -> TestCase:
    return TestCase(
        id="c", reference=REFERENCE, evaluators=[EvaluatorConfig(name=name, config=config)]
    )


@pytest.mark.parametrize("args", ["exact", "subset", "superset"])
@pytest.mark.parametrize("mode", MODES)
def test_trajectory_match_takes_the_rule_in_every_mode(mode: str, args: str) -> None:
    (plain,) = scores(reference_case("trajectory_match", mode=mode, args=args))
    assert plain.value < 1.0
    (loose,) = scores(reference_case("trajectory_match", mode=mode, args=args, **RULE))
    assert (loose.value, loose.passed) == (1.0, True), loose.explanation


@pytest.mark.parametrize("args", ["exact", "subset", "superset"])
def test_trajectory_match_names_the_rule_and_the_path_where_values_part(args: str) -> None:
    (loose,) = scores(reference_case("trajectory_match", mode="strict", args=args, **RULE))
    assert loose.explanation == (
        "Tool calls ['lookup_order', 'issue_refund'] matched the reference ['lookup_order', "
        f"'issue_refund'] (strict, arguments {args}, abs 0.01, ignoring ['request_id', "
        "'meta.ts'])."
    )
    (plain,) = scores(
        reference_case("trajectory_match", mode="strict", args=args, ignore=["request_id"])
    )
    assert plain.explanation.endswith(
        "call 2 'issue_refund': argument {'amount': 49.994} where the reference has "
        "{'amount': 49.99}."
    )


def test_a_rule_per_tool_replaces_the_checks_own_keys_for_that_tool() -> None:
    per_tool = {"issue_refund": {"abs": 0.01, "ignore": ["request_id", "meta.ts"]}}
    (loose,) = scores(reference_case("trajectory_match", mode="strict", tool_args=per_tool))
    assert loose.passed, loose.explanation
    mode_too = {"issue_refund": {"mode": "ignore"}}
    (ignored,) = scores(reference_case("trajectory_match", mode="strict", tool_args=mode_too))
    assert ignored.passed, ignored.explanation


@pytest.mark.parametrize("args", ["exact", "subset", "superset"])
def test_trajectory_similarity_takes_the_rule(args: str) -> None:
    (plain,) = scores(reference_case("trajectory_similarity", args=args))
    assert plain.value == 1 - 0.5 / 2  # the refund: the same tool, other arguments
    (loose,) = scores(reference_case("trajectory_similarity", args=args, **RULE))
    assert (loose.value, loose.passed) == (1.0, True), loose.explanation


# -- nested subsets and supersets -------------------------------------------------------------

BOOKED = {"flight": {"id": "UA-12", "seats": [{"row": 3}, {"row": 4}]}}
SENT = {"flight": {"id": "UA-12", "class": "Y", "seats": [{"row": 3, "seat": "A"}, {"row": 4}]}}


def nested_case(mode: str, args: str, **config: Any) -> TestCase:
    reference = Reference(calls=(ToolCall("book", BOOKED),))
    evaluator = EvaluatorConfig(
        name="trajectory_match", config={"mode": mode, "args": args, **config}
    )
    return TestCase(id="c", reference=reference, evaluators=[evaluator])


def booked(args: dict[str, Any]) -> EvalTrace:
    return EvalTrace("t", tool_calls=[ToolCall("book", args, span_id="s")])


@pytest.mark.parametrize("mode", ["strict", "unordered", "superset"])
def test_a_nested_superset_allows_extra_keys_at_every_depth(mode: str) -> None:
    (whole,) = scores(nested_case(mode, "superset"), booked(SENT))
    assert not whole.passed  # nested values compare whole
    (nested,) = scores(nested_case(mode, "superset", nested=True), booked(SENT))
    assert nested.passed, nested.explanation
    fewer = {"flight": {"id": "UA-12", "seats": [{"row": 3}]}}
    (short,) = scores(nested_case(mode, "superset", nested=True), booked(fewer))
    assert not short.passed  # lists keep their length
    other = {"flight": {"id": "UA-12", "seats": [{"row": 3}, {"row": 5, "seat": "B"}]}}
    (wrong,) = scores(nested_case(mode, "superset", nested=True), booked(other))
    assert wrong.explanation.endswith(
        "call 1 'book': argument {'flight.seats[1].row': 5} where the reference has "
        "{'flight.seats[1].row': 4}."
    )


def test_a_nested_subset_allows_keys_left_out_at_every_depth() -> None:
    partial = {"flight": {"seats": [{"row": 3}, {}]}}
    (whole,) = scores(nested_case("strict", "subset"), booked(partial))
    assert not whole.passed
    (nested,) = scores(nested_case("strict", "subset", nested=True), booked(partial))
    assert nested.passed, nested.explanation
    (extra,) = scores(nested_case("strict", "subset", nested=True), booked(SENT))
    assert extra.explanation.endswith(
        "call 1 'book': argument {'flight.class': 'Y'} is not in the reference."
    )


def test_nested_holds_in_tool_arg_values_and_tool_calls_args() -> None:
    expected = {"book": BOOKED}
    case = TestCase(id="c", expected_tool_arguments=expected, compare_args={"nested": True})
    (score,) = scores(case, booked(SENT))
    assert score.passed, score.explanation
    entry = ToolCallArgs(tool="book", args=BOOKED, nested=True)
    turn = TestCase(id="c", turns=[Turn(user="Book", expect=Expect(tool_calls_args=[entry]))])
    (score,) = scores(turn, booked(SENT))
    assert score.passed, score.explanation


# -- suite files ----------------------------------------------------------------------------


def load(tmp_path: Path, case_lines: str, registry: Registry | None = None) -> TestSuite:
    path = tmp_path / "suite.yaml"
    path.write_text("name: s\ncases:\n  - id: c\n" + case_lines, "utf-8")
    suite = TestSuite.load(path)
    (registry or default_registry()).check(suite)
    return suite


def test_a_suite_file_states_every_rule(tmp_path: Path) -> None:
    suite = load(
        tmp_path,
        "    expected_tool_arguments: {issue_refund: {amount: 49.99}}\n"
        "    compare_args: {abs: 0.01, ignore: [request_id], nested: true}\n"
        "    reference: {calls: [{tool: issue_refund, args: {amount: 49.99}}]}\n"
        "    turns:\n"
        "      - user: Refund\n"
        "        expect:\n"
        "          tool_calls_args:\n"
        "            - {tool: issue_refund, args: {amount: 49.99}, rel: 0.001, ignore: [ts]}\n"
        "    evaluators:\n"
        "      - name: trajectory_match\n"
        "        config: {mode: superset, args: superset, abs: 0.01, ignore: [ts],\n"
        "                 tool_args: {issue_refund: {mode: exact, nested: true}}}\n",
    )
    (case,) = suite.cases
    assert case.compare_args == CompareArgs(abs=0.01, ignore=("request_id",), nested=True)
    (entry,) = case.turns[0].expect.tool_calls_args
    assert entry.compare == CompareArgs(rel=0.001, ignore=("ts",))
    result = evaluate_trace(case, run_trace({"amount": 49.994, "ts": 5}))
    assert [s.passed for s in result.scores] == [True, True, True], result.failure_messages()


@pytest.mark.parametrize(
    ("lines", "error"),
    [
        (
            "    required_tools: [a]\n    compare_args: {abs: -1}\n",
            "suite.yaml:5: cases[0].compare_args.abs: expected a finite number, 0 or more, not -1",
        ),
        (
            "    required_tools: [a]\n    compare_args: {ignore: ts}\n",
            "suite.yaml:5: cases[0].compare_args.ignore: expected a list of argument paths, "
            "not 'ts'",
        ),
        (
            "    required_tools: [a]\n    compare_args: {nested: yes please}\n",
            "suite.yaml:5: cases[0].compare_args.nested: expected true or false, not 'yes please'",
        ),
        (
            "    required_tools: [a]\n    compare_args: {tolerance: 1}\n",
            "suite.yaml:5: cases[0].compare_args.tolerance: unknown key 'tolerance'; allowed "
            "keys: abs, rel, ignore, nested",
        ),
        (
            "    turns:\n      - expect:\n          tool_calls_args:\n"
            "            - {tool: a, args: {}, ignor: [x]}\n",
            "suite.yaml:7: cases[0].turns[0].expect.tool_calls_args[0].ignor: unknown key "
            "'ignor' (did you mean 'ignore'?); allowed keys: tool, args, mode, judge, abs, rel, "
            "ignore, nested",
        ),
        (
            "    turns:\n      - expect:\n          tool_calls_args:\n"
            "            - {tool: a, args: {}, ignore: ['a..b']}\n",
            "suite.yaml:7: cases[0].turns[0].expect.tool_calls_args[0].ignore[0]: an argument "
            "path is names joined by dots, each with any [n] or [*] after it (items[0].sku, "
            "*.timestamp), not 'a..b'",
        ),
        (
            "    reference: {calls: [a]}\n    evaluators:\n      - name: trajectory_match\n"
            "        config: {rel: high}\n",
            "suite.yaml:7: cases[0].evaluators[0].config.rel: expected a number, 0 or more, not "
            "'high'",
        ),
        (
            "    reference: {calls: [a]}\n    evaluators:\n      - name: trajectory_match\n"
            "        config:\n          tool_args: {a: {mode: superst}}\n",
            "suite.yaml:8: cases[0].evaluators[0].config.tool_args.a.mode: must be one of exact, "
            "ignore, subset, superset, not 'superst' (did you mean 'superset'?)",
        ),
        (
            "    reference: {calls: [a]}\n    evaluators:\n      - name: trajectory_similarity\n"
            "        config:\n          tool_args: {a: {nestd: true}}\n",
            "suite.yaml:8: cases[0].evaluators[0].config.tool_args.a.nestd: unknown key 'nestd' "
            "(did you mean 'nested'?); allowed keys: mode, abs, rel, ignore, nested (or check, "
            "config for a comparator)",
        ),
    ],
)
def test_a_bad_rule_in_a_file_names_file_line_and_key(
    tmp_path: Path, lines: str, error: str
) -> None:
    with pytest.raises(SuiteError) as caught:
        load(tmp_path, lines)
    assert str(caught.value).replace(str(tmp_path / "suite.yaml"), "suite.yaml") == error


def tolerance_scenarios() -> list[list[Score]]:
    """The texts a rule adds (the contract test runs these too)."""
    out = [scores(reference_case("trajectory_match", mode="strict", **RULE))]
    out.append(
        scores(
            reference_case("trajectory_match", mode="strict", nested=True, args="subset"),
            booked(SENT),
        )
    )
    out.append(
        scores(nested_case("strict", "superset", nested=True), booked({"flight": {"seats": []}}))
    )
    out.append(scores(reference_case("trajectory_match", mode="strict", abs=-1)))
    return out
