"""The reply inside a framework's result object written as a Python repr.

Some instrumentations record an agent's output with ``str()`` or ``repr()`` of the framework's
result: ``AgentRunResult(output='The refund is issued.')`` (Pydantic AI),
``RunResult(input=..., new_items=[...], final_output='...')`` (OpenAI Agents). The rule: a
repr ``Name(field=value, ...)`` whose top-level keyword is one of the output fields gives that
field's value: a string literal its text, a nested repr the same rule again, a dict or list
literal the value it holds (for the caller to unwrap). Only the literal is read, with
``ast.literal_eval`` (never ``eval``); the rest of the repr (object addresses, ``<...>``) need
not be valid Python. Keywords inside nested objects (``raw_responses=[ModelResponse(output=
...)]``) are not the top level and are skipped.
"""

from __future__ import annotations

import ast
import re
from typing import Any

#: Longest repr read (a result object's repr can hold the whole conversation).
MAX_REPR_CHARS = 1 << 20
#: Nested reprs followed (``Result(output=Answer(text='...'))``).
_MAX_DEPTH = 4

_HEAD = re.compile(r"[A-Za-z_][\w.]*\(")
_KEYWORD = re.compile(r"\s*([A-Za-z_]\w*)=")
_OPEN, _CLOSE = "([{", ")]}"
_STRING_PREFIX = re.compile(r"[rRbBuU]{0,2}['\"]")


def repr_field(text: str, fields: tuple[str, ...], depth: int = 0) -> Any:
    """The value of the first of ``fields`` (in that order) that is a top-level keyword of the
    repr ``text``; ``None`` when ``text`` is no such repr or the value is not a literal."""
    if depth > _MAX_DEPTH or len(text) > MAX_REPR_CHARS:
        return None
    head = _HEAD.match(text)
    if head is None or not text.rstrip().endswith(")"):
        return None
    found = _top_keywords(text, head.end())
    for name in fields:
        span = found.get(name)
        if span is not None:
            value = _literal(text[span[0] : span[1]].strip(), fields, depth)
            if value is not None:
                return value
    return None


def _literal(source: str, fields: tuple[str, ...], depth: int) -> Any:
    if _HEAD.match(source):
        return repr_field(source, fields, depth + 1)
    try:
        value = ast.literal_eval(source)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, (str, dict, list)) else None


def _top_keywords(text: str, start: int) -> dict[str, tuple[int, int]]:
    """keyword -> (start, end) of its value text, for the keywords of the call that opens
    just before ``start``: one pass that skips string literals and nested brackets."""
    found: dict[str, tuple[int, int]] = {}
    depth = 0
    at = start
    value_start = -1
    name = ""
    expect_keyword = True
    end = len(text)
    while at < end:
        if expect_keyword and depth == 0:
            keyword = _KEYWORD.match(text, at)
            if keyword is not None:
                name, at = keyword.group(1), keyword.end()
                value_start = at
            expect_keyword = False
            continue
        prefix = _STRING_PREFIX.match(text, at)
        if prefix is not None:
            at = _string_end(text, prefix.end() - 1)
            continue
        char = text[at]
        if char in _OPEN:
            depth += 1
        elif char in _CLOSE:
            if depth == 0:  # the call's closing parenthesis
                if name and value_start >= 0:
                    found.setdefault(name, (value_start, at))
                break
            depth -= 1
        elif char == "," and depth == 0:
            if name and value_start >= 0:
                found.setdefault(name, (value_start, at))
            name, value_start, expect_keyword = "", -1, True
        at += 1
    return found


def _string_end(text: str, quote_at: int) -> int:
    """The index just past the string literal whose opening quote is at ``quote_at``."""
    quote = text[quote_at]
    triple = text.startswith(quote * 3, quote_at)
    closing = quote * 3 if triple else quote
    at = quote_at + len(closing)
    end = len(text)
    while at < end:
        char = text[at]
        if char == "\\":
            at += 2
            continue
        if text.startswith(closing, at):
            return at + len(closing)
        if char == "\n" and not triple:
            return at
        at += 1
    return end
