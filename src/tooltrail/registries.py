"""Names -> factories, the built-in ones registered in code and the others installed as entry
points: the report formats (``report.formats``) and the judge providers (``judge.providers``),
extended the way checks are (``checks.plugins``)::

    [project.entry-points."tooltrail.report_formats"]
    csv = "my_reports:write_csv"

Built-ins and plug-ins go through the same table. The installed entry points are read (with
``importlib.metadata``) only when a name is asked for that is not built in, or when every name
is listed, so that a run using tooltrail's own formats and providers never scans the installed
packages. A name taken twice (a plug-in under a built-in's name, two plug-ins of one name) is an
error naming both, as for checks; of two distributions giving one name, the first on
``sys.path`` is taken, as for imports.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from threading import Lock
from typing import Generic, TypeVar

from tooltrail.config_error import ConfigError

T = TypeVar("T")


class RegistryError(ConfigError):
    """An installed entry point that cannot be used; the message names it and why."""


class NamedFactories(Generic[T]):
    """A table of ``name -> factory``: ``register`` for code, the entry-point ``group`` for
    installed packages. ``what`` names an entry in messages (``"report format"``)."""

    def __init__(self, group: str, what: str, check: Callable[[object], bool] = callable) -> None:
        self.group = group
        self.what = what
        #: Whether a loaded entry point's object may be used as a factory here.
        self._check = check
        self._registered: dict[str, T] = {}
        self._installed: dict[str, T] = {}
        #: ``sys.path`` when the entry points were last read (``None``: never).
        self._read_for: tuple[str, ...] | None = None
        self._lock = Lock()

    def register(self, name: str, factory: T, *, replace: bool = False) -> T:
        """Register ``factory`` under ``name`` (a taken name raises unless ``replace``)."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {self.what} name must be a non-empty string, not {name!r}")
        if not self._check(factory):
            raise TypeError(f"{self.what} {name!r} must be callable, not {factory!r}")
        with self._lock:
            if name in self._registered and not replace:
                raise ValueError(f"a {self.what} named {name!r} is already registered")
            self._registered[name] = factory
        return factory

    def get(self, name: str) -> T | None:
        """The factory registered or installed under ``name``, or ``None``. Raises
        ``RegistryError`` for an installed entry point that cannot be loaded."""
        found = self._registered.get(name)
        if found is None:
            found = self._read_installed().get(name)
        return found

    def registered(self, name: str) -> bool:
        """Whether ``name`` was registered in code (the installed entry points not read)."""
        return name in self._registered

    def names(self) -> list[str]:
        """Every name, registered and installed, sorted."""
        return sorted({*self._registered, *self._read_installed()})

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def _read_installed(self) -> dict[str, T]:
        """The group's installed entry points, loaded; read again when ``sys.path`` changed."""
        key = tuple(sys.path)
        with self._lock:
            if self._read_for == key:
                return self._installed
            first: dict[str, EntryPoint] = {}
            for entry_point in entry_points(group=self.group):
                first.setdefault(entry_point.name, entry_point)
            installed: dict[str, T] = {}
            for name in sorted(first):
                installed[name] = self._load(first[name])
            self._installed, self._read_for = installed, key
            return installed

    def _load(self, entry_point: EntryPoint) -> T:
        described = _describe(entry_point, self.what)
        if entry_point.name in self._registered:
            raise RegistryError(
                f"{described}: the {self.what} name {entry_point.name!r} is already taken by "
                f"{_qualname(self._registered[entry_point.name])}"
            )
        try:
            loaded = entry_point.load()
        except Exception as exc:  # any error of the plug-in's code: named, never a traceback
            raise RegistryError(
                f"{described} cannot be loaded: {type(exc).__name__}: {exc}"
            ) from exc
        if not self._check(loaded):
            raise RegistryError(f"{described} is not a {self.what}: {loaded!r}")
        return loaded  # type: ignore[no-any-return]


def _describe(entry_point: EntryPoint, what: str) -> str:
    dist = getattr(entry_point, "dist", None)
    package = f" of {dist.name} {dist.version}" if dist is not None else ""
    return f"{what} plug-in {entry_point.name!r} (entry point {entry_point.value!r}{package})"


def _qualname(registered: object) -> str:
    module = getattr(registered, "__module__", None)
    name = getattr(registered, "__qualname__", None) or repr(registered)
    return f"{module}.{name}" if module else str(name)
