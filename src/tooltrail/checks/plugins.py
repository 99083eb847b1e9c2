"""Checks from outside the package: installed plug-ins and plug-in modules.

Two ways in, one rule for each:

- an installed package declares entry points in the group ``tooltrail.checks``; each names a
  check class or a plain scorer function, registered under the entry point's name::

      [project.entry-points."tooltrail.checks"]
      max_failed_calls = "my_checks:MaxFailedCalls"

- a plug-in module (``--plugin my.module``, or ``TOOLTRAIL_PLUGINS=my.module,other.module``)
  defines ``TOOLTRAIL_CHECKS``, a dict name -> check class or function; each is registered
  under its name. Importing the module alone registers nothing: a module without that dict is
  an error, so a misspelled module path is never silently a plug-in with no checks.

``load_plugins`` does both; the CLI, ``serve``, ``live.install`` and the pytest plugin call it
before ``Registry.check(suite)``. It may be called again: a check already registered under
its name is kept, and a different check under a taken name is an error naming both.
"""

from __future__ import annotations

import importlib
import os
import sys
import weakref
from collections.abc import Iterable, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from tooltrail.checks.registry import Registry, default_registry
from tooltrail.config_error import ConfigError

#: The entry-point group installed packages register their checks in.
ENTRY_POINT_GROUP = "tooltrail.checks"
#: Comma-separated module paths of plug-in modules, added to those given explicitly.
ENV_PLUGINS = "TOOLTRAIL_PLUGINS"
#: The dict a plug-in module defines: check name -> check class or scorer function.
MODULE_CHECKS = "TOOLTRAIL_CHECKS"

#: What each registry was last loaded with (``sys.path`` and the module paths), so that
#: calling ``load_plugins`` once per test or per request does not scan the installed
#: packages again.
_loaded: weakref.WeakKeyDictionary[Registry, tuple[tuple[str, ...], tuple[str, ...]]] = (
    weakref.WeakKeyDictionary()
)


class PluginError(ConfigError):
    """A plug-in that cannot be loaded; the message names the plug-in and the reason."""


def plugin_modules(
    modules: Iterable[str] = (), environ: Mapping[str, str] | None = None
) -> tuple[str, ...]:
    """``modules`` then the module paths of ``TOOLTRAIL_PLUGINS``, blanks and repeats left
    out."""
    environ = os.environ if environ is None else environ
    from_env = environ.get(ENV_PLUGINS, "").split(",")
    found: dict[str, None] = {}
    for name in (*modules, *from_env):
        name = name.strip()
        if name:
            found[name] = None
    return tuple(found)


def load_plugins(modules: Iterable[str] = (), *, registry: Registry | None = None) -> None:
    """Register the checks of every installed ``tooltrail.checks`` entry point, then those of
    the plug-in modules ``modules`` and ``TOOLTRAIL_PLUGINS`` name, on ``registry`` (default:
    the process-wide one). Raises ``PluginError`` for a plug-in that cannot be imported, a
    module without ``TOOLTRAIL_CHECKS``, something that is not a check, or a name taken by
    another check."""
    registry = default_registry() if registry is None else registry
    wanted = plugin_modules(modules)
    key = (tuple(sys.path), wanted)
    if _loaded.get(registry) == key:
        return
    for entry_point in _installed_entry_points():
        check = _load_entry_point(entry_point)
        _register(registry, entry_point.name, check, _describe_entry_point(entry_point))
    for module_path in wanted:
        for name, check in _module_checks(module_path).items():
            _register(registry, name, check, f"plug-in module {module_path!r}")
    _loaded[registry] = key


def _installed_entry_points() -> list[EntryPoint]:
    """The group's entry points, one per name (the first on ``sys.path`` wins, as for
    imports), in name order."""
    first: dict[str, EntryPoint] = {}
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        first.setdefault(entry_point.name, entry_point)
    return [first[name] for name in sorted(first)]


def _describe_entry_point(entry_point: EntryPoint) -> str:
    dist = getattr(entry_point, "dist", None)
    package = f" of {dist.name} {dist.version}" if dist is not None else ""
    return f"plug-in {entry_point.name!r} (entry point {entry_point.value!r}{package})"


def _load_entry_point(entry_point: EntryPoint) -> Any:
    try:
        return entry_point.load()
    except Exception as exc:  # any error of the plug-in's code: named, never a traceback
        raise PluginError(
            f"{_describe_entry_point(entry_point)} cannot be loaded: {type(exc).__name__}: {exc}"
        ) from exc


def _module_checks(module_path: str) -> Mapping[str, Any]:
    try:
        module = importlib.import_module(module_path)
    except Exception as exc:  # ImportError, or any error the module's own code raises
        raise PluginError(
            f"plug-in module {module_path!r} cannot be imported: {type(exc).__name__}: {exc}"
        ) from exc
    checks = getattr(module, MODULE_CHECKS, None)
    if not isinstance(checks, Mapping):
        found = "has none" if checks is None else f"has a {type(checks).__name__}"
        raise PluginError(
            f"plug-in module {module_path!r} must define {MODULE_CHECKS}, a dict of check "
            f"name -> check class or function; it {found}"
        )
    return checks


def _register(registry: Registry, name: Any, check: Any, origin: str) -> None:
    if not isinstance(name, str) or not name:
        raise PluginError(f"{origin}: a check name must be a non-empty string, not {name!r}")
    taken = registry.get(name)
    if taken is check:
        return  # loaded before: loading again changes nothing
    if taken is not None:
        raise PluginError(
            f"{origin}: the check name {name!r} is already taken by {_qualname(taken)}"
        )
    try:
        registry.register(name, check)
    except TypeError as exc:
        raise PluginError(f"{origin}: {name!r} is not a check: {exc}") from exc


def _qualname(registered: Any) -> str:
    module = getattr(registered, "__module__", None)
    name = getattr(registered, "__qualname__", None) or repr(registered)
    return f"{module}.{name}" if module else name
