"""Completion functions: the Python way to give tooltrail a judge model.

As in agentic-evals, a completion function takes the prompt and returns the model's text, or
``(text, usage)`` where ``usage`` has the token counts as a mapping or an object
(``input_tokens``/``output_tokens`` or ``prompt_tokens``/``completion_tokens``). It may be an
``async def`` or return an awaitable. :class:`FunctionCompletion` turns all of these into the
one :class:`Completion` shape the runner calls; the SDK adapters (``judge.providers``) have the
same shape.

The awaitables of one function all run on one event loop, on a thread of its own, so that an
async client the function keeps (``AsyncOpenAI``) serves every call. The attempt's time limit:
an awaitable is cancelled at it; a plain function cannot be interrupted, so an answer that
comes after it counts as timed out all the same.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
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
    """What one request to a model gave: its text and the tokens it used (0 when unknown).
    ``refusal`` is the model's refusal to answer, when its API says so apart from the text
    (OpenAI's ``message.refusal``): the attempt then fails, its tokens counted."""

    text: str
    input_tokens: int = 0
    output_tokens: int = 0
    refusal: str | None = None


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
        self._loop = _LoopThread()

    def close(self) -> None:
        """Stop the event loop the function's awaitables run on, if one was started."""
        self._loop.close()

    def complete(self, prompt: str, *, timeout_s: float) -> Reply:
        started = time.monotonic()
        try:
            answer = self.fn(prompt)
            if inspect.isawaitable(answer):
                answer = self._loop.run(answer, timeout_s)
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
            f"the completion function returned {type(answer).__name__}, not a str or (str, usage)",
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


class _LoopThread:
    """One event loop on a thread of its own, where every awaitable of one completion function
    runs: an async client (``AsyncOpenAI``, say) binds its connections to the loop of its first
    request, so each later request must come from that same loop, not a new one per call. The
    loop starts on first use; awaitables from several threads run on it side by side."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def run(self, awaitable: Awaitable[Any], timeout_s: float) -> Any:
        """The awaitable's result; :func:`timed_out` when it takes longer than ``timeout_s``."""

        async def bounded() -> Any:
            try:
                return await asyncio.wait_for(awaitable, timeout_s)
            except asyncio.TimeoutError:
                raise timed_out(timeout_s) from None

        future = asyncio.run_coroutine_threadsafe(bounded(), self._started())
        try:
            # the loop cancels it at timeout_s; the margin is for one that ignores cancelling
            return future.result(timeout=timeout_s + _CANCEL_MARGIN_S)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise timed_out(timeout_s) from None

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="tooltrail-judge-loop", daemon=True
                )
                thread.start()
                self._loop, self._thread = loop, thread
            return self._loop

    def close(self) -> None:
        """Stop the loop and its thread (a later call starts a new one)."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is not None and thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=_CANCEL_MARGIN_S)
            if not thread.is_alive():
                loop.close()


#: Seconds an awaitable past its time limit is given to end once cancelled.
_CANCEL_MARGIN_S = 5.0
