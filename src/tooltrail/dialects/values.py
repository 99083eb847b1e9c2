"""Turning instrumentation attribute values into plain Python: ids, names, argument dicts.

Instrumentations serialise the same arguments in many ways (JSON text, structured values,
Python reprs, envelopes around the real arguments). These helpers read them safely: JSON
first, then ``ast.literal_eval`` under a size cap (never ``eval``), and anything that is not
a dict of arguments becomes ``None`` ("not captured"), never ``{}``.
"""

from __future__ import annotations

import ast
from typing import Any

import orjson

from tooltrail.dialects import rules
from tooltrail.model import parse_args

#: Values instrumentations write where they mean "no value": placeholders (``<elided>``: content
#: capture off in the OpenTelemetry GenAI instrumentations) and the markers of content hidden
#: on purpose (OpenInference ``__REDACTED__``, LiteLLM ``redacted-by-litellm``, ...):
#: ``rules.json`` ``values.placeholders``.
PLACEHOLDERS = frozenset(rules.strings("values", "placeholders"))

#: Python reprs longer than this are not parsed (``ast`` work grows with the text).
MAX_LITERAL_CHARS = 1 << 20


def is_marker(value: str) -> bool:
    """Whether ``value`` (surrounding white space aside) is a placeholder or a redaction
    marker: content an instrumentation hid or did not capture, never content itself."""
    return value in PLACEHOLDERS or value.strip() in PLACEHOLDERS


def text(value: Any) -> str | None:
    """A non-placeholder string, else ``None``."""
    if isinstance(value, str) and value not in PLACEHOLDERS:
        return value
    return None


def ident(value: Any) -> str | None:
    """A call id: a non-placeholder string (ints are accepted and turned into text)."""
    if isinstance(value, str):
        return value if value not in PLACEHOLDERS else None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def json_value(value: Any) -> Any:
    """``value`` parsed when it is JSON text (an object, array or string); else unchanged.

    Text that is not JSON is returned as it is (callers decide what a bare string means).
    """
    if not isinstance(value, str) or not value:
        return value
    first = value[0]
    if first == "{":
        parsed = parse_args(value)
        return value if parsed is None else parsed
    if first == "[" or first == '"':
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def python_literal(value: str) -> Any:
    """A Python literal (``{'a': 1}``) parsed with ``ast.literal_eval``, or ``None``.

    LangChain tools often record ``str(dict)`` instead of JSON. The text is capped in size
    and never executed.
    """
    if len(value) > MAX_LITERAL_CHARS:
        return None
    try:
        return ast.literal_eval(value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def args_from(value: Any, *, literal: bool = False) -> dict[str, Any] | None:
    """Arguments as a dict from JSON text, a structured value, or (``literal=True``) a repr.

    Placeholders, non-objects and unparseable text mean "not captured": ``None``.
    """
    if value is None:
        return None
    if isinstance(value, str):
        if value in PLACEHOLDERS:
            return None
        parsed = parse_args(value)
        if parsed is not None:
            return parsed  # parsed JSON: every key is a string
        if literal and value.lstrip()[:1] == "{":
            lit = python_literal(value)
            return _string_keys(lit) if isinstance(lit, dict) else None
        return None
    if isinstance(value, dict):
        return _string_keys(value)
    if isinstance(value, bytes):
        return _string_keys(parse_args(value))
    return None


def double_json(value: Any) -> Any:
    """MLflow stores every attribute JSON-encoded once more: decode up to twice."""
    once = json_value(value)
    if isinstance(once, str) and once is not value:
        return json_value(once)
    return once


def _string_keys(value: dict[Any, Any] | None) -> dict[str, Any] | None:
    if value is None:
        return None
    for key in value:
        if not isinstance(key, str):
            return {str(k): v for k, v in value.items()}
    return value


# --- envelopes around the real arguments ------------------------------------------------

_CALL_ENVELOPE_KEYS = frozenset({"args", "kwargs", "sanitize_inputs_outputs"})


def unwrap_call_envelope(args: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """``{"args": [...], "kwargs": {...}}`` (a recorded Python call) -> the keyword arguments.

    Positional values, whose parameter names are unknown, are kept under ``"args"``. Returns
    the arguments and whether positional values are among them. Any other dict is returned
    as it is.
    """
    if "kwargs" not in args or not _CALL_ENVELOPE_KEYS.issuperset(args):
        return args, False
    kwargs = args.get("kwargs")
    positional = args.get("args", [])
    if not isinstance(kwargs, dict) or not isinstance(positional, list):
        return args, False
    if not positional:
        return dict(kwargs), False
    merged = dict(kwargs)
    merged["args"] = positional
    return merged, True


def unwrap_langchain_envelope(args: dict[str, Any]) -> dict[str, Any] | None:
    """OpenLLMetry's LangChain callback records ``{"input_str", "tags", "metadata", "inputs",
    "kwargs"}``: the real arguments are ``inputs``. Any other dict is returned as it is."""
    if "input_str" not in args or "inputs" not in args:
        return args
    inputs = args["inputs"]
    if isinstance(inputs, dict):
        return _string_keys(inputs)
    if isinstance(inputs, str):
        return args_from(inputs, literal=True)
    return None


def unwrap_single_input(args: dict[str, Any]) -> dict[str, Any]:
    """``{"input": "{'a': 1}"}`` (a LangChain run's inputs) -> ``{'a': 1}`` when the inner text
    is a dict; otherwise the dict is returned as it is (the tool's one input is ``input``)."""
    if len(args) != 1 or not isinstance(args.get("input"), str):
        return args
    inner = args_from(args["input"], literal=True)
    return inner if inner is not None else args


def message_text(value: Any) -> str | None:
    """The text of a reply: a string, JSON-encoded string, or list of ``{"text": ...}`` blocks."""
    if isinstance(value, str):
        parsed = json_value(value)
        if parsed is value:
            return value if value not in PLACEHOLDERS else None
        value = parsed
    if isinstance(value, str):
        return value if value not in PLACEHOLDERS else None
    if isinstance(value, list):
        parts = [
            block["text"]
            for block in value
            if isinstance(block, dict)
            and isinstance(block.get("text"), str)
            and block["text"] not in PLACEHOLDERS
        ]
        return "".join(parts) if parts else None
    if isinstance(value, dict):
        inner = value.get("text", value.get("content"))
        return inner if isinstance(inner, str) and inner not in PLACEHOLDERS else None
    return None
