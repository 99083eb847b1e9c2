"""Public names imported on first use (PEP 562), for the packages whose import must stay light
(``tooltrail`` itself, ``tooltrail.live`` in an agent's start-up)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(
    package: str, exports: dict[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A module ``__getattr__`` that imports ``exports[name]`` (a module path) the first time
    ``name`` is asked for and keeps it in ``namespace``, and a ``__dir__`` listing them."""

    def getattr_(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value  # later lookups do not come here
        return value

    def dir_() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return getattr_, dir_
