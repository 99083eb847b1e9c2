"""Budgets read from the trace itself: wall time, tool calls, model calls, tokens and their cost.

A budget passes when what the trace used is at most its limit (a value equal to the limit
passes). When the trace does not record what a budget needs, the check fails and says why:
a budget is never met by a trace that cannot show it.

The checks marked ``reads_usage`` need the facts conversion notes only when asked
(``read_traces(..., usage=True)``: ``metadata["llm_calls"]``, ``"token_usage"``,
``"turn_latency_ms"``); the CLI, ``serve``, the live processor and the batch pass ask whenever
a suite has such a check (``tooltrail.score.suite_needs``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from tooltrail.checks.protocol import CheckContext
from tooltrail.checks.scope import scope_of, scope_problem
from tooltrail.checks.score import Score, config_error
from tooltrail.model import EvalTrace
from tooltrail.suite.case import Prices

#: How a trace converted without ``usage=True`` is told apart, and what to do about it.
_READ_WITH_USAGE = "read the trace with usage=True"


def _decimal(value: float) -> str:
    """A number in plain decimals, as a suite writes it: ``1000`` (not ``1000.0``), ``0.00002``
    (not ``2e-05``); to 12 decimal places, enough for a millionth of a cent."""
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.12f}".rstrip("0").rstrip(".")


def _could_not(what: str, check: str) -> str:
    return f"{what}, so the {check} check could not be evaluated."


def _count_limit(name: str, limit: Any) -> Score | None:
    """The config error of a count budget that is not a whole number, 0 or more."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        return config_error(name, name, f"{name} must be a non-negative integer, not {limit!r}.")
    return None


def _measure_limit(name: str, limit: Any) -> Score | None:
    """The config error of a budget in milliseconds or dollars that is not a number >= 0."""
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not limit >= 0:
        return config_error(name, name, f"{name} must be a number, 0 or more, not {limit!r}.")
    return None


def trace_latency_ms(trace: EvalTrace) -> float | None:
    """The trace's wall time in ms: ``metadata["total_latency_ms"]`` (conversion sets it: the
    first span's start to the last span's end), else from the spans' times; ``None`` when no
    span records both."""
    latency = trace.metadata.get("total_latency_ms")
    if isinstance(latency, (int, float)) and not isinstance(latency, bool):
        return float(latency)
    if any(s.start_ns for s in trace.spans) and any(s.end_ns for s in trace.spans):
        return trace.total_latency_ms
    return None


@dataclass(slots=True, frozen=True)
class MaxLatency:
    """``max_latency_ms``: the trace (for a conversation, from its first turn's start to its
    last turn's end) took at most ``max_ms`` milliseconds."""

    max_ms: float
    reads_usage: ClassVar[bool] = False
    reads_calls: ClassVar[bool] = False

    def evaluate(self, ctx: CheckContext) -> Score:
        name = "max_latency_ms"
        bad = _measure_limit(name, self.max_ms)
        if bad is not None:
            return bad
        latency = trace_latency_ms(ctx.trace)
        limit = _decimal(self.max_ms)
        if latency is None:
            return Score.failing(
                name, name, _could_not("The trace records no span start and end times", name)
            )
        if latency <= self.max_ms:
            return Score.passing(
                name, name, f"Latency {latency:.1f} ms is within the limit of {limit} ms."
            )
        return Score.failing(
            name, name, f"Latency {latency:.1f} ms exceeds the limit of {limit} ms."
        )


@dataclass(slots=True, frozen=True)
class TurnMaxLatency:
    """``turn{n}:max_latency_ms``: the turn (its top agent or workflow span, else its trace)
    took at most ``max_ms`` milliseconds."""

    max_ms: float
    reads_usage: ClassVar[bool] = True
    reads_calls: ClassVar[bool] = False

    def evaluate(self, ctx: CheckContext) -> Score:
        turn = ctx.turn if ctx.turn is not None else 1
        name, metric = f"turn{turn}:max_latency_ms", "max_latency_ms"
        bad = _measure_limit(metric, self.max_ms)
        if bad is not None:
            bad.name, bad.turn = name, turn
            return bad
        latencies = ctx.trace.metadata.get("turn_latency_ms")
        limit = _decimal(self.max_ms)
        if not isinstance(latencies, list) or not 0 < turn <= len(latencies):
            why = f"Trace metadata has no latency for turn {turn}"
            if not isinstance(latencies, list):
                why += f" ({_READ_WITH_USAGE})"
            return Score.failing(name, metric, _could_not(why, metric), turn=turn)
        latency = float(latencies[turn - 1])
        if latency <= self.max_ms:
            return Score.passing(
                name,
                metric,
                f"Turn {turn} latency {latency:.1f} ms is within the limit of {limit} ms.",
                turn=turn,
            )
        return Score.failing(
            name,
            metric,
            f"Turn {turn} latency {latency:.1f} ms exceeds the limit of {limit} ms.",
            turn=turn,
        )


@dataclass(slots=True, frozen=True)
class MaxToolCalls:
    """``max_tool_calls``: the trace made at most ``max`` tool calls (a case field, and the
    registry scorer of the same name with ``config: {max: N}``)."""

    max: Any = None
    #: The scorer's scope (``checks.scope``): only calls of these tools count.
    tools: Any = field(default=None, kw_only=True)
    exclude_tools: Any = field(default=None, kw_only=True)
    reads_usage: ClassVar[bool] = False

    @classmethod
    def config_problem(
        cls, config: dict[str, Any], registry: Any
    ) -> tuple[tuple[Any, ...], str] | None:
        """A suite file's bad scope, for ``Registry.check`` (file, line and key)."""
        return scope_problem(config)

    def evaluate(self, ctx: CheckContext) -> Score:
        name = "max_tool_calls"
        limit = self.max
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            return config_error(
                name, name, f"config['max'] must be a non-negative integer, not {limit!r}."
            )
        view, scoped = ctx.view, ""
        if self.tools is not None or self.exclude_tools is not None:
            scope = scope_of(self.tools, self.exclude_tools)
            if isinstance(scope, str):
                return config_error(name, name, scope)
            if scope is not None:
                view, scoped = scope.view(view), scope.text
        count = view.size
        if count <= limit:
            return Score.passing(
                name, name, f"{count} tool calls{scoped} are within the limit of {limit}."
            )
        return Score.failing(
            name,
            name,
            f"{count} tool calls{scoped} exceed the limit of {limit}.",
            span_ids=tuple(c.span_id for c in view.calls[limit:] if c.span_id),
        )


@dataclass(slots=True, frozen=True)
class MaxLlmCalls:
    """``max_llm_calls``: the trace made at most ``max`` model calls. A model span inside
    another (a provider's span under a framework's) is one call."""

    max: int
    reads_usage: ClassVar[bool] = True
    reads_calls: ClassVar[bool] = False

    def evaluate(self, ctx: CheckContext) -> Score:
        name = "max_llm_calls"
        bad = _count_limit(name, self.max)
        if bad is not None:
            return bad
        count = ctx.trace.metadata.get("llm_calls")
        if not isinstance(count, int) or isinstance(count, bool):
            why = f"Trace metadata is missing llm_calls ({_READ_WITH_USAGE})"
            return Score.failing(name, name, _could_not(why, name))
        if count <= self.max:
            return Score.passing(
                name, name, f"{count} model calls are within the limit of {self.max}."
            )
        return Score.failing(name, name, f"{count} model calls exceed the limit of {self.max}.")


def token_usage(trace: EvalTrace, check: str) -> dict[str, Any] | str:
    """``metadata["token_usage"]``, or the reason (a sentence) why the trace cannot show it."""
    usage = trace.metadata.get("token_usage")
    if isinstance(usage, dict):
        return usage
    if "llm_calls" not in trace.metadata:
        return _could_not(f"Trace metadata is missing token_usage ({_READ_WITH_USAGE})", check)
    return _could_not("No model call of the trace records its token usage (gen_ai.usage.*)", check)


@dataclass(slots=True, frozen=True)
class MaxTokens:
    """``max_tokens``: the trace's model calls used at most ``max`` tokens, input + output."""

    max: int
    reads_usage: ClassVar[bool] = True
    reads_calls: ClassVar[bool] = False

    def evaluate(self, ctx: CheckContext) -> Score:
        name = "max_tokens"
        bad = _count_limit(name, self.max)
        if bad is not None:
            return bad
        usage = token_usage(ctx.trace, name)
        if isinstance(usage, str):
            return Score.failing(name, name, usage)
        tokens_in, tokens_out = int(usage["input_tokens"]), int(usage["output_tokens"])
        total = tokens_in + tokens_out
        used = f"{total} tokens ({tokens_in} input, {tokens_out} output)"
        if total <= self.max:
            return Score.passing(name, name, f"{used} are within the limit of {self.max}.")
        return Score.failing(name, name, f"{used} exceed the limit of {self.max}.")


@dataclass(slots=True, frozen=True)
class MaxCost:
    """``max_cost_usd``: the trace's tokens cost at most ``max_usd`` US dollars at ``prices``
    (per model, per million input and output tokens; model names as the trace records them)."""

    max_usd: float
    prices: Prices | None = None
    reads_usage: ClassVar[bool] = True
    reads_calls: ClassVar[bool] = False

    def evaluate(self, ctx: CheckContext) -> Score:
        name = "max_cost_usd"
        bad = _measure_limit(name, self.max_usd)
        if bad is not None:
            return bad
        if not self.prices:
            return config_error(
                name, name, _could_not("There is no price table (prices) for max_cost_usd", name)
            )
        usage = token_usage(ctx.trace, name)
        if isinstance(usage, str):
            return Score.failing(name, name, usage)
        cost = 0.0
        for model, tokens in usage["by_model"].items():
            if not model:
                why = "A model call recorded its tokens without naming its model"
                return Score.failing(name, name, _could_not(why, name))
            price = self.prices.get(model)
            if price is None:
                why = f"No price for model {model!r} in prices {sorted(self.prices)}"
                return config_error(name, name, _could_not(why, name))
            cost += price.cost(int(tokens["input_tokens"]), int(tokens["output_tokens"]))
        spent, limit = _decimal(cost), _decimal(self.max_usd)
        if cost <= self.max_usd:
            return Score.passing(name, name, f"Cost ${spent} is within the limit of ${limit}.")
        return Score.failing(name, name, f"Cost ${spent} exceeds the limit of ${limit}.")
