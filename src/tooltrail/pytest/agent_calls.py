"""Calling an agent under test once per turn, sync or async, and capturing what each turn did.

An agent is any callable taking the user's message. What it returns is read as follows:
a ``str`` is its reply; a list of tool calls (``ToolCall``, ``{"name", "args"}`` mappings or
``(name, args)`` pairs) replaces the calls read from spans; an object or mapping with
``tool_calls`` and/or ``output`` gives both; anything else (``None`` included) is ignored and
the turn's calls are read from the spans it emitted.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from tooltrail.model import ToolCall, parse_args
from tooltrail.pytest.capture import SpanCapture, capture_scope

Agent = Callable[[str], Any]


@dataclass(slots=True)
class TurnRecord:
    """What one turn of one run produced: its spans, the agent's reply and returned calls."""

    number: int
    spans: list[ReadableSpan] = field(default_factory=list)
    output: str | None = None
    #: Calls the agent returned itself; ``None`` means "read them from the spans".
    returned_calls: list[ToolCall] | None = None
    #: ``"TypeName: message"`` when the agent raised; the run stops at this turn.
    error: str | None = None


class ReturnValueError(TypeError):
    """The agent returned tool calls tooltrail cannot read."""


def is_async_agent(agent: Callable[..., Any]) -> bool:
    """Whether calling ``agent`` gives a coroutine (async def, or an object with async __call__)."""
    if inspect.iscoroutinefunction(agent):
        return True
    call = getattr(agent, "__call__", None)  # noqa: B004 - the bound __call__ is what runs
    return call is not None and inspect.iscoroutinefunction(call)


def run_turns_sync(agent: Agent, users: Sequence[str]) -> list[TurnRecord]:
    """Run one conversation: each turn's spans are captured on their own."""
    records: list[TurnRecord] = []
    for number, user in enumerate(users, 1):
        record = TurnRecord(number)
        records.append(record)
        capture = SpanCapture()
        with capture_scope(capture):
            try:
                value = agent(user)
                if inspect.isawaitable(value):
                    value = asyncio.run(_awaited(value))
                _read_return_value(record, value)
            except Exception as error:  # the agent under test failed: a failed run, not a crash
                record.error = f"{type(error).__name__}: {error}"
        record.spans = capture.spans()
        if record.error is not None:
            break
    return records


async def run_turns_async(agent: Agent, users: Sequence[str]) -> list[TurnRecord]:
    """The async twin of :func:`run_turns_sync`, for agents whose turns are coroutines."""
    records: list[TurnRecord] = []
    for number, user in enumerate(users, 1):
        record = TurnRecord(number)
        records.append(record)
        capture = SpanCapture()
        with capture_scope(capture):
            try:
                value = agent(user)
                if inspect.isawaitable(value):
                    value = await value
                _read_return_value(record, value)
            except Exception as error:
                record.error = f"{type(error).__name__}: {error}"
        record.spans = capture.spans()
        if record.error is not None:
            break
    return records


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value


def _read_return_value(record: TurnRecord, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, str):
        record.output = value
        return
    if isinstance(value, (list, tuple)):
        record.returned_calls = [_as_call(item, record.number) for item in value]
        return
    if isinstance(value, Mapping):
        calls, output = value.get("tool_calls"), value.get("output")
    else:
        calls, output = getattr(value, "tool_calls", None), getattr(value, "output", None)
    if isinstance(output, str):
        record.output = output
    if isinstance(calls, (list, tuple)):
        record.returned_calls = [_as_call(item, record.number) for item in calls]


def _as_call(item: Any, turn: int) -> ToolCall:
    if isinstance(item, ToolCall):
        name, args, call_id = item.name, item.args, item.call_id
    elif isinstance(item, Mapping) and isinstance(item.get("name", item.get("tool")), str):
        name = item.get("name", item.get("tool"))
        args = parse_args(item.get("args", item.get("arguments")))
        call_id = item.get("call_id", item.get("id"))
    elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
        name, args, call_id = item[0], parse_args(item[1]), None
    else:
        raise ReturnValueError(
            f"the agent returned {type(item).__name__} {item!r:.80} among its tool calls; "
            "expected a ToolCall, a {'name': ..., 'args': {...}} mapping or a (name, args) pair"
        )
    return ToolCall(name=name, args=args, call_id=call_id, turn=turn, source="returned")
