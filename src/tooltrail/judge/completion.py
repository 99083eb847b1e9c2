"""Completion functions: the Python way to give tooltrail a judge model.

As in agentic-evals, a completion function takes the prompt and returns the model's text, or
``(text, usage)`` where ``usage`` has the token counts as a mapping or an object
(``input_tokens``/``output_tokens`` or ``prompt_tokens``/``completion_tokens``). It may be an
``async def`` or return an awaitable. :class:`FunctionCompletion` turns all of these into the
one :class:`Completion` shape the runner calls; the SDK adapters (``judge.providers``) have the
same shape.

The attempt's time limit: an awaitable is cancelled at it; a plain function cannot be
interrupted, so an answer that comes after it counts as timed out all the same.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from tooltrail.judge.failure import AttemptFailure

CompletionFn = Callable[[str], Any]


@dataclass(slots=True, frozen=True)
class Reply:
    """What one request to a model gave: its text and the tokens it used (0 when unknown)."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0


class Completion(Protocol):
    """One request to a judge model. Raises :class:`AttemptFailure` when it failed."""

    #: The model's name in outcomes, the price table and the cache key.
    model: str
    #: Where requests go, part of the cache key (``""`` for a completion function).
    endpoint: str

    def complete(self, prompt: str, *, timeout_s: float) -> Reply: ...


def timed_out(timeout_s: float) -> AttemptFailure:
    """The failure of an attempt that took longer than ``timeout_s``."""
    return AttemptFailure(f"timed out after {timeout_s:g} s", retryable=True)


class FunctionCompletion:
    """A Python completion function as a :class:`Completion`."""

    def __init__(self, fn: CompletionFn, *, model: str | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"a completion function must be callable, not {fn!r}")
        self.fn = fn
        self.model = model or f"function:{getattr(fn, '__qualname__', type(fn).__name__)}"
        self.endpoint = ""

    def complete(self, prompt: str, *, timeout_s: float) -> Reply:
        started = time.monotonic()
        try:
            answer = self.fn(prompt)
            if inspect.isawaitable(answer):
                answer = _await(answer, timeout_s)
        except AttemptFailure:
            raise
        except Exception as exc:  # the user's function failed: retried like a failed request
            raise AttemptFailure(f"{type(exc).__name__}: {exc}", retryable=True) from exc
        if time.monotonic() - started > timeout_s:
            raise timed_out(timeout_s)
        return reply_of(answer)


def reply_of(answer: Any) -> Reply:
    """``text`` or ``(text, usage)`` as a :class:`Reply`; anything else fails for good."""
    usage: Any = None
    if isinstance(answer, tuple) and len(answer) == 2:
        answer, usage = answer
    if not isinstance(answer, str):
        raise AttemptFailure(
            "the completion function returned "
            f"{type(answer).__name__}, not a str or (str, usage)",
            retryable=False,
        )
    return Reply(
        text=answer,
        input_tokens=_count(usage, "input_tokens", "prompt_tokens"),
        output_tokens=_count(usage, "output_tokens", "completion_tokens"),
    )


def _count(usage: Any, *names: str) -> int:
    """The first of ``names`` that ``usage`` has as a whole number, else 0."""
    if usage is None:
        return 0
    for name in names:
        value = usage.get(name) if isinstance(usage, Mapping) else getattr(usage, name, None)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return 0


def _await(awaitable: Awaitable[Any], timeout_s: float) -> Any:
    """Run ``awaitable`` to its end, cancelled after ``timeout_s``. In a thread that already
    runs an event loop (which must not be blocked re-entrantly) it runs on a thread of its own."""

    async def bounded() -> Any:
        try:
            return await asyncio.wait_for(awaitable, timeout_s)
        except asyncio.TimeoutError:
            raise timed_out(timeout_s) from None

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(bounded())
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["value"] = asyncio.run(bounded())
        except BaseException as exc:  # handed back to the calling thread below
            result["error"] = exc

    thread = threading.Thread(target=run, name="tooltrail-judge-await", daemon=True)
    thread.start()
    thread.join()
    if "error" in result:
        raise result["error"]
    return result["value"]
