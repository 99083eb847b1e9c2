"""Counting names at C speed: the summary counts every score's metric of a batch (millions in a
nightly run), and a trace's call index counts its tools (``checks.view``)."""

from __future__ import annotations

try:  # the C helper behind collections.Counter, without Counter's per-instance overhead
    from collections import _count_elements as tally  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - other Pythons

    def tally(counts: dict[str, int], items: list[str]) -> None:
        """Add one to ``counts[item]`` per item."""
        for item in items:
            counts[item] = counts.get(item, 0) + 1


__all__ = ["tally"]
