"""How a case compares argument values, and where an argument's value must come from: the
data of ``compare_args`` (a tolerance on numbers, ignored argument paths, nested subsets) and
of ``args_from`` (``user``, ``result_of: TOOL``, ``literal``), read the same way from a suite
file (``suite.load``, which turns a ``RuleError`` into file, line and key) and from Python.

An argument path names a value inside a call's arguments (or a tool's result): names joined
by dots, each followed by any number of ``[n]`` (the n-th item of a list, from 0) or ``[*]``
(every item); ``*`` as a name stands for every key: ``amount``, ``payment.amount``,
``items[*].sku``, ``*.timestamp``. A key holding a dot or a bracket cannot be named.
The checks apply these (``checks.argmatch``, ``checks.provenance``); this module only reads
and checks them, so that a bad rule is an error before anything runs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tooltrail.equality import Tolerance
from tooltrail.hints import did_you_mean
from tooltrail.suite.fields import format_key_path
from tooltrail.suite.suite_error import SuiteError

#: One step of an argument path: a key, a list index, or ``None`` for every key or item.
PathPart = str | int | None
ArgPath = tuple[PathPart, ...]

#: The keys of an argument comparison rule, wherever one is written (``compare_args``, a
#: turn's ``tool_calls_args`` entry, ``trajectory_match``'s config and its ``tool_args``).
OPTION_KEYS = ("abs", "rel", "ignore", "nested")
#: The kinds of an argument's source.
SOURCE_KINDS = ("user", "result_of", "literal")
SOURCE_KEYS = ("result_of", "path", "literal")

_STEP = re.compile(r"\.?([^.\[\]]+)|\[(\d+|\*)\]")


class RuleError(SuiteError):
    """A bad argument rule or source, ``where`` its key path under the value given."""

    def __init__(self, where: tuple[Any, ...], message: str) -> None:
        super().__init__(message, key_path=format_key_path(where) or None)
        self.where = where


def parse_path(text: Any) -> ArgPath:
    """An argument path's steps (module docstring); ``ValueError`` when it is not one."""
    if not isinstance(text, str) or not text or text.startswith(".") or text.endswith("."):
        raise ValueError(_path_problem(text))
    steps: list[PathPart] = []
    at = 0
    while at < len(text):
        found = _STEP.match(text, at)
        if found is None or (found.group(1) is not None and at and text[at] != "."):
            raise ValueError(_path_problem(text))
        name, index = found.group(1), found.group(2)
        if name is not None:
            steps.append(None if name == "*" else name)
        else:
            steps.append(None if index == "*" else int(index))
        at = found.end()
    return tuple(steps)


def _path_problem(text: Any) -> str:
    return (
        "an argument path is names joined by dots, each with any [n] or [*] after it "
        f"(items[0].sku, *.timestamp), not {text!r}"
    )


def show_path(path: ArgPath) -> str:
    """A concrete path as text: ``items[0].sku``."""
    text = ""
    for step in path:
        if isinstance(step, int):
            text += f"[{step}]"
        elif step is None:
            text += "[*]"
        else:
            text += f".{step}" if text else step
    return text


def _non_negative(value: Any, where: tuple[Any, ...]) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise RuleError(where, f"expected a number, 0 or more, not {value!r}")
    if not math.isfinite(value) or value < 0:
        raise RuleError(where, f"expected a finite number, 0 or more, not {value!r}")
    return float(value)


@dataclass(frozen=True, slots=True)
class CompareArgs:
    """How argument values compare beyond the plain rule (docs/checks.md, "Tolerance,
    ignored paths and nested arguments"): numbers within ``abs`` / ``rel``
    (``equality.Tolerance``); the argument paths of ``ignore`` left out on both sides (volatile
    values: timestamps, generated ids); with ``nested``, a subset or superset rule holds at
    every depth of nested objects and lists of objects, not only for the top-level keys."""

    abs: float = 0.0
    rel: float = 0.0
    #: A list or a tuple (kept as a tuple).
    ignore: Sequence[str] = ()
    nested: bool = False
    #: ``ignore`` parsed (``parse_path``).
    paths: tuple[ArgPath, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "abs", _non_negative(self.abs, ("abs",)))
        object.__setattr__(self, "rel", _non_negative(self.rel, ("rel",)))
        ignore = self.ignore
        if isinstance(ignore, str) or not isinstance(ignore, (list, tuple)):
            raise RuleError(("ignore",), f"expected a list of argument paths, not {ignore!r}")
        paths = []
        for i, text in enumerate(ignore):
            try:
                paths.append(parse_path(text))
            except ValueError as exc:
                raise RuleError(("ignore", i), str(exc)) from None
        object.__setattr__(self, "ignore", tuple(ignore))
        object.__setattr__(self, "paths", tuple(paths))
        if not isinstance(self.nested, bool):
            raise RuleError(("nested",), f"expected true or false, not {self.nested!r}")

    @property
    def tolerance(self) -> Tolerance | None:
        """The number rule, ``None`` when it is the plain one."""
        return Tolerance(abs=self.abs, rel=self.rel) if self.abs or self.rel else None

    @property
    def plain(self) -> bool:
        """Whether it changes nothing (the plain rule: checks keep their fast paths)."""
        return not (self.abs or self.rel or self.ignore or self.nested)

    def describe(self) -> str:
        """The rule as explanations name it: ``nested, abs 0.01, ignoring ['ts']`` (``""``
        for the plain rule)."""
        parts = ["nested"] if self.nested else []
        if self.abs:
            parts.append(f"abs {self.abs:g}")
        if self.rel:
            parts.append(f"rel {self.rel:g}")
        if self.ignore:
            parts.append(f"ignoring {list(self.ignore)}")
        return ", ".join(parts)


def read_compare_args(value: Any, *, base: CompareArgs | None = None) -> CompareArgs | None:
    """``value`` as a ``CompareArgs``: one already, a mapping of ``OPTION_KEYS`` (a key it
    leaves out keeps ``base``'s), or ``None`` (``base``). ``RuleError`` when it is none."""
    if value is None or isinstance(value, CompareArgs):
        return value if value is not None else base
    if not isinstance(value, Mapping):
        raise RuleError((), f"expected a mapping of {', '.join(OPTION_KEYS)}, not {value!r}")
    for key in value:
        if key not in OPTION_KEYS:
            raise RuleError(
                (key,),
                f"unknown key {key!r}{did_you_mean(str(key), OPTION_KEYS)}; allowed keys: "
                f"{', '.join(OPTION_KEYS)}",
            )
    start = base if base is not None else CompareArgs()
    return CompareArgs(
        abs=value.get("abs", start.abs),
        rel=value.get("rel", start.rel),
        ignore=value.get("ignore", start.ignore),
        nested=value.get("nested", start.nested),
    )


def options_of(config: Mapping[str, Any]) -> dict[str, Any]:
    """The ``OPTION_KEYS`` a mapping sets (a check's config, a turn's entry), for
    ``read_compare_args``."""
    return {key: config[key] for key in OPTION_KEYS if config.get(key) is not None}


# -- where an argument's value comes from ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class ArgSource:
    """One place an argument's value may come from: a user message of the run (``user``),
    the recorded result of an earlier call of ``tool`` (``result_of``; at ``path`` in it, or
    anywhere), or one of ``values`` (``literal``)."""

    kind: Literal["user", "result_of", "literal"]
    tool: str | None = None
    path: str | None = None
    values: tuple[Any, ...] = ()
    #: ``path`` parsed (``None``: anywhere in the result).
    steps: ArgPath | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.kind not in SOURCE_KINDS:
            raise RuleError((), f"a source is one of {', '.join(SOURCE_KINDS)}, not {self.kind!r}")
        if self.kind == "result_of" and (not isinstance(self.tool, str) or not self.tool):
            raise RuleError(("result_of",), f"expected a tool name, not {self.tool!r}")
        if self.path is not None:
            if self.kind != "result_of":
                raise RuleError(("path",), "only a result_of source has a path")
            try:
                object.__setattr__(self, "steps", parse_path(self.path))
            except ValueError as exc:
                raise RuleError(("path",), str(exc)) from None
        if self.kind == "literal":
            values = self.values
            if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple)):
                raise RuleError(("literal",), f"expected a list of values, not {values!r}")
            if not values:
                raise RuleError(("literal",), "expected at least one value")
            object.__setattr__(self, "values", tuple(values))

    @classmethod
    def user(cls) -> ArgSource:
        return cls(kind="user")

    @classmethod
    def result_of(cls, tool: str, path: str | None = None) -> ArgSource:
        return cls(kind="result_of", tool=tool, path=path)

    @classmethod
    def literal(cls, *values: Any) -> ArgSource:
        return cls(kind="literal", values=values)


def read_sources(value: Any) -> tuple[ArgSource, ...]:
    """An argument's sources: ``user``, ``{result_of: TOOL, path: P}``, ``{literal: [...]}``,
    an ``ArgSource``, or a non-empty list of them (any one will do)."""
    if isinstance(value, (list, tuple)):
        if not value:
            raise RuleError((), "expected at least one source")
        found: list[ArgSource] = []
        for i, item in enumerate(value):
            try:
                found.append(_source(item))
            except RuleError as exc:
                raise RuleError((i, *exc.where), exc.message) from None
        return tuple(found)
    return (_source(value),)


def _source(value: Any) -> ArgSource:
    if isinstance(value, ArgSource):
        return value
    if value == "user":
        return ArgSource.user()
    if not isinstance(value, Mapping):
        hint = did_you_mean(value, ("user",)) if isinstance(value, str) else ""
        raise RuleError(
            (),
            "a source is `user`, {result_of: TOOL, path: PATH} or {literal: [values]}, not "
            f"{value!r}{hint}",
        )
    for key in value:
        if key not in SOURCE_KEYS:
            raise RuleError(
                (key,),
                f"unknown key {key!r}{did_you_mean(str(key), SOURCE_KEYS)}; a source is `user`, "
                "{result_of: TOOL, path: PATH} or {literal: [values]}",
            )
    if "result_of" in value:
        if "literal" in value:
            raise RuleError(("literal",), "a source has result_of or literal, not both")
        return ArgSource(kind="result_of", tool=value["result_of"], path=value.get("path"))
    if "literal" in value:
        if "path" in value:
            raise RuleError(("path",), "only a result_of source has a path")
        return ArgSource(kind="literal", values=value["literal"])
    raise RuleError((), "a source mapping needs result_of or literal")


#: tool -> argument path -> its sources
ArgsFrom = dict[str, dict[str, tuple[ArgSource, ...]]]


def read_args_from(value: Any) -> ArgsFrom:
    """A case's ``args_from``: tool name -> argument path -> sources (``read_sources``)."""
    if not isinstance(value, Mapping):
        raise RuleError((), f"expected a mapping of tool name -> arguments, not {value!r}")
    read: ArgsFrom = {}
    for tool, arguments in value.items():
        if not isinstance(tool, str) or not tool:
            raise RuleError((), f"tool names must be non-empty strings, not {tool!r}")
        if not isinstance(arguments, Mapping) or not arguments:
            raise RuleError(
                (tool,), "expected a mapping of argument path -> source (user, result_of, literal)"
            )
        read[tool] = {}
        for path, sources in arguments.items():
            try:
                parse_path(path)
            except ValueError as exc:
                raise RuleError((tool, path), str(exc)) from None
            try:
                read[tool][path] = read_sources(sources)
            except RuleError as exc:
                raise RuleError((tool, path, *exc.where), exc.message) from None
    return read
