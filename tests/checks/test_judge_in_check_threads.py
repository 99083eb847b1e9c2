"""A check run on ``checks.timelimit``'s worker thread sees the run's judge: the worker runs
it in a copy of the caller's context (off the main thread every check is handed over)."""

from __future__ import annotations

import threading

from tooltrail import EvalTrace, EvaluatorConfig, Score, TestCase, ToolCall, evaluate_cases
from tooltrail.checks import Registry
from tooltrail.judge import JudgeOutcome, JudgeVerdict, active_judge, use_judge


class _Judge:
    def judge(self, prompt: str, *, samples: int = 1, params: object = None) -> JudgeOutcome:
        verdict = JudgeVerdict(passed=True, score=1.0, reasoning="fine")
        return JudgeOutcome(verdict=verdict, model="test:judge", attempts=1)


def _sees_the_judge(trace: EvalTrace, case: TestCase, config: dict[str, object]) -> Score:
    """A user scorer (time-limited, so it runs on a worker thread off the main thread)."""
    judge = active_judge()
    seen.append((threading.current_thread().name, judge))
    return Score(
        name="sees_judge",
        metric="sees_judge",
        value=1.0,
        passed=judge is the_judge,
        explanation="the run's judge" if judge is the_judge else f"saw {judge!r}",
    )


seen: list[tuple[str, object]] = []
the_judge = _Judge()


def test_a_user_scorer_on_the_worker_thread_sees_the_active_judge() -> None:
    registry = Registry.with_builtins()
    registry.register("sees_judge", _sees_the_judge)
    case = TestCase(id="c", evaluators=[EvaluatorConfig(name="sees_judge")], check_timeout=30.0)
    trace = EvalTrace(trace_id="t", tool_calls=[ToolCall(name="search", args={})])
    results: list[object] = []

    def evaluate_off_the_main_thread() -> None:
        with use_judge(the_judge):
            results.extend(evaluate_cases([case], trace, registry=registry))

    thread = threading.Thread(target=evaluate_off_the_main_thread)
    thread.start()
    thread.join(timeout=60)
    assert seen and seen[-1][0] == "tooltrail-check"  # the worker ran it
    assert seen[-1][1] is the_judge
    assert results[0].passed  # type: ignore[attr-defined]
