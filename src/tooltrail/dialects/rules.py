"""The dialect rules as data: ``rules.json``, read once at import (docs/dialect-rules.md).

``rules.json`` says which attribute key (or span name, name prefix, event name, scope) carries
what, in which encoding, in which order of preference, for each instrumentation. It is the one
statement of those facts: the readers of this package bind the immutable structures they use
(tuples, frozensets, dicts) from it when they are imported, so the per-span path reads module
constants as before, and the compiled core reads the same file. How a value is parsed (a repr,
the walk of nested messages) stays code: docs/architecture.md lists those rules.

The file is checked against its schema here, at import: an unknown field, encoding, role or
unwrap fails loudly (``RulesError``) instead of being silently ignored by one reader.
"""

from __future__ import annotations

import os
from typing import Any

import orjson

#: Where the file is: package data, next to this module (``os.path``: ``pathlib`` would cost
#: the import of every ``tooltrail.dialects`` user some milliseconds).
RULES_PATH = os.path.join(os.path.dirname(__file__), "rules.json")

#: The encodings a row may name, and what each means (docs/dialect-rules.md).
ENCODINGS: dict[str, str] = {
    "text": "a string; placeholders are no value",
    "id": "an id: a string (placeholders are no value) or an int turned into text",
    "present": "only whether the key is there",
    "count": "a non-negative int, or a string of digits (OTLP/JSON int64)",
    "text_list": "a string or a list of strings",
    "json": "JSON text or the structured value it stands for",
    "json_or_repr": "JSON text, else a Python literal (never executed), or a structured value",
    "json_twice": "JSON text encoded as JSON once more (MLflow): decoded up to twice",
    "messages": "chat messages of any provider's shape (or an object holding them): JSON text, "
    "JSON text inside JSON, a Python repr, or structured",
    "content_blocks": "a result: JSON text, or a list of text blocks joined (and parsed again)",
    "reply": "a recorded output: JSON text, a framework's wrapper or repr unwrapped",
    "flat_list": "a list flattened into keys: {prefix}{i}{field}",
    "joined_calls": "a response's calls as texts joined by a separator: the arguments (JSON "
    "values) under the key, the names and ids under the keys of fields, in the same order",
}
#: Envelopes a row may name, unwrapped after decoding (``dialects.values``).
UNWRAPS = frozenset({"langchain", "call", "single_input", "single_output"})
#: When a row of an ordered list answers (``first_answer``): once its value decodes to
#: something (``found``, the default), once its value is not null (``value``), or once its
#: key is there at all (``present``).
ANSWERS = frozenset({"found", "value", "present"})
#: The roles a span name, name prefix or marker value may give (``roles``), besides
#: ``tool:<reader>`` with a reader of the ``tools`` section.
SPAN_ROLES = frozenset({"agent", "model", "workflow"})
#: Every field a row may have.
ROW_FIELDS = frozenset(
    {
        "key",
        "encoding",
        "source",
        "note",
        "unwrap",
        "not_captured_pair",
        "answers",
        "prefix",
        "infix",
        "fields",
        "event",
        "value",
        "values",
        "marker",
        "else",
        "when",
        "from",
    }
)
SECTIONS = frozenset(
    {
        "schema",
        "about",
        "values",
        "roles",
        "tools",
        "final_tools",
        "agents",
        "models",
        "events",
        "conversations",
        "usage",
        "content",
        "messages",
    }
)


class RulesError(ValueError):
    """``rules.json`` does not follow its schema."""


def check(rules: Any) -> None:
    """Raise ``RulesError`` naming the first place where ``rules`` breaks the schema."""
    if not isinstance(rules, dict):
        raise RulesError("rules.json: the top level is not an object")
    unknown = set(rules) - SECTIONS
    if unknown or set(rules) != SECTIONS:
        raise RulesError(f"rules.json: sections {sorted(rules)}, expected {sorted(SECTIONS)}")
    if rules["schema"] != 1:
        raise RulesError(f"rules.json: schema {rules['schema']!r}, this reader knows 1")
    readers = set(rules["tools"])
    roles = rules["roles"]
    meanings = SPAN_ROLES | {f"tool:{name}" for name in readers}
    tables = [roles["by_span_name"], roles["by_name_prefix"]]
    tables += [row["values"] for row in roles["by_marker"]]
    for table in tables:
        for name, meaning in table.items():
            if meaning not in meanings:
                raise RulesError(f"rules.json: roles: {name!r} -> unknown role {meaning!r}")
    _walk(rules, "rules.json")


def _walk(node: Any, where: str) -> None:
    if isinstance(node, list):
        for index, item in enumerate(node):
            _walk(item, f"{where}[{index}]")
        return
    if not isinstance(node, dict):
        if not isinstance(node, (str, int)):
            raise RulesError(f"{where}: {node!r} is neither text nor a number")
        return
    if "encoding" in node or "key" in node:
        _row(node, where)
        return
    for name, value in node.items():
        _walk(value, f"{where}.{name}")


def _row(row: dict[str, Any], where: str) -> None:
    unknown = set(row) - ROW_FIELDS
    if unknown:
        raise RulesError(f"{where}: unknown fields {sorted(unknown)}")
    encoding = row.get("encoding")
    if encoding not in ENCODINGS:
        raise RulesError(f"{where}: encoding {encoding!r} is not one of {sorted(ENCODINGS)}")
    if encoding == "flat_list":
        # (``fields`` name each field's suffix where a reader picks fields; the message
        # reader takes the whole flattened list: ``messages`` rows need none)
        if not isinstance(row.get("prefix"), str) or not isinstance(row.get("fields", {}), dict):
            raise RulesError(f"{where}: a flat_list row needs a prefix (and fields, an object)")
    elif not isinstance(row.get("key"), str) or not row["key"]:
        raise RulesError(f"{where}: a row needs a key")
    for name in row.get("unwrap", ()):
        if name not in UNWRAPS:
            raise RulesError(f"{where}: unwrap {name!r} is not one of {sorted(UNWRAPS)}")
    if row.get("answers", "found") not in ANSWERS:
        raise RulesError(f"{where}: answers {row['answers']!r} is not one of {sorted(ANSWERS)}")
    for name in ("source", "note", "not_captured_pair", "prefix", "infix", "event", "marker"):
        if name in row and not isinstance(row[name], str):
            raise RulesError(f"{where}: {name} is not text")


def text_of(path: str = RULES_PATH) -> str:
    """The text of a rules file."""
    with open(path, encoding="utf-8") as file:
        return file.read()


def load(path: str = RULES_PATH) -> dict[str, Any]:
    """The rules of ``path``, checked."""
    return parse(text_of(path))


def parse(text: str) -> dict[str, Any]:
    """The rules written in ``text``, checked."""
    rules = orjson.loads(text)
    check(rules)
    return rules  # type: ignore[no-any-return]


#: The text of ``rules.json`` the readers' tables come from; the compiled core is handed the
#: same text (``convert.engine``), so both read one version of the rules.
TEXT: str = text_of()
RULES: dict[str, Any] = parse(TEXT)


def at(*path: str) -> Any:
    """The part of the rules at ``path`` (``at("tools", "genai", "name")``)."""
    node: Any = RULES
    for name in path:
        node = node[name]
    return node


def row(*path: str, encoding: str) -> dict[str, Any]:
    """The row at ``path``, whose encoding must be ``encoding``: the reader that binds it
    implements that encoding, so a table that says otherwise fails at import."""
    found = at(*path)
    if not isinstance(found, dict) or found.get("encoding") != encoding:
        raise RulesError(f"rules.json: {'.'.join(path)} is not a row of encoding {encoding!r}")
    return found


def key(*path: str, encoding: str) -> str:
    """The key of the row at ``path`` (see ``row``)."""
    return row(*path, encoding=encoding)["key"]  # type: ignore[no-any-return]


def source(*path: str, encoding: str) -> str:
    """The ``source`` label (``reader:key``) of the row at ``path`` (see ``row``)."""
    return row(*path, encoding=encoding)["source"]  # type: ignore[no-any-return]


def rows(*path: str, encodings: frozenset[str] | set[str]) -> tuple[dict[str, Any], ...]:
    """The ordered rows at ``path``, each of one of ``encodings``."""
    found = at(*path)
    for index, item in enumerate(found):
        if item.get("encoding") not in encodings:
            where = ".".join(path)
            raise RulesError(f"rules.json: {where}[{index}] has an encoding the reader lacks")
    return tuple(found)


def keys(*path: str, encodings: frozenset[str] | set[str]) -> tuple[str, ...]:
    """The keys of the ordered rows at ``path`` (see ``rows``)."""
    return tuple(item["key"] for item in rows(*path, encodings=encodings))


def strings(*path: str) -> tuple[str, ...]:
    """The list of strings at ``path``, as a tuple."""
    return tuple(at(*path))
