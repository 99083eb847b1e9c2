"""``tool``: an OpenTelemetry GenAI ``execute_tool`` span around a hand-written tool.

    @tool
    def lookup_order(order_id: str) -> dict: ...

    @tool("issue_refund", record_result=True)
    async def refund(order_id: str, amount: float) -> str: ...

    with tool("web_search", {"query": q}, call_id=call.id) as call:
        call.set_result(search(q))

The span follows the GenAI semantic conventions: name ``execute_tool {name}``, kind INTERNAL,
``gen_ai.operation.name = execute_tool``, ``gen_ai.tool.name``, ``gen_ai.tool.type``,
``gen_ai.tool.call.id`` (when known), ``gen_ai.tool.call.arguments`` (JSON, positional arguments
bound to their parameter names) and, opted in, ``gen_ai.tool.call.result``. A raised exception
sets ERROR status and ``error.type`` and is recorded as an event, then propagates unchanged.
Arguments are customer data: run the spans through ``ToolArgsProcessor`` so secrets are hidden.
"""

from __future__ import annotations

import functools
import inspect
import json
import logging
import os
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any, TypeVar, overload

import orjson
from opentelemetry import context as context_api
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer

from tooltrail.pipeline.throttle import ThrottledWarning
from tooltrail.version import __version__

_log = logging.getLogger(__name__)
_warn = ThrottledWarning(_log)

F = TypeVar("F", bound=Callable[..., Any])

#: Set to ``true`` to record every tool's return value (``gen_ai.tool.call.result``).
ENV_RECORD_RESULTS = "TOOLTRAIL_RECORD_RESULTS"

OPERATION = "gen_ai.operation.name"
TOOL_NAME = "gen_ai.tool.name"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_DESCRIPTION = "gen_ai.tool.description"
CALL_ID = "gen_ai.tool.call.id"
CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
CALL_RESULT = "gen_ai.tool.call.result"
ERROR_TYPE = "error.type"


def _record_results_default() -> bool:
    raw = os.environ.get(ENV_RECORD_RESULTS, "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    _warn.warn(
        ENV_RECORD_RESULTS,
        "tooltrail: ignoring %s=%r (expected true or false)",
        ENV_RECORD_RESULTS,
        raw,
    )
    return False


_default_tracer: Tracer | None = None


def _global_tracer() -> Tracer:
    """The global provider's ``tooltrail`` tracer (a proxy until a provider is set)."""
    global _default_tracer
    if _default_tracer is None:
        _default_tracer = trace.get_tracer("tooltrail", __version__)
    return _default_tracer


def json_text(value: Any) -> str:
    """``value`` as compact JSON text; objects JSON cannot hold become their ``str``."""
    try:
        return orjson.dumps(value, default=_plain, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:  # integers beyond 64 bits, cycles
        return json.dumps(value, default=_plain, ensure_ascii=False, separators=(",", ":"))


def _plain(value: Any) -> Any:
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    dump = getattr(value, "model_dump", None)  # pydantic models
    if callable(dump):
        return dump(mode="json")
    return str(value)


class ToolCallSpan:
    """One tool call's span, used as a context manager (sync or async) or as a decorator.

    As a context manager it is one call: ``args`` are the call's arguments. As a decorator
    (``tool("name")(fn)``) it is the configuration of every call of ``fn``.
    """

    def __init__(
        self,
        name: str,
        args: Mapping[str, Any] | None = None,
        *,
        call_id: str | None = None,
        record_result: bool | None = None,
        description: str | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError("tool name must be a non-empty string")
        self.name = name
        self.args = args
        self.call_id = call_id
        self.record_result = _record_results_default() if record_result is None else record_result
        self.description = description
        self._tracer = tracer
        self._span: Span | None = None
        self._token: object | None = None

    # -- context manager ------------------------------------------------------------------

    @property
    def span(self) -> Span:
        """The live span (``INVALID_SPAN`` outside the ``with`` block)."""
        return self._span if self._span is not None else trace.INVALID_SPAN

    def set_result(self, value: Any) -> None:
        """Record the tool's result, when results are recorded (``record_result``)."""
        if self.record_result and self._span is not None:
            self._span.set_attribute(
                CALL_RESULT, value if isinstance(value, str) else json_text(value)
            )

    def __enter__(self) -> ToolCallSpan:
        tracer = self._tracer or _global_tracer()
        attributes: dict[str, Any] = {
            OPERATION: "execute_tool",
            TOOL_NAME: self.name,
            TOOL_TYPE: "function",
        }
        if self.description:
            attributes[TOOL_DESCRIPTION] = self.description
        if self.call_id:
            attributes[CALL_ID] = self.call_id
        if self.args is not None:
            try:
                attributes[CALL_ARGUMENTS] = json_text(dict(self.args))
            except Exception:  # noqa: BLE001 - an odd argument must not break the tool
                _warn.warn(
                    "args", "tooltrail: could not serialise the arguments of tool %r", self.name
                )
        self._span = tracer.start_span(
            f"execute_tool {self.name}", kind=SpanKind.INTERNAL, attributes=attributes
        )
        self._token = context_api.attach(trace.set_span_in_context(self._span))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        span, token = self._span, self._token
        self._span = self._token = None
        if span is None:
            return
        try:
            if isinstance(exc, Exception) and span.is_recording():
                span.set_attribute(ERROR_TYPE, _qualified_name(type(exc)))
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        finally:
            if token is not None:
                context_api.detach(token)  # type: ignore[arg-type]
            span.end()

    async def __aenter__(self) -> ToolCallSpan:
        return self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.__exit__(exc_type, exc, tb)

    # -- decorator ------------------------------------------------------------------------

    def __call__(self, fn: F) -> F:
        """``fn`` wrapped so that each call runs inside its own tool span."""
        if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
            raise TypeError(f"tool() cannot wrap generator function {fn.__qualname__}")
        bind = _binder(fn)
        config = dict(
            record_result=self.record_result,
            description=self.description or _first_line(fn.__doc__),
            tracer=self._tracer,
        )
        name = self.name

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_call(*args: Any, **kwargs: Any) -> Any:
                with ToolCallSpan(name, bind(args, kwargs), **config) as call:  # type: ignore[arg-type]
                    result = await fn(*args, **kwargs)
                    call.set_result(result)
                    return result

            return async_call  # type: ignore[return-value]

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            with ToolCallSpan(name, bind(args, kwargs), **config) as scope:  # type: ignore[arg-type]
                result = fn(*args, **kwargs)
                scope.set_result(result)
                return result

        return call  # type: ignore[return-value]


def _binder(fn: Callable[..., Any]) -> Callable[[tuple[Any, ...], dict[str, Any]], dict[str, Any]]:
    """A function turning a call's ``(args, kwargs)`` into named arguments, as ``fn`` names them.

    ``self``/``cls`` are left out; ``*args`` is kept under its own name; ``**kwargs`` merge in;
    defaults the caller did not pass are left out (the record is what was passed).
    """
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        signature = None
    skip: str | None = None
    var_keyword: str | None = None
    if signature is not None:
        params = list(signature.parameters.values())
        if (
            params
            and params[0].name in ("self", "cls")
            and params[0].kind
            in (
                inspect.Parameter.POSITIONAL_ONLY,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
            )
        ):
            skip = params[0].name
        var_keyword = next(
            (p.name for p in params if p.kind is inspect.Parameter.VAR_KEYWORD), None
        )

    def bind(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if signature is None:
            return {"args": list(args), **kwargs} if args else dict(kwargs)
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError:  # the call itself will fail the same way, inside the span
            return {"args": list(args), **kwargs} if args else dict(kwargs)
        named: dict[str, Any] = {}
        for key, value in bound.arguments.items():
            if key == skip:
                continue
            if key == var_keyword:
                named.update(value)
            elif (
                isinstance(value, tuple)
                and signature.parameters[key].kind is inspect.Parameter.VAR_POSITIONAL
            ):
                named[key] = list(value)
            else:
                named[key] = value
        return named

    return bind


def _qualified_name(cls: type) -> str:
    module = cls.__module__
    return (
        cls.__qualname__ if module in ("builtins", "__main__") else f"{module}.{cls.__qualname__}"
    )


@overload
def tool(name_or_fn: F, /) -> F: ...


@overload
def tool(
    name_or_fn: str | None = None,
    /,
    args: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
    call_id: str | None = None,
    record_result: bool | None = None,
    description: str | None = None,
    tracer: Tracer | None = None,
) -> ToolCallSpan: ...


def tool(
    name_or_fn: Any = None,
    /,
    args: Mapping[str, Any] | None = None,
    *,
    name: str | None = None,
    call_id: str | None = None,
    record_result: bool | None = None,
    description: str | None = None,
    tracer: Tracer | None = None,
) -> Any:
    """A GenAI tool span: ``@tool``, ``@tool("name", record_result=True)``, or
    ``with tool("name", {"arg": 1}, call_id=...) as call: call.set_result(...)``.

    ``record_result`` defaults to ``TOOLTRAIL_RECORD_RESULTS`` (off). ``description`` defaults,
    for a decorated function, to the first line of its docstring. ``tracer`` defaults to the
    global tracer provider's ``tooltrail`` tracer.
    """
    if callable(name_or_fn):
        fn = name_or_fn
        return ToolCallSpan(
            name or fn.__name__, record_result=record_result, description=description, tracer=tracer
        )(fn)
    chosen = name_or_fn or name
    if chosen is None:
        return _Deferred(
            args=args,
            call_id=call_id,
            record_result=record_result,
            description=description,
            tracer=tracer,
        )
    return ToolCallSpan(
        chosen,
        args,
        call_id=call_id,
        record_result=record_result,
        description=description,
        tracer=tracer,
    )


class _Deferred:
    """``tool(record_result=True)`` with no name yet: the decorated function names the tool."""

    def __init__(self, **config: Any) -> None:
        self._config = config

    def __call__(self, fn: F) -> F:
        config = dict(self._config)
        config.pop("args", None)
        config.pop("call_id", None)
        return ToolCallSpan(fn.__name__, **config)(fn)


def _first_line(doc: str | None) -> str | None:
    if not doc:
        return None
    line = doc.strip().splitlines()[0].strip() if doc.strip() else ""
    return line or None
