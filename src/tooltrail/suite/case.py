"""What a trace is expected to do: test cases, per-turn expectations, scorer configurations.

The names and keywords are those of agentic-evals (``TestCase``, ``EvaluatorConfig``) and
pytest-agent-eval (``Turn``, ``Expect``, ``ToolCallArgs``), so code written for either runs on
tooltrail by changing its imports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from tooltrail.suite.argrules import CompareArgs, RuleError, read_args_from, read_compare_args
from tooltrail.suite.contains import read_contains_options
from tooltrail.suite.handoffs import agent_name_problem, allowed_agents_problem, read_handoffs
from tooltrail.suite.match import Match
from tooltrail.suite.reference import Reference
from tooltrail.suite.sample import Sample
from tooltrail.suite.suite_error import SuiteError
from tooltrail.suite.vocabulary import (
    CASE_TERMS,
    TURN_TERMS,
    expects_anything,
    keys_of_kind,
    missing_expectation,
)

ArgsMode = Literal["subset", "exact"]
ARGS_MODES = ("subset", "exact")


@dataclass(slots=True)
class JudgeConfig:
    """A judge over one turn's reply (``Expect.judge``) or one tool's arguments
    (``ToolCallArgs.judge``): pytest-agent-eval's ``JudgeConfig``.

    ``rubric`` is rubric text or a built-in rubric's name (``checks.rubrics``). ``model`` names
    the judge model (resolved by ``judge.set_model_resolver``); ``judge`` is a ``Judge`` object
    (Python only). With neither, the run's judge (``judge.use_judge``) is asked.
    """

    rubric: str
    model: str | None = None
    judge: Any = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.rubric, str) or not self.rubric.strip():
            raise SuiteError(f"a judge's rubric must be non-empty text, not {self.rubric!r}")
        if self.model is not None and (not isinstance(self.model, str) or not self.model):
            raise SuiteError(f"a judge's model must be a model name, not {self.model!r}")


def judge_config(value: Any) -> JudgeConfig | None:
    """``value`` as a ``JudgeConfig``: one already, a ``{rubric, model}`` mapping, or rubric
    text; ``None`` stays ``None``."""
    if value is None or isinstance(value, JudgeConfig):
        return value
    if isinstance(value, dict):
        return JudgeConfig(**value)
    if isinstance(value, str):
        return JudgeConfig(rubric=value)
    raise SuiteError(f"a judge is a JudgeConfig, a {{rubric, model}} mapping or rubric text, not "
                     f"{type(value).__name__}")  # fmt: skip


@dataclass(slots=True)
class ToolCallArgs:
    """Some call of ``tool`` in the turn has these arguments (``subset``) or exactly these; with
    ``judge``, some call's arguments satisfy its rubric (then ``args`` is optional)."""

    tool: str
    #: ``None`` with a ``judge``: no deterministic check; without one it becomes ``{}`` (the
    #: tool was called, with any arguments).
    args: dict[str, Any] | None = None
    mode: ArgsMode = "subset"
    judge: JudgeConfig | None = None
    #: How values compare (``suite.argrules.CompareArgs``): numbers within ``abs`` / ``rel``,
    #: the argument paths of ``ignore`` left out, ``nested`` subsets at every depth.
    abs: float = 0.0
    rel: float = 0.0
    ignore: list[str] = field(default_factory=list)
    nested: bool = False

    def __post_init__(self) -> None:
        if self.mode not in ARGS_MODES:
            raise SuiteError(f"ToolCallArgs mode must be 'subset' or 'exact', not {self.mode!r}")
        try:  # the rule these make, checked now (``compare`` makes it again when asked)
            CompareArgs(abs=self.abs, rel=self.rel, ignore=self.ignore, nested=self.nested)
        except RuleError as exc:
            raise SuiteError(f"ToolCallArgs {exc.key_path}: {exc.message}") from None
        self.judge = judge_config(self.judge)
        if self.args is None and self.judge is None:
            self.args = {}

    @property
    def compare(self) -> CompareArgs:
        """``abs``, ``rel``, ``ignore`` and ``nested`` as one rule."""
        return CompareArgs(abs=self.abs, rel=self.rel, ignore=self.ignore, nested=self.nested)


#: pytest-agent-eval's name for a ``tool_calls_args`` entry.
ToolCallArgsConfig = ToolCallArgs


_TURN_NAME_LISTS = keys_of_kind(TURN_TERMS, "names")


@dataclass(slots=True)
class Expect:
    """What the tool calls of one turn must show (pytest-agent-eval's vocabulary)."""

    tool_calls_include: list[str] = field(default_factory=list)
    tool_calls_exclude: list[str] = field(default_factory=list)
    #: The include list must appear as an ordered subsequence of the turn's calls.
    tool_calls_ordered: bool = False
    tool_calls_args: list[ToolCallArgs] = field(default_factory=list)
    #: The turn's wall time (its top agent or workflow span, else its trace) at most this.
    max_latency_ms: float | None = None
    #: A judge's rubric over the turn's reply (``llm_judge`` on that turn).
    judge: JudgeConfig | None = None
    #: Check objects run on the turn (Python only): ``JudgeEvaluator``, any ``evaluate(ctx)``.
    evaluators: list[Any] = field(default_factory=list)
    #: Judge the turn on the calls of this agent only (``ToolCall.agent``); else the turn's.
    agent: str | None = None

    def __post_init__(self) -> None:
        problem = agent_name_problem(self.agent)
        if problem is not None:
            raise SuiteError(f"Expect agent {problem}")
        for key in _TURN_NAME_LISTS:
            if isinstance(getattr(self, key), (str, bytes)):
                raise SuiteError(f"Expect {key} must be a list of tool names, not a string")
        self.tool_calls_args = [
            ToolCallArgs(**item) if isinstance(item, dict) else item
            for item in self.tool_calls_args
        ]
        self.judge = judge_config(self.judge)
        for evaluator in self.evaluators:
            if not callable(getattr(evaluator, "evaluate", None)):
                raise SuiteError(
                    f"Expect evaluators must have an evaluate(ctx) method, not "
                    f"{type(evaluator).__name__}"
                )

    def is_empty(self) -> bool:
        """Whether the turn expects nothing (``suite.vocabulary``)."""
        return not expects_anything(TURN_TERMS, self)


@dataclass(slots=True)
class Turn:
    """One user message of a conversation and what the agent must do in answer to it."""

    user: str = ""
    expect: Expect = field(default_factory=Expect)
    #: Judge the turn on the calls of this agent only, unless its ``expect`` names another.
    agent: str | None = None

    def __post_init__(self) -> None:
        if self.expect is None:
            self.expect = Expect()
        problem = agent_name_problem(self.agent)
        if problem is not None:
            raise SuiteError(f"Turn agent {problem}")

    @property
    def scope(self) -> str | None:
        """The agent whose calls the turn is judged on: its expectation's, else its own."""
        return self.expect.agent if self.expect.agent is not None else self.agent


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """What a model's tokens cost, in US dollars per million input and output tokens."""

    input: float
    output: float

    def __post_init__(self) -> None:
        for key in ("input", "output"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise SuiteError(
                    f"a model price's {key} must be a number, 0 or more, not {value!r}"
                )

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """The dollars ``input_tokens`` and ``output_tokens`` cost at this price."""
        return (input_tokens * self.input + output_tokens * self.output) / 1_000_000


#: model name (as the trace records it) -> its price
Prices = dict[str, ModelPrice]


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a value was read in a suite file: the file, its key path, and the line of every
    key under it (so that a later check can name file, line and key)."""

    source: str | None
    key_path: tuple[Any, ...]
    lines: dict[tuple[Any, ...], int] = field(default_factory=dict)


@dataclass(slots=True)
class EvaluatorConfig:
    """A named scorer from the registry, its pass threshold and its configuration.

    ``passed = value >= threshold``; with no threshold the scorer's own verdict stands (the
    built-in scorers pass at 1.0). A score that is not ``required`` is reported but never fails
    its case.
    """

    name: str
    threshold: float | None = None
    config: dict[str, Any] = field(default_factory=dict)
    required: bool = True
    #: Where it was read, for ``Registry.check``'s errors (``None`` when built in Python).
    origin: Origin | None = field(default=None, compare=False, repr=False)
    #: Judge the check on the calls of this agent only; its scores are named
    #: ``agent:{agent}:{name}`` (``checks.agents``).
    agent: str | None = None
    #: The share of production traces the check judges (``suite.sample``: a ``Sample``, or a
    #: rate or ``{rate, by}`` given in Python); ``None``: every trace. Applied by ``serve`` and
    #: live evaluation (``tooltrail.sampling``).
    sample: Sample | float | dict[str, Any] | None = None


#: The fields that hold lists of names (a lone string there is a mistake, not a list).
_NAME_LISTS = (*keys_of_kind(CASE_TERMS, "names"), "tags")
#: The fields read into their rule objects (``suite.argrules``, ``suite.contains``).
_RULES: tuple[tuple[str, Any], ...] = (
    ("args_from", lambda value: read_args_from(value) if value else {}),
    ("compare_args", read_compare_args),
    ("contains_options", read_contains_options),
    ("handoffs", lambda value: read_handoffs(value) if value is not None else None),
)


@dataclass(slots=True)
class TestCase:
    """One case: the expectations a trace (or a conversation, or each of N runs) must meet.

    Without ``match`` the case applies to the traces tagged with its ``id`` (or paired with it
    by hand); with ``match`` it is a policy applied to every trace the selector picks.
    ``runs``/``threshold``: the case passes when passed runs / max(runs, runs seen) >=
    threshold (every run must pass when no threshold is set).
    """

    __test__ = False  # not a pytest test class

    id: str
    name: str | None = None
    input: str | None = None
    expected_contains: list[str] = field(default_factory=list)
    required_tools: list[str] = field(default_factory=list)
    forbidden_tools: list[str] = field(default_factory=list)
    required_tool_order: list[str] = field(default_factory=list)
    #: tool -> arguments some call of the tool must include (subset, values compared).
    expected_tool_arguments: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: tool -> argument names some call of the tool must include (presence only).
    required_tool_arguments: dict[str, list[str]] = field(default_factory=dict)
    #: tool -> argument path -> where its value must come from in the run (``user``,
    #: ``result_of``, ``literal``: ``suite.argrules.read_args_from``).
    args_from: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: How ``expected_tool_arguments`` and ``args_from`` compare values
    #: (``suite.argrules.CompareArgs``, or its mapping).
    compare_args: Any = None
    #: How ``expected_contains`` looks for its texts (``suite.contains.ContainsOptions``).
    contains_options: Any = None
    max_turns: int | None = None
    #: Budgets read from the trace (docs/core.md, "Budgets"): its wall time, tool calls, model
    #: calls, tokens (input + output) and their cost at ``prices``.
    max_latency_ms: float | None = None
    max_tool_calls: int | None = None
    max_llm_calls: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    #: Prices for ``max_cost_usd``; a suite's ``prices`` fill it when the case has none.
    prices: Prices | None = None
    evaluators: list[EvaluatorConfig] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    runs: int = 1
    threshold: float | None = None
    tags: list[str] = field(default_factory=list)
    match: Match | None = None
    #: Leave failed attempts (``status == "error"``) out of every check.
    ignore_failed_calls: bool = False
    #: Seconds each check of the case may run (``None``: the suite's ``check_timeout``, else
    #: ``checks.timelimit.DEFAULT_CHECK_TIMEOUT_S``); past it the check fails with an error.
    check_timeout: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    #: The calls of a good run, for ``trajectory_match`` (docs/core.md, "Reference
    #: trajectories"); ``tooltrail eval --reference FILE`` replaces it.
    reference: Reference | None = None
    #: Judge every check of the case on the calls of this agent only (``ToolCall.agent``).
    agent: str | None = None
    #: tool -> the agents that may call it (``allowed_agents:{tool}``).
    allowed_agents: dict[str, list[str]] = field(default_factory=dict)
    #: The handoffs expected (``suite.handoffs.Handoffs``, or its mapping).
    handoffs: Any = None

    def __post_init__(self) -> None:
        limit = self.check_timeout
        if limit is not None and (
            isinstance(limit, bool)
            or not isinstance(limit, (int, float))
            or not 0 < limit < float("inf")
        ):
            raise SuiteError(
                f"case {self.id!r}: check_timeout must be a number of seconds more than 0, "
                f"not {limit!r}"
            )
        for key in _NAME_LISTS:
            if isinstance(getattr(self, key), (str, bytes)):
                raise SuiteError(f"case {self.id!r}: {key} must be a list of strings, not a string")
        problem = agent_name_problem(self.agent)
        if problem is not None:
            raise SuiteError(f"case {self.id!r}: agent {problem}")
        problem = allowed_agents_problem(self.allowed_agents)
        if problem is not None:
            raise SuiteError(f"case {self.id!r}: {problem}")
        for key, read in _RULES:
            try:
                setattr(self, key, read(getattr(self, key)))
            except RuleError as exc:
                where = f"{key}.{exc.key_path}" if exc.key_path else key
                raise SuiteError(f"case {self.id!r}: {where}: {exc.message}") from None
        if not self.has_expectations():
            raise SuiteError(missing_expectation(self.id))

    def has_expectations(self) -> bool:
        """Whether the case checks anything at all (a case that checks nothing always passes):
        a field of ``suite.vocabulary``'s table, a scorer, or a turn's ``expect``."""
        return bool(
            expects_anything(CASE_TERMS, self)
            or self.evaluators
            or any(not turn.expect.is_empty() for turn in self.turns)
        )

    @property
    def title(self) -> str:
        """The case's display name: ``name``, else ``id``."""
        return self.name or self.id
