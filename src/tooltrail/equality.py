"""Value equality for tool arguments, and the canonical fingerprint of a call's arguments.

The rules (docs/checks.md, "Value equality"): values compare as given; int and float compare
numerically (JSON does not keep the difference); a boolean never equals a number, at any
depth; NaN equals nothing; lists are ordered; dicts ignore key order. ``==`` on containers
cannot be trusted for this (``[True] == [1]``, and ``[nan] == [nan]`` when it is the same
object), so containers are walked.

A tolerance (``Tolerance``: ``abs``, ``rel``) loosens the number rule alone, where a check is
configured with one (docs/checks.md, "Tolerance, ignored paths and nested arguments"):
``values_close`` is ``values_equal`` with numbers compared by ``numbers_close``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import orjson

_MISSING = object()
_SORT_KEYS = orjson.OPT_SORT_KEYS


def values_equal(expected: Any, actual: Any) -> bool:
    """Whether two argument values are equal under tooltrail's rules (see module docstring)."""
    kind = type(expected)
    if kind is str:
        return type(actual) is str and expected == actual
    if kind is bool or type(actual) is bool:
        return kind is bool and type(actual) is bool and expected is actual
    if kind is int or kind is float:
        return (type(actual) is int or type(actual) is float) and expected == actual
    if expected is None:
        return actual is None
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or len(expected) != len(actual):
            return False
        for key, value in expected.items():
            other = actual.get(key, _MISSING)
            if other is _MISSING or not values_equal(value, other):
                return False
        return True
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(expected) != len(actual):
            return False
        return all(values_equal(a, b) for a, b in zip(expected, actual, strict=True))
    if isinstance(expected, str):  # str subclasses
        return isinstance(actual, str) and not isinstance(actual, bool) and expected == actual
    if isinstance(expected, (int, float)):  # int/float subclasses other than bool
        return (
            isinstance(actual, (int, float)) and not isinstance(actual, bool) and expected == actual
        )
    return bool(expected == actual)


@dataclass(frozen=True, slots=True)
class Tolerance:
    """How far apart two numbers may be and still be equal: at most ``abs``, or at most
    ``rel`` times the larger magnitude (``math.isclose``'s rule: the looser of the two).
    Both 0 is the plain rule. A boolean is still never a number, NaN still equals nothing."""

    abs: float = 0.0
    rel: float = 0.0


def numbers_close(expected: float, actual: float, tolerance: Tolerance) -> bool:
    """Whether two numbers (int or float, not bool) are equal within ``tolerance``."""
    if expected == actual:
        return True
    try:
        return math.isclose(expected, actual, rel_tol=tolerance.rel, abs_tol=tolerance.abs)
    except OverflowError:  # an int too wide for a float: only exact equality counts
        return False


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def values_close(expected: Any, actual: Any, tolerance: Tolerance | None) -> bool:
    """``values_equal`` with every number, at any depth, compared within ``tolerance``
    (``None``: ``values_equal`` itself)."""
    if tolerance is None:
        return values_equal(expected, actual)
    if _is_number(expected):
        return _is_number(actual) and numbers_close(expected, actual, tolerance)
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or len(expected) != len(actual):
            return False
        for key, value in expected.items():
            other = actual.get(key, _MISSING)
            if other is _MISSING or not values_close(value, other, tolerance):
                return False
        return True
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)) or len(expected) != len(actual):
            return False
        return all(values_close(a, b, tolerance) for a, b in zip(expected, actual, strict=True))
    return values_equal(expected, actual)


def args_contain(expected: dict[str, Any], actual: dict[str, Any] | None) -> bool:
    """Whether ``actual`` holds every top-level key of ``expected`` with an equal value.

    Extra actual keys are fine; nested values must be equal as a whole. Arguments that were
    not captured (``None``) contain nothing, except that an empty expectation is always met.
    """
    if not expected:
        return True
    if actual is None:
        return False
    for key, value in expected.items():
        other = actual.get(key, _MISSING)
        if other is _MISSING:
            return False
        if type(value) is str:  # the common case, inlined
            if type(other) is not str or value != other:
                return False
        elif not values_equal(value, other):
            return False
    return True


def args_fingerprint(args: dict[str, Any] | None) -> bytes:
    """Canonical JSON of a call's arguments (sorted keys, compact), for exact-duplicate checks.

    Unlike :func:`values_equal`, ``5`` and ``5.0`` differ here, and arguments that were not
    captured (``b"<none>"``) differ from ``{}``. NaN and infinities keep their own spelling
    instead of collapsing into ``null``.
    """
    if args is None:
        return b"<none>"
    try:
        text = orjson.dumps(args, option=_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        return _stdlib_fingerprint(args)
    # orjson writes NaN and infinities as null; only texts holding a null need a second look.
    if b"null" in text:
        return _stdlib_fingerprint(args)
    return text


def _stdlib_fingerprint(args: dict[str, Any]) -> bytes:
    try:
        text = json.dumps(
            args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr
        )
    except (TypeError, ValueError, RecursionError):
        text = repr(args)  # keys of mixed types cannot be sorted; fall back to a stable-enough text
    return text.encode("utf-8", "surrogatepass")
