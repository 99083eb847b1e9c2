"""Strict reading of user-written YAML/JSON files: every error names file, line and key path.

An unknown key is an error with a did-you-mean hint, never silently dropped. Parsing is
``yaml.SafeLoader`` only (no arbitrary objects), with a size cap and a cap on how far anchors
and aliases may expand.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import yaml

from tooltrail.hints import did_you_mean
from tooltrail.suite.suite_error import SuiteError

#: Largest suite or gate file read, in bytes.
MAX_FILE_BYTES = 16 * 1024 * 1024
#: Most values a document may hold once anchors/aliases are expanded.
MAX_EXPANDED_NODES = 1_000_000

KeyPath = tuple[Any, ...]


def format_key_path(path: KeyPath) -> str:
    """``("cases", 0, "evaluators")`` -> ``"cases[0].evaluators"``."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


class FieldReader:
    """Reads typed values out of parsed data, raising ``SuiteError`` with file/line/key path."""

    def __init__(self, source: str | None = None, lines: dict[KeyPath, int] | None = None) -> None:
        self.source = source
        self.lines = lines or {}

    def fail(self, path: KeyPath, message: str) -> NoReturn:
        line = self.lines.get(path)
        probe = path
        while line is None and probe:  # nearest enclosing key with a known line
            probe = probe[:-1]
            line = self.lines.get(probe)
        raise SuiteError(
            message, path=self.source, line=line, key_path=format_key_path(path) or None
        )

    def mapping(
        self,
        value: Any,
        path: KeyPath,
        allowed: Sequence[str],
        required: Sequence[str] = (),
        what: str = "a mapping",
    ) -> dict[str, Any]:
        """``value`` as a dict whose keys are all in ``allowed`` and include ``required``."""
        if not isinstance(value, dict):
            self.fail(path, f"expected {what}, got {_kind(value)}")
        for key in value:
            if not isinstance(key, str):
                self.fail(path, f"keys must be strings, got {key!r}")
            if key not in allowed:
                known = f"allowed keys: {', '.join(allowed)}" if allowed else "it takes no keys"
                self.fail(
                    path + (key,), f"unknown key {key!r}{did_you_mean(key, allowed)}; {known}"
                )
        for key in required:
            if key not in value:
                self.fail(path, f"missing required key {key!r}")
        return value

    def free_mapping(self, value: Any, path: KeyPath, what: str = "a mapping") -> dict[str, Any]:
        """``value`` as a dict with string keys, any keys allowed (tool names, argument values)."""
        if not isinstance(value, dict):
            self.fail(path, f"expected {what}, got {_kind(value)}")
        for key in value:
            if not isinstance(key, str):
                self.fail(path, f"keys must be strings, got {key!r}")
        return value

    def string(self, value: Any, path: KeyPath, *, allow_empty: bool = False) -> str:
        if not isinstance(value, str):
            self.fail(path, f"expected a string, got {_kind(value)}")
        if not value and not allow_empty:
            self.fail(path, "must not be empty")
        return value

    def string_list(self, value: Any, path: KeyPath) -> list[str]:
        if not isinstance(value, list):
            hint = " (write a list: [name])" if isinstance(value, str) else ""
            self.fail(path, f"expected a list of strings, got {_kind(value)}{hint}")
        return [self.string(item, path + (i,)) for i, item in enumerate(value)]

    def boolean(self, value: Any, path: KeyPath) -> bool:
        if not isinstance(value, bool):
            self.fail(path, f"expected true or false, got {_kind(value)}")
        return value

    def integer(self, value: Any, path: KeyPath, *, minimum: int = 0) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path, f"expected an integer, got {_kind(value)}")
        if value < minimum:
            self.fail(path, f"must be at least {minimum}, got {value}")
        return value

    def fraction(self, value: Any, path: KeyPath) -> float:
        """A number between 0 and 1 inclusive (a rate or threshold)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(path, f"expected a number between 0 and 1, got {_kind(value)}")
        if not math.isfinite(value) or not 0 <= value <= 1:
            self.fail(path, f"must be between 0 and 1, got {value!r}")
        return float(value)

    def limit(self, value: Any, path: KeyPath) -> float:
        """A finite number, 0 or more (a budget: milliseconds, dollars, a price)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(path, f"expected a number (0 or more), got {_kind(value)}")
        if not math.isfinite(value) or value < 0:
            self.fail(path, f"must be a finite number, 0 or more, got {value!r}")
        return float(value)

    def number(self, value: Any, path: KeyPath) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or math.isnan(value):
            self.fail(path, f"expected a number, got {_kind(value)}")
        return float(value)


def _kind(value: Any) -> str:
    if value is None:
        return "nothing (null)"
    if isinstance(value, bool):
        return f"a boolean ({value!r})"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return f"a string ({value!r})" if len(value) <= 40 else "a string"
    return f"{type(value).__name__} ({value!r})"


def read_document(path: str | Path) -> tuple[Any, FieldReader]:
    """Parse a YAML or JSON file into plain data and a reader that knows its key lines."""
    source = str(path)
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise SuiteError(f"cannot read file: {exc.strerror or exc}", path=source) from None
    if len(raw) > MAX_FILE_BYTES:
        raise SuiteError(f"file is larger than {MAX_FILE_BYTES} bytes", path=source)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SuiteError(f"not UTF-8 text (byte offset {exc.start})", path=source) from None
    return parse_text(text, source, json_only=source.endswith(".json"))


def parse_text(text: str, source: str, *, json_only: bool = False) -> tuple[Any, FieldReader]:
    """Parse YAML (or strict JSON when ``json_only``); returns data and a located reader."""
    if json_only:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SuiteError(f"invalid JSON: {exc.msg}", path=source, line=exc.lineno) from None
        except RecursionError:
            raise SuiteError("invalid JSON: nested too deeply", path=source) from None
        try:
            lines = _compose_lines(text, source)
        except SuiteError:
            lines = {}
        return data, FieldReader(source, lines)
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, FieldReader(source, {})
        lines = _index_lines(node, source)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise SuiteError(f"invalid YAML: {problem}", path=source, line=line) from None
    except yaml.YAMLError as exc:
        raise SuiteError(f"invalid YAML: {exc}", path=source) from None
    except RecursionError:
        raise SuiteError("invalid YAML: nested too deeply", path=source) from None
    finally:
        loader.dispose()
    return data, FieldReader(source, lines)


def _compose_lines(text: str, source: str) -> dict[KeyPath, int]:
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        return _index_lines(node, source) if node is not None else {}
    except (yaml.YAMLError, RecursionError):
        return {}
    finally:
        loader.dispose()


def _index_lines(root: yaml.Node, source: str) -> dict[KeyPath, int]:
    """Key path -> 1-based line, for every key and list item; rejects duplicate keys and
    alias bombs."""
    lines: dict[KeyPath, int] = {(): root.start_mark.line + 1}
    sizes: dict[int, int] = {}

    def expanded(node: yaml.Node) -> int:
        known = sizes.get(id(node))
        if known is not None:
            return known
        sizes[id(node)] = 1  # a cycle counts once
        total = 1
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                total += expanded(key) + expanded(value)
        elif isinstance(node, yaml.SequenceNode):
            for item in node.value:
                total += expanded(item)
        sizes[id(node)] = min(total, MAX_EXPANDED_NODES + 1)
        return sizes[id(node)]

    if expanded(root) > MAX_EXPANDED_NODES:
        raise SuiteError(
            f"document expands to more than {MAX_EXPANDED_NODES} values (anchors/aliases)",
            path=source,
        )
    visited: set[int] = set()

    def walk(node: yaml.Node, path: KeyPath) -> None:
        if id(node) in visited:  # an alias: its lines belong to the anchor
            return
        visited.add(id(node))
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key, value in node.value:
                name = key.value if isinstance(key, yaml.ScalarNode) else None
                line = key.start_mark.line + 1
                if name == "<<":
                    walk(value, path)
                    continue
                if name is not None:
                    if name in seen:
                        raise SuiteError(
                            f"duplicate key {name!r} (first on line {seen[name]})",
                            path=source,
                            line=line,
                            key_path=format_key_path(path + (name,)),
                        )
                    seen[name] = line
                    lines.setdefault(path + (name,), line)
                    walk(value, path + (name,))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                lines.setdefault(path + (i,), item.start_mark.line + 1)
                walk(item, path + (i,))

    walk(root, ())
    return lines
