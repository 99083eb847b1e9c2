"""Where the peers' ``async def`` evaluators and judge functions are awaited.

tooltrail's checks are synchronous and run on worker threads (``checks.timelimit``), but
agentic-evals' judge functions and pytest-agent-eval's evaluators may be coroutines. A
coroutine is awaited:

- on the caller's event loop when the evaluation was started by ``aevaluate_suite`` (it
  marks its loop with :func:`awaiting_on`; the check's thread hands the coroutine to that loop
  and waits), so an async client made on that loop (``AsyncOpenAI``) keeps working;
- else on one event loop of tooltrail's own, on a thread of its own, the same for every call
  (an async client binds to the loop of its first request), so a coroutine never runs on a
  loop it was not made for and a running loop of the caller is never blocked from inside.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

#: The loop ``aevaluate_suite`` awaits on, seen by the check threads that copy its context.
_CALLER_LOOP: ContextVar[asyncio.AbstractEventLoop | None] = ContextVar(
    "tooltrail_peer_loop", default=None
)
_LOCK = threading.Lock()
_OWN: list[asyncio.AbstractEventLoop] = []


@contextmanager
def awaiting_on(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """Inside this block (and threads that copy its context) coroutines are awaited on
    ``loop``, which must keep running meanwhile (the caller awaits the work's thread)."""
    token = _CALLER_LOOP.set(loop)
    try:
        yield
    finally:
        _CALLER_LOOP.reset(token)


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value


def resolved(value: Any) -> Any:
    """``value``, or what it gives once awaited when it is awaitable (see the module)."""
    if not inspect.isawaitable(value):
        return value
    loop = _CALLER_LOOP.get()
    if loop is None or loop.is_closed() or _running_here(loop):
        loop = _own_loop()
        if _running_here(loop):
            raise RuntimeError("a peer coroutine cannot be awaited from inside another one")
    return asyncio.run_coroutine_threadsafe(_awaited(value), loop).result()


def _running_here(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def _own_loop() -> asyncio.AbstractEventLoop:
    """tooltrail's loop for the peers' coroutines: started on first use, on a daemon thread."""
    with _LOCK:
        if not _OWN:
            loop = asyncio.new_event_loop()
            threading.Thread(
                target=loop.run_forever, name="tooltrail-peer-loop", daemon=True
            ).start()
            _OWN.append(loop)
        return _OWN[0]
