"""A draft suite file, written as YAML with a comment on every rule (``tooltrail suggest``).

This module only writes: which rules a set of runs supports is decided by
``checks.suggest``; the ``DraftCase`` it hands over is plain data. The text is made to be
read back by the strict suite loader (``suite.load``) unchanged, so every key written here is
a key of ``CASE_KEYS``.

Names, argument keys and values come from traces: untrusted text. Each is written as one YAML
scalar by ``yaml_scalar`` (plain only when it is a simple word that reads back as itself,
else double-quoted with every character outside printable ASCII escaped), never inside a
comment; comments hold only this module's words and counts. So a value cannot end a line,
open a key or hide in a comment.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

#: A string written without quotes: a word of letters, digits and ``_.-/`` starting with a
#: letter or ``_`` (and reading back as that string: not ``yes``, ``null``, ``on``...).
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*")
#: Escapes a person reads at a glance (YAML's own).
_SHORT = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}
#: The column trailing comments start at (when the line is shorter).
_COMMENT_COLUMN = 48


@dataclass(slots=True)
class DraftReference:
    """A reference trajectory: one input run's calls (arguments redacted, ``None`` where not
    captured) and the ``trajectory_match`` settings every run of the case meets."""

    calls: list[tuple[str, dict[str, Any] | None]]
    mode: str
    args: str
    #: Tools whose arguments are compared by another rule than ``args`` (``ignore``).
    tool_args: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class DraftCase:
    """The rules a case's runs all keep (the invariant ``checks.suggest`` holds), each
    supported by all ``runs``; ``allowed_tools`` says for each tool how many runs called it."""

    id: str
    #: ``match:`` keys and values (``None``: ``match: all``).
    match: dict[str, str] | None
    runs: int
    required_tools: list[str] = field(default_factory=list)
    tool_order: list[str] = field(default_factory=list)
    argument_values: dict[str, dict[str, Any]] = field(default_factory=dict)
    argument_keys: dict[str, list[str]] = field(default_factory=dict)
    allowed_tools: list[tuple[str, int]] = field(default_factory=list)
    no_redundant_calls: bool = False
    reference: DraftReference | None = None
    #: Comment lines of this module's own words (why a rule is absent), never trace text.
    notes: list[str] = field(default_factory=list)


def yaml_scalar(value: Any) -> str:
    """``value`` as one line of YAML (flow style for lists and mappings) that the suite
    loader reads back as an equal value."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, str):
        return value if _is_plain(value) else _quoted(value)
    if isinstance(value, Mapping):
        pairs = ", ".join(f"{yaml_scalar(str(k))}: {yaml_scalar(v)}" for k, v in value.items())
        return "{" + pairs + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(yaml_scalar(v) for v in value) + "]"
    return _quoted(str(value))


def _is_plain(text: str) -> bool:
    if _PLAIN.fullmatch(text) is None:
        return False
    try:
        return bool(yaml.safe_load(text) == text)
    except yaml.YAMLError:
        return False


def _quoted(text: str) -> str:
    """A YAML double-quoted scalar: printable ASCII as it is, the rest escaped."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif char in _SHORT:
            out.append(_SHORT[char])
        elif 0x20 <= code < 0x7F:
            out.append(char)
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _float(value: float) -> str:
    """A float YAML 1.1 reads back as a float: ``1.0e-05``, not ``1e-05`` (a string there)."""
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        if "." not in mantissa:
            mantissa += ".0"
        text = f"{mantissa}e{exponent}"
    return text


def _line(text: str, comment: str | None = None) -> str:
    if comment is None:
        return text
    return f"{text.ljust(_COMMENT_COLUMN - 1)} # {comment}"


def _runs(count: int, total: int) -> str:
    return f"{count}/{total} runs"


def render_draft(cases: Sequence[DraftCase], *, name: str, runs: int, header: Sequence[str]) -> str:
    """The draft suite file: ``header`` comment lines (this program's words), then the suite
    ``name`` and its cases."""
    lines = [f"# {line}" if line else "#" for line in header]
    lines += [f"name: {yaml_scalar(name)}", 'version: "1"', "cases:"]
    for case in cases:
        lines.extend(_case_lines(case))
    return "\n".join(lines) + "\n"


def _case_lines(case: DraftCase) -> Iterator[str]:
    n = case.runs
    every = _runs(n, n)
    yield f"  - id: {yaml_scalar(case.id)}"
    for note in case.notes:
        yield f"    # {note}"
    if case.match is None:
        yield _line("    match: all", f"learnt from {n} run{'' if n == 1 else 's'}")
    else:
        learnt = f"learnt from {n} run{'' if n == 1 else 's'}"
        yield _line(f"    match: {yaml_scalar(case.match)}", learnt)
    if case.required_tools:
        yield _line("    required_tools:", f"each called in {every}")
        for tool in case.required_tools:
            yield f"      - {yaml_scalar(tool)}"
    if case.tool_order:
        yield _line("    required_tool_order:", f"first called in this order in {every}")
        for tool in case.tool_order:
            yield f"      - {yaml_scalar(tool)}"
    if case.argument_values:
        yield _line("    expected_tool_arguments:", f"the same in every call, in {every}")
        for tool, values in case.argument_values.items():
            yield f"      {yaml_scalar(tool)}:"
            for key, value in values.items():
                yield f"        {yaml_scalar(key)}: {yaml_scalar(value)}"
    if case.argument_keys:
        yield _line("    required_tool_arguments:", f"present in every call, in {every}")
        for tool, keys in case.argument_keys.items():
            yield f"      {yaml_scalar(tool)}: {yaml_scalar(list(keys))}"
    scorers = list(_scorer_lines(case))
    if scorers:
        yield "    evaluators:"
        yield from scorers
    if case.reference is not None:
        yield _line("    reference:", "the calls of one input run (--reference)")
        yield "      calls:" if case.reference.calls else "      calls: []"
        for tool, args in case.reference.calls:
            if args is None:
                yield _line(f"        - {yaml_scalar(tool)}", "arguments not captured")
            else:
                yield f"        - {{tool: {yaml_scalar(tool)}, args: {yaml_scalar(args)}}}"


def _scorer_lines(case: DraftCase) -> Iterator[str]:
    n = case.runs
    if case.allowed_tools:
        yield _line("      - name: tool_call_precision", "no run called any other tool")
        yield "        threshold: 1.0"
        yield "        config:"
        yield "          allowed_tools:"
        for tool, count in case.allowed_tools:
            yield _line(f"            - {yaml_scalar(tool)}", f"called in {_runs(count, n)}")
    if case.no_redundant_calls:
        yield _line("      - name: no_redundant_tool_calls", f"no call repeated, in {_runs(n, n)}")
        yield "        threshold: 1.0"
    reference = case.reference
    if reference is not None:
        yield _line("      - name: trajectory_match", f"{reference.mode}, held by {_runs(n, n)}")
        yield "        config:"
        yield f"          mode: {reference.mode}"
        yield f"          args: {reference.args}"
        if reference.tool_args:
            yield _line("          tool_args:", "arguments that differ between runs")
            for tool, rule in reference.tool_args.items():
                yield f"            {yaml_scalar(tool)}: {rule}"
