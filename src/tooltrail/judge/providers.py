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
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from types import ModuleType
from typing import Any

from tooltrail.hints import did_you_mean
from tooltrail.judge.completion import Completion, Reply, timed_out
from tooltrail.judge.errors import JudgeConfigError
from tooltrail.judge.failure import AttemptFailure, retry_after_seconds

#: The tokens a judge may answer with (Anthropic's API requires a bound; a verdict is short).
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

    def __init__(self, model: str, name: str, *, base_url: str | None, timeout_s: float) -> None:
        self.model = model
        self.name = name
        self.timeout_s = timeout_s
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

    def _client_class(self, sdk: ModuleType) -> Any:
        raise NotImplementedError

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

    def _request(self, client: Any, prompt: str) -> Reply:
        response = client.chat.completions.create(
            model=self.name, messages=[{"role": "user", "content": prompt}]
        )
        choices = response.choices or []
        text = choices[0].message.content if choices else None
        usage = response.usage
        return Reply(
            text=text or "",
            input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        )


class AnthropicCompletion(_SDKCompletion):
    """``anthropic:<model>``: Anthropic's Messages API (``base_url``, else
    ``ANTHROPIC_BASE_URL``; the key from ``ANTHROPIC_API_KEY``)."""

    sdk_name = "anthropic"
    base_error = "AnthropicError"

    def _client_class(self, sdk: ModuleType) -> Any:
        return sdk.Anthropic

    def _request(self, client: Any, prompt: str) -> Reply:
        response = client.messages.create(
            model=self.name,
            max_tokens=MAX_ANSWER_TOKENS,
            messages=[{"role": "user", "content": prompt}],
        )
        text = "".join(
            block.text for block in response.content if getattr(block, "type", "") == "text"
        )
        usage = response.usage
        return Reply(
            text=text,
            input_tokens=int(getattr(usage, "input_tokens", 0) or 0),
            output_tokens=int(getattr(usage, "output_tokens", 0) or 0),
        )


PROVIDERS: dict[str, Callable[..., _SDKCompletion]] = {
    "openai": OpenAICompletion,
    "anthropic": AnthropicCompletion,
}


def completion_for_model(
    model: str, *, base_url: str | None = None, timeout_s: float = 30.0
) -> Completion:
    """The SDK adapter a model string names: ``provider:model``."""
    provider, sep, name = model.partition(":")
    if not sep or not provider or not name:
        raise JudgeConfigError(
            f"judge model {model!r} must be 'provider:model' with a provider of "
            f"{sorted(PROVIDERS)}, for example 'openai:gpt-4o-mini'"
        )
    if provider not in PROVIDERS:
        raise JudgeConfigError(
            f"judge model {model!r}: unknown provider {provider!r}"
            f"{did_you_mean(provider, PROVIDERS)}; known: {sorted(PROVIDERS)}"
        )
    return PROVIDERS[provider](model, name, base_url=base_url, timeout_s=timeout_s)


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
