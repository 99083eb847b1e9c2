"""``args_from``: an argument's value must come from the run's recorded user messages, an
earlier call's recorded result, or a list of literals (docs/checks.md, "Argument
provenance"). On the corpus's recorded refund runs of every framework, the invented amount of
``c_refund_wrong_amount`` (499.9, where ``lookup_order`` returned 49.99) fails and
``a_refund_ok`` passes; a run whose sources were not recorded gives ``ContentNotCaptured``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures import CORPUS, ROOT

from tooltrail.checks.protocol import case_context
from tooltrail.checks.provenance import ArgsFrom, appears
from tooltrail.checks.score import Score
from tooltrail.convert import read_traces
from tooltrail.equality import Tolerance
from tooltrail.model import EvalTrace, ToolCall, Turn
from tooltrail.score import evaluate_trace, reads_content
from tooltrail.suite import SuiteError, TestCase, TestSuite
from tooltrail.suite.argrules import ArgSource

#: The refund case's provenance rule: the amount is the lookup's total, the order id the user's.
RULE: dict[str, Any] = {
    "issue_refund": {
        "amount": {"result_of": "lookup_order", "path": "total"},
        "order_id": ["user", {"result_of": "lookup_order"}],
    }
}
WRONG = sorted(CORPUS.glob("*/c_refund_wrong_amount.otlp.jsonl"))
RIGHT = sorted(
    p for p in CORPUS.glob("*/a_refund_ok.otlp.jsonl") if "nocontent" not in p.parent.name
)


def refund_case(**fields: Any) -> TestCase:
    return TestCase(id="refund", args_from=fields.pop("args_from", RULE), **fields)


def only_score(case: TestCase, trace: EvalTrace) -> Score:
    (score,) = evaluate_trace(case, trace).scores
    return score


def read_one(path: Path, *, content: bool = True) -> EvalTrace:
    (trace,) = read_traces(path, content=content)
    return trace


def test_the_corpus_holds_both_runs_of_every_framework() -> None:
    assert len(WRONG) == 8 and len(RIGHT) == 8


@pytest.mark.parametrize("recording", WRONG, ids=lambda p: p.parent.name)
def test_an_invented_amount_fails_where_the_lookup_recorded_the_true_one(recording: Path) -> None:
    truth = json.loads(recording.with_name("c_refund_wrong_amount.truth.json").read_text())
    refund = next(c for c in truth["calls"] if c["tool"] == "issue_refund")
    assert refund["args"]["amount"] == 499.9  # what the model invented
    trace = read_one(recording)
    assert trace.tool_calls[0].result["total"] == 49.99  # what the lookup returned
    score = only_score(refund_case(), trace)
    assert (score.passed, score.error, score.value) == (False, None, 0.0)
    assert score.explanation == (
        "Call 3 'issue_refund': argument {'amount': 499.9} has no recorded source: looked in "
        "the results of 'lookup_order' (calls [1]) at 'total'."
    )
    assert score.span_ids == (trace.tool_calls[2].span_id,)


@pytest.mark.parametrize("recording", RIGHT, ids=lambda p: p.parent.name)
def test_the_true_amount_and_the_users_order_id_pass(recording: Path) -> None:
    score = only_score(refund_case(), read_one(recording))
    assert score.passed, score.explanation
    assert score.explanation == (
        "Arguments ['amount', 'order_id'] of 'issue_refund' came from their sources: call 3 "
        "{'amount': 49.99} from the result of 'lookup_order' (call 1) at 'total'; call 3 "
        "{'order_id': 'ORD-7731'} from the user message of turn 1."
    )


def test_a_recording_without_content_gives_content_not_captured() -> None:
    nocontent = read_one(CORPUS / "google-adk-default-nocontent" / "a_refund_ok.otlp.jsonl")
    score = only_score(refund_case(), nocontent)
    assert (score.passed, score.error) == (False, "ContentNotCaptured")
    assert score.explanation == (
        "Content not captured: call 3 'issue_refund' records no arguments, so the sources of "
        "['amount', 'order_id'] could not be checked."
    )


def test_a_trace_read_without_its_results_gives_content_not_captured() -> None:
    trace = read_one(CORPUS / "pydantic-ai" / "c_refund_wrong_amount.otlp.jsonl", content=False)
    score = only_score(refund_case(), trace)
    assert (score.passed, score.error) == (False, "ContentNotCaptured")
    assert score.explanation == (
        "Content not captured: call 3 'issue_refund': the sources of argument {'amount': "
        "499.9} were not recorded (the results of 'lookup_order' (calls [1]))."
    )


def test_a_value_with_no_source_fails_though_another_source_was_not_recorded() -> None:
    """A definite failure beats a value that could not be checked."""
    trace = EvalTrace(
        "t",
        tool_calls=[
            ToolCall("lookup_order", {"id": 1}, result={"total": 5}),
            ToolCall("issue_refund", {"amount": 5, "note": "x"}, turn=1),
        ],
    )  # no turns: the user messages are not recorded
    case = refund_case(args_from={"issue_refund": {"note": "user", "amount": {"literal": [6]}}})
    score = only_score(case, trace)
    assert (score.passed, score.error) == (False, None)
    assert score.explanation == (
        "Call 2 'issue_refund': argument {'amount': 5} has no recorded source: looked in the "
        "literals [6]."
    )


# -- sources, one by one ------------------------------------------------------------------


def run_of(
    *calls: ToolCall, said: tuple[str | None, ...] = ("Refund ORD-7731, $1,250.00",)
) -> EvalTrace:
    turns = [Turn(number=n, input=text) for n, text in enumerate(said, 1)]
    return EvalTrace("t" * 32, tool_calls=list(calls), turns=turns, output="Done.")


def provenance(arguments: dict[str, Any], trace: EvalTrace, **case: Any) -> Score:
    check = ArgsFrom("refund", arguments, case.pop("compare", None))
    result = check.evaluate(case_context(TestCase(id="c", max_tool_calls=99), trace))
    assert isinstance(result, Score)
    return result


def test_a_user_message_holds_strings_as_written_and_numbers_as_written_numbers() -> None:
    trace = run_of(ToolCall("refund", {"order": "ORD-7731", "amount": 1250, "cents": 125000}))
    assert provenance({"order": "user", "amount": "user"}, trace).passed
    lower = run_of(ToolCall("refund", {"order": "ord-7731"}))
    assert not provenance({"order": "user"}, lower).passed  # values compare as given
    assert not provenance({"cents": "user"}, trace).passed


def test_text_holds_a_number_only_as_a_whole_written_number() -> None:
    assert appears(1250, "a total of $1,250.00", None)
    assert appears(7731, "order ORD-7731", None) and not appears(-7731, "order ORD-7731", None)
    assert not appears(125, "a total of $1,250.00", None)
    assert not appears(49.9, "refund 49.99", None)
    assert appears(49.9, "refund 49.99", Tolerance(abs=0.1))
    assert not appears(True, "true", None) and not appears(None, "None null", None)
    assert appears(["A-1", 2], "items A-1 and 2", None)


def test_a_user_message_of_a_later_turn_is_no_source() -> None:
    trace = run_of(
        ToolCall("refund", {"order": "ORD-9"}, turn=1),
        said=("Refund my order", "It was ORD-9"),
    )
    score = provenance({"order": "user"}, trace)
    assert score.explanation == (
        "Call 1 'refund': argument {'order': 'ORD-9'} has no recorded source: looked in the user "
        "messages of turns [1]."
    )


def test_a_result_is_searched_at_its_path_or_anywhere() -> None:
    lookup = ToolCall("lookup", {}, result={"order": {"lines": [{"price": 5}, {"price": 7.5}]}})
    trace = run_of(lookup, ToolCall("refund", {"amount": 7.5}))
    assert provenance({"amount": {"result_of": "lookup"}}, trace).passed
    at = {"result_of": "lookup", "path": "order.lines[*].price"}
    assert provenance({"amount": at}, trace).passed
    first = {"result_of": "lookup", "path": "order.lines[0].price"}
    score = provenance({"amount": first}, trace)
    assert score.explanation == (
        "Call 2 'refund': argument {'amount': 7.5} has no recorded source: looked in the results "
        "of 'lookup' (calls [1]) at 'order.lines[0].price'."
    )


def test_a_result_that_is_text_holds_what_is_written_in_it() -> None:
    trace = run_of(
        ToolCall("lookup", {}, result="Order total: 49.99 USD"),
        ToolCall("refund", {"amount": 49.99}),
    )
    assert provenance({"amount": {"result_of": "lookup"}}, trace).passed
    assert not provenance({"amount": {"result_of": "lookup", "path": "total"}}, trace).passed


def test_only_earlier_calls_that_did_not_fail_are_sources() -> None:
    later = run_of(ToolCall("refund", {"amount": 5}), ToolCall("lookup", {}, result={"total": 5}))
    score = provenance({"amount": {"result_of": "lookup"}}, later)
    assert score.explanation.endswith("looked in no earlier call of 'lookup'.")
    failed = run_of(
        ToolCall("lookup", {}, status="error", result={"total": 5}),
        ToolCall("refund", {"amount": 5}),
    )
    score = provenance({"amount": {"result_of": "lookup"}}, failed)
    assert score.explanation.endswith("looked in no earlier call of 'lookup' that did not fail.")


def test_every_call_and_every_named_value_is_checked() -> None:
    lookup = ToolCall("lookup", {}, result={"skus": ["A", "B"]})
    trace = run_of(
        lookup,
        ToolCall("refund", {"items": [{"sku": "A"}, {"sku": "B"}]}),
        ToolCall("refund", {"items": [{"sku": "A"}, {"sku": "Z"}]}),
    )
    score = provenance({"items[*].sku": {"result_of": "lookup"}}, trace)
    assert score.explanation == (
        "Call 3 'refund': argument {'items[1].sku': 'Z'} has no recorded source: looked in the "
        "results of 'lookup' (calls [1])."
    )


def test_literals_and_the_cases_tolerance() -> None:
    trace = run_of(ToolCall("refund", {"currency": "USD", "amount": 49.995}))
    assert provenance({"currency": {"literal": ["USD", "EUR"]}}, trace).passed
    from tooltrail.suite.argrules import CompareArgs

    loose = CompareArgs(abs=0.01)
    assert not provenance({"amount": {"literal": [49.99]}}, trace).passed
    assert provenance({"amount": {"literal": [49.99]}}, trace, compare=loose).passed


def test_any_one_of_several_sources_will_do_and_the_failure_names_each_place() -> None:
    trace = run_of(
        ToolCall("lookup", {}, result={"id": "ORD-1"}), ToolCall("refund", {"order": "ORD-2"})
    )
    sources = ["user", {"result_of": "lookup"}, {"literal": ["ORD-3"]}]
    score = provenance({"order": sources}, trace)
    assert score.explanation == (
        "Call 2 'refund': argument {'order': 'ORD-2'} has no recorded source: looked in the user "
        "messages of turns [1]; the results of 'lookup' (calls [1]); the literals ['ORD-3']."
    )


def test_a_tool_not_called_or_called_without_the_argument_passes() -> None:
    assert provenance({"amount": "user"}, run_of()).explanation == (
        "Tool 'refund' was not called, so no argument's source was checked."
    )
    score = provenance({"amount": "user"}, run_of(ToolCall("refund", {"order": "x"})))
    assert (score.passed, score.explanation) == (
        True,
        "Tool 'refund' was called without the arguments ['amount'], so no source was checked.",
    )


def test_typed_sources_are_the_mappings_a_file_writes() -> None:
    typed = {"amount": ArgSource.result_of("lookup", path="total")}
    trace = run_of(ToolCall("lookup", {}, result={"total": 3}), ToolCall("refund", {"amount": 3}))
    assert provenance(typed, trace).passed
    assert TestCase(id="c", args_from={"refund": typed}).args_from == {
        "refund": {"amount": (ArgSource.result_of("lookup", path="total"),)}
    }


def test_a_bad_rule_in_python_is_a_config_error_or_a_suite_error() -> None:
    trace = run_of(ToolCall("refund", {"amount": 3}))
    score = provenance({"amount": {"result_of": 7}}, trace)
    assert (score.error, score.explanation) == (
        "ConfigError",
        "args_from['refund']['amount']['result_of']: expected a tool name, not 7.",
    )
    with pytest.raises(
        SuiteError,
        match=r"args_from\.refund\.amount\[0\]: a source .* not 'users' \(did you mean 'user'\?\)$",
    ):
        TestCase(id="c", args_from={"refund": {"amount": ["users"]}})


# -- content is read only when a source needs it ----------------------------------------------


def test_only_user_and_result_sources_make_a_run_read_content() -> None:
    literal = TestCase(id="c", args_from={"refund": {"currency": {"literal": ["USD"]}}})
    assert reads_content([literal]) is False
    assert reads_content([refund_case()]) is True


# -- suite files ----------------------------------------------------------------------------


def load(tmp_path: Path, case_lines: str) -> TestSuite:
    path = tmp_path / "suite.yaml"
    path.write_text("name: s\ncases:\n  - id: refund\n" + case_lines, "utf-8")
    return TestSuite.load(path)


def test_a_suite_file_states_the_rule(tmp_path: Path) -> None:
    suite = load(
        tmp_path,
        "    args_from:\n"
        "      issue_refund:\n"
        "        amount: {result_of: lookup_order, path: total}\n"
        "        order_id: [user, {result_of: lookup_order}]\n"
        "    compare_args: {abs: 0.001}\n",
    )
    (case,) = suite.cases
    assert case.args_from == {
        "issue_refund": {
            "amount": (ArgSource.result_of("lookup_order", path="total"),),
            "order_id": (ArgSource.user(), ArgSource.result_of("lookup_order")),
        }
    }
    wrong = read_one(CORPUS / "strands" / "c_refund_wrong_amount.otlp.jsonl")
    assert not only_score(case, wrong).passed


@pytest.mark.parametrize(
    ("lines", "error"),
    [
        (
            "    args_from:\n      issue_refund:\n        amount: {result_of: 7}\n",
            "suite.yaml:6: cases[0].args_from.issue_refund.amount.result_of: expected a tool "
            "name, not 7",
        ),
        (
            "    args_from:\n      issue_refund:\n        amount: [user, {result_off: x}]\n",
            "suite.yaml:6: cases[0].args_from.issue_refund.amount[1].result_off: unknown key "
            "'result_off' (did you mean 'result_of'?); a source is `user`, {result_of: TOOL, "
            "path: PATH} or {literal: [values]}",
        ),
        (
            "    args_from:\n      issue_refund:\n        items..sku: user\n",
            "suite.yaml:6: cases[0].args_from.issue_refund.items..sku: an argument path is names "
            "joined by dots, each with any [n] or [*] after it (items[0].sku, *.timestamp), not "
            "'items..sku'",
        ),
        (
            "    args_from:\n      issue_refund:\n        amount: {literal: 5}\n",
            "suite.yaml:6: cases[0].args_from.issue_refund.amount.literal: expected a list of "
            "values, not 5",
        ),
        (
            "    args_from:\n      issue_refund:\n        amount: {literal: [5], path: x}\n",
            "suite.yaml:6: cases[0].args_from.issue_refund.amount.path: only a result_of source "
            "has a path",
        ),
        (
            "    args_from:\n      issue_refund: [user]\n",
            "suite.yaml:5: cases[0].args_from.issue_refund: expected a mapping of argument path "
            "-> source (user, result_of, literal)",
        ),
    ],
)
def test_a_bad_rule_in_a_file_names_file_line_and_key(
    tmp_path: Path, lines: str, error: str
) -> None:
    with pytest.raises(SuiteError) as caught:
        load(tmp_path, lines)
    assert str(caught.value).replace(str(tmp_path / "suite.yaml"), "suite.yaml") == error


# -- the contract's place texts ---------------------------------------------------------------

PAGE = ROOT / "docs" / "checks.md"


def place_templates() -> list[re.Pattern[str]]:
    """The ``text`` column of the page's table of places (``| place | text |``)."""
    lines = PAGE.read_text("utf-8").splitlines()
    start = lines.index("| place | text |")
    found = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cell = line.strip().strip("|").split(" | ")[1]
        for text in re.findall(r"`([^`]+)`", cell):
            parts = re.split(r"\{[^{}]*\}", text)
            found.append(re.compile(".+?".join(re.escape(p) for p in parts)))
    return found


def produced_places() -> Iterator[str]:
    """Every place text the check writes, split out of its explanations."""
    for score in args_from_scenarios_flat():
        text = score.explanation
        for marker in ("looked in ", "were not recorded ("):
            if marker in text:
                listed = text.split(marker, 1)[1].rstrip(".").removesuffix(")")
                yield from listed.split("; ")
        if "came from their sources: " in text:
            for item in text.split("came from their sources: ", 1)[1].rstrip(".").split("; "):
                if not item.startswith("and "):  # "and 2 more"
                    yield item.split(" from ", 1)[1]


def test_every_place_the_check_names_is_on_the_page_and_every_one_on_the_page_is_named() -> None:
    templates = place_templates()
    used = set()
    for place in produced_places():
        matching = [t for t in templates if t.fullmatch(place)]
        assert matching, f"{place!r} matches no place of docs/checks.md"
        used.update(t.pattern for t in matching)
    assert sorted(t.pattern for t in templates if t.pattern not in used) == []


def args_from_scenarios() -> Iterator[list[Score]]:
    """Every branch of ``args_from`` that explains (the contract test runs these too)."""
    wrong = read_one(WRONG[0])
    right = read_one(RIGHT[0])
    yield evaluate_trace(refund_case(), wrong).scores
    yield evaluate_trace(refund_case(), right).scores
    yield evaluate_trace(refund_case(), read_one(WRONG[0], content=False)).scores
    nocontent = read_one(CORPUS / "google-adk-default-nocontent" / "a_refund_ok.otlp.jsonl")
    yield evaluate_trace(refund_case(), nocontent).scores
    unsaid = run_of(ToolCall("refund", {"order": "x"}), said=(None,))
    yield [provenance({"order": "user"}, unsaid)]
    untold = EvalTrace("t", tool_calls=[ToolCall("refund", {"order": "x"})])
    yield [provenance({"order": "user"}, untold)]
    lookup = ToolCall("lookup", {}, result={"total": 5})
    yield [provenance({"a": {"result_of": "lookup"}}, run_of(lookup, ToolCall("refund", {"a": 5})))]
    yield [provenance({"a": "user"}, run_of(ToolCall("refund", {"a": 1250})))]
    yield [provenance({"a": {"literal": [5]}}, run_of(ToolCall("refund", {"a": 5})))]
    yield [provenance({"a": {"literal": [5]}}, run_of(ToolCall("refund", {"a": 6})))]
    yield [provenance({"a": {"result_of": "lookup"}}, run_of(ToolCall("refund", {"a": 6})))]
    failed = ToolCall("lookup", {}, status="error")
    yield [provenance({"a": {"result_of": "lookup"}}, run_of(failed, ToolCall("refund", {"a": 6})))]
    unrecorded = ToolCall("lookup", {})
    yield [
        provenance({"a": {"result_of": "lookup"}}, run_of(unrecorded, ToolCall("refund", {"a": 6})))
    ]
    at = {"result_of": "lookup", "path": "total"}
    yield [provenance({"a": at}, run_of(lookup, ToolCall("refund", {"a": 6})))]
    many = run_of(*[ToolCall("refund", {"a": 5}) for _ in range(7)])
    yield [provenance({"a": {"literal": [5]}}, many)]
    yield [provenance({"a": "user"}, run_of())]
    yield [provenance({"a": "user"}, run_of(ToolCall("refund", {"b": 1})))]
    yield [provenance({"a": {"result_of": 7}}, run_of(ToolCall("refund", {"a": 1})))]
    yield [provenance({"a..b": "user"}, run_of(ToolCall("refund", {"a": 1})))]
    yield [provenance([], run_of(ToolCall("refund", {"a": 1})))]  # type: ignore[arg-type]


def args_from_scenarios_flat() -> list[Score]:
    return [score for scores in args_from_scenarios() for score in scores]
