"""The scorer registry: built-in and user-written scorers go through the same door.

A scorer is a plain function ``(trace, case, config) -> Score | list[Score]``. Register it on
:func:`default_registry` (process-wide) or on a ``Registry`` of your own::

    @default_registry().register("no_web_search")
    def no_web_search(trace, case, config):
        ...
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from math import isnan
from typing import TYPE_CHECKING, Any

from tooltrail.checks.score import Score, config_error
from tooltrail.checks.scorers import BUILTIN_SCORERS
from tooltrail.hints import did_you_mean
from tooltrail.model import EvalTrace
from tooltrail.suite.fields import FieldReader

if TYPE_CHECKING:
    from tooltrail.suite.case import EvaluatorConfig, TestCase
    from tooltrail.suite.testsuite import TestSuite

ScorerResult = Score | list[Score]
ScorerFn = Callable[[EvalTrace, "TestCase", dict[str, Any]], ScorerResult]


@dataclass(slots=True, frozen=True)
class ScorerEntry:
    fn: ScorerFn
    #: The config keys the scorer reads; others are a configuration error. ``None``: any key.
    config_keys: frozenset[str] | None = None


class Registry:
    """Named scorers. ``register`` works as a call or as a decorator."""

    def __init__(self) -> None:
        self._entries: dict[str, ScorerEntry] = {}

    @classmethod
    def with_builtins(cls) -> Registry:
        """A fresh registry holding only the built-in scorers."""
        registry = cls()
        for name, (fn, keys) in BUILTIN_SCORERS.items():
            registry.register(name, fn, config_keys=keys)
        return registry

    def register(
        self,
        name: str,
        fn: ScorerFn | None = None,
        *,
        config_keys: Iterable[str] | None = None,
        replace: bool = False,
    ) -> Any:
        """Register ``fn`` under ``name``; without ``fn``, return a decorator that does.

        ``config_keys`` lists the keys the scorer reads so a misspelled key is reported instead
        of silently ignored. Registering a taken name raises unless ``replace=True``.
        """
        keys = frozenset(config_keys) if config_keys is not None else None

        def add(scorer: ScorerFn) -> ScorerFn:
            if not callable(scorer):
                raise TypeError(f"scorer {name!r} must be callable")
            if name in self._entries and not replace:
                raise ValueError(f"a scorer named {name!r} is already registered")
            self._entries[name] = ScorerEntry(scorer, keys)
            return scorer

        if fn is None:
            return add
        return add(fn)

    def get(self, name: str) -> ScorerFn | None:
        entry = self._entries.get(name)
        return entry.fn if entry else None

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

    def run(self, evaluator: EvaluatorConfig, trace: EvalTrace, case: TestCase) -> list[Score]:
        """Run one configured scorer on one trace; never raises.

        Unknown scorers, bad configs and exceptions become failing scores with ``error`` set.
        The threshold (when given) decides ``passed``; ``required`` comes from the config.
        """
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
                return [config_error(name, name, problem)]
            entry = self._entries[name]
        try:
            result = entry.fn(trace, case, config)
        except Exception as exc:  # a scorer's bug must not stop the suite
            return [
                Score(
                    name,
                    name,
                    0.0,
                    False,
                    f"Scorer {name!r} failed: {type(exc).__name__}: {exc}",
                    error=type(exc).__name__,
                )
            ]
        if isinstance(result, Score):
            scores = [result]
        elif isinstance(result, (list, tuple)) and all(isinstance(s, Score) for s in result):
            scores = list(result)
        else:
            return [
                Score(
                    name,
                    name,
                    0.0,
                    False,
                    f"Scorer {name!r} returned {type(result).__name__}, not a Score or a list "
                    "of Scores.",
                    error="TypeError",
                )
            ]
        required = evaluator.required
        for score in scores:
            if score.error is not None:
                score.passed = False
            elif threshold is not None:
                value = score.value
                score.passed = not isnan(value) and value >= threshold
            if not required:
                score.required = False
        return scores

    def check(self, suite: TestSuite | Iterable[TestCase]) -> None:
        """Raise ``SuiteError`` (file, line, key path) for what a suite file names that no
        registered check can run: a near miss of a known check's name (a typo; a name close to
        none may be a check registered later, and fails its case alone when it runs), or a
        config key the check declared it does not read. Loading a suite does not look at the
        registry; whoever runs it (the CLI, ``serve``, ``live.install``, pytest) calls this,
        with the suite or its cases."""
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


def scorer(
    name: str, *, config_keys: Iterable[str] | None = None
) -> Callable[[ScorerFn], ScorerFn]:
    """Decorator registering a scorer on the default registry."""
    return _DEFAULT.register(name, config_keys=config_keys)  # type: ignore[no-any-return]
