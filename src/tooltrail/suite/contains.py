"""How a case's ``expected_contains`` texts are looked for: in the final reply or in every
reply of the run, and how texts are normalised first (docs/checks.md, "Contains:
replies and normalisation"). Read the same way from a suite file (``suite.load``) and from
Python; the check (``checks.expectations.Contains``) applies it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tooltrail.hints import did_you_mean
from tooltrail.suite.argrules import RuleError

#: Where the texts are looked for: the final reply, or each reply of the run.
REPLIES = ("final", "all")
CONTAINS_KEYS = ("replies", "ignore_case", "collapse_whitespace", "ignore_thousands_separators")
#: A thousands separator: between a digit and a group of exactly three digits.
_THOUSANDS = re.compile("(?<=\\d)[,_'\u00a0\u202f\u2009](?=\\d{3}(?!\\d))")


@dataclass(frozen=True, slots=True)
class ContainsOptions:
    """``replies``: ``final`` (the trace's reply) or ``all`` (any one reply of the run: each
    turn's, and the final one; a text split across two replies is not found).
    ``ignore_case``: casefold both (the default, as ``contains`` always did).
    ``collapse_whitespace``: every run of white space counts as one space, and leading and
    trailing white space is dropped. ``ignore_thousands_separators``: a ``,``, ``_``, ``'``,
    no-break or thin space between a digit and three digits is dropped (``1,250.00`` is
    ``1250.00``)."""

    replies: str = "final"
    ignore_case: bool = True
    collapse_whitespace: bool = False
    ignore_thousands_separators: bool = False

    def __post_init__(self) -> None:
        if self.replies not in REPLIES:
            raise RuleError(
                ("replies",),
                f"expected one of {', '.join(REPLIES)}, not {self.replies!r}"
                + did_you_mean(str(self.replies), REPLIES),
            )
        for key in CONTAINS_KEYS[1:]:
            if not isinstance(getattr(self, key), bool):
                raise RuleError((key,), f"expected true or false, not {getattr(self, key)!r}")

    def normalise(self, text: str) -> str:
        """``text`` as these options compare it (a required text and each reply alike)."""
        if self.ignore_thousands_separators:
            text = _THOUSANDS.sub("", text)
        if self.collapse_whitespace:
            text = " ".join(text.split())
        if self.ignore_case:
            text = text.casefold()
        return text

    @property
    def plain(self) -> bool:
        """Whether these are the defaults (the check keeps its fast path)."""
        return self == ContainsOptions()


def read_contains_options(value: Any) -> ContainsOptions | None:
    """``value`` as ``ContainsOptions``: one already, a mapping of ``CONTAINS_KEYS``, or
    ``None``. ``RuleError`` when it is none of them."""
    if value is None or isinstance(value, ContainsOptions):
        return value
    if not isinstance(value, Mapping):
        raise RuleError((), f"expected a mapping of {', '.join(CONTAINS_KEYS)}, not {value!r}")
    for key in value:
        if key not in CONTAINS_KEYS:
            raise RuleError(
                (key,),
                f"unknown key {key!r}{did_you_mean(str(key), CONTAINS_KEYS)}; allowed keys: "
                f"{', '.join(CONTAINS_KEYS)}",
            )
    return ContainsOptions(**value)
