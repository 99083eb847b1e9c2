"""Argument values compared under a configured rule (``suite.argrules.CompareArgs``): numbers
within a tolerance, ignored argument paths, subset and superset at every depth.

One walk serves every argument check that takes a rule (``tool_arg_values``, a turn's
``tool_calls_args``, the reference modes of ``trajectory_match`` and
``trajectory_similarity``), so that a tolerance or an ignored path means the same everywhere.
The checks keep their own faster code for the plain rule; this runs only when a rule is set.

``mode``: ``exact`` (the same keys, equal values), ``contains`` (every expected key is there
with an equal value; more keys are fine: ``tool_arg_values``' subset, the reference's
``superset``), ``within`` (every actual key is an expected one with an equal value; keys may
be left out: the reference's ``subset``). Without ``nested`` the mode applies to the top-level
keys and nested values compare whole (ignored paths and the tolerance still apply inside
them); with ``nested`` it applies in every nested object, and lists compare item by item (the
same length, in order), each item under the mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from tooltrail.equality import Tolerance, numbers_close, values_equal
from tooltrail.suite.argrules import ArgPath, CompareArgs, show_path

Mode = Literal["exact", "contains", "within"]

#: Stands for a value an ignored path removes.
_IGNORED: Any = object()


@dataclass(frozen=True, slots=True)
class Difference:
    """The first place two argument values differ: ``missing`` (the expected value at
    ``path`` has no actual one), ``extra`` (an actual value at ``path`` the expected lack),
    ``value`` (both there, not equal)."""

    kind: Literal["missing", "extra", "value"]
    path: ArgPath
    expected: Any = None
    actual: Any = None

    @property
    def where(self) -> str:
        """The path as text (``items[0].sku``)."""
        return show_path(self.path)


def difference(
    expected: dict[str, Any], actual: dict[str, Any], mode: Mode, rule: CompareArgs
) -> Difference | None:
    """The first difference of two calls' arguments under ``mode`` and ``rule``, or ``None``."""
    walk = _Walk(mode=mode, nested=rule.nested, tolerance=rule.tolerance)
    return walk.objects(expected, actual, (), rule.paths, top=True)


def matches(
    expected: dict[str, Any], actual: dict[str, Any], mode: Mode, rule: CompareArgs
) -> bool:
    return difference(expected, actual, mode, rule) is None


def describe(mode: str, rule: CompareArgs | None) -> str:
    """A mode with its rule, as explanations show it: ``superset, nested, abs 0.01``."""
    told = rule.describe() if rule is not None else ""
    return f"{mode}, {told}" if told else mode


def _child(ignores: tuple[ArgPath, ...], step: str | int) -> Any:
    """The ignored paths below ``step``, or ``_IGNORED`` when one names ``step`` itself."""
    if not ignores:
        return ignores
    below = []
    for path in ignores:
        head = path[0]
        if head is None or (head == step and type(head) is type(step)):
            if len(path) == 1:
                return _IGNORED
            below.append(path[1:])
    return tuple(below)


@dataclass(frozen=True, slots=True)
class _Walk:
    mode: Mode
    nested: bool
    tolerance: Tolerance | None

    def objects(
        self,
        expected: dict[str, Any],
        actual: dict[str, Any],
        path: ArgPath,
        ignores: tuple[ArgPath, ...],
        *,
        top: bool = False,
    ) -> Difference | None:
        mode = self.mode if top or self.nested else "exact"
        if mode != "within":  # exact, contains: every expected key, equal
            for key, value in expected.items():
                below = _child(ignores, key)
                if below is _IGNORED:
                    continue
                if key not in actual:
                    return Difference("missing", path + (key,), expected=value)
                found = self.values(value, actual[key], path + (key,), below)
                if found is not None:
                    return found
        if mode != "contains":  # exact, within: no key the expected lack
            for key, value in actual.items():
                below = _child(ignores, key)
                if below is _IGNORED:
                    continue
                if key not in expected:
                    return Difference("extra", path + (key,), actual=value)
                if mode == "within":
                    found = self.values(expected[key], value, path + (key,), below)
                    if found is not None:
                        return found
        return None

    def values(
        self, expected: Any, actual: Any, path: ArgPath, ignores: tuple[ArgPath, ...]
    ) -> Difference | None:
        if isinstance(expected, dict) and isinstance(actual, dict):
            if not ignores and not self.nested and self.tolerance is None:
                same = values_equal(expected, actual)
                return None if same else self._differs(expected, actual, path)
            return self.objects(expected, actual, path, ignores)
        if isinstance(expected, (list, tuple)) and isinstance(actual, (list, tuple)):
            if len(expected) != len(actual):
                return self._differs(expected, actual, path)
            for i, (wanted, got) in enumerate(zip(expected, actual, strict=True)):
                below = _child(ignores, i)
                if below is _IGNORED:
                    continue
                found = self.values(wanted, got, path + (i,), below)
                if found is not None:
                    return found
            return None
        tolerance = self.tolerance
        if tolerance is not None and _is_number(expected) and _is_number(actual):
            same = numbers_close(expected, actual, tolerance)
        else:
            same = values_equal(expected, actual)
        return None if same else self._differs(expected, actual, path)

    @staticmethod
    def _differs(expected: Any, actual: Any, path: ArgPath) -> Difference:
        return Difference("value", path, expected=expected, actual=actual)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def values_at(value: Any, steps: ArgPath, at: ArgPath = ()) -> list[tuple[ArgPath, Any]]:
    """The values ``steps`` names inside ``value``, each with its concrete path (``[*]`` and
    ``*`` give one per item or key; a step that finds nothing gives none)."""
    if not steps:
        return [(at, value)]
    step, rest = steps[0], steps[1:]
    found: list[tuple[ArgPath, Any]] = []
    if isinstance(value, dict):
        if step is None:
            for key, item in value.items():
                found += values_at(item, rest, at + (key,))
        elif isinstance(step, str) and step in value:
            found += values_at(value[step], rest, at + (step,))
    elif isinstance(value, (list, tuple)):
        if step is None:
            for i, item in enumerate(value):
                found += values_at(item, rest, at + (i,))
        elif isinstance(step, int) and step < len(value):
            found += values_at(value[step], rest, at + (step,))
    return found
