"""The judge of a model string when no run has installed one: built from the default settings.

``eval``, ``serve``, live evaluation and the pytest plugin's judge options install the run's
judge and its model resolver (``tooltrail.score.run_judge``). Python code that names a model without
doing so (pytest-agent-eval's ``JudgeEvaluator(rubric, model="openai:gpt-4o")``) gets a
:class:`~tooltrail.judge.runner.JudgeRunner` for that model, with the default settings
(docs/judge.md, "Settings") and the ``retries`` and ``timeout_s`` the caller gives: the
provider's SDK reads its key and endpoint from its variables (``OPENAI_API_KEY``,
``OPENAI_BASE_URL``, ...), and verdicts go to the default cache.

One runner per model, settings, endpoint variable and cache file, made on first use and kept
for the process (its client's connections are reused), closed when the process exits.
"""

from __future__ import annotations

import atexit
import os
import threading
from typing import Any

from tooltrail.judge.cache import default_cache_path
from tooltrail.judge.runner import JudgeRunner
from tooltrail.judge.settings import build_judge, read_judge_settings

#: The SDKs' variables that change where a model string's requests go.
_ENDPOINT_VARIABLES = ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")
_LOCK = threading.Lock()
_RUNNERS: dict[tuple[Any, ...], JudgeRunner] = {}


def model_judge(
    model: str, *, retries: int | None = None, timeout_s: float | None = None
) -> JudgeRunner:
    """The runner for ``model`` (see the module). ``JudgeConfigError`` (a ``ValueError``)
    for a model string that cannot be served: an unknown provider, a missing SDK, no key."""
    values: dict[str, Any] = {"model": model}
    if retries is not None:
        values["retries"] = retries
    if timeout_s is not None:
        values["timeout_s"] = timeout_s
    key = (
        model,
        retries,
        timeout_s,
        tuple(os.environ.get(name) for name in _ENDPOINT_VARIABLES),
        str(default_cache_path()),
    )
    with _LOCK:
        runner = _RUNNERS.get(key)
        if runner is None:
            runner = build_judge(read_judge_settings(values))
            if not _RUNNERS:
                atexit.register(close_all)
            _RUNNERS[key] = runner
        return runner


def close_all() -> None:
    """Close every runner made here (their clients and cache); the next use makes new ones."""
    with _LOCK:
        runners = list(_RUNNERS.values())
        _RUNNERS.clear()
    for runner in runners:
        runner.close()
