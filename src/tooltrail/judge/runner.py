"""The judge engine: asks a model for a verdict, with retries, samples, a cache and a budget.

:class:`JudgeRunner` is the :class:`~tooltrail.judge.outcome.Judge` that ``eval``, ``serve``,
live evaluation and Python code use. One call of :meth:`JudgeRunner.judge` never raises: every
failure, after the retries, is an outcome with no verdict and an ``error`` text (docs/judge.md
lists them).

- Retries: an attempt that failed in a retryable way (a timeout, a lost connection, 408, 409,
  429, 5xx, a malformed answer, an exception of a completion function) is tried again, up to
  ``retries`` more times, after ``backoff_s * 2**n`` seconds, or the ``Retry-After`` the server
  sent when that is longer; never more than ``max_wait_s`` (60 s) at a time.
- Samples: ``samples=N`` asks N times; the verdict is the majority (a tie fails), the score
  the mean, ``agreement`` the share agreeing with the majority. A sample that fails after its
  retries ends the judgement with an error.
- Deadline: a judgement ends within ``deadline_s`` of its start, every attempt, wait and
  sample counted (``judge.deadline``): an attempt is given at most the time left, a wait that
  would end past it is not waited, and a request still unanswered at the deadline is left
  behind. Without ``deadline_s``, the bound is what every attempt taking its whole
  ``timeout_s`` and every default wait add up to, times the samples
  (:func:`default_deadline_s`).
- Concurrency: at most ``concurrency`` requests in flight at once, across all threads (a
  request left behind at its deadline holds its place until it ends).
- Budget: once the cost spent reaches ``budget_usd``, no model is called: the outcome says
  ``skipped="budget"``. Judgements already under way finish, so the total may pass the budget
  by what at most ``concurrency`` of them cost. A spend account installed for the context
  (``judge.spend``: ``serve``'s and live's windows across processes) is asked the same way.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, Any

from tooltrail.judge.cache import VerdictCache, cache_key
from tooltrail.judge.completion import Completion, CompletionFn, FunctionCompletion
from tooltrail.judge.config_errors import JudgeConfigError
from tooltrail.judge.deadline import Deadline, Overdue, call_before
from tooltrail.judge.failure import AttemptFailure
from tooltrail.judge.outcome import Judge, JudgeOutcome, JudgeTotals, JudgeVerdict
from tooltrail.judge.prices import PriceTable, cost_usd, price_of
from tooltrail.judge.providers import completion_for_model
from tooltrail.judge.spend import spend_account
from tooltrail.judge.verdict import MalformedVerdict, parse_verdict

DEFAULT_RETRIES = 2
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_CONCURRENCY = 4
DEFAULT_BACKOFF_S = 0.5
#: The longest wait between two attempts, whatever ``Retry-After`` asks.
MAX_WAIT_S = 60.0
#: Seconds an attempt's own time limit runs past the deadline when the deadline is the
#: nearer bound: the runner stops waiting at the deadline, and the attempt left behind ends
#: (and gives its place back) soon after.
OVERRUN_S = 0.5
#: Seconds the default deadline allows each attempt beyond its ``timeout_s`` (starting a
#: request, reading an answer that came just in time), so that without a ``deadline_s`` an
#: attempt's own time limit, not the deadline, ends a slow attempt.
ATTEMPT_MARGIN_S = 1.0


def default_deadline_s(
    *,
    retries: int = DEFAULT_RETRIES,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    samples: int = 1,
    backoff_s: float = DEFAULT_BACKOFF_S,
    max_wait_s: float = MAX_WAIT_S,
) -> float:
    """A judgement's deadline when none is set: every attempt taking its whole ``timeout_s``
    (and :data:`ATTEMPT_MARGIN_S`) and every wait its default length (``backoff_s * 2**n``, at
    most ``max_wait_s``), times ``samples``. With the defaults, 94.5 s a sample."""
    waits = sum(min(backoff_s * 2**n, max_wait_s) for n in range(retries))
    return samples * ((retries + 1) * (timeout_s + ATTEMPT_MARGIN_S) + waits)


@dataclass(slots=True)
class _Ledger:
    """What a runner shares with the runners it makes for other models (:meth:`for_model`):
    one bound on requests in flight, one budget, one set of totals."""

    slots: threading.BoundedSemaphore
    lock: threading.Lock = field(default_factory=threading.Lock)
    totals: JudgeTotals = field(default_factory=JudgeTotals)
    spent_usd: float = 0.0
    closing: threading.Event = field(default_factory=threading.Event)
    #: model string -> its runner, made by ``for_model``
    runners: dict[str, JudgeRunner] = field(default_factory=dict)


@dataclass(slots=True)
class _Sample:
    """One sample's answer, or why there is none, and what getting it took."""

    verdict: JudgeVerdict | None
    failure: str | None
    attempts: int
    input_tokens: int
    output_tokens: int


class JudgeRunner:
    """A judge over one model (a :class:`Completion`, or a completion function)."""

    def __init__(
        self,
        completion: Completion | CompletionFn,
        *,
        model: str | None = None,
        retries: int = DEFAULT_RETRIES,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        concurrency: int = DEFAULT_CONCURRENCY,
        samples: int = 1,
        cache: VerdictCache | None = None,
        budget_usd: float | None = None,
        prices: PriceTable | None = None,
        backoff_s: float = DEFAULT_BACKOFF_S,
        max_wait_s: float = MAX_WAIT_S,
        deadline_s: float | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> None:
        client: Completion = (
            completion  # type: ignore[assignment]
            if hasattr(completion, "complete")
            else FunctionCompletion(completion, model=model)  # type: ignore[arg-type]
        )
        _require(retries >= 0, f"retries must be 0 or more, not {retries!r}")
        _require(timeout_s > 0, f"timeout_s must be more than 0, not {timeout_s!r}")
        _require(concurrency >= 1, f"concurrency must be 1 or more, not {concurrency!r}")
        _require(samples >= 1, f"samples must be 1 or more, not {samples!r}")
        _require(backoff_s >= 0 and max_wait_s >= 0, "backoff_s and max_wait_s must be 0 or more")
        _require(
            deadline_s is None or deadline_s > 0,
            f"deadline_s must be more than 0, not {deadline_s!r}",
        )
        self.completion = client
        self.model = client.model
        self.retries = retries
        self.timeout_s = timeout_s
        self.concurrency = concurrency
        self.samples = samples
        self.cache = cache
        self.budget_usd = budget_usd
        self.backoff_s = backoff_s
        self.max_wait_s = max_wait_s
        #: seconds one judgement may take in all; ``None``: :func:`default_deadline_s`
        self.deadline_s = deadline_s
        #: what the model strings made by :meth:`for_model` send; part of the cache key
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.prices = prices
        self.price = price_of(prices, self.model)
        if budget_usd is not None:
            _require(budget_usd >= 0, f"budget_usd must be 0 or more, not {budget_usd!r}")
            _require(
                self.price is not None,
                f"budget_usd needs the price of judge model {self.model!r} in prices",
            )
        self._ledger = _Ledger(slots=threading.BoundedSemaphore(concurrency))

    # -- the Judge protocol -------------------------------------------------------------------

    def judge(
        self, prompt: str, *, samples: int | None = None, params: dict[str, Any] | None = None
    ) -> JudgeOutcome:
        """Judge ``prompt`` (``samples`` answers; ``None``: the runner's ``samples``); never
        raises (a failure is an outcome with ``error`` set)."""
        started = time.monotonic()
        try:
            outcome = self._judge(prompt, self.samples if samples is None else samples, params)
        except Exception as exc:  # a bug must not abort the run: it becomes this one error
            outcome = JudgeOutcome(
                verdict=None, model=self.model, error=f"judge failed: {type(exc).__name__}: {exc}"
            )
        outcome = replace(outcome, latency_s=time.monotonic() - started)
        with self._ledger.lock:
            self._ledger.totals.add(outcome)
        return outcome

    def judge_many(
        self,
        prompts: Sequence[str],
        *,
        samples: int | None = None,
        params: dict[str, Any] | None = None,
    ) -> list[JudgeOutcome]:
        """Judge every prompt, ``concurrency`` at a time; the outcomes in the prompts' order."""
        if not prompts:
            return []
        workers = min(self.concurrency, len(prompts))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tooltrail-judge") as pool:
            futures = [
                pool.submit(
                    contextvars.copy_context().run, self.judge, p, samples=samples, params=params
                )
                for p in prompts
            ]
            return [future.result() for future in futures]

    def for_model(self, model: str) -> JudgeRunner:
        """The runner for another model string (a check that names its own judge model, as
        pytest-agent-eval's ``judge: {rubric, model}``), with this runner's settings, sharing
        its bound on requests in flight, its budget, its totals and its cache. The explicit
        ``base_url`` carries over to a model of the same provider only."""
        if model == self.model:
            return self
        ledger = self._ledger
        with ledger.lock:
            known = ledger.runners.get(model)
        if known is not None:
            return known
        same_provider = model.partition(":")[0] == self.model.partition(":")[0]
        client = completion_for_model(
            model,
            base_url=getattr(self.completion, "base_url", None) if same_provider else None,
            timeout_s=self.timeout_s,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
        )
        other = JudgeRunner(
            client,
            retries=self.retries,
            timeout_s=self.timeout_s,
            concurrency=self.concurrency,
            samples=self.samples,
            cache=self.cache,
            budget_usd=self.budget_usd,
            prices=self.prices,
            backoff_s=self.backoff_s,
            max_wait_s=self.max_wait_s,
            deadline_s=self.deadline_s,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
        )
        other._ledger = ledger
        with ledger.lock:
            chosen = ledger.runners.setdefault(model, other)
        if chosen is not other:  # another thread made it first
            getattr(client, "close", lambda: None)()
        return chosen

    # -- what a run reports ---------------------------------------------------------------------

    def totals(self) -> JudgeTotals:
        """A copy of what judging has cost so far (calls, cache hits, skips, tokens, dollars),
        over this runner and those :meth:`for_model` made."""
        with self._ledger.lock:
            totals = self._ledger.totals
            return replace(totals, models=set(totals.models))

    @property
    def spent_usd(self) -> float:
        """Dollars spent on model calls so far (cache hits cost nothing)."""
        with self._ledger.lock:
            return self._ledger.spent_usd

    def close(self) -> None:
        """Stop waiting between attempts (a judgement under way then ends with its last error),
        close the cache and the SDK's connections, of the runners :meth:`for_model` made too."""
        self._ledger.closing.set()
        if self.cache is not None:
            self.cache.close()
        with self._ledger.lock:
            runners = [self, *self._ledger.runners.values()]
        for runner in runners:
            close_client = getattr(runner.completion, "close", None)
            if callable(close_client):
                close_client()

    def __enter__(self) -> JudgeRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def deadline_for(self, samples: int = 1) -> float:
        """Seconds a judgement of ``samples`` answers may take in all."""
        if self.deadline_s is not None:
            return self.deadline_s
        return default_deadline_s(
            retries=self.retries,
            timeout_s=self.timeout_s,
            samples=samples,
            backoff_s=self.backoff_s,
            max_wait_s=self.max_wait_s,
        )

    # -- one judgement --------------------------------------------------------------------------

    def _judge(self, prompt: str, samples: int, params: dict[str, Any] | None) -> JudgeOutcome:
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
            return JudgeOutcome(
                verdict=None, model=self.model, error=f"samples must be 1 or more, not {samples!r}"
            )
        deadline = Deadline.start(self.deadline_for(samples))
        params = self._key_params(params)
        key = None
        if self.cache is not None:
            key = cache_key(
                model=self.model,
                endpoint=self.completion.endpoint,
                prompt=prompt,
                samples=samples,
                params=params,
            )
            hit = self.cache.get(key)
            if hit is not None and len(hit) == samples:
                return _combined(hit, model=self.model, cached=True, cost=0.0)
        spent = self.spent_usd
        if self.budget_usd is not None and spent >= self.budget_usd:
            return JudgeOutcome(
                verdict=None,
                model=self.model,
                error=(
                    f"the judge budget of {self.budget_usd:g} USD is spent "
                    f"({spent:.6g} USD): no judge was called"
                ),
                skipped="budget",
            )
        account = spend_account()  # a spend window shared beyond this run (``judge.spend``)
        ticket = account.reserve() if account is not None else None
        if account is not None and ticket is None:
            return JudgeOutcome(
                verdict=None, model=self.model, error=account.refusal(), skipped="budget"
            )
        had: list[_Sample] = []
        try:
            for _ in range(samples):
                sample = self._sample(prompt, deadline)
                had.append(sample)
                if sample.verdict is None:
                    break
        finally:
            attempts = sum(s.attempts for s in had)
            input_tokens = sum(s.input_tokens for s in had)
            output_tokens = sum(s.output_tokens for s in had)
            cost = None if self.price is None else cost_usd(self.price, input_tokens, output_tokens)
            if account is not None:
                account.settle(ticket, cost or 0.0)
        with self._ledger.lock:
            self._ledger.spent_usd += cost or 0.0
        last = had[-1]
        if last.verdict is None:
            plural = "" if last.attempts == 1 else "s"
            which = f" (sample {len(had)} of {samples})" if samples > 1 else ""
            return JudgeOutcome(
                verdict=None,
                model=self.model,
                error=f"judge unavailable after {last.attempts} attempt{plural}{which}: "
                f"{last.failure}",
                attempts=attempts,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                cost_usd=cost,
                samples=tuple(s.verdict for s in had if s.verdict is not None),
            )
        verdicts = tuple(s.verdict for s in had if s.verdict is not None)
        if key is not None and self.cache is not None:
            self.cache.put(key, verdicts)
        return _combined(
            verdicts,
            model=self.model,
            cached=False,
            cost=cost,
            attempts=attempts,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
        )

    def _key_params(self, params: dict[str, Any] | None) -> dict[str, Any] | None:
        """The check's parameters, with the settings that change a model's answer when set."""
        sent = {
            name: value
            for name, value in (("temperature", self.temperature), ("max_tokens", self.max_tokens))
            if value is not None
        }
        if not sent:
            return params
        return {**(params or {}), "judge": sent}

    def _sample(self, prompt: str, deadline: Deadline) -> _Sample:
        """One answer, tried up to ``retries + 1`` times before ``deadline``."""
        sample = _Sample(verdict=None, failure=None, attempts=0, input_tokens=0, output_tokens=0)
        closing = self._ledger.closing
        for attempt in range(self.retries + 1):
            if deadline.remaining() <= 0:
                sample.failure = deadline.passed(last=sample.failure)
                break
            failure = self._attempt(prompt, sample, deadline)
            if failure is None:
                return sample
            sample.failure = failure.reason
            if not failure.retryable or attempt == self.retries or closing.is_set():
                break
            wait = self.backoff_s * 2**attempt
            if failure.retry_after_s is not None:
                wait = max(wait, failure.retry_after_s)
            wait = min(wait, self.max_wait_s)
            if wait >= deadline.remaining():
                sample.failure = deadline.too_close(failure.reason)
                break
            if closing.wait(wait):
                break
        return sample

    def _attempt(self, prompt: str, sample: _Sample, deadline: Deadline) -> AttemptFailure | None:
        """One request, given no more than the time ``deadline`` leaves: the verdict goes into
        ``sample``, else the failure is returned."""
        slots = self._ledger.slots
        if not slots.acquire(timeout=deadline.remaining()):
            why = " waiting for a free request slot"
            return AttemptFailure(deadline.passed(why, sample.failure), retryable=False)
        sample.attempts += 1
        left = deadline.remaining()
        timeout_s = self.timeout_s if self.timeout_s <= left else left + OVERRUN_S
        request = partial(self.completion.complete, prompt, timeout_s=timeout_s)
        try:
            reply = call_before(request, left, then=slots.release)
        except Overdue:
            return AttemptFailure(deadline.passed(" waiting for an answer"), retryable=False)
        except AttemptFailure as failure:
            return failure
        sample.input_tokens += reply.input_tokens
        sample.output_tokens += reply.output_tokens
        if reply.refusal is not None:
            return AttemptFailure(f"the model refused: {reply.refusal}", retryable=True)
        try:
            sample.verdict = parse_verdict(reply.text)
        except MalformedVerdict as exc:
            return AttemptFailure(f"malformed verdict: {exc}", retryable=True)
        return None


def _combined(
    verdicts: tuple[JudgeVerdict, ...],
    *,
    model: str,
    cached: bool,
    cost: float | None,
    attempts: int = 0,
    input_tokens: int = 0,
    output_tokens: int = 0,
) -> JudgeOutcome:
    """The outcome of several samples: majority verdict (a tie fails), mean score, agreement."""
    passes = sum(1 for v in verdicts if v.passed)
    passed = passes > len(verdicts) - passes
    agreeing = [v for v in verdicts if v.passed == passed]
    verdict = JudgeVerdict(
        passed=passed,
        score=sum(v.score for v in verdicts) / len(verdicts),
        reasoning=agreeing[0].reasoning,
    )
    return JudgeOutcome(
        verdict=verdict,
        model=model,
        attempts=attempts,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cost_usd=cost,
        samples=verdicts,
        agreement=len(agreeing) / len(verdicts) if len(verdicts) > 1 else None,
        cached=cached,
    )


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise JudgeConfigError(message)


if TYPE_CHECKING:  # the runner is a Judge (mypy checks the signatures)
    _IS_A_JUDGE: type[Judge] = JudgeRunner
