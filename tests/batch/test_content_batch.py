"""A suite's checks decide whether traces are read with content: the batch pass reads tool
results and each turn's input only when a check says ``reads_content`` (as budgets say
``reads_usage``), so suites without such checks convert as before."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from click.testing import CliRunner

from tooltrail.checks.protocol import CheckContext
from tooltrail.checks.registry import Registry, default_registry
from tooltrail.checks.score import Score
from tooltrail.cli import main
from tooltrail.score import reads_content
from tooltrail.suite import TestSuite

EXAMPLE = Path(__file__).parents[2] / "examples" / "budgets" / "a_refund_ok.otlp.jsonl"


@dataclass(frozen=True)
class SaysWhatItSaw:
    """Passes when the trace carries the first turn's input and the first call's result."""

    reads_content: ClassVar[bool] = True

    def evaluate(self, ctx: CheckContext) -> Score:
        turns = ctx.trace.turns
        said = turns[0].input if turns else None
        result = ctx.trace.tool_calls[0].result if ctx.trace.tool_calls else None
        return Score(
            name="saw",
            metric="saw",
            value=1.0 if said and result else 0.0,
            passed=bool(said and result),
            explanation=f"input={said!r} result={result!r}",
        )


@dataclass(frozen=True)
class SeesCallsOnly:
    def evaluate(self, ctx: CheckContext) -> Score:
        return Score("calls", "calls", 1.0, True, "ok")


def _suite(evaluator: str) -> TestSuite:
    return TestSuite.from_dict(
        {"name": "s", "cases": [{"id": "a", "evaluators": [{"name": evaluator}]}]}
    )


def test_reads_content_only_when_a_check_says_so() -> None:
    registry = Registry()
    registry.register("saw", SaysWhatItSaw)
    registry.register("calls", SeesCallsOnly)
    assert reads_content(_suite("saw").cases, registry)
    assert not reads_content(_suite("calls").cases, registry)
    plain = {"id": "a", "required_tools": ["lookup_order"], "max_tokens": 10}
    assert not reads_content(TestSuite.from_dict({"name": "s", "cases": [plain]}).cases)


def test_tooltrail_eval_reads_content_for_a_check_that_needs_it(tmp_path: Path) -> None:
    default_registry().register("content_probe_saw", SaysWhatItSaw, replace=True)
    suite = tmp_path / "suite.yaml"
    suite.write_text(
        "name: s\ncases:\n  - id: a\n    match: all\n    evaluators: [{name: content_probe_saw}]\n"
    )
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        main,
        ["eval", "--workers", "1", str(suite), str(EXAMPLE), "--format", "json", "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    (row,) = json.loads(out.read_text())["cases"]
    (score,) = row["scores"]
    assert score["passed"], score["explanation"]
    assert "I want a refund for order ORD-7731" in score["explanation"]
