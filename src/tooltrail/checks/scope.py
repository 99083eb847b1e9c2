"""Which calls a check over calls looks at: ``tools`` (names, or shell-style patterns:
``issue_*``), ``exclude_tools`` (the same), and, for the reference checks, a flag that leaves
failed calls out (docs/checks.md, "Scope: which calls a check reads").

A scope is worked out once, when a check is built, and applied to the context's call view on
each evaluation; a check without one reads the view as it is (no copy, no cost).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from tooltrail.checks.view import CallView
from tooltrail.model import ToolCall

#: The config keys of a scope, on every check that takes one.
SCOPE_KEYS = ("tools", "exclude_tools")
_PATTERN_CHARS = frozenset("*?[")


def _names(value: Any) -> tuple[str, ...] | None:
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) and v for v in value):
        return tuple(value)
    return None


def scope_problem(config: dict[str, Any]) -> tuple[tuple[Any, ...], str] | None:
    """The first bad scope key of a suite's config (key path, message), for
    ``Registry.check``'s file, line and key."""
    for key in SCOPE_KEYS:
        if config.get(key) is not None and _names(config[key]) is None:
            return (key,), "expected a list of tool names or patterns (issue_*)"
    return None


def scope_error(tools: Any, exclude_tools: Any) -> str | None:
    """The config error text of a bad scope, or ``None``."""
    for key, value in (("tools", tools), ("exclude_tools", exclude_tools)):
        if value is not None and _names(value) is None:
            return f"config[{key!r}] must be a list of tool names or patterns."
    return None


def _matcher(names: tuple[str, ...]) -> tuple[frozenset[str], tuple[str, ...]]:
    exact = frozenset(n for n in names if not (_PATTERN_CHARS & set(n)))
    patterns = tuple(n for n in names if _PATTERN_CHARS & set(n))
    return exact, patterns


@dataclass(frozen=True, slots=True)
class ToolScope:
    """The calls of the tools named or matched by ``tools`` (every tool when ``None``) and
    by none of ``exclude_tools``; without failed calls when ``drop_failed``."""

    tools: tuple[str, ...] | None = None
    exclude_tools: tuple[str, ...] = ()
    drop_failed: bool = False
    _include: tuple[frozenset[str], tuple[str, ...]] = field(
        default=(frozenset(), ()), init=False, repr=False, compare=False
    )
    _exclude: tuple[frozenset[str], tuple[str, ...]] = field(
        default=(frozenset(), ()), init=False, repr=False, compare=False
    )
    #: Tool name -> whether it is in scope, learnt as names are met (a run names few tools).
    _known: dict[str, bool] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.tools is not None:
            object.__setattr__(self, "_include", _matcher(self.tools))
        object.__setattr__(self, "_exclude", _matcher(self.exclude_tools))

    @property
    def narrows(self) -> bool:
        """Whether it leaves any call out (else checks read the view as it is)."""
        return self.tools is not None or bool(self.exclude_tools) or self.drop_failed

    def admits(self, name: str) -> bool:
        """Whether calls of ``name`` are in scope (failed or not)."""
        known = self._known.get(name)
        if known is None:
            known = self._known[name] = self._decide(name)
            if len(self._known) > 4096:  # bounded whatever the runs name
                self._known.clear()
        return known

    def _decide(self, name: str) -> bool:
        if self.tools is not None:
            exact, patterns = self._include
            if name not in exact and not any(fnmatchcase(name, p) for p in patterns):
                return False
        exact, patterns = self._exclude
        return name not in exact and not any(fnmatchcase(name, p) for p in patterns)

    def calls(self, calls: Sequence[ToolCall]) -> list[ToolCall]:
        """``calls`` in scope, in order."""
        admits, drop = self.admits, self.drop_failed
        return [c for c in calls if admits(c.name) and not (drop and c.status == "error")]

    def view(self, view: CallView) -> CallView:
        """The part of ``view`` in scope (``view`` itself when nothing is left out)."""
        if not self.narrows:
            return view
        if self.drop_failed:
            view = view.without_failed()
            if self.tools is None and not self.exclude_tools:
                return view
        kept = [c for c in view.calls if self.admits(c.name)]
        return view if len(kept) == view.size else CallView(kept)

    @property
    def text(self) -> str:
        """How explanations name the scope: ``""``, or `` (tools ['issue_*'], not
        ['issue_test'], failed calls left out)``."""
        parts = []
        if self.tools is not None:
            parts.append(f"tools {list(self.tools)}")
        if self.exclude_tools:
            parts.append(f"not {list(self.exclude_tools)}")
        if self.drop_failed:
            parts.append("failed calls left out")
        return f" ({', '.join(parts)})" if parts else ""


#: The scope of a check that has none.
EVERY_CALL = ToolScope()


def tool_scope(tools: Any, exclude_tools: Any, drop_failed: Any = False) -> ToolScope:
    """The scope of a check's (valid: ``scope_error``) config."""
    if tools is None and not exclude_tools and drop_failed is not True:
        return EVERY_CALL
    return ToolScope(
        tools=_names(tools) if tools is not None else None,
        exclude_tools=_names(exclude_tools) or () if exclude_tools is not None else (),
        drop_failed=drop_failed is True,
    )


def scope_of(tools: Any, exclude_tools: Any) -> ToolScope | str | None:
    """A scorer's ``tools`` / ``exclude_tools``, worked out once: ``None`` (every call), the
    scope, or the config error text of a bad one."""
    if tools is None and exclude_tools is None:
        return None
    problem = scope_error(tools, exclude_tools)
    if problem is not None:
        return problem
    scope = tool_scope(tools, exclude_tools)
    return scope if scope.narrows else None
