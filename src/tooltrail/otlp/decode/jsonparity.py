"""Where ``msgspec`` reads JSON differently from ``orjson``, made good.

The typed fast path (``jsontyped``) decodes with ``msgspec``; what it hands on must be what
the ``orjson`` path would have read, and it must refuse what ``orjson`` refuses. Two
differences matter: an integer beyond the 64-bit range (``orjson`` reads a float, ``msgspec``
the exact int), and nesting (``orjson`` refuses more than 1024 levels; ``msgspec`` follows
the recursion limit, and from Python 3.12 the interpreter's C limit, which is higher).
"""

from __future__ import annotations

from typing import Any

#: ``orjson`` refuses documents nested deeper than this many arrays and objects.
ORJSON_MAX_DEPTH = 1024
_INT64_MIN = -(1 << 63)
_UINT64_MAX = (1 << 64) - 1


def nested_past(value: Any, depth: int) -> bool:
    """Whether ``value`` (a dict or list, itself at ``depth`` in its document) holds an
    array or object deeper than ``ORJSON_MAX_DEPTH``. Iterative: values may nest deep."""
    stack = [(value, depth)]
    while stack:
        item, level = stack.pop()
        if level > ORJSON_MAX_DEPTH:
            return True
        for child in item.values() if item.__class__ is dict else item:
            if child.__class__ is dict or child.__class__ is list:
                stack.append((child, level + 1))
    return False


def orjson_ints(value: Any) -> Any:
    """``value`` (plain JSON from ``msgspec``) with integers outside the 64-bit range as
    floats, as ``orjson`` reads them; ``value`` itself when it has none (the usual case)."""
    cls = value.__class__
    if cls is not dict and cls is not list:
        return float(value) if _big(value) else value
    return _floated(value) if _has_big_int(value) else value


def _big(value: Any) -> bool:
    return value.__class__ is int and not _INT64_MIN <= value <= _UINT64_MAX


def _has_big_int(value: Any) -> bool:
    stack = [value]
    pop, push = stack.pop, stack.append
    while stack:
        item = pop()
        cls = item.__class__
        if cls is dict or cls is list:
            for member in item.values() if cls is dict else item:
                if member.__class__ is dict or member.__class__ is list:
                    push(member)
                elif _big(member):
                    return True
    return False


def _floated(value: Any) -> Any:
    """A copy of ``value`` (a dict or list) with big integers as floats."""
    root: Any = {} if value.__class__ is dict else []
    stack = [(value, root)]
    while stack:
        source, target = stack.pop()
        items = source.items() if source.__class__ is dict else enumerate(source)
        for key, member in items:
            cls = member.__class__
            if cls is dict or cls is list:
                copy: Any = {} if cls is dict else []
                stack.append((member, copy))
            else:
                copy = float(member) if _big(member) else member
            if target.__class__ is dict:
                target[key] = copy
            else:
                target.append(copy)
    return root
