"""What one model call used: its input and output tokens and the model that counted them.

Read only when a suite has a token or cost budget (``read_traces(..., usage=True)``): the
lookups cost about a tenth of a dump's conversion, so the default path does not pay for them.

Where instrumentations put the counts (first found wins, per side):

- GenAI semantic conventions: ``gen_ai.usage.input_tokens`` / ``output_tokens`` (input includes
  cached input), and their older names ``gen_ai.usage.prompt_tokens`` / ``completion_tokens``;
  the model is ``gen_ai.response.model``, else ``gen_ai.request.model``.
- Vercel AI SDK: ``ai.usage.inputTokens`` / ``outputTokens`` (``promptTokens`` /
  ``completionTokens`` before ai 5); the model is ``ai.response.model``, else ``ai.model.id``.
- OpenInference: ``llm.token_count.prompt`` / ``completion``; the model is ``llm.model_name``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tooltrail.dialects import rules
from tooltrail.dialects.values import text

#: (input tokens, output tokens, model name or ``None``) of one model span.
ModelUsage = tuple[int, int, "str | None"]

# ``rules.json`` ``usage``: where each side's count and the model name are, first found wins
INPUT_TOKEN_KEYS = rules.keys("usage", "input_tokens", encodings={"count"})
OUTPUT_TOKEN_KEYS = rules.keys("usage", "output_tokens", encodings={"count"})
MODEL_KEYS = rules.keys("usage", "model", encodings={"text"})


def _count(attrs: Mapping[str, Any], keys: tuple[str, ...]) -> int | None:
    """The first of ``keys`` holding a token count: a non-negative int (a bool is not a count;
    JSON decoders may hand an int64 over as a string of digits, as OTLP/JSON writes it)."""
    for key in keys:
        value = attrs.get(key)
        if value is None:
            continue
        if value.__class__ is int and value >= 0:
            return value  # type: ignore[no-any-return]
        if value.__class__ is str and value.isdigit():
            return int(value)
    return None


def model_usage(attrs: Mapping[str, Any] | None) -> ModelUsage | None:
    """``(input tokens, output tokens, model)`` a model span records, or ``None`` when it
    records no token count at all (one side missing counts as 0 for that side)."""
    if attrs is None:
        return None
    tokens_in = _count(attrs, INPUT_TOKEN_KEYS)
    tokens_out = _count(attrs, OUTPUT_TOKEN_KEYS)
    if tokens_in is None and tokens_out is None:
        return None
    model = None
    for key in MODEL_KEYS:
        model = text(attrs.get(key))
        if model is not None:
            break
    return tokens_in or 0, tokens_out or 0, model
