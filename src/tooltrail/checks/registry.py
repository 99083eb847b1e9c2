"""The scorer registry: built-in and user-written checks go through the same door.

A registered check is a class following the check protocol (``evaluate(ctx)``; a dataclass's
fields are its config keys), built from a case's ``EvaluatorConfig`` as ``cls(**config)``, or a
plain function ``(trace, case, config) -> Score | list[Score]``, wrapped in ``FunctionCheck``.
Register either on :func:`default_registry` (process-wide) or on a ``Registry`` of your own::

    @default_registry().register("no_web_search")
    def no_web_search(trace, case, config):
        ...
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields, is_dataclass
from math import isnan
from typing import TYPE_CHECKING, Any

from tooltrail.checks.agents import AgentScoped
from tooltrail.checks.entries import ScorerEntry, ScorerFn
from tooltrail.checks.needs import declaration_problem, needs_of
from tooltrail.checks.protocol import Check, CheckContext, case_context
from tooltrail.checks.score import Score
from tooltrail.checks.scorers import BUILTIN_SCORERS
from tooltrail.hints import did_you_mean
from tooltrail.model import EvalTrace
from tooltrail.suite.fields import FieldReader

if TYPE_CHECKING:
    from tooltrail.suite.case import EvaluatorConfig, TestCase
    from tooltrail.suite.testsuite import TestSuite


@dataclass(slots=True, frozen=True)
class Broken:
    """A configured check that cannot run (unknown name, bad config, a constructor that
    raised): each evaluation reports why, as a failing score with ``error`` set."""

    name: str
    explanation: str
    error: str

    def evaluate(self, ctx: CheckContext) -> list[Score]:
        name = self.name
        return [Score.failing(name, name, self.explanation, error=self.error)]


def _crashed(name: str, exc: Exception) -> Broken:
    return Broken(
        name=name,
        explanation=f"Scorer {name!r} failed: {type(exc).__name__}: {exc}",
        error=type(exc).__name__,
    )


@dataclass(slots=True, frozen=True)
class ConfiguredCheck:
    """A registered check as a case configured it; never raises.

    An exception or a result that is not a ``Score`` (or a list of them) becomes a failing
    score. A score with ``error`` set never passes; otherwise ``threshold`` (when given)
    decides ``passed``; ``required=False`` makes every score advisory.
    """

    name: str
    check: Check
    threshold: float | None = None
    required: bool = True

    # What it needs is the registered check's (``checks.needs``), but ``reads_reply``: a
    # configured check never said it, so a registered check of the reply is not given an
    # error score for a missing reply (only ``contains``, a case field, is).
    @property
    def reads_usage(self) -> bool:
        """Whether the configured check reads what a trace used (``checks.budgets``)."""
        return needs_of(self.check).usage

    @property
    def reads_content(self) -> bool:
        """Whether the configured check reads what was said and returned (tool results, each
        turn's input and reply: ``EvalTrace.turns``)."""
        return needs_of(self.check).content

    @property
    def reads_calls(self) -> bool:
        """Whether the configured check reads the tool calls (``checks.uncaptured``)."""
        return needs_of(self.check).calls

    @property
    def asks_judge(self) -> bool:
        """Whether the configured check asks the run's judge (``checks.judges``)."""
        return needs_of(self.check).judge

    def evaluate(self, ctx: CheckContext) -> list[Score]:
        name = self.name
        try:
            result = self.check.evaluate(ctx)
        except Exception as exc:  # a scorer's bug must not stop the suite
            return _crashed(name, exc).evaluate(ctx)
        if isinstance(result, Score):
            scores = [result]
        elif isinstance(result, (list, tuple)) and all(isinstance(s, Score) for s in result):
            scores = list(result)
        else:
            return Broken(
                name=name,
                explanation=f"Scorer {name!r} returned {type(result).__name__}, not a Score or "
                "a list of Scores.",
                error="TypeError",
            ).evaluate(ctx)
        threshold = self.threshold
        required = self.required
        for score in scores:
            if score.error is not None:
                score.passed = False
            elif threshold is not None:
                value = score.value
                score.passed = not isnan(value) and value >= threshold
            if not required:
                score.required = False
        return scores


_BUILTIN_CLASSES = frozenset(BUILTIN_SCORERS.values())


def is_builtin(check: Check) -> bool:
    """Whether ``check`` (as ``Registry.build`` made it) is tooltrail's own code: a built-in
    scorer, or a check that only reports a configuration problem. Those run without a time
    limit; every other check runs under one (``checks.timelimit``)."""
    kind = type(check)
    if kind is Broken:
        return True
    if kind is not ConfiguredCheck:
        return False
    inner = check.check  # type: ignore[attr-defined]
    if type(inner) is AgentScoped:  # a built-in check scoped to one agent is still one
        inner = inner.check
    return type(inner) in _BUILTIN_CLASSES and getattr(inner, "runs_plugins", False) is not True


def _declared_keys(registered: type | ScorerFn) -> frozenset[str] | None:
    """The config keys of a dataclass check (its fields set by ``__init__``), or those an
    evaluator object declares (``config_keys``)."""
    if isinstance(registered, type) and is_dataclass(registered):
        return frozenset(f.name for f in fields(registered) if f.init)
    declared = getattr(registered, "config_keys", None)
    if not isinstance(registered, type) and isinstance(declared, frozenset):
        return declared
    return None


def _is_evaluator(value: Any) -> bool:
    """An evaluator object (agentic-evals' shape): it has a ``name`` and builds its check for
    a case's config (``configured(config)``)."""
    return (
        not isinstance(value, type)
        and isinstance(getattr(value, "name", None), str)
        and callable(getattr(value, "configured", None))
    )


class Registry:
    """Named checks. ``register`` works as a call or as a decorator."""

    def __init__(self) -> None:
        self._entries: dict[str, ScorerEntry] = {}

    @classmethod
    def with_builtins(cls) -> Registry:
        """A fresh registry holding only the built-in scorers."""
        registry = cls()
        for name, check_class in BUILTIN_SCORERS.items():
            registry.register(name, check_class)
        return registry

    def register(
        self,
        name: str,
        fn: type | ScorerFn | None = None,
        *,
        config_keys: Iterable[str] | None = None,
        replace: bool = False,
    ) -> Any:
        """Register ``fn`` (a check class or a plain scorer function) under ``name``; without
        ``fn``, return a decorator that does. ``register(evaluator)`` registers an evaluator
        object (``LLMJudgeEvaluator``) under its own ``name``, as agentic-evals does.

        ``config_keys`` lists the keys the check reads so a misspelled key is reported instead
        of silently ignored (a dataclass check's fields, unless given). Registering a taken
        name raises unless ``replace=True``.
        """

        if fn is None and _is_evaluator(name):
            name, fn = name.name, name  # type: ignore[attr-defined,assignment]

        def add(registered: Any) -> Any:
            if _is_evaluator(registered):
                pass
            elif isinstance(registered, type):
                if not callable(getattr(registered, "evaluate", None)):
                    raise TypeError(f"check class {name!r} must have an evaluate(ctx) method")
                problem = declaration_problem(registered)  # told now, not when it runs
                if problem is not None:
                    raise TypeError(problem)
            elif not callable(registered):
                raise TypeError(f"scorer {name!r} must be callable")
            if name in self._entries and not replace:
                raise ValueError(f"a scorer named {name!r} is already registered")
            keys = _declared_keys(registered) if config_keys is None else frozenset(config_keys)
            self._entries[name] = ScorerEntry(registered, keys)
            return registered

        if fn is None:
            return add
        return add(fn)

    def get(self, name: str) -> type | ScorerFn | None:
        """What was registered under ``name`` (a check class or a function), or ``None``."""
        entry = self._entries.get(name)
        return entry.registered if entry else None

    def entry(self, name: str) -> ScorerEntry | None:
        return self._entries.get(name)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def copy(self) -> Registry:
        registry = Registry()
        registry._entries = dict(self._entries)
        return registry

    def build(self, evaluator: EvaluatorConfig) -> ConfiguredCheck | Broken:
        """The check ``evaluator`` configures: the registered check built with its config,
        under its threshold and ``required``; an unknown name, a bad config or a constructor
        that raises gives a check that reports why (its ``evaluate`` never raises)."""
        name = evaluator.name
        entry = self._entries.get(name)
        config = evaluator.config
        threshold = evaluator.threshold
        if (
            entry is None
            or config
            or type(config) is not dict
            or (
                threshold is not None
                and (type(threshold) is not float or not 0.0 <= threshold <= 1.0)
            )
        ):  # the common case (no threshold or one in [0, 1], an empty config) needs no closer look
            problem = self._config_problem(evaluator)
            if problem is not None:
                return Broken(name=name, explanation=problem, error="ConfigError")
            entry = self._entries[name]
        try:
            check = entry.build(config)
            bind = getattr(check, "bind_registry", None)
            if callable(bind):  # a check naming other registered checks (trajectory_match)
                check = bind(self)
        except Exception as exc:  # a check's constructor must not stop the suite either
            return _crashed(name, exc)
        if evaluator.agent is not None:  # that agent's calls only, its scores named for it
            check = AgentScoped(check, evaluator.agent)
        return ConfiguredCheck(
            name=name, check=check, threshold=threshold, required=evaluator.required
        )

    def run(self, evaluator: EvaluatorConfig, trace: EvalTrace, case: TestCase) -> list[Score]:
        """Run one configured check on one trace; never raises.

        Unknown scorers, bad configs and exceptions become failing scores with ``error`` set.
        The threshold (when given) decides ``passed``; ``required`` comes from the config.
        """
        return self.build(evaluator).evaluate(case_context(case, trace))

    def check(self, suite: TestSuite | Iterable[TestCase]) -> None:
        """Raise ``SuiteError`` (file, line, key path) for what a suite file names that no
        registered check can run: a near miss of a known check's name (a typo; a name close to
        none may be a check registered later, and fails its case alone when it runs), a
        config key the check declared it does not read, or a config value its class's
        ``config_problem(config, registry)`` finds wrong (``trajectory_match``'s modes).
        Loading a suite does not look at the registry; whoever runs it (the CLI, ``serve``,
        ``live.install``, pytest) calls this, with the suite or its cases."""
        cases = suite.cases if hasattr(suite, "cases") else suite
        for case in cases:
            for evaluator in case.evaluators:
                self._check_evaluator(evaluator)

    def _check_evaluator(self, evaluator: EvaluatorConfig) -> None:
        origin = evaluator.origin
        reader = FieldReader(origin.source, origin.lines) if origin is not None else FieldReader()
        path = origin.key_path if origin is not None else ()
        name = evaluator.name
        entry = self._entries.get(name)
        if entry is None:
            hint = did_you_mean(name, self._entries)
            if hint:
                reader.fail(path + ("name",), f"unknown scorer {name!r}{hint}")
            return
        if entry.config_keys is not None and isinstance(evaluator.config, dict):
            keys = tuple(sorted(entry.config_keys))
            reader.mapping(evaluator.config, path + ("config",), keys, what="a config mapping")
        config_problem = getattr(entry.registered, "config_problem", None)
        if callable(config_problem) and isinstance(evaluator.config, dict):
            problem = config_problem(evaluator.config, self)  # values, beyond the keys
            if problem is not None:
                where, message = problem
                reader.fail(path + ("config", *where), message)

    def _config_problem(self, evaluator: EvaluatorConfig) -> str | None:
        name = evaluator.name
        entry = self._entries.get(name)
        if entry is None:
            return (
                f"Unknown scorer {name!r}{did_you_mean(name, self._entries)}; registered: "
                f"{self.names()}."
            )
        threshold = evaluator.threshold
        if threshold is not None and (
            isinstance(threshold, bool) or not isinstance(threshold, (int, float))
        ):
            return f"threshold must be a number, not {threshold!r}."
        if threshold is not None and not 0 <= threshold <= 1:
            return (
                f"threshold must be between 0 and 1, not {threshold!r}: scores lie in [0, 1], "
                "so the case could never pass (or never fail)."
            )
        if not isinstance(evaluator.config, dict):
            return f"config must be a mapping, not {type(evaluator.config).__name__}."
        if entry.config_keys is not None:
            for key in evaluator.config:
                if key not in entry.config_keys:
                    reads = (
                        f"it reads {sorted(entry.config_keys)}"
                        if entry.config_keys
                        else "it takes no config keys"
                    )
                    return (
                        f"Unknown config key {key!r} for scorer {name!r}"
                        f"{did_you_mean(str(key), entry.config_keys)}; {reads}."
                    )
        return None


_DEFAULT = Registry.with_builtins()


def default_registry() -> Registry:
    """The process-wide registry: the built-in scorers plus any registered on it."""
    return _DEFAULT


def scorer(name: str, *, config_keys: Iterable[str] | None = None) -> Callable[[Any], Any]:
    """Decorator registering a check class or a scorer function on the default registry."""
    return _DEFAULT.register(name, config_keys=config_keys)  # type: ignore[no-any-return]
