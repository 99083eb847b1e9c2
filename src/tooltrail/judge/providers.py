"""Model strings (``openai:<model>``, ``anthropic:<model>``): a judge model called through its
official SDK, installed with ``pip install 'tooltrail[judge]'``.

The SDK is imported only when such a model is used. Its own retries are off
(``max_retries=0``): the runner retries, so that every attempt is counted and ``Retry-After``
honoured in one place. What the SDK raises is read here into an :class:`AttemptFailure`: a rate
limit (429, with the server's ``Retry-After``), a conflict (409), a request timeout (408), a
server error (5xx), a timeout or a lost connection may be retried; any other 4xx may not.

The SDK's own OpenTelemetry tracing is turned off where it has the option (``open_telemetry``,
in recent ``anthropic`` versions, on by default): a judge's request must not add spans to, nor
carry the trace context of, the agent's traces that tooltrail is judging.

What is sent: a :class:`~tooltrail.judge.prompt.JudgePrompt`'s instructions as the system
message (OpenAI's ``system`` role, Anthropic's ``system``), the rest as the user's message; any
other prompt as one user message. The verdict's shape goes as structured output
(``judge.structured``): OpenAI's ``response_format`` JSON schema, Anthropic's forced tool call.
An OpenAI-compatible server that refuses ``response_format`` (an HTTP 400 naming it) is asked
again without it, and never with it again by that client. ``temperature`` and ``max_tokens``
are sent only when set (Anthropic requires a bound: ``MAX_ANSWER_TOKENS`` without one); to
OpenAI's own API the bound is ``max_completion_tokens`` (reasoning models take no other), to any
other endpoint ``max_tokens`` (the name compatible servers know).
"""

from __future__ import annotations

import importlib
import inspect
import json
from collections.abc import Callable
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from tooltrail.hints import did_you_mean
from tooltrail.judge.completion import Completion, Reply, timed_out
from tooltrail.judge.config_errors import JudgeConfigError
from tooltrail.judge.failure import AttemptFailure, retry_after_seconds
from tooltrail.judge.prompt import prompt_parts
from tooltrail.judge.structured import (
    ANTHROPIC_TOOL_CHOICE,
    ANTHROPIC_VERDICT_TOOL,
    OPENAI_RESPONSE_FORMAT,
    STRUCTURED_OUTPUT_WORDS,
    VERDICT_TOOL_NAME,
)
from tooltrail.registries import NamedFactories, RegistryError

#: The tokens an Anthropic judge may answer with when ``max_tokens`` is not set (its API
#: requires a bound; a verdict is short).
MAX_ANSWER_TOKENS = 1024
INSTALL_HINT = "pip install 'tooltrail[judge]'"
#: Statuses below 500 that may succeed when tried again.
RETRYABLE_4XX = frozenset({408, 409, 429})


def _sdk(name: str, model: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError:
        raise JudgeConfigError(
            f"judge model {model!r} needs the {name} package: {INSTALL_HINT}"
        ) from None


class _SDKCompletion:
    """What both SDK adapters share: building the client, reading its errors."""

    sdk_name = ""
    #: The SDK's base exception, raised for settings it refuses (no API key, say).
    base_error = ""

    def __init__(
        self,
        model: str,
        name: str,
        *,
        base_url: str | None,
        timeout_s: float,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> None:
        self.model = model
        self.name = name
        self.timeout_s = timeout_s
        #: sent only when set: else the model's own default
        self.temperature = temperature
        #: sent only when set (Anthropic: ``MAX_ANSWER_TOKENS`` then)
        self.max_tokens = max_tokens
        #: the endpoint given in the settings (``None``: the SDK's variable, else its default)
        self.base_url = base_url
        self.sdk = _sdk(self.sdk_name, model)
        options: dict[str, Any] = {"max_retries": 0, "timeout": timeout_s}
        if base_url:
            options["base_url"] = base_url
        try:
            client_class = self._client_class(self.sdk)
            if "open_telemetry" in inspect.signature(client_class).parameters:
                options["open_telemetry"] = False
            self.client = client_class(**options)
        except getattr(self.sdk, self.base_error) as exc:
            raise JudgeConfigError(f"judge model {model!r}: {exc}") from None
        self.endpoint = str(self.client.base_url)
        try:
            self._check_options()
        except JudgeConfigError:
            self.client.close()
            raise

    def _client_class(self, sdk: ModuleType) -> Any:
        raise NotImplementedError

    def _check_options(self) -> None:
        """Refuse, when the judge is built, a setting the installed SDK cannot send."""

    def close(self) -> None:
        """Close the SDK client's connections."""
        self.client.close()

    def _request(self, client: Any, prompt: str) -> Reply:
        raise NotImplementedError

    def complete(self, prompt: str, *, timeout_s: float) -> Reply:
        sdk = self.sdk
        try:
            client = self.client
            if timeout_s != self.timeout_s:
                client = client.with_options(timeout=timeout_s)
            return self._request(client, prompt)
        except sdk.APITimeoutError:
            raise timed_out(timeout_s) from None
        except sdk.APIConnectionError as exc:
            raise AttemptFailure(f"could not connect: {exc}", retryable=True) from None
        except sdk.APIStatusError as exc:
            status = int(exc.status_code)
            headers = exc.response.headers if exc.response is not None else None
            raise AttemptFailure(
                f"HTTP {status}: {_api_message(exc)}",
                retryable=status >= 500 or status in RETRYABLE_4XX,
                retry_after_s=retry_after_seconds(headers),
            ) from None
        except sdk.APIError as exc:  # an answer the SDK could not read
            raise AttemptFailure(f"unreadable answer: {_short(str(exc))}") from None


class OpenAICompletion(_SDKCompletion):
    """``openai:<model>``: the Chat Completions API of OpenAI or any compatible endpoint
    (``base_url``, else ``OPENAI_BASE_URL``; the key from ``OPENAI_API_KEY``)."""

    sdk_name = "openai"
    base_error = "OpenAIError"

    def _client_class(self, sdk: ModuleType) -> Any:
        return sdk.OpenAI

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: ``False`` once the server refused ``response_format``
        self.structured = True
        host = urlsplit(self.endpoint).hostname or ""
        self.max_tokens_key = "max_completion_tokens" if host == "api.openai.com" else "max_tokens"

    def _request(self, client: Any, prompt: str) -> Reply:
        instructions, message = prompt_parts(prompt)
        messages = [{"role": "user", "content": message}]
        if instructions is not None:
            messages.insert(0, {"role": "system", "content": instructions})
        options: dict[str, Any] = {"model": self.name, "messages": messages}
        if self.temperature is not None:
            options["temperature"] = self.temperature
        if self.max_tokens is not None:
            options[self.max_tokens_key] = self.max_tokens
        response = None
        if self.structured:
            try:
                response = client.chat.completions.create(
                    **options, response_format=OPENAI_RESPONSE_FORMAT
                )
            except self.sdk.BadRequestError as exc:
                said = _api_message(exc).lower()
                if not any(word in said for word in STRUCTURED_OUTPUT_WORDS):
                    raise
                self.structured = False  # this server has no structured output: ask without
        if response is None:
            response = client.chat.completions.create(**options)
        choices = response.choices or []
        answer = choices[0].message if choices else None
        usage = response.usage
        return Reply(
            text=(answer.content if answer is not None else None) or "",
            input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            refusal=getattr(answer, "refusal", None) or None,
        )


class AnthropicCompletion(_SDKCompletion):
    """``anthropic:<model>``: Anthropic's Messages API (``base_url``, else
    ``ANTHROPIC_BASE_URL``; the key from ``ANTHROPIC_API_KEY``)."""

    sdk_name = "anthropic"
    base_error = "AnthropicError"

    def _client_class(self, sdk: ModuleType) -> Any:
        return sdk.Anthropic

    def _check_options(self) -> None:
        create = self.client.messages.create
        if (
            self.temperature is not None
            and "temperature" not in inspect.signature(create).parameters
        ):
            raise JudgeConfigError(
                f"judge model {self.model!r}: the installed anthropic package's Messages API "
                "takes no temperature; remove temperature from the judge settings"
            )

    def _request(self, client: Any, prompt: str) -> Reply:
        instructions, message = prompt_parts(prompt)
        options: dict[str, Any] = {
            "model": self.name,
            "max_tokens": self.max_tokens or MAX_ANSWER_TOKENS,
            "messages": [{"role": "user", "content": message}],
            "tools": [ANTHROPIC_VERDICT_TOOL],
            "tool_choice": ANTHROPIC_TOOL_CHOICE,
        }
        if instructions is not None:
            options["system"] = instructions
        if self.temperature is not None:
            options["temperature"] = self.temperature
        response = client.messages.create(**options)
        blocks = list(response.content or [])
        called = [
            block
            for block in blocks
            if getattr(block, "type", "") == "tool_use"
            and getattr(block, "name", "") == VERDICT_TOOL_NAME
        ]
        if called:  # the verdict as the tool's input, read by the same strict parser
            text = json.dumps(called[0].input)
        else:  # a server that ignored the tool: its text
            text = "".join(block.text for block in blocks if getattr(block, "type", "") == "text")
        refused = getattr(response, "stop_reason", None) == "refusal" and not text.strip()
        usage = response.usage
        return Reply(
            text=text,
            input_tokens=int(getattr(usage, "input_tokens", 0) or 0),
            output_tokens=int(getattr(usage, "output_tokens", 0) or 0),
            refusal="the model stopped with a refusal" if refused else None,
        )


#: The entry-point group installed packages register judge providers in: each names a
#: factory called as ``factory(model, name, *, base_url, timeout_s, temperature, max_tokens)``
#: (``model`` the whole model string, ``name`` the part after ``provider:``) that returns a
#: ``judge.completion.Completion``, as the built-in SDK adapters are.
ENTRY_POINT_GROUP = "tooltrail.judge_providers"

#: Judge providers by a model string's ``provider:``: the built-in ones, and those installed
#: as entry points (``registries``: read only for a provider that is not built in).
PROVIDERS: NamedFactories[Callable[..., Completion]] = NamedFactories(
    ENTRY_POINT_GROUP, "judge provider"
)
PROVIDERS.register("openai", OpenAICompletion)
PROVIDERS.register("anthropic", AnthropicCompletion)


def _provider(model: str, provider: str) -> Callable[..., Completion] | None:
    try:
        return PROVIDERS.get(provider)
    except RegistryError as exc:
        raise JudgeConfigError(f"judge model {model!r}: {exc}") from None


def completion_for_model(
    model: str,
    *,
    base_url: str | None = None,
    timeout_s: float = 30.0,
    temperature: float | None = None,
    max_tokens: int | None = None,
) -> Completion:
    """The SDK adapter a model string names: ``provider:model``; ``temperature`` and
    ``max_tokens`` are sent when set."""
    provider, sep, name = model.partition(":")
    if not sep or not provider or not name:
        raise JudgeConfigError(
            f"judge model {model!r} must be 'provider:model' with a provider of "
            f"{_known(model)}, for example 'openai:gpt-4o-mini'"
        )
    factory = _provider(model, provider)
    if factory is None:
        known = _known(model)
        raise JudgeConfigError(
            f"judge model {model!r}: unknown provider {provider!r}"
            f"{did_you_mean(provider, known)}; known: {known}"
        )
    return factory(
        model,
        name,
        base_url=base_url,
        timeout_s=timeout_s,
        temperature=temperature,
        max_tokens=max_tokens,
    )


def _known(model: str) -> list[str]:
    """Every provider's name, sorted (the installed ones read)."""
    try:
        return PROVIDERS.names()
    except RegistryError as exc:
        raise JudgeConfigError(f"judge model {model!r}: {exc}") from None


def _api_message(exc: Exception) -> str:
    """The message of an API error body (``{"error": {"message": ...}}`` or the error object
    itself), else the SDK's text."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return _short(inner["message"])
    return _short(str(exc))


def _short(text: str, limit: int = 300) -> str:
    """One line of at most ``limit`` characters, so that an error body does not flood a report."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
