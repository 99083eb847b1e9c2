"""Wording for input that looks like JSON but is not an OTLP/JSON record.

A diagnostic should say what the input looks like and what was expected, not the parser's
view of it ("unexpected control character" for a line cut in the middle of a string). Only
called on the error path: the extra work (one more parse of the bad line) never touches a
good record.
"""

from __future__ import annotations

import orjson

_WHITESPACE = b" \t\r\n\x0b\x0c\xef\xbb\xbf"  # and a UTF-8 byte order mark

#: A file (or line) that holds a JSON array where one OTLP/JSON object was expected.
JSON_ARRAY = (
    'a JSON array, not an OTLP/JSON object: expected one {"resourceSpans": ...} object per '
    "line or document"
)
#: A line that stops before its JSON does (a writer killed mid-line, a line cut by ``head -c``).
TRUNCATED = "truncated JSON (the line ends inside a string/object)"


def is_json_array(data: bytes) -> bool:
    """Whether ``data`` starts like a JSON array (a protobuf message never starts with ``[``)."""
    return data.lstrip(_WHITESPACE)[:1] == b"["


def json_line_problem(line: bytes, reason: str) -> str:
    """What is wrong with a JSON line the parser refused with ``reason``: ``TRUNCATED`` when
    the parser stopped at the line's end (inside a string, an object or an array), else
    ``reason`` as it is."""
    try:
        orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        text = line.decode("utf-8", errors="replace").rstrip()  # orjson counts characters
        if text and exc.pos >= len(text):
            return TRUNCATED
    return reason
