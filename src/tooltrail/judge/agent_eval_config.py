"""pytest-agent-eval's judge settings: the ``[tool.agent_eval]`` table of a ``pyproject.toml``.

pytest-agent-eval's judges fall back to ``model`` there (``judge_model`` wins over it when
both are set), with ``retries`` and ``timeout`` (seconds per call). tooltrail reads the same
keys when no judge is installed for a run (``judge.active.active_judge``), so a project that
configured its judge for pytest-agent-eval keeps it. The other keys of the table (``threshold``,
``runs``, ``yaml_dirs``, ``live``, ``groups``) are not about the judge and are not read here.
Unlike pytest-agent-eval, no model is assumed when the table names none.
"""

from __future__ import annotations

import math
import threading
from pathlib import Path
from typing import Any

from tooltrail.judge.config_errors import JudgeConfigError

try:  # Python 3.11+
    import tomllib as _toml
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    try:
        import tomli as _toml  # type: ignore[no-redef]
    except ModuleNotFoundError:
        _toml = None  # type: ignore[assignment]

TABLE = "[tool.agent_eval]"
_LOCK = threading.Lock()
#: path -> ((mtime_ns, size), settings): a file is read again only when it changed.
_READ: dict[Path, tuple[tuple[int, int], dict[str, Any]]] = {}


def agent_eval_judge_settings(path: Path) -> dict[str, Any]:
    """The judge settings (keys of ``judge.read_judge_settings``: ``model``, ``retries``,
    ``timeout_s``) that ``path``'s ``[tool.agent_eval]`` table gives; ``{}`` when the file or
    the table is absent or names no model. ``JudgeConfigError`` naming the file and key for a
    file that is not TOML or a value of the wrong type."""
    try:
        stat = path.stat()
    except OSError:
        return {}
    stamp = (stat.st_mtime_ns, stat.st_size)
    with _LOCK:
        known = _READ.get(path)
    if known is not None and known[0] == stamp:
        return dict(known[1])
    settings = _read(path)
    with _LOCK:
        _READ[path] = (stamp, settings)
    return dict(settings)


def _read(path: Path) -> dict[str, Any]:
    if _toml is None:  # pragma: no cover - Python 3.10 without tomli
        raise JudgeConfigError(f"{path}: reading {TABLE} needs Python 3.11 or the tomli package")
    try:
        with path.open("rb") as file:
            data = _toml.load(file)
    except OSError:
        return {}
    except _toml.TOMLDecodeError as exc:
        raise JudgeConfigError(f"{path} is not valid TOML: {exc}") from None
    tool = data.get("tool")
    table = tool.get("agent_eval") if isinstance(tool, dict) else None
    if not isinstance(table, dict):
        return {}
    settings: dict[str, Any] = {}
    for key in ("judge_model", "model"):
        model = table.get(key)
        if model is None:
            continue
        if not isinstance(model, str) or ":" not in model:
            raise JudgeConfigError(
                f"{path}: {TABLE} {key} must be a model string such as 'openai:gpt-4o', "
                f"not {model!r}"
            )
        settings.setdefault("model", model)
    if "model" not in settings:
        return {}
    retries = table.get("retries")
    if retries is not None:
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise JudgeConfigError(
                f"{path}: {TABLE} retries must be a whole number, 0 or more, not {retries!r}"
            )
        settings["retries"] = retries
    timeout = table.get("timeout")
    if timeout is not None:
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, (int, float))
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise JudgeConfigError(
                f"{path}: {TABLE} timeout must be a number of seconds above 0, not {timeout!r}"
            )
        settings["timeout_s"] = float(timeout)
    return settings
