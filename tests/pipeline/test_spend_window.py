"""Spend windows (issue 35, item 2): a judge budget per window of time, asked by the real
``JudgeRunner`` (the openai SDK against the scripted judge server) through ``judge.spend``.
Time is a ``ManualClock``: a window turns when the test says, never by the wall clock. The
two-worker end of it: tests/serve/test_serve_spend_window.py."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import pytest
from judge_server import JudgeServer, judge_server_fixture  # noqa: F401

from tooltrail.judge import JudgeSettings, build_judge
from tooltrail.judge.spend import use_spend_account
from tooltrail.pipeline.spend_window import ManualClock, SpendState, SpendWindow, require_price
from tooltrail.suite import TestSuite

MODEL = "openai:judge-model"
#: US dollars per million tokens: a scripted answer (100 in, 20 out) costs 120 micro-dollars.
PRICES = {MODEL: {"input": 1.0, "output": 1.0}}
COST = 120 / 1e6
HOUR = 3600.0


def runner(server: JudgeServer, concurrency: int = 4):  # type: ignore[no-untyped-def]
    return build_judge(
        JudgeSettings(
            model=MODEL,
            base_url=server.openai_url,
            retries=0,
            cache=False,
            concurrency=concurrency,
            prices=PRICES,
        )
    )


def test_a_window_stops_judging_at_its_budget_and_resumes_when_it_turns(
    judge_server: JudgeServer,
) -> None:
    clock = ManualClock(10 * HOUR)
    window = SpendWindow(5.5 * COST, per="hour", clock=clock)
    judge = runner(judge_server)
    with use_spend_account(window):
        first = judge.judge_many([f"prompt {n}" for n in range(20)])
    judged = [o for o in first if o.verdict is not None]
    refused = [o for o in first if o.skipped == "budget"]
    assert len(judged) == 6 and len(refused) == 14  # spent 5 x COST < budget: a sixth goes
    assert judge_server.count == 6
    assert all("spend window" in (o.error or "") for o in refused)
    stats = window.stats()
    assert stats["judge_window_spent_usd"] == pytest.approx(6 * COST)
    assert stats["judge_window_remaining_usd"] == 0.0
    assert stats["judge_window_judged"] == 6 and stats["judge_window_refused"] == 14
    assert stats["judge_window_start"] == "1970-01-01T10:00:00+00:00"
    # Within the window nothing more is called; in the next one, the budget is whole again.
    clock.advance(HOUR / 2)
    with use_spend_account(window):
        assert judge.judge("later").skipped == "budget"
    clock.advance(HOUR / 2)
    with use_spend_account(window):
        second = judge.judge_many([f"again {n}" for n in range(20)])
    assert sum(o.verdict is not None for o in second) == 6
    assert judge_server.count == 12
    assert window.stats()["judge_window_start"] == "1970-01-01T11:00:00+00:00"
    judge.close()


def test_judgements_in_flight_are_reserved_so_the_budget_is_passed_by_less_than_one(
    judge_server: JudgeServer,
) -> None:
    """Eight threads at once against a budget of 2.5 judgements: the first goes alone (its
    cost is unknown), then each while what is spent and reserved leaves room; never one per
    thread."""
    judge_server.hold_until(2, max_wait_s=0.2)  # requests that may overlap, do
    window = SpendWindow(2.5 * COST, per="day", clock=ManualClock(0.0))
    judge = runner(judge_server, concurrency=8)
    with use_spend_account(window):
        outcomes = judge.judge_many([f"prompt {n}" for n in range(24)])
    judged = sum(o.verdict is not None for o in outcomes)
    assert judged == 3 and judge_server.count == 3
    assert window.stats()["judge_window_spent_usd"] < 2.5 * COST + COST
    assert window.stats()["judge_window_in_flight"] == 0
    judge.close()


def test_a_cached_verdict_costs_nothing_and_needs_no_room(
    judge_server: JudgeServer, tmp_path: Path
) -> None:
    window = SpendWindow(1.5 * COST, clock=ManualClock(0.0))
    judge = build_judge(
        JudgeSettings(
            model=MODEL,
            base_url=judge_server.openai_url,
            cache_path=str(tmp_path / "cache.sqlite3"),
            prices=PRICES,
        )
    )
    with use_spend_account(window):
        assert judge.judge("same").verdict is not None
        assert judge.judge("same").cached  # asked nothing of the window
        assert judge.judge("other").verdict is not None
        assert judge.judge("third").skipped == "budget"
        assert judge.judge("same").cached  # a cached verdict is still given
    assert judge_server.count == 2
    judge.close()


def test_without_an_account_the_window_is_not_asked(judge_server: JudgeServer) -> None:
    window = SpendWindow(0.0, clock=ManualClock(0.0))
    judge = runner(judge_server)
    with use_spend_account(window):
        assert judge.judge("spent already").skipped == "budget"
        with use_spend_account(None):  # test traffic is judged outside the window
            assert judge.judge("a test run").verdict is not None
    assert window.stats()["judge_window_spent_usd"] == 0.0
    judge.close()


def _reserve_and_settle(state: SpendState, clock: ManualClock, got: mp.Queue) -> None:  # type: ignore[type-arg]
    window = SpendWindow(3.5 * COST, per="hour", state=state, clock=clock)
    taken = 0
    while (ticket := window.reserve()) is not None:
        window.settle(ticket, COST)
        taken += 1
    got.put(taken)


def test_processes_sharing_a_state_spend_from_one_account() -> None:
    context = mp.get_context("spawn")
    state = SpendState.shared(context)
    clock = ManualClock.shared(context, 5 * HOUR)
    got = context.Queue()
    workers = [
        context.Process(target=_reserve_and_settle, args=(state, clock, got)) for _ in range(3)
    ]
    for worker in workers:
        worker.start()
    taken = [got.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(60)
    assert sum(taken) == 4  # one budget for the three, not three budgets
    window = SpendWindow(3.5 * COST, per="hour", state=state, clock=clock)
    assert window.stats()["judge_window_refused"] == 3
    clock.advance(HOUR)
    assert window.stats()["judge_window_spent_usd"] == 0.0


JUDGED_SUITE = {
    "name": "s",
    "judge": {"model": MODEL},
    "cases": [
        {
            "id": "c",
            "match": "all",
            "evaluators": [{"name": "llm_judge", "config": {"rubric": "task_completed"}}],
        }
    ],
}


def test_a_window_needs_the_judge_models_price() -> None:
    with pytest.raises(ValueError, match="needs the judge model's price"):
        require_price(TestSuite.from_dict(JUDGED_SUITE))
    require_price(TestSuite.from_dict({**JUDGED_SUITE, "prices": PRICES}))


@pytest.mark.parametrize("bad", [{"budget_usd": -1.0}, {"budget_usd": 1.0, "per": "week"}])
def test_a_bad_window_is_refused(bad: dict[str, object]) -> None:
    budget = bad.pop("budget_usd")
    with pytest.raises(ValueError):
        SpendWindow(budget, **bad)  # type: ignore[arg-type]
