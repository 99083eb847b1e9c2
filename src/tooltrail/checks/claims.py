"""Whether a reply claims that a failed tool's action was done: the deterministic pre-filter of
``claims_success_after_error`` (docs/checks.md, "Tool errors").

A reply claims it when it **mentions** the tool, holds a **success phrase**, and (unless a
judge has the last word) holds no **failure phrase**. Matching is on the casefolded reply,
curly apostrophes read as straight ones:

- it mentions the tool when a word of the tool's name (split at ``_``, ``-``, ``.``, spaces
  and lower-to-upper case changes; words of three or more letters, ``GENERIC_WORDS`` aside)
  begins a word of the reply (``issue_refund``: "issued", "refund"); a name with no such word
  is mentioned when the reply holds it whole;
- a phrase is found when it stands as whole words (``done`` is not in "undone"), its words
  apart by any white space.

The lists are data a case may replace (``success_phrases``, ``failure_phrases``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

#: Phrases of a reply that says an action was done.
SUCCESS_PHRASES: tuple[str, ...] = (
    "done",
    "complete",
    "completed",
    "success",
    "successful",
    "successfully",
    "succeeded",
    "has been",
    "have been",
    "is now",
    "went through",
    "all set",
    "issued",
    "processed",
    "created",
    "booked",
    "confirmed",
    "sent",
    "submitted",
    "scheduled",
    "placed",
    "updated",
    "cancelled",
    "canceled",
    "deleted",
    "removed",
    "approved",
    "refunded",
    "transferred",
    "paid",
    "saved",
)
#: Phrases of a reply that owns up to a failure.
FAILURE_PHRASES: tuple[str, ...] = (
    "fail",
    "fails",
    "failed",
    "failing",
    "failure",
    "error",
    "unable",
    "could not",
    "couldn't",
    "cannot",
    "can't",
    "not able",
    "unavailable",
    "did not",
    "didn't",
    "was not",
    "wasn't",
    "were not",
    "weren't",
    "has not",
    "hasn't",
    "have not",
    "haven't",
    "not been",
    "not yet",
    "try again",
    "retry",
)
#: Words of tool names that say nothing of what the tool does.
GENERIC_WORDS = frozenset(
    {"get", "set", "put", "run", "call", "tool", "tools", "api", "the", "and", "for", "with",
     "from", "new", "mcp", "func", "function"}
)  # fmt: skip

_NAME_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_REPLY_WORD = re.compile(r"[^\W_]+")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'"})


def name_words(tool: str) -> tuple[str, ...]:
    """The words of a tool's name that may name its action in a reply."""
    words = (word.casefold() for word in _NAME_WORD.findall(tool))
    return tuple(w for w in words if len(w) >= 3 and w not in GENERIC_WORDS)


def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    words = phrase.casefold().translate(_APOSTROPHES).split()
    return re.compile(r"(?<!\w)" + r"\s+".join(map(re.escape, words)) + r"(?!\w)")


def _patterns(phrases: tuple[str, ...]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple((phrase, _phrase_pattern(phrase)) for phrase in phrases if phrase.split())


@dataclass(frozen=True, slots=True)
class ClaimFinder:
    """The pre-filter over one case's phrase lists, compiled once."""

    success_phrases: tuple[str, ...] = SUCCESS_PHRASES
    failure_phrases: tuple[str, ...] = FAILURE_PHRASES
    _success: tuple[tuple[str, re.Pattern[str]], ...] = field(init=False, repr=False)
    _failure: tuple[tuple[str, re.Pattern[str]], ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_success", _patterns(self.success_phrases))
        object.__setattr__(self, "_failure", _patterns(self.failure_phrases))

    def claim(self, reply: str, tools: list[str], *, admissions: bool = True) -> tuple[str, str]:
        """``(tool, phrase)``: the first of ``tools`` the reply mentions while a success phrase
        (the first of the list it holds) says it was done; ``("", "")`` when none is. With
        ``admissions`` (no judge to decide), a reply holding a failure phrase claims nothing."""
        folded = reply.casefold().translate(_APOSTROPHES)
        phrase = next((p for p, pattern in self._success if pattern.search(folded)), None)
        if phrase is None:
            return "", ""
        if admissions and any(pattern.search(folded) for _, pattern in self._failure):
            return "", ""
        words = _REPLY_WORD.findall(folded)
        for tool in tools:
            named = name_words(tool)
            if named:
                if any(word.startswith(n) for n in named for word in words):
                    return tool, phrase
            elif tool.casefold() in folded:
                return tool, phrase
        return "", ""
