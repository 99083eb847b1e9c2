"""The judge engine against a real client library and a scripted model server on loopback
(tests/judge_server.py): verdicts, retries, Retry-After, timeouts, the cache, concurrency,
samples, the budget, completion functions, the Anthropic path and the settings reader."""

from __future__ import annotations

import asyncio
import socket
import stat
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
from judge_server import JudgeServer, judge_server_fixture, status, text, verdict  # noqa: F401
from opentelemetry.sdk.trace import TracerProvider

from tooltrail.judge import (
    JudgeCacheError,
    JudgeConfigError,
    JudgeRunner,
    JudgeSettings,
    VerdictCache,
    build_judge,
    override_settings,
    read_judge_settings,
)
from tooltrail.judge.providers import completion_for_model

MODEL = "openai:gpt-judge"


def openai_runner(server: JudgeServer, **options: object) -> JudgeRunner:
    timeout_s = float(options.pop("timeout_s", 30.0))  # type: ignore[arg-type]
    client = completion_for_model(MODEL, base_url=server.openai_url, timeout_s=timeout_s)
    options.setdefault("backoff_s", 0.01)
    return JudgeRunner(client, timeout_s=timeout_s, **options)  # type: ignore[arg-type]


# -- verdicts ----------------------------------------------------------------------------------


def test_a_passing_verdict_and_what_the_server_was_sent(judge_server: JudgeServer) -> None:
    judge_server.script(verdict(True, 0.9, "the reply answers the question"))
    outcome = openai_runner(judge_server).judge("Is the reply right?")
    assert outcome.error is None
    assert outcome.verdict is not None
    assert (outcome.verdict.passed, outcome.verdict.score) == (True, 0.9)
    assert outcome.verdict.reasoning == "the reply answers the question"
    assert (outcome.attempts, outcome.input_tokens, outcome.output_tokens) == (1, 100, 20)
    assert outcome.model == MODEL and outcome.agreement is None and not outcome.cached
    [request] = judge_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == "gpt-judge"
    assert request.body["messages"] == [{"role": "user", "content": "Is the reply right?"}]
    assert request.headers["authorization"] == "Bearer test-key"


def test_a_failing_verdict(judge_server: JudgeServer) -> None:
    judge_server.script(verdict(False, 0.1, "it made up a number"))
    outcome = openai_runner(judge_server).judge("p")
    assert outcome.verdict is not None and outcome.verdict.passed is False
    assert outcome.verdict.score == 0.1 and outcome.error is None


def test_a_malformed_answer_is_retried_then_an_error(judge_server: JudgeServer) -> None:
    judge_server.script(
        text("PASS, looks fine"), text('{"passed": "yes"}'), text("```json\n[]\n```")
    )
    outcome = openai_runner(judge_server, retries=2).judge("p")
    assert judge_server.count == 3
    assert outcome.verdict is None and outcome.attempts == 3
    assert outcome.error == (
        "judge unavailable after 3 attempts: malformed verdict: not a JSON object but a list"
    )
    # the tokens of the malformed answers were spent all the same
    assert (outcome.input_tokens, outcome.output_tokens) == (300, 60)


def test_a_malformed_answer_then_a_good_one_passes(judge_server: JudgeServer) -> None:
    judge_server.script(text("sure!"), verdict(True, 1.0))
    outcome = openai_runner(judge_server).judge("p")
    assert outcome.verdict is not None and outcome.verdict.passed
    assert outcome.attempts == 2 and judge_server.count == 2


def test_429_waits_the_retry_after_the_server_sent(judge_server: JudgeServer) -> None:
    judge_server.script(status(429, {"Retry-After": "1"}), verdict(True, 1.0))
    outcome = openai_runner(judge_server, backoff_s=0.01).judge("p")
    assert outcome.verdict is not None and outcome.verdict.passed and outcome.attempts == 2
    first, second = judge_server.requests
    assert second.at - first.at >= 0.95  # the backoff alone would be 0.01 s


def test_429_on_every_attempt_ends_in_an_error(judge_server: JudgeServer) -> None:
    judge_server.script(*[status(429, {"Retry-After": "0"})] * 2)
    outcome = openai_runner(judge_server, retries=1).judge("p")
    assert outcome.error == "judge unavailable after 2 attempts: HTTP 429: scripted status 429"


def test_500_is_retried_then_an_error(judge_server: JudgeServer) -> None:
    judge_server.script(*[status(500)] * 3)
    outcome = openai_runner(judge_server, retries=2).judge("p")
    assert judge_server.count == 3
    assert outcome.verdict is None
    assert outcome.error == "judge unavailable after 3 attempts: HTTP 500: scripted status 500"


def test_a_client_error_is_not_retried(judge_server: JudgeServer) -> None:
    judge_server.script(status(401))
    outcome = openai_runner(judge_server, retries=2).judge("p")
    assert judge_server.count == 1
    assert outcome.error == "judge unavailable after 1 attempt: HTTP 401: scripted status 401"


def test_a_reply_slower_than_the_timeout_is_an_error(judge_server: JudgeServer) -> None:
    judge_server.script(verdict(True, delay_s=60))
    outcome = openai_runner(judge_server, retries=0, timeout_s=1.0).judge("p")
    assert outcome.verdict is None
    assert outcome.error == "judge unavailable after 1 attempt: timed out after 1 s"
    assert outcome.latency_s < 30


def test_an_unreachable_endpoint_is_an_error(judge_server: JudgeServer) -> None:
    with socket.socket() as probe:  # bound, never listening: no one else can listen there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        client = completion_for_model(MODEL, base_url=f"http://127.0.0.1:{port}/v1", timeout_s=5)
        outcome = JudgeRunner(client, retries=1, backoff_s=0.01).judge("p")
    assert outcome.error is not None
    assert outcome.error.startswith("judge unavailable after 2 attempts: could not connect: ")


# -- the cache ---------------------------------------------------------------------------------


def test_the_cache_answers_a_second_run_without_a_request(
    judge_server: JudgeServer, tmp_path: Path
) -> None:
    path = tmp_path / "cache" / "judge.sqlite3"
    judge_server.script(
        verdict(True, 0.75, "a"), verdict(False, 0.25, "b"), verdict(True, 1.0, "c")
    )
    prompts = ["one", "two", "three"]
    first = openai_runner(judge_server, cache=VerdictCache(path)).judge_many(prompts)
    assert judge_server.count == 3
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = openai_runner(judge_server, cache=VerdictCache(path))
    second = again.judge_many(prompts)
    assert judge_server.count == 3  # no new request
    assert [o.verdict for o in second] == [o.verdict for o in first]
    assert [o.samples for o in second] == [o.samples for o in first]
    assert all(o.cached and o.cost_usd == 0.0 and o.attempts == 0 for o in second)
    totals = again.totals()
    assert (totals.calls, totals.cached, totals.input_tokens) == (0, 3, 0)
    # other parameters or another number of samples are another judgement
    again.judge("one", params={"rubric": "grounded"})
    assert judge_server.count == 4


def test_without_the_cache_every_run_asks_again(judge_server: JudgeServer) -> None:
    openai_runner(judge_server).judge("one")
    openai_runner(judge_server).judge("one")
    assert judge_server.count == 2


def test_a_corrupt_cache_file_is_a_clear_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "judge.sqlite3"
    path.write_bytes(b"this is not a database " * 100)
    with pytest.raises(JudgeCacheError) as raised:
        VerdictCache(path)
    assert str(raised.value).startswith(f"judge cache {str(path)!r} cannot be used (")
    assert "delete it, choose another cache_path, or turn the cache off" in str(raised.value)


# -- concurrency ---------------------------------------------------------------------------------


def test_at_most_concurrency_requests_are_in_flight_across_threads(
    judge_server: JudgeServer,
) -> None:
    judge_server.hold_until(3, total=8, linger_s=0.3)
    runner = openai_runner(judge_server, concurrency=3)
    threads = [threading.Thread(target=runner.judge, args=(f"p{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert judge_server.count == 8
    assert judge_server.peak_in_flight == 3


def test_judge_many_runs_prompts_in_parallel_in_order(judge_server: JudgeServer) -> None:
    judge_server.hold_until(3, total=8, linger_s=0.3)
    prompts = [f"prompt {i}" for i in range(8)]
    outcomes = openai_runner(judge_server, concurrency=3).judge_many(prompts)
    assert judge_server.peak_in_flight == 3
    assert all(o.verdict is not None and o.verdict.passed for o in outcomes)
    assert sorted(r.prompt for r in judge_server.requests) == sorted(prompts)


# -- samples -------------------------------------------------------------------------------------


def test_samples_give_the_majority_the_mean_and_the_agreement(judge_server: JudgeServer) -> None:
    judge_server.script(verdict(True, 0.9, "yes"), verdict(False, 0.0, "no"), verdict(True, 0.9))
    outcome = openai_runner(judge_server).judge("p", samples=3)
    assert judge_server.count == 3
    assert outcome.verdict is not None
    assert outcome.verdict.passed is True
    assert outcome.verdict.score == pytest.approx(0.6)
    assert outcome.verdict.reasoning == "yes"
    assert outcome.agreement == pytest.approx(2 / 3)
    assert len(outcome.samples) == 3 and outcome.attempts == 3


def test_a_tie_of_samples_fails(judge_server: JudgeServer) -> None:
    judge_server.script(verdict(True, 1.0), verdict(False, 0.0, "no"))
    outcome = openai_runner(judge_server).judge("p", samples=2)
    assert outcome.verdict is not None and outcome.verdict.passed is False
    assert outcome.agreement == 0.5 and outcome.verdict.reasoning == "no"


def test_a_sample_that_fails_ends_the_judgement_with_an_error(judge_server: JudgeServer) -> None:
    judge_server.script(verdict(True), status(500), status(500))
    outcome = openai_runner(judge_server, retries=1).judge("p", samples=3)
    assert judge_server.count == 3
    assert outcome.error == (
        "judge unavailable after 2 attempts (sample 2 of 3): HTTP 500: scripted status 500"
    )
    assert outcome.verdict is None and outcome.attempts == 3


# -- cost and budget ---------------------------------------------------------------------------


def test_the_budget_stops_calling_the_model_once_spent(judge_server: JudgeServer) -> None:
    prices = {"gpt-judge": {"input": 1.0, "output": 5.0}}  # USD per million tokens
    # each answer: 100 input + 20 output tokens = 0.0002 USD
    runner = openai_runner(judge_server, prices=prices, budget_usd=0.0005)
    outcomes = [runner.judge(f"p{i}") for i in range(5)]
    assert judge_server.count == 3
    assert [o.cost_usd for o in outcomes[:3]] == [pytest.approx(0.0002)] * 3
    for skipped in outcomes[3:]:
        assert skipped.verdict is None and skipped.skipped == "budget"
        assert skipped.error == (
            "the judge budget of 0.0005 USD is spent (0.0006 USD): no judge was called"
        )
    totals = runner.totals()
    assert (totals.calls, totals.skipped) == (3, 2)
    assert totals.cost_usd == pytest.approx(0.0006)
    assert totals.models == {MODEL}


def test_a_budget_needs_a_price_for_the_model(judge_server: JudgeServer) -> None:
    with pytest.raises(JudgeConfigError, match="budget_usd needs the price of judge model"):
        openai_runner(judge_server, prices={"other": {"input": 1, "output": 1}}, budget_usd=1.0)


# -- completion functions --------------------------------------------------------------------


PASS = '{"passed": true, "score": 1, "reasoning": "fine"}'


def test_a_sync_completion_function() -> None:
    seen: list[str] = []

    def complete(prompt: str) -> str:
        seen.append(prompt)
        return PASS

    outcome = JudgeRunner(complete, model="my-judge").judge("is it fine?")
    assert seen == ["is it fine?"]
    assert outcome.verdict is not None and outcome.verdict.passed and outcome.model == "my-judge"


def test_an_async_completion_function_with_usage() -> None:
    async def complete(prompt: str) -> tuple[str, dict[str, int]]:
        await asyncio.sleep(0)
        return PASS, {"prompt_tokens": 7, "completion_tokens": 3}

    outcome = JudgeRunner(complete).judge("p")
    assert outcome.verdict is not None and outcome.verdict.passed
    assert (outcome.input_tokens, outcome.output_tokens) == (7, 3)


def test_an_async_completion_function_keeping_an_async_client(judge_server: JudgeServer) -> None:
    """agentic-evals' usual shape: an ``async def`` over one ``AsyncOpenAI`` client. The client
    keeps its connections (the server keeps them alive) on the loop of its first call, so every
    call must run on that loop (a new loop per call failed: "Event loop is closed")."""
    import openai

    client = openai.AsyncOpenAI(base_url=judge_server.openai_url, max_retries=0)

    async def complete(prompt: str) -> tuple[str, object]:
        reply = await client.chat.completions.create(
            model="gpt-judge", messages=[{"role": "user", "content": prompt}]
        )
        return reply.choices[0].message.content or "", reply.usage

    with JudgeRunner(complete, model="async-client", retries=0) as runner:
        outcomes = [runner.judge(f"p{n}") for n in range(3)] + runner.judge_many(["q1", "q2"])
    assert [o.error for o in outcomes] == [None] * 5
    assert [o.input_tokens for o in outcomes] == [100] * 5
    assert judge_server.count == 5


def test_a_completion_function_returning_a_usage_object() -> None:
    def complete(prompt: str) -> tuple[str, SimpleNamespace]:
        return PASS, SimpleNamespace(input_tokens=11, output_tokens=4)

    outcome = JudgeRunner(complete).judge("p")
    assert (outcome.input_tokens, outcome.output_tokens) == (11, 4)


def test_an_async_completion_function_called_inside_a_running_loop() -> None:
    async def complete(prompt: str) -> str:
        return PASS

    async def main() -> bool:
        outcome = JudgeRunner(complete).judge("p")
        return outcome.verdict is not None and outcome.verdict.passed

    assert asyncio.run(main())


def test_a_completion_function_that_raises_is_retried_then_an_error() -> None:
    calls: list[str] = []

    def complete(prompt: str) -> str:
        calls.append(prompt)
        raise ConnectionError("model down")

    outcome = JudgeRunner(complete, retries=2, backoff_s=0.01).judge("p")
    assert len(calls) == 3
    assert outcome.error == "judge unavailable after 3 attempts: ConnectionError: model down"


def test_an_async_completion_function_past_the_timeout_is_cancelled() -> None:
    async def complete(prompt: str) -> str:
        await asyncio.sleep(60)
        return PASS

    outcome = JudgeRunner(complete, retries=0, timeout_s=0.5).judge("p")
    assert outcome.error == "judge unavailable after 1 attempt: timed out after 0.5 s"


def test_a_completion_function_returning_another_type_is_not_retried() -> None:
    calls: list[str] = []

    def complete(prompt: str) -> int:
        calls.append(prompt)
        return 1

    outcome = JudgeRunner(complete).judge("p")
    assert len(calls) == 1
    assert outcome.error == (
        "judge unavailable after 1 attempt: the completion function returned int, "
        "not a str or (str, usage)"
    )


# -- Anthropic ---------------------------------------------------------------------------------


def test_the_anthropic_path_against_the_same_server(judge_server: JudgeServer) -> None:
    judge_server.script(status(529), verdict(False, 0.2, "missed the refund"))
    client = completion_for_model(
        "anthropic:claude-judge", base_url=judge_server.anthropic_url, timeout_s=30
    )
    outcome = JudgeRunner(client, backoff_s=0.01).judge("Was the refund made?")
    assert outcome.verdict is not None
    assert (outcome.verdict.passed, outcome.verdict.reasoning) == (False, "missed the refund")
    assert outcome.attempts == 2 and (outcome.input_tokens, outcome.output_tokens) == (100, 20)
    request = judge_server.requests[-1]
    assert request.path == "/v1/messages"
    assert request.body["model"] == "claude-judge" and request.body["max_tokens"] == 1024
    assert request.prompt == "Was the refund made?"
    # the key from ANTHROPIC_API_KEY, as the SDK version sends it
    sent_key = request.headers.get("x-api-key") or request.headers["authorization"]
    assert sent_key.removeprefix("Bearer ") == "test-key"


def test_a_judge_request_carries_no_trace_context_of_the_agent(judge_server: JudgeServer) -> None:
    """The SDK's own tracing is off: judging inside an agent's span neither adds spans to its
    trace nor sends its trace context to the judge model."""
    client = completion_for_model(
        "anthropic:claude-judge", base_url=judge_server.anthropic_url, timeout_s=30
    )
    provider = TracerProvider()
    with provider.get_tracer("agent").start_as_current_span("agent turn"):
        outcome = JudgeRunner(client).judge("p")
    assert outcome.error is None
    assert "traceparent" not in judge_server.requests[0].headers


# -- settings ---------------------------------------------------------------------------------


def test_settings_build_a_runner_over_the_server(judge_server: JudgeServer, tmp_path: Path) -> None:
    settings = read_judge_settings(
        {
            "model": MODEL,
            "base_url": judge_server.openai_url,
            "retries": 0,
            "timeout_s": 10,
            "samples": 3,
            "concurrency": 2,
            "cache_path": str(tmp_path / "c.sqlite3"),
            "budget_usd": 1,
            "prices": {MODEL: {"input": 0.5, "output": 1.5}},
        }
    )
    assert settings.timeout_s == 10.0 and settings.samples == 3
    runner = build_judge(settings)
    outcome = runner.judge("p")
    assert judge_server.count == 3 and outcome.agreement == 1.0
    assert outcome.cost_usd == pytest.approx((300 * 0.5 + 60 * 1.5) / 1e6)
    assert build_judge(settings).judge("p").cached and judge_server.count == 3


def test_the_default_cache_path_is_under_the_user_cache(judge_server: JudgeServer) -> None:
    runner = build_judge(JudgeSettings(model=MODEL, base_url=judge_server.openai_url))
    assert runner.cache is not None
    assert runner.cache.path.parts[-2:] == ("tooltrail", "judge-cache.sqlite3")
    assert build_judge(JudgeSettings(model=MODEL, cache=False)).cache is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"timeout": 5},
            "judge: unknown key 'timeout' (did you mean 'timeout_s'?); known: model, base_url, ",
        ),
        ({"retries": "2"}, "judge.retries must be a whole number, 0 or more, not '2'"),
        ({"retries": True}, "judge.retries must be a whole number, 0 or more, not True"),
        ({"timeout_s": 0}, "judge.timeout_s must be a number of seconds, more than 0, not 0"),
        ({"samples": 0}, "judge.samples must be a whole number, 1 or more, not 0"),
        ({"cache": "no"}, "judge.cache must be true or false, not 'no'"),
        ({"budget_usd": -1}, "judge.budget_usd must be a number of US dollars, 0 or more, not -1"),
        (
            {"prices": {"m": {"input": 1}}},
            "judge.prices: the price of 'm' needs 'output': a number, not None",
        ),
        ("openai:gpt-4o", "judge must be a mapping of settings, not 'openai:gpt-4o'"),
    ],
)
def test_the_settings_reader_rejects_bad_settings(raw: object, message: str) -> None:
    with pytest.raises(JudgeConfigError) as raised:
        read_judge_settings(raw)
    assert str(raised.value).startswith(message)


def test_flags_override_a_suites_judge_block_and_are_checked_the_same_way() -> None:
    suite = read_judge_settings({"model": MODEL, "retries": 1, "cache_path": "/tmp/x.sqlite3"})
    flags = {"model": "anthropic:claude-x", "retries": None, "cache": False, "cache_path": None}
    merged = override_settings(suite, flags, where="--judge-*")
    assert (merged.model, merged.retries, merged.cache) == ("anthropic:claude-x", 1, False)
    assert merged.cache_path == "/tmp/x.sqlite3"
    with pytest.raises(JudgeConfigError) as raised:
        override_settings(suite, {"concurrency": 0}, where="--judge-*")
    assert str(raised.value) == "--judge-*.concurrency must be a whole number, 1 or more, not 0"


def test_an_unknown_provider_gets_a_did_you_mean() -> None:
    with pytest.raises(JudgeConfigError) as raised:
        build_judge(JudgeSettings(model="opnai:gpt-4o-mini", cache=False))
    assert str(raised.value) == (
        "judge model 'opnai:gpt-4o-mini': unknown provider 'opnai' (did you mean 'openai'?); "
        "known: ['anthropic', 'openai']"
    )
    with pytest.raises(JudgeConfigError, match="must be 'provider:model'"):
        build_judge(JudgeSettings(model="gpt-4o-mini", cache=False))


def test_a_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)  # import anthropic now fails
    with pytest.raises(JudgeConfigError) as raised:
        build_judge(JudgeSettings(model="anthropic:claude-x", cache=False))
    assert str(raised.value) == (
        "judge model 'anthropic:claude-x' needs the anthropic package: "
        "pip install 'tooltrail[judge]'"
    )


def test_a_missing_api_key_is_a_clear_error(
    judge_server: JudgeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(JudgeConfigError, match=r"^judge model 'openai:gpt-judge': .*api_key"):
        build_judge(JudgeSettings(model=MODEL, base_url=judge_server.openai_url, cache=False))


def test_a_runner_for_another_model_shares_the_bound_budget_and_totals(
    judge_server: JudgeServer,
) -> None:
    price = {"input": 1.0, "output": 5.0}
    prices = {"gpt-judge": price, "gpt-other": price}
    runner = openai_runner(judge_server, prices=prices, budget_usd=0.0003)
    other = runner.for_model("openai:gpt-other")
    assert runner.for_model("openai:gpt-other") is other and runner.for_model(MODEL) is runner
    first = runner.judge("p1")  # 0.0002 USD
    second = other.judge("p2")  # 0.0002 USD: the shared total passes the budget
    third = runner.judge("p3")
    assert first.error is None and second.error is None and third.skipped == "budget"
    assert [r.body["model"] for r in judge_server.requests] == ["gpt-judge", "gpt-other"]
    assert judge_server.requests[1].path == "/v1/chat/completions"  # the base_url carried over
    totals = other.totals()
    assert (totals.calls, totals.skipped) == (2, 1)
    assert totals.models == {MODEL, "openai:gpt-other"}
