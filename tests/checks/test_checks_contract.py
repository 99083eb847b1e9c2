"""docs/checks.md is the contract of the built-in checks' texts: every built-in check runs here
on small traces, through every branch that writes an explanation, and each text it produces
must match a template of the page's **message** column for its metric; each template of the
page must be produced by one of them. A message changed in the code and not on the page (or on
the page and not in the code) fails here.

Templates are the code spans of a table's ``message`` column; a ``{...}`` placeholder stands for
any text, except ``{difference}`` and ``{argument}``, which must match a template of the page's
``difference`` and ``argument`` tables. A row whose first cell names no metric in code (``the
scorer's name``) holds for any metric.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from judge_double import ScriptedJudge, verdict
from test_args_from import args_from_scenarios
from test_benchmark_rule import benchmark_scenarios
from test_handoffs import handoff_scenarios
from test_tolerance import tolerance_scenarios
from test_tool_error_checks import tool_error_scenarios
from test_trajectory_similarity import similarity_scenarios

from tooltrail.checks import (
    ArgsComparator,
    Contains,
    ForbiddenTool,
    LlmJudge,
    MaxCost,
    MaxLatency,
    MaxLlmCalls,
    MaxTokens,
    MaxToolCalls,
    NoRedundantToolCalls,
    Registry,
    RequiredTool,
    Score,
    ToolArgs,
    ToolArgsJudge,
    ToolArgValues,
    ToolCallPrecision,
    ToolCallRecall,
    ToolOrder,
    TrajectoryJudge,
    TrajectoryMatch,
    TurnArgs,
    TurnCount,
    TurnExcludes,
    TurnIncludes,
    TurnMaxLatency,
    TurnOrdered,
)
from tooltrail.checks.outcomes import NotRun, Raised, TimedOut
from tooltrail.checks.protocol import CheckContext, case_context
from tooltrail.checks.timelimit import outcome_score
from tooltrail.judge import JudgeOutcome, set_model_resolver, use_judge
from tooltrail.model import EvalTrace, ToolCall, Turn
from tooltrail.score import evaluate_trace
from tooltrail.suite.case import EvaluatorConfig, ModelPrice, TestCase
from tooltrail.suite.reference import Reference

PAGE = Path(__file__).resolve().parents[2] / "docs" / "checks.md"
#: Placeholders that stand for a text of the page's own tables of that name.
FRAGMENTS = ("difference", "argument")
ANY_METRIC = "*"


# -- the page --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Template:
    text: str
    pattern: re.Pattern[str]
    #: The metric it belongs to, ``*`` for any, or the fragment table it is in.
    where: str


def _code_spans(cell: str) -> list[str]:
    return [double or single for double, single in re.findall(r"``(.+?)``|`([^`]+)`", cell)]


def _pattern(template: str) -> re.Pattern[str]:
    parts = []
    for literal, placeholder in re.findall(r"([^{]+)|(\{[^{}]*\})", template):
        if literal:
            parts.append(re.escape(literal))
            continue
        name = re.sub(r"[!:].*", "", placeholder[1:-1])
        parts.append(f"(?P<{name}>.*?)" if name in FRAGMENTS else "(?:.*?)")
    return re.compile("".join(parts), re.DOTALL)


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split(" | ")]


def read_templates() -> list[Template]:
    """Every template of the page's tables that have a ``message`` column."""
    found: list[Template] = []
    lines = PAGE.read_text(encoding="utf-8").splitlines()
    header: list[str] | None = None
    for line in lines:
        if not line.startswith("|"):
            header = None
            continue
        cells = _cells(line)
        if header is None:
            header = cells
            continue
        if set(line) <= set("|- "):
            continue
        if "message" not in header:
            continue
        first = header[0]
        if first in FRAGMENTS:
            places = [first]
        else:
            places = [m for m in _code_spans(cells[0]) if " " not in m] or [ANY_METRIC]
        for text in _code_spans(cells[header.index("message")]):
            for where in places:
                found.append(Template(text, _pattern(text), where))
    return found


TEMPLATES = read_templates()


def _matches(message: str, where: str, used: set[str]) -> bool:
    """Whether ``message`` matches a template of ``where`` (a metric, or a fragment table),
    its fragments matching theirs; every template that matches is added to ``used``."""
    matched = False
    for template in TEMPLATES:
        if template.where not in (where, ANY_METRIC) or (
            where in FRAGMENTS and template.where != where
        ):
            continue
        found = template.pattern.fullmatch(message)
        if found is None:
            continue
        fragments = found.groupdict()
        if all([_matches(text, name, used) for name, text in fragments.items()]):
            used.add(template.text)
            matched = True
    return matched


# -- the checks, through every branch that explains --------------------------------------


def make_case(**fields: Any) -> TestCase:
    """A case for a check run on its own (a case needs an expectation: a loose budget)."""
    return TestCase(id="c", max_tool_calls=100, **fields)


def call(name: str, args: dict[str, Any] | None = None, *, turn: int = 1) -> ToolCall:
    return ToolCall(name=name, args=args, span_id=f"span-{name}", turn=turn)


def trace(*calls: ToolCall, **metadata: Any) -> EvalTrace:
    return EvalTrace(trace_id="t" * 32, tool_calls=list(calls), metadata=metadata)


def run(
    check: Any,
    on: EvalTrace | None = None,
    case: TestCase | None = None,
    output: str | None = None,
    turn: int | None = None,
) -> list[Score]:
    on = on if on is not None else trace(call("a", {"k": 1}), call("b"))
    case = case if case is not None else make_case()
    ctx = case_context(case, on, output)
    if turn is not None:
        ctx = CheckContext(
            trace=on, view=ctx.view.turn(turn), output=ctx.output, case=case, turn=turn
        )
    result = check.evaluate(ctx)
    return [result] if isinstance(result, Score) else list(result)


TOKENS = {"input_tokens": 10, "output_tokens": 5}
USAGE: dict[str, Any] = {**TOKENS, "by_model": {"m": TOKENS}}
PRICES = {"m": ModelPrice(input=1, output=1)}


@dataclass(frozen=True)
class Never(ArgsComparator):
    """A registered comparator that says no, raises, or answers other than a bool."""

    how: str = "no"

    def compare_args(self, tool: str, reference: Any, actual: Any) -> bool:
        if self.how == "raise":
            raise ValueError("cannot compare")
        return 1 if self.how == "int" else False  # type: ignore[return-value]


def _registry() -> Registry:
    registry = Registry.with_builtins()
    registry.register("never", Never)

    def boom(trace: EvalTrace, case: TestCase, config: dict[str, Any]) -> Score:
        raise ValueError("boom")

    def five(trace: EvalTrace, case: TestCase, config: dict[str, Any]) -> Any:
        return 5

    registry.register("boom", boom)
    registry.register("five", five)
    return registry


def configured(name: str, registry: Registry | None = None, **fields: Any) -> Any:
    return (registry or _registry()).build(EvaluatorConfig(name=name, **fields))


def referenced(*calls: ToolCall) -> TestCase:
    return make_case(reference=Reference(calls=calls))


def _scenarios() -> Iterator[list[Score]]:
    ab = trace(call("a", {"k": 1}), call("b"))
    # case expectations
    yield run(Contains("all ok"), output="  All OK  ")
    yield run(Contains("missing"), output="All OK")
    yield run(RequiredTool("a"))
    yield run(RequiredTool("z"))
    yield run(ForbiddenTool("a"))
    yield run(ForbiddenTool("z"))
    yield run(ToolArgs("a", ["k"]))
    yield run(ToolArgs("a", ["q"]))
    yield run(ToolArgs("a", "k"))  # type: ignore[arg-type]
    yield run(ToolArgValues("a", {"k": 1}))
    yield run(ToolArgValues("a", {"k": 2}))
    yield run(ToolArgValues("z", {"k": 1}))
    yield run(ToolArgValues("a", [1]))  # type: ignore[arg-type]
    yield run(ToolOrder(["a", "b"]))
    yield run(ToolOrder(["b", "a"]))
    yield run(ToolOrder(["a", "z"]))
    yield run(TurnCount(3), trace(call("a"), turn_count=2))
    yield run(TurnCount(1), trace(call("a"), turn_count=2))
    yield run(TurnCount(1), trace(call("a"), turn_count=True))
    yield run(TurnCount(-1))
    # budgets
    yield run(MaxLatency(1000), trace(total_latency_ms=500.0))
    yield run(MaxLatency(100), trace(total_latency_ms=500.0))
    yield run(MaxLatency(100), trace())
    yield run(MaxLatency(-1))
    yield run(TurnMaxLatency(1000), trace(call("a"), turn_latency_ms=[500.0]), turn=1)
    yield run(TurnMaxLatency(100), trace(call("a"), turn_latency_ms=[500.0]), turn=1)
    yield run(TurnMaxLatency(100), trace(call("a")), turn=1)
    yield run(TurnMaxLatency(100), trace(call("a"), turn_latency_ms=[]), turn=1)
    yield run(TurnMaxLatency(-1), turn=1)
    yield run(MaxToolCalls(5))
    yield run(MaxToolCalls(1))
    yield run(MaxToolCalls(-1))
    yield run(MaxLlmCalls(5), trace(llm_calls=2))
    yield run(MaxLlmCalls(1), trace(llm_calls=2))
    yield run(MaxLlmCalls(1), trace())
    yield run(MaxLlmCalls(-1))
    yield run(MaxTokens(100), trace(llm_calls=1, token_usage=USAGE))
    yield run(MaxTokens(1), trace(llm_calls=1, token_usage=USAGE))
    yield run(MaxTokens(1), trace())
    yield run(MaxTokens(1), trace(llm_calls=1))
    yield run(MaxCost(1.0, PRICES), trace(llm_calls=1, token_usage=USAGE))
    yield run(MaxCost(0.000001, PRICES), trace(llm_calls=1, token_usage=USAGE))
    unnamed = {**TOKENS, "by_model": {"": TOKENS}}
    yield run(MaxCost(1.0, PRICES), trace(llm_calls=1, token_usage=unnamed))
    unpriced = {**TOKENS, "by_model": {"other": TOKENS}}
    yield run(MaxCost(1.0, PRICES), trace(llm_calls=1, token_usage=unpriced))
    yield run(MaxCost(1.0), trace(llm_calls=1, token_usage=USAGE))
    yield run(MaxCost(-1.0, PRICES))
    # scorers
    yield run(ToolCallPrecision(["a"]))
    yield run(ToolCallPrecision(["a"]), trace())
    yield run(ToolCallPrecision("a"))
    yield run(ToolCallPrecision())
    yield run(ToolCallRecall(["a", "z"]))
    yield run(ToolCallRecall("a"))
    yield run(ToolCallRecall())
    yield run(NoRedundantToolCalls(), trace(call("a", {"k": 1}), call("a", {"k": 1})))
    yield run(NoRedundantToolCalls(), trace(call("a")))
    yield run(NoRedundantToolCalls(), trace())
    # trajectory_match over names
    yield run(TrajectoryMatch(expected=["a", "b"]))
    yield run(TrajectoryMatch(expected=["b"]))
    yield run(TrajectoryMatch(expected=["b", "a"], mode="in_order"))
    yield run(TrajectoryMatch(expected=["b", "a"], mode="any_order"))
    yield run(TrajectoryMatch(expected="a"))
    yield run(TrajectoryMatch(expected=["a"], mode="nearly"))
    yield run(TrajectoryMatch(expected=["a"], args="nearly"))
    yield run(TrajectoryMatch(expected=["a"], tool_args={"a": {"check": "never"}}))
    yield run(TrajectoryMatch())
    missing = make_case(reference=Reference(file="/nonexistent/run.jsonl", trace_id="x"))
    yield run(TrajectoryMatch(), case=missing)
    # trajectory_match against a reference: each first difference
    ref_a = call("a", {"k": 1})
    yield run(TrajectoryMatch(), ab, referenced(ref_a, call("b")))
    yield run(TrajectoryMatch(mode="strict"), ab, referenced(ref_a, call("b")))
    yield run(TrajectoryMatch(), trace(call("a", {"k": 2})), referenced(ref_a))
    yield run(TrajectoryMatch(mode="strict"), ab, referenced(ref_a))
    yield run(
        TrajectoryMatch(mode="strict"), trace(call("a", {"k": 1})), referenced(ref_a, call("b"))
    )
    yield run(
        TrajectoryMatch(mode="strict"),
        trace(call("b"), call("a", {"k": 1})),
        referenced(ref_a, call("b")),
    )
    yield run(TrajectoryMatch(mode="strict"), trace(call("c")), referenced(ref_a))
    yield run(TrajectoryMatch(mode="strict"), trace(call("a")), referenced(ref_a))
    yield run(TrajectoryMatch(mode="strict"), trace(call("a", {})), referenced(ref_a))
    yield run(TrajectoryMatch(mode="strict"), trace(call("a", {"k": 1, "j": 2})), referenced(ref_a))
    yield run(
        TrajectoryMatch(mode="strict", args="subset"), trace(call("a", {"k": 2})), referenced(ref_a)
    )
    yield run(
        TrajectoryMatch(expected=["a", "b"], mode="in_order", args="ignore"), ab, referenced(ref_a)
    )
    for how in ("no", "raise", "int"):
        registry = _registry()
        registry.register("never", Never, replace=True)
        rule = {"a": {"check": "never", "config": {"how": how}}}
        check = configured(
            "trajectory_match", registry, config={"mode": "strict", "tool_args": rule}
        )
        yield run(check, trace(call("a", {"k": 1})), referenced(ref_a))
    yield run(configured("never"))
    # per-turn checks
    turns = trace(call("a", {"k": 1}), call("b"), call("c", turn=2))
    yield run(TurnIncludes("a"), turns, turn=1)
    yield run(TurnIncludes("c"), turns, turn=1)
    yield run(TurnExcludes("c"), turns, turn=1)
    yield run(TurnExcludes("a"), turns, turn=1)
    yield run(TurnOrdered(["a", "b"]), turns, turn=1)
    yield run(TurnOrdered(["b", "a"]), turns, turn=1)
    yield run(TurnArgs("a", {"k": 1}), turns, turn=1)
    yield run(TurnArgs("a", {"k": 1, "j": 2}, "exact"), turns, turn=1)
    yield run(TurnArgs("c", {"k": 1}), turns, turn=1)
    # checks that cannot judge
    yield run(configured("no_such_scorer"))
    yield run(configured("tool_call_recall", threshold="high"))
    yield run(configured("tool_call_recall", threshold=2.0))
    yield run(configured("tool_call_recall", config=["a"]))
    yield run(configured("tool_call_recall", config={"required_tool": ["a"]}))
    yield run(configured("no_redundant_tool_calls", config={"strict": True}))
    yield run(configured("boom"))
    yield run(configured("five"))
    slow = configured("boom")
    yield [outcome_score(slow, TimedOut(0.5))]
    yield [outcome_score(slow, NotRun(3))]
    yield [outcome_score(slow, Raised(RuntimeError("stuck")))]
    yield evaluate_trace(make_case(turns=[None]), ab).scores  # a turn that is not one
    uncaptured = trace(call("a"), call("b"))
    uncaptured.content_missing = "2 of 2 tool calls have no recorded arguments"  # ADK, capture off
    yield evaluate_trace(make_case(required_tools=["a"]), uncaptured).scores
    yield from _judge_scenarios()
    yield from tool_error_scenarios()
    yield from args_from_scenarios()  # checks/provenance.py
    yield from similarity_scenarios()  # checks/similarity.py
    yield from tolerance_scenarios()  # checks/argmatch.py
    yield from benchmark_scenarios()  # checks/scope.py, contains_options
    yield from handoff_scenarios()  # checks/agents.py, checks/handoffs.py


def judged(*script: JudgeOutcome) -> ScriptedJudge:
    return ScriptedJudge(list(script) or [verdict(True)])


UNAVAILABLE = JudgeOutcome(verdict=None, model="m", error="HTTP 503", attempts=3)
JUDGE_CHECKS = (LlmJudge, ToolArgsJudge, TrajectoryJudge)


def _judge_check(kind: type, **settings: Any) -> Any:
    """A judge check of ``kind`` (``tool_args_judge`` judges ``a``'s calls, with a rubric)."""
    if kind is ToolArgsJudge:
        return kind(tool="a", **{"rubric": "ok", **settings})
    return kind(**settings)


def _judge_scenarios() -> Iterator[list[Score]]:
    """The judge checks, each answered by a scripted judge (no model is asked)."""
    said = EvalTrace(
        trace_id="t" * 32,
        tool_calls=[call("a", {"k": 1})],
        turns=[Turn(number=1, input="Book it.", reply="Booked.")],
    )
    for kind in JUDGE_CHECKS:
        for outcome in (verdict(True), verdict(False), UNAVAILABLE):
            yield run(_judge_check(kind, judge=judged(outcome)), said)
        budget = JudgeOutcome(verdict=None, model="m", skipped="budget")
        yield run(_judge_check(kind, judge=judged(budget)), said)
        dry = JudgeOutcome(verdict=None, model="m", skipped="dry run")
        yield run(_judge_check(kind, judge=judged(dry)), said)
        with use_judge(None):  # no run's judge, whatever the caller set
            unjudged = run(_judge_check(kind), said)
        yield unjudged
        yield run(_judge_check(kind, judge=judged(), samples=0), said)
        yield run(_judge_check(kind, judge=judged(), rubric="task_complete"), said)
        yield run(_judge_check(kind, judge=judged(), rubric=5), said)
        yield run(_judge_check(kind, judge=judged(), rubric="policy_followed"), said)
        yield run(_judge_check(kind, judge="not a judge"), said)
        yield _judge_model_scores(kind, said)
    # content the trace does not record
    yield run(LlmJudge(judge=judged()), trace(call("a")))
    yield run(TrajectoryJudge(judge=judged()), trace())
    yield run(ToolArgsJudge(tool="a", rubric="ok", judge=judged()), trace(call("a")))
    for grounded in (LlmJudge, TrajectoryJudge):  # calls, none with a recorded result
        yield run(grounded(rubric="grounded_in_tool_results", judge=judged()), said)
    # tool_args_judge: which call, and configuration
    two = trace(call("a"), call("a", {"k": 1}), call("a", {"k": 2}))
    yield run(
        ToolArgsJudge(tool="a", rubric="ok", judge=judged(verdict(False), verdict(True))), two
    )
    yield run(ToolArgsJudge(tool="a", rubric="ok", judge=judged(verdict(False))), two)
    yield run(ToolArgsJudge(tool="a", rubric="ok", judge=judged(verdict(False))), said)
    yield run(ToolArgsJudge(tool="z", rubric="ok", judge=judged()), said)
    yield run(ToolArgsJudge(tool="a", judge=judged()), said)
    yield run(ToolArgsJudge(rubric="ok", judge=judged()), said)
    # trajectory_judge: its reference
    yield run(TrajectoryJudge(expected="a", judge=judged()), said)
    missing = make_case(reference=Reference(file="/nonexistent/run.jsonl", trace_id="x"))
    yield run(TrajectoryJudge(judge=judged()), said, missing)
    yield from _peer_scenarios()


def _peer_scenarios() -> Iterator[list[Score]]:
    """agentic-evals' and pytest-agent-eval's evaluators (checks/peer_*.py, judge_shapes.py)."""
    from tooltrail import (
        ContainsEvaluator,
        EvalResult,
        LLMJudgeEvaluator,
        LLMRubricEvaluator,
        RubricTemplate,
    )
    from tooltrail.checks.peer_protocol import turn_check

    said = EvalTrace(trace_id="t", output="Booked BK-1.", turns=[Turn(1, "Book", "Booked BK-1.")])
    yield run(ContainsEvaluator(any_of=["booked"], matches_all=[r"BK-\d"]), said, turn=1)
    yield run(ContainsEvaluator(any_of=["cancelled"]), said, turn=1)
    yield run(ContainsEvaluator(all_of=["booked", "refund"]), said, turn=1)
    yield run(ContainsEvaluator(matches_any=[r"REF-\d"]), said, turn=1)
    yield run(ContainsEvaluator(matches_all=[r"\d{4}"]), said, turn=1)

    def fine(context: Any) -> Score:
        return Score(name="j", value=1.0, passed=True, explanation="Fine.")

    def down(context: Any) -> Score:
        raise ConnectionError("down")

    yield run(LLMJudgeEvaluator("j", fine, samples=2).configured({}), said)
    yield run(LLMJudgeEvaluator("j", down).configured({}), said)

    class Silent:
        def __init__(self, result: Any) -> None:
            self.result = result

        async def evaluate(self, ctx: Any) -> Any:
            return self.result

    for result in (EvalResult(passed=True), EvalResult(passed=False), 42):
        yield run(turn_check(Silent(result)), said, turn=1)
    grades = {"A": 1.0, "B": 0.0}
    unfilled = RubricTemplate(
        name="u", prompt_template="{output} by {rules}", verdict_scores=grades
    )
    yield run(LLMRubricEvaluator("r", unfilled, judged()).configured({}), said)


def _judge_model_scores(kind: type, on: EvalTrace) -> list[Score]:
    """A check that names a model: with no resolver installed, and with one that refuses the
    model. The process's resolver is put back before anything else runs."""

    def refuse(model: str) -> ScriptedJudge:
        raise ValueError(f"unknown provider in {model!r}")

    previous = set_model_resolver(None)
    try:
        scores = run(_judge_check(kind, model="test:mini"), on)
        set_model_resolver(refuse)
        return scores + run(_judge_check(kind, model="nowhere:mini"), on)
    finally:
        set_model_resolver(previous)


SCORES = [score for scores in _scenarios() for score in scores]


def test_the_page_has_templates_for_every_kind_of_check() -> None:
    places = {template.where for template in TEMPLATES}
    assert {"required_tool", "max_cost_usd", "trajectory_match", "tool_calls_args"} <= places
    assert {ANY_METRIC, *FRAGMENTS} <= places


@pytest.mark.parametrize("score", SCORES, ids=lambda s: f"{s.name}:{s.explanation[:40]}")
def test_each_message_the_checks_write_is_on_the_page(score: Score) -> None:
    assert _matches(score.explanation, score.metric, set()), (
        f"{score.metric}: {score.explanation!r} matches no template of docs/checks.md"
    )


def test_each_message_on_the_page_is_one_the_checks_write() -> None:
    used: set[str] = set()
    for score in SCORES:
        _matches(score.explanation, score.metric, used)
    assert sorted({t.text for t in TEMPLATES} - used) == []


def test_a_changed_message_is_caught() -> None:
    """The matching is tight: a word changed, added at the end or dropped fails."""
    required = "Required tool 'a' was called."
    assert _matches(required, "required_tool", set())
    for changed in ("Required tool 'a' was invoked.", required + " Twice.", required[:-1]):
        assert not _matches(changed, "required_tool", set())
    assert not _matches(required, "forbidden_tool", set())  # each metric its own texts


def test_the_docstrings_that_name_the_contract_point_at_the_page() -> None:
    src = PAGE.parents[1] / "src" / "tooltrail"
    naming = [p for p in src.rglob("*.py") if "CHECKS.md" in p.read_text(encoding="utf-8")]
    assert naming == []
    for module in (
        "checks/__init__.py",
        "checks/expectations.py",
        "equality.py",
        "results/summary.py",
    ):
        assert "docs/checks.md" in (src / module).read_text(encoding="utf-8"), module


# -- the code, read: a message written in a branch no scenario above reaches ------------------

SRC = PAGE.parents[1] / "src" / "tooltrail"
#: Where explanations are written (``_could_not`` is the budgets' "could not be evaluated").
WRITERS = [*sorted((SRC / "checks").glob("*.py")), *sorted((SRC / "score").glob("*.py"))]
#: Calls whose argument at this position is an explanation.
EXPLAINING = {"passing": 2, "failing": 2, "config_error": 2, "Broken": 1}


def _literal(node: ast.expr) -> str | None:
    """An explanation written in place (a string or an f-string), its values as ``\\0``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            part.value if isinstance(part, ast.Constant) else "\0" for part in node.values
        )
    return None


def _written_explanations() -> list[tuple[str, str]]:
    found = []
    for path in WRITERS:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "explanation" for t in node.targets
            ):
                text = _literal(node.value)
                if text is not None:
                    found.append((f"{path.name}:{node.lineno}", text))
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            given = [kw.value for kw in node.keywords if kw.arg == "explanation"]
            if name == "_spell":  # a check's texts spelled once: ``passed_text=...``
                given += [kw.value for kw in node.keywords if (kw.arg or "").endswith("_text")]
            at = EXPLAINING.get(name)
            if at is not None and len(node.args) > at:
                given.append(node.args[at])
            suffix = ""
            if name == "_could_not" and node.args:  # budgets: "{why}, so the {check} ..."
                given.append(node.args[0])
                suffix = ", so the \0 check could not be evaluated."
            for arg in given:
                text = _literal(arg)
                if text is not None:
                    found.append((f"{path.name}:{node.lineno}", text + suffix))
    return found


def _on_page(text: str) -> bool:
    """Whether a written explanation is a template of the page: the template matches it, or
    it (its values matching anything) matches the template."""
    written = re.compile(".*?".join(re.escape(part) for part in text.split("\0")), re.DOTALL)
    for template in TEMPLATES:
        if written.fullmatch(template.text):
            return True
        plain = re.sub(r"\(\?P<\w+>", "(?:", template.pattern.pattern)
        if re.fullmatch(plain, text, re.DOTALL):
            return True
    return False


WRITTEN = _written_explanations()


def test_the_code_is_read_for_its_explanations() -> None:
    assert len(WRITTEN) > 60
    assert any(text == "Required tool \0 was called." for _, text in WRITTEN)


@pytest.mark.parametrize(("where", "text"), WRITTEN, ids=[where for where, _ in WRITTEN])
def test_each_explanation_written_in_the_code_is_on_the_page(where: str, text: str) -> None:
    assert _on_page(text), f"{where}: {text!r} matches no template of docs/checks.md"


def test_the_judge_scenarios_put_the_model_resolver_back() -> None:
    """The scenarios run at import; a resolver left installed would change other tests."""

    def mine(model: str) -> ScriptedJudge:
        return ScriptedJudge()

    previous = set_model_resolver(mine)
    try:
        scores = _judge_model_scores(LlmJudge, trace(call("a")))
        assert set_model_resolver(previous) is mine
    finally:
        set_model_resolver(previous)
    assert [score.error for score in scores] == ["NoJudge", "NoJudge"]
