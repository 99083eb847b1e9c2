"""An agent benchmark's success rule said with built-in checks alone (docs/checks.md,
``trajectory_match``): "the state-changing calls equal the gold ones, with equal arguments, in
any order; reads are free; failed calls changed nothing; the reply states the answer".

``tests/data/benchmark_rule/suite.yaml`` says it for ten recorded runs of the corpus, one case
per run and no plug-in: a write-tool reference over a scope (``exclude_tools``), nested
arguments (``nested: true``), failed calls left out (``ignore_failed_calls``) and a reply of
the run (``contains_options: {replies: all}``). Each run is tagged with its case's id, as a
test set is recorded, and ``tooltrail eval`` gives each run its verdict. The scope and the
rules' other keys are each needed: without one, a run the rule passes fails."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fixtures import CORPUS, DATA

from tooltrail.checks import NoRedundantToolCalls, Registry, ToolCallPrecision, ToolCallRecall
from tooltrail.checks.budgets import MaxToolCalls
from tooltrail.checks.expectations import Contains
from tooltrail.checks.protocol import case_context
from tooltrail.checks.score import Score
from tooltrail.cli import main
from tooltrail.convert import read_traces
from tooltrail.model import EvalTrace, ToolCall, Turn
from tooltrail.score import evaluate_trace
from tooltrail.suite import TestCase, TestSuite
from tooltrail.suite.case import EvaluatorConfig
from tooltrail.suite.contains import ContainsOptions

SUITE = DATA / "benchmark_rule" / "suite.yaml"
#: case id -> the corpus scenario it judges, and whether the benchmark's rule passes it.
RUNS: dict[str, tuple[str, bool]] = {
    "refund_ok": ("a_refund_ok", True),
    "refund_skip_verify": ("b_refund_skip_verify", True),  # reads are free
    "refund_wrong_amount": ("c_refund_wrong_amount", False),
    "refund_loop": ("d_loop_web_search", False),  # never refunds
    "refund_retried": ("f_tool_error_retry", True),  # the failed attempt changed nothing
    "refund_fatal": ("f2_tool_error_fatal", False),  # its one refund failed
    "refund_parallel": ("g_parallel_calls", True),
    "shipment": ("i_complex_args", True),  # the gold's nested arguments, and more
    "booking_ok": ("e_booking_multiturn_ok", True),  # "Booked for 10am." is turn 1's reply
    "booking_twice": ("e_booking_multiturn_bad", False),  # a second create_booking
}
#: The frameworks whose recordings join a conversation's turns (the bookings' two traces).
FRAMEWORKS = ["pydantic-ai", "pydantic-ai-logfire", "google-adk", "vercel-ai"]


def tagged_dump(framework: str, directory: Path) -> Path:
    """The corpus runs of ``framework`` in one file, each request's resource tagged with the
    ``tooltrail.case_id`` of the case that judges it."""
    lines = []
    for case_id, (scenario, _) in RUNS.items():
        for line in (CORPUS / framework / f"{scenario}.otlp.jsonl").read_text("utf-8").splitlines():
            request = json.loads(line)
            for block in request["resourceSpans"]:
                resource = block.setdefault("resource", {})
                resource.setdefault("attributes", []).append(
                    {"key": "tooltrail.case_id", "value": {"stringValue": case_id}}
                )
            lines.append(json.dumps(request))
    dump = directory / f"{framework}.otlp.jsonl"
    dump.write_text("\n".join(lines) + "\n", "utf-8")
    return dump


def evaluated(framework: str, directory: Path, suite: Path = SUITE) -> dict[str, dict[str, Any]]:
    result = CliRunner().invoke(
        main,
        [
            "eval", str(suite), str(tagged_dump(framework, directory)), "--group",
            "conversation", "--workers", "1", "--format", "json", "--quiet",
        ],
    )  # fmt: skip
    assert result.exit_code in (0, 1), result.output
    rows = json.loads(result.output)["cases"]
    by_case = {row["case_id"]: row for row in rows}
    assert len(by_case) == len(rows) == len(RUNS)  # one run per case, each judged once
    return by_case


def test_the_suite_is_one_case_per_run_of_built_in_checks() -> None:
    suite = TestSuite.load(SUITE)
    assert [case.id for case in suite.cases] == list(RUNS)
    assert {e.name for case in suite.cases for e in case.evaluators} == {"trajectory_match"}


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_eval_gives_each_recorded_run_the_benchmarks_verdict(
    framework: str, tmp_path: Path
) -> None:
    rows = evaluated(framework, tmp_path)
    verdicts = {case_id: row["passed"] for case_id, row in rows.items()}
    assert verdicts == {case_id: passes for case_id, (_, passes) in RUNS.items()}
    match = {
        case_id: next(s for s in row["scores"] if s["metric"] == "trajectory_match")
        for case_id, row in rows.items()
    }
    scope = "(not ['lookup_*', 'verify_*', 'get_*', 'web_search'], failed calls left out)"
    rule = "(unordered, arguments superset, nested, abs 0.005)"
    assert match["refund_retried"]["explanation"] == (
        f"Tool calls ['issue_refund'] {scope} matched the reference ['issue_refund'] {rule}."
    )
    assert match["refund_wrong_amount"]["explanation"] == (
        f"Tool calls ['issue_refund'] {scope} did not match the reference ['issue_refund'] "
        f"{rule}: call 1 'issue_refund': argument {{'amount': 499.9}} where the reference has "
        "{'amount': 49.99}."
    )
    assert match["refund_fatal"]["explanation"].endswith(
        ": reference call 1 'issue_refund' is missing."
    )
    assert match["booking_twice"]["explanation"].endswith(
        ": call 3 'create_booking' is not in the reference."
    )
    replies = {
        case_id: next(s for s in row["scores"] if s["metric"] == "contains")
        for case_id, row in rows.items()
    }
    assert replies["booking_ok"]["explanation"] == (
        "A reply of the run contains required text: 'booked for 10am'."
    )
    assert replies["refund_wrong_amount"]["passed"] is False  # it said $499.90


@pytest.mark.parametrize(
    ("change", "flips"),
    [
        # the reads are no longer free: every run that reads fails
        (
            {"exclude_tools": None},
            ["refund_ok", "refund_skip_verify", "refund_retried", "refund_parallel", "shipment"],
        ),
        # the failed attempt counts: the retried refund is two refunds, the fatal one a refund
        ({"ignore_failed_calls": False}, ["refund_retried", "refund_fatal"]),
        # the nested objects must equal the gold's whole
        ({"nested": False}, ["shipment"]),
        # the recorded amounts are exact: nothing changes
        ({"abs": None}, []),
    ],
)
def test_each_key_of_the_rule_is_needed(
    change: dict[str, Any], flips: list[str], tmp_path: Path
) -> None:
    suite = TestSuite.load(SUITE)
    by_id = {}
    for case in suite.cases:
        case = copy.deepcopy(case)
        (evaluator,) = case.evaluators
        config = {k: v for k, v in {**evaluator.config, **change}.items() if v is not None}
        case.evaluators = [EvaluatorConfig(name=evaluator.name, config=config)]
        by_id[case.id] = case
    runs = read_traces(tagged_dump("pydantic-ai", tmp_path), group="conversation", content=True)
    verdicts = {}
    for trace in runs:
        case = by_id[trace.metadata["case_id"]]
        (score,) = [s for s in evaluate_trace(case, trace).scores if s.metric == "trajectory_match"]
        verdicts[case.id] = score.passed
    expected = {case_id: passes is not (case_id in flips) for case_id, (_, passes) in RUNS.items()}
    assert verdicts == expected


# -- the scope on every check over calls ---------------------------------------------------------


def scoped_run() -> EvalTrace:
    return EvalTrace(
        "t",
        tool_calls=[
            ToolCall("lookup_order", {"id": 1}, span_id="s1"),
            ToolCall("lookup_order", {"id": 1}, span_id="s2"),
            ToolCall("issue_refund", {"amount": 5}, span_id="s3", status="error"),
            ToolCall("issue_refund", {"amount": 5}, span_id="s4"),
            ToolCall("send_email", {}, span_id="s5"),
        ],
    )


def judged(check: Any, trace: EvalTrace | None = None) -> Score:
    result = check.evaluate(
        case_context(TestCase(id="c", max_tool_calls=99), trace or scoped_run())
    )
    assert isinstance(result, Score)
    return result


def test_a_pattern_or_an_exclusion_scopes_the_counting_checks() -> None:
    writes = {"tools": ["issue_*", "send_*"]}
    assert judged(ToolCallPrecision(["issue_refund"], **writes)).explanation == (
        "2/3 tool calls (tools ['issue_*', 'send_*']) were in the allowed set ['issue_refund']."
    )
    assert judged(ToolCallRecall(["lookup_order"], **writes)).explanation == (
        "0/1 required tools were called (tools ['issue_*', 'send_*'])."
    )
    reads_free = {"exclude_tools": ["lookup_*"]}
    assert judged(NoRedundantToolCalls(**reads_free)).explanation == (
        "1/3 tool calls (not ['lookup_*']) exactly duplicated an earlier call."
    )
    assert judged(MaxToolCalls(3, **reads_free)).explanation == (
        "3 tool calls (not ['lookup_*']) are within the limit of 3."
    )
    both = judged(MaxToolCalls(0, tools=["*_*"], exclude_tools=["send_email"]))
    assert both.explanation == (
        "4 tool calls (tools ['*_*'], not ['send_email']) exceed the limit of 0."
    )
    assert judged(ToolCallPrecision(["x"], tools=["nothing"])).explanation == (
        "No tool calls (tools ['nothing']) in the trace; expected calls from ['x']."
    )


def test_a_bad_scope_is_a_config_error_in_python_and_in_a_file(tmp_path: Path) -> None:
    score = judged(NoRedundantToolCalls(tools="issue_*"))
    assert (score.error, score.explanation) == (
        "ConfigError",
        "config['tools'] must be a list of tool names or patterns.",
    )
    path = tmp_path / "suite.yaml"
    path.write_text(
        "name: s\ncases:\n  - id: c\n    max_turns: 1\n    evaluators:\n"
        "      - name: max_tool_calls\n        config: {max: 3, exclude_tools: lookup_*}\n"
    )
    from tooltrail.checks import default_registry
    from tooltrail.suite import SuiteError

    with pytest.raises(SuiteError) as caught:
        default_registry().check(TestSuite.load(path))
    assert str(caught.value) == (
        f"{path}:7: cases[0].evaluators[0].config.exclude_tools: expected a list of tool names "
        "or patterns (issue_*)"
    )


# -- contains over every reply, and its normalisation ------------------------------------------


def said(*replies: str | None, output: str | None = None) -> EvalTrace:
    turns = [Turn(number=n, input="?", reply=r) for n, r in enumerate(replies, 1)]
    return EvalTrace("t", turns=turns, output=output if output is not None else replies[-1])


@pytest.mark.parametrize(
    ("text", "options", "trace", "passed"),
    [
        ("$1,250.00", {}, said("Refunded $1250.00."), False),
        ("$1,250.00", {"ignore_thousands_separators": True}, said("Refunded $1250.00."), True),
        ("$1250.00", {"ignore_thousands_separators": True}, said("Refunded $1\u202f250.00."), True),
        ("3,14", {"ignore_thousands_separators": True}, said("pi is 3,14"), True),
        ("ORD 7731", {}, said("order ORD  7731\nis done"), False),
        ("ORD 7731", {"collapse_whitespace": True}, said("order ORD \n\t 7731 is done"), True),
        ("Booked", {"ignore_case": False}, said("booked"), False),
        ("booked", {}, said("Booked for 10am.", "Moved to 11am."), False),
        ("booked", {"replies": "all"}, said("Booked for 10am.", "Moved to 11am."), True),
        ("booked for", {"replies": "all"}, said("Booked", "for 10am."), False),  # never joined
    ],
)
def test_contains_looks_in_the_replies_the_options_name(
    text: str, options: dict[str, Any], trace: EvalTrace, passed: bool
) -> None:
    case = TestCase(id="c", expected_contains=[text], contains_options=options)
    (score,) = evaluate_trace(case, trace).scores
    assert score.passed is passed, score.explanation


def test_every_reply_is_read_with_content_and_the_plain_options_keep_the_plain_check() -> None:
    from tooltrail.score import reads_content

    every = TestCase(id="c", expected_contains=["x"], contains_options={"replies": "all"})
    assert reads_content([every]) is True
    normalised = TestCase(
        id="c", expected_contains=["x"], contains_options={"collapse_whitespace": True}
    )
    assert reads_content([normalised]) is False
    assert Contains("x", ContainsOptions()).options is None


def benchmark_scenarios() -> list[list[Score]]:
    """The scope's and the replies' texts (the contract test runs these too)."""
    out = [
        [judged(ToolCallPrecision(["issue_refund"], tools=["issue_*"]))],
        [judged(ToolCallPrecision(["x"], tools=["nothing"]))],
        [judged(ToolCallRecall(["lookup_order"], tools=["issue_*"]))],
        [judged(NoRedundantToolCalls(exclude_tools=["lookup_*"]))],
        [judged(NoRedundantToolCalls(tools=["none"]))],
        [judged(NoRedundantToolCalls(tools="issue_*"))],
        [judged(MaxToolCalls(3, exclude_tools=["lookup_*"]))],
        [judged(MaxToolCalls(0, tools=["issue_*"]))],
    ]
    every = {"replies": "all"}
    for reply in ("Booked.", "Moved."):
        case = TestCase(id="c", expected_contains=["booked"], contains_options=every)
        out.append(evaluate_trace(case, said(reply)).scores)
    expected = EvaluatorConfig(
        name="trajectory_match",
        config={"expected": ["issue_refund"], "tools": ["issue_*"], "ignore_failed_calls": True},
    )
    out.append(evaluate_trace(TestCase(id="c", evaluators=[expected]), scoped_run()).scores)
    for mode in ("in_order", "strict"):
        config = {"expected": ["issue_refund"], "mode": mode, "exclude_tools": ["lookup_*"]}
        case = TestCase(
            id="c", evaluators=[EvaluatorConfig(name="trajectory_match", config=config)]
        )
        out.append(evaluate_trace(case, scoped_run()).scores)
    for bad in ({"ignore_failed_calls": "yes"}, {"tools": [1]}, {"nested": "deep"}):
        config = {"expected": ["a"], **bad}
        case = TestCase(
            id="c", evaluators=[EvaluatorConfig(name="trajectory_match", config=config)]
        )
        out.append(evaluate_trace(case, scoped_run()).scores)
    keyless = Registry.with_builtins()  # a check that takes no config keys, given one
    keyless.register("keyless", lambda trace, case, config: [], config_keys=())
    out.append(keyless.run(EvaluatorConfig(name="keyless", config={"k": 1}), scoped_run(), case))
    return out
