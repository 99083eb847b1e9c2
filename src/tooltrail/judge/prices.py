"""What a judge's tokens cost, from a price table in the shape of a suite's ``prices:``.

The table maps a model name to US dollars per million input and output tokens, each entry a
mapping ``{"input": 0.15, "output": 0.60}`` or an object with ``input`` and ``output``
attributes (the suite's ``ModelPrice``). A judge model is looked up by its full string
(``openai:gpt-4o-mini``), then by the name after the provider (``gpt-4o-mini``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

PriceTable = Mapping[str, Any]


def price_of(prices: PriceTable | None, model: str) -> tuple[float, float] | None:
    """``(input, output)`` dollars per million tokens for ``model``, else ``None``."""
    if not prices:
        return None
    entry = prices.get(model)
    if entry is None and ":" in model:
        entry = prices.get(model.partition(":")[2])
    if entry is None:
        return None
    return _per_million(entry, "input"), _per_million(entry, "output")


def check_price(entry: Any, model: str) -> None:
    """Raise ``ValueError`` unless ``entry`` is a price with both numbers, 0 or more."""
    for key in ("input", "output"):
        value = entry.get(key) if isinstance(entry, Mapping) else getattr(entry, key, None)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"the price of {model!r} needs {key!r}: a number, not {value!r}")
        if not (math.isfinite(value) and value >= 0):
            raise ValueError(f"the price of {model!r}: {key!r} must be 0 or more, not {value!r}")
    if isinstance(entry, Mapping):
        unknown = sorted(set(entry) - {"input", "output"})
        if unknown:
            raise ValueError(
                f"the price of {model!r} has unknown key {unknown[0]!r} (it takes input, output)"
            )


def cost_usd(price: tuple[float, float], input_tokens: int, output_tokens: int) -> float:
    """The dollars ``input_tokens`` and ``output_tokens`` cost at ``price``."""
    return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000


def _per_million(entry: Any, key: str) -> float:
    value: Any = entry.get(key) if isinstance(entry, Mapping) else getattr(entry, key)
    return float(value)
