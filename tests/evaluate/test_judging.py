"""The judge of one run (``tooltrail.score.run_judge``): a suite's ``judge:`` block read strictly,
overrides over it, the suite's prices, installed per context, totalled, closed."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from judge_server import JudgeServer, judge_server_fixture, verdict  # noqa: F401

from tooltrail.judge import JudgeTotals, active_judge, judge_for_model
from tooltrail.score import add_totals, judging, parallel_map, run_judge_settings
from tooltrail.suite import SuiteError, TestSuite

JUDGED = """\
name: judged
{judge}
prices:
  gpt-test: {{input: 1.0, output: 2.0}}
cases:
  - id: c
    evaluators:
      - name: llm_judge
        config: {{rubric: The reply is polite.}}
"""
PLAIN = """\
name: plain
judge: {model: "openai:gpt-test"}
cases:
  - id: c
    required_tools: [search]
"""


def _suite(tmp_path: Path, text: str) -> TestSuite:
    path = tmp_path / "suite.yaml"
    path.write_text(text)
    return TestSuite.load(path)


def test_a_judge_block_is_read_into_the_suite(tmp_path: Path) -> None:
    block = 'judge:\n  model: "openai:gpt-test"\n  retries: 1\n  timeout_s: 5\n  budget_usd: 0.5'
    suite = _suite(tmp_path, JUDGED.format(judge=block))
    assert suite.judge is not None
    assert (suite.judge.model, suite.judge.retries, suite.judge.timeout_s) == (
        "openai:gpt-test",
        1,
        5.0,
    )
    assert suite.judge.budget_usd == 0.5


@pytest.mark.parametrize(
    ("block", "line", "text"),
    [
        ('judge:\n  model: "openai:x"\n  retires: 2', 4, "unknown key 'retires'"),
        ('judge:\n  model: "openai:x"\n  timeout_s: -1', 4, "timeout_s must be"),
        ("judge: fast", 2, "expected a mapping of judge settings"),
    ],
)
def test_a_bad_judge_block_names_file_line_and_key(
    tmp_path: Path, block: str, line: int, text: str
) -> None:
    with pytest.raises(SuiteError) as caught:
        _suite(tmp_path, JUDGED.format(judge=block))
    assert f"suite.yaml:{line}:" in str(caught.value)
    assert text in str(caught.value)


def test_no_judge_check_builds_nothing(tmp_path: Path) -> None:
    assert run_judge_settings(_suite(tmp_path, PLAIN), {"model": "openai:other"}) is None


def test_overrides_win_and_the_suite_prices_reach_the_judge(tmp_path: Path) -> None:
    suite = _suite(tmp_path, JUDGED.format(judge='judge: {model: "openai:gpt-test"}'))
    settings = run_judge_settings(suite, {"model": "openai:gpt-other", "concurrency": 3})
    assert settings is not None
    assert (settings.model, settings.concurrency) == ("openai:gpt-other", 3)
    assert settings.prices is not None and settings.prices["gpt-test"].input == 1.0


def test_the_judge_is_installed_for_the_block_and_closed_after(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    block = f'judge: {{model: "openai:gpt-test", base_url: "{judge_server.openai_url}"}}'
    suite = _suite(tmp_path, JUDGED.format(judge=block).replace("cache: ", ""))
    settings = run_judge_settings(suite, {"cache_path": str(tmp_path / "c.sqlite")})
    assert active_judge() is None
    with judging(settings) as run:
        assert run is not None
        runner = active_judge()
        assert runner is run.runner
        outcome = runner.judge("Is this fine?")  # type: ignore[union-attr]
        assert outcome.verdict is not None and outcome.verdict.passed
        assert judge_for_model("openai:gpt-test") is runner
        seen: list[object] = []
        parallel_map(lambda _: seen.append(active_judge()), [1, 2, 3], workers=3)
        assert seen == [runner, runner, runner]
        totals = run.totals()
        assert (totals.calls, totals.input_tokens) == (1, 100)
        assert totals.cost_usd == pytest.approx((100 * 1.0 + 20 * 2.0) / 1e6)
    assert active_judge() is None and judge_for_model("openai:gpt-test") is None
    assert runner._ledger.closing.is_set()  # type: ignore[union-attr]  # closed at the end


def test_two_runs_in_one_process_keep_their_own_judges(
    tmp_path: Path, judge_server: JudgeServer
) -> None:
    block = f'judge: {{model: "openai:gpt-test", base_url: "{judge_server.openai_url}"}}'
    suite = _suite(tmp_path, JUDGED.format(judge=block))
    settings = run_judge_settings(suite, {"cache": False})
    seen: dict[str, object] = {}
    inside = threading.Barrier(2)

    def run(name: str) -> None:
        with judging(settings) as run:
            inside.wait(timeout=30)  # both runs installed at once
            seen[name] = (run.runner if run else None, judge_for_model("openai:gpt-test"))
            inside.wait(timeout=30)

    threads = [threading.Thread(target=run, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    (a_runner, a_resolved), (b_runner, b_resolved) = seen["a"], seen["b"]  # type: ignore[misc]
    assert a_runner is a_resolved and b_runner is b_resolved and a_runner is not b_runner


def test_totals_add_up() -> None:
    one = JudgeTotals(calls=2, cached=1, input_tokens=10, cost_usd=0.5, models={"a"})
    two = JudgeTotals(calls=1, errors=1, output_tokens=3, cost_usd=0.25, models={"b"})
    total = add_totals([one, two])
    assert (total.calls, total.cached, total.errors) == (3, 1, 1)
    assert (total.input_tokens, total.output_tokens, total.cost_usd) == (10, 3, 0.75)
    assert total.models == {"a", "b"}


def test_the_judge_summary_is_added_up_from_the_scores_and_survives_a_json_round_trip() -> None:
    from tooltrail import Score
    from tooltrail.results import CaseResult, EvaluationReport

    def judged(**record: object) -> Score:
        base = {"model": "openai:m", "attempts": 1, "input_tokens": 100, "output_tokens": 20,
                "cost_usd": 0.5, "cached": False, "skipped": None, "error": None}  # fmt: skip
        return Score(
            name="llm_judge",
            metric="llm_judge",
            value=1.0,
            passed=True,
            explanation="ok",
            judge={**base, **record},
        )

    rows = [
        CaseResult(case_id="c", passed=True, scores=[judged(), judged(attempts=3, error="x")]),
        CaseResult(case_id="c", passed=True, scores=[judged(cached=True, cost_usd=0.0)]),
        CaseResult(case_id="c", passed=False, scores=[judged(skipped="budget", attempts=0)]),
        CaseResult(case_id="c", passed=True, scores=[judged(model="openai:free", cost_usd=None)]),
    ]
    report = EvaluationReport.from_results(None, rows)
    summary = report.summary.judge
    assert summary is not None
    assert (summary.judgements, summary.requests, summary.cached) == (5, 5, 1)
    assert (summary.skipped, summary.errors, summary.cost_usd) == (1, 1, 1.0)
    assert (summary.input_tokens, summary.unpriced) == (400, ["openai:free"])
    again = EvaluationReport.from_dict(report.to_dict()).summary.judge
    assert again == summary
    plain = EvaluationReport.from_results(None, [CaseResult(case_id="c", passed=True, scores=[])])
    assert plain.summary.judge is None and "judge" not in plain.to_dict()["summary"]
