"""Credential shapes: the value patterns redaction applies by default, found in any text.

Each shape is a format a provider documents or a standard defines (``SHAPES``, listed in
docs/live.md), so that a token in a reply, a tool result or an explanation is hidden without a
key name telling which value it is. A ``CredentialFinder`` compiles the shapes it is given,
once, and reports where each credential lies; ``tooltrail.redact`` replaces those spans by the
marker.

Speed: free text is screened on hot paths (the live processor's tool spans, every string a
receiver dumps). Python's ``re`` skips at C speed only to a literal an expression begins with;
so each alternative begins with a character rare in prose where one can be (an upper-case
letter, ``-``, ``_``: the ``-`` of ``sk-``, the ``J`` of ``eyJ``) and looks behind for the rest
of its prefix, the alternatives of one anchor are one expression (its guard after the anchor
turns most false starts away at once), and an empty named group at each alternative's end says
which one matched (a group at its start would undo the skipping). Figures: docs/live.md,
Overhead.

Three shapes are checked beyond their pattern, so that ordinary text is left alone: a bearer
token must look random (``Bearer authentication`` is prose), a basic credential must decode to
``user:password``, and a card number must pass the Luhn check (order ids, timestamps and other
digit runs do not; so no run that begins with 0, 1, 7, 8 or 9, the card networks' own first
digits being 2 to 6). Of ``Bearer``/``Basic`` values only the credential is hidden, the scheme
stays readable.
"""

from __future__ import annotations

import base64
import binascii
import re
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass

#: Characters of a key's body: base62 and the URL-safe base64 extras.
_TOKEN = r"[A-Za-z0-9_-]"
#: Not part of a longer word before a prefix (``task-...`` holds no ``sk-`` key).
_WORDY = r"[\w-]"


def _starts_word(head: str, before: str = _WORDY) -> str:
    """A look behind ``head`` (what was matched so far): nothing of ``before`` precedes it,
    unless that is the ``n`` of an escaped line end or tab (``\\n`` in JSON text or a repr),
    which separates words as the line end does."""
    return rf"(?:(?<!{before}{head})|(?<=\\[nrt]{head}))"


@dataclass(frozen=True, slots=True)
class Shape:
    """One credential format: its alternatives, each a regular expression beginning with its
    anchor character and ``back`` characters into the credential (the ``-`` of ``sk-``: 2);
    ``where`` is the source that documents the format."""

    name: str
    what: str
    where: str
    alternatives: tuple[tuple[str, int], ...]
    #: What of a found credential is hidden: ``(start, end)`` within it, ``None`` when it is
    #: not a credential after all. ``None``: all of it.
    secret: Callable[[str], tuple[int, int] | None] | None = None


def _token_after_scheme(text: str) -> tuple[int, int]:
    """The span of ``Bearer TOKEN`` (or ``Basic ...``) past the scheme and its white space."""
    start = len(text.split(None, 1)[0])
    while text[start].isspace():
        start += 1
    return start, len(text)


def _bearer(text: str) -> tuple[int, int] | None:
    """A bearer token, when it looks like one: 8 characters or more, and a digit, a character
    beyond letters or a capital past the first (``Bearer authentication`` is a phrase)."""
    start, end = _token_after_scheme(text)
    token = text[start:end].rstrip("=")
    if len(token) < 8:
        return None
    if token.isalpha() and (token[1:].islower() or token.isupper()):
        return None
    return start, end


def _basic(text: str) -> tuple[int, int] | None:
    """A basic credential: base64 of ``user:password`` in printable text."""
    start, end = _token_after_scheme(text)
    value = text[start:end].rstrip("=")  # padding as written, or an `=` that follows it
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    if ":" not in decoded or not decoded.isprintable():
        return None
    return start, end


def luhn_valid(digits: str) -> bool:
    """The Luhn check of a card number's digits (ISO/IEC 7812)."""
    total = 0
    for i, char in enumerate(reversed(digits)):
        digit = ord(char) - 48
        if i % 2:
            digit = digit * 2 - 9 if digit > 4 else digit * 2
        total += digit
    return total % 10 == 0


def is_card_number(digits: str) -> bool:
    """Whether a run of digits is a card number: 13 to 19 digits, a card network's first digit
    (2 to 6) and the Luhn check."""
    return 13 <= len(digits) <= 19 and "2" <= digits[0] <= "6" and luhn_valid(digits)


def _card(text: str) -> tuple[int, int] | None:
    digits = text.replace(" ", "").replace("-", "")
    return (0, len(text)) if is_card_number(digits) else None


def _schemes(word: str, body: str) -> tuple[tuple[str, int], ...]:
    """``Word``, ``word`` and ``WORD`` (schemes compare without case), each its own
    alternative so that every one begins with a literal."""
    spellings = dict.fromkeys((word.capitalize(), word.lower(), word.upper()))
    return tuple((rf"{w}\s+{body}", 0) for w in spellings)


def _after(prefix: str, anchor_at: int, body: str) -> tuple[str, int]:
    """An alternative anchored on ``prefix[anchor_at]``, looking behind for the rest of the
    prefix and for no word character before it."""
    head = re.escape(prefix[: anchor_at + 1])
    behind = f"(?<={head}){_starts_word(head)}"
    return f"{re.escape(prefix[anchor_at])}{behind}{re.escape(prefix[anchor_at + 1 :])}{body}", (
        anchor_at
    )


#: A PEM block's body as it appears in text: base64, white space, escaped line ends (JSON,
#: a Python repr), the headers of an encrypted key (``Proc-Type: 4,ENCRYPTED``), up to its end.
_PEM_BODY = r"(?:[A-Za-z0-9+/=\s:,.]|\\+[nrt]|-(?!----END))*"
_PEM_END = r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)?"
_CARD_TAIL = r"(?![\w]|\.[0-9])"
#: Not part of a longer number or word before a card number (a decimal, a phone, an id).
_NUMBERY = r"[\w.+-]"

#: Every shape tooltrail knows, in the order they are tried at one place.
SHAPES: tuple[Shape, ...] = (
    Shape(
        name="bearer",
        what="`Bearer TOKEN` (the token; 8 characters or more that do not read as a word)",
        where="RFC 6750",
        alternatives=_schemes("bearer", r"[A-Za-z0-9._~+/-]+=*"),
        secret=_bearer,
    ),
    Shape(
        name="basic",
        what="`Basic BASE64` that decodes to `user:password`",
        where="RFC 7617",
        alternatives=_schemes("basic", r"[A-Za-z0-9+/]{4,}={0,2}"),
        secret=_basic,
    ),
    Shape(
        name="anthropic",
        what="Anthropic API keys and tokens: `sk-ant-` (`sk-ant-api03-`, `sk-ant-admin01-`...)",
        where="Anthropic console",
        alternatives=(_after("sk-ant-", 2, f"{_TOKEN}{{20,}}"),),
    ),
    Shape(
        name="openai",
        what="OpenAI API keys: `sk-`, `sk-proj-`, `sk-svcacct-`, `sk-admin-` (not `sk-ant-`)",
        where="OpenAI platform",
        alternatives=(_after("sk-", 2, f"(?!ant-){_TOKEN}{{20,}}"),),
    ),
    Shape(
        name="github",
        what="GitHub tokens: `ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`",
        where="GitHub changelog 2021-03-31, fine-grained tokens",
        alternatives=(
            (rf"_(?<=gh[pousr]_){_starts_word('gh[pousr]_')}[A-Za-z0-9]{{30,}}", 3),
            _after("github_pat_", 6, r"[A-Za-z0-9_]{22,}"),
        ),
    ),
    Shape(
        name="gitlab",
        what="GitLab personal access tokens: `glpat-`",
        where="GitLab issue 342327",
        alternatives=(_after("glpat-", 5, r"[A-Za-z0-9_.-]{20,}"),),
    ),
    Shape(
        name="slack",
        what="Slack tokens: `xoxb-`, `xoxp-`, `xoxa-`, `xoxr-`, `xoxs-`, `xoxe-`, `xapp-`",
        where="Slack token types",
        alternatives=((r"-(?<=xox[abeoprs]-|xapp-)[A-Za-z0-9-]{10,}", 4),),
    ),
    Shape(
        name="stripe",
        what="Stripe secret and restricted keys (`sk_live_`, `sk_test_`, `rk_live_`, "
        "`rk_test_`) and webhook secrets (`whsec_`)",
        where="Stripe API keys",
        alternatives=(
            (rf"_(?<=[sr]k_){_starts_word('[sr]k_')}(?:live|test)_[A-Za-z0-9]{{10,}}", 2),
            _after("whsec_", 5, r"[A-Za-z0-9+/=]{20,}"),
        ),
    ),
    Shape(
        name="google",
        what="Google API keys: `AIza` and 35 characters",
        where="Google Cloud API keys",
        alternatives=((f"AIza{_TOKEN}{{35}}", 0),),
    ),
    Shape(
        name="aws",
        what="AWS access key ids: `AKIA`, `ASIA` (temporary), `ABIA`, `ACCA`, then sixteen "
        "upper-case letters or digits",
        where="AWS STS GetAccessKeyInfo, IAM unique identifiers",
        alternatives=(
            (
                rf"A{_starts_word('A', '[A-Za-z0-9]')}(?:KIA|SIA|BIA|CCA)[A-Z0-9]{{16}}"
                r"(?![A-Za-z0-9])",
                0,
            ),
        ),
    ),
    Shape(
        name="huggingface",
        what="Hugging Face access tokens: `hf_`",
        where="Hugging Face user access tokens",
        alternatives=(_after("hf_", 2, r"[A-Za-z0-9]{30,}"),),
    ),
    Shape(
        name="jwt",
        what="JSON Web Tokens: `eyJ...` header, payload and signature (and JWE's parts)",
        where="RFC 7519",
        alternatives=(
            _after("eyJ", 2, rf"{_TOKEN}{{8,}}\.{_TOKEN}{{2,}}\.{_TOKEN}*(?:\.{_TOKEN}+){{0,2}}"),
        ),
    ),
    Shape(
        name="private_key",
        what="private key blocks: `-----BEGIN ... PRIVATE KEY-----` to the matching end line",
        where="RFC 7468",
        alternatives=(
            (rf"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----{_PEM_BODY}{_PEM_END}", 0),
        ),
    ),
    Shape(
        name="card_number",
        what="card numbers: 13 to 19 digits, plain or grouped by spaces or dashes, that pass "
        "the Luhn check and begin with 2 to 6",
        where="ISO/IEC 7812",
        alternatives=tuple(
            (
                rf"{d}{_starts_word(d, _NUMBERY)}(?:[0-9]{{12,18}}"
                rf"|[0-9]{{3}}(?:[ -][0-9]{{4}}){{2}}[ -][0-9]{{1,4}}(?:[ -][0-9]{{3}})?"
                rf"|[0-9]{{3}}[ -][0-9]{{6}}[ -][0-9]{{4,5}}){_CARD_TAIL}",
                0,
            )
            for d in "23456"
        ),
        secret=_card,
    ),
)
SHAPE_NAMES: tuple[str, ...] = tuple(shape.name for shape in SHAPES)
_BY_NAME = {shape.name: shape for shape in SHAPES}


def check_names(names: Iterable[str]) -> tuple[str, ...]:
    """``names`` as a tuple, or ``ValueError`` naming the unknown ones and the known ones."""
    names = tuple(names)
    unknown = [n for n in names if n not in _BY_NAME]
    if unknown:
        raise ValueError(
            f"unknown credential shape(s) {', '.join(map(repr, unknown))}: "
            f"known are {', '.join(SHAPE_NAMES)}"
        )
    return names


#: Where a card number may be, found at C speed before the card expression runs: the text's
#: ASCII bytes with every digit made ``0`` and every other byte but a space or ``-`` made ``x``
#: hold one of these (13 digits in a row, or grouped as the card patterns group them).
_DIGIT_SHAPE = bytes(
    0x30 if 0x30 <= b <= 0x39 else b if b in (0x20, 0x2D) else 0x78 for b in range(256)
)
#: (Spelled from a literal ``0000``, so that ``re`` searches for it at C speed.)
_CARD_RUNS = re.compile(rb"0000(?:000000000|[ -]0000[ -]0000[ -]0|[ -]000000[ -]0000)")


def may_hold_card(text: str) -> bool:
    """Whether ``text`` has digits enough, together, for a card number (conservative)."""
    if len(text) < 13:
        return False
    return _CARD_RUNS.search(text.encode("ascii", "ignore").translate(_DIGIT_SHAPE)) is not None


#: No credential of any shape is shorter (``Basic`` and 4 characters of base64 is 10).
_SHORTEST = 10


@dataclass(frozen=True, slots=True)
class Guard:
    """What must surround an anchor for any alternative of its group to match, tested once for
    the group (``re`` would test each alternative's look-behind in turn): ``count``
    characters of ``allowed`` after it, one of ``words`` right after it (when given), and
    ``behind`` right before it. A snake_case name's ``_id``, a range's ``5-7`` or a sentence's
    ``But`` fails here at once. Data, so that the compiled core's first look
    (``tooltrail.redact``) tests what the group's expression tests."""

    allowed: str = ""
    count: int = 0
    words: tuple[str, ...] = ()
    behind: str = ""

    def pattern(self, anchor: str) -> str:
        """The look-behind and look-aheads that follow ``anchor`` in its group's expression."""
        parts = [f"(?<={re.escape(self.behind + anchor)})"] if self.behind else []
        if self.count:
            parts.append(f"(?=[{''.join(map(re.escape, self.allowed))}]{{{self.count}}})")
        if self.words:
            parts.append(f"(?={'|'.join(map(re.escape, self.words))})")
        return "".join(parts)


_ALNUM = string.ascii_letters + string.digits
_GUARDS: dict[str, Guard] = {
    "_": Guard(_ALNUM + "_+/=", 10),  # gh?_, github_pat_, [sr]k_live_, whsec_, hf_ bodies
    "-": Guard(_ALNUM + "_.-", 9),  # sk-, sk-ant-, glpat-, xox?- bodies; ----BEGIN
    "A": Guard(_ALNUM + "_-", 19),  # AIza and 35, AKIA and 16
    "B": Guard(words=("earer", "EARER", "asic", "ASIC")),  # Bearer, BEARER, Basic, BASIC
    "b": Guard(words=("earer", "asic")),  # bearer, basic
    "J": Guard(behind="ey"),  # eyJ: a JSON Web Token's header
}
#: An anchor without a row: nothing is required around it.
_NO_GUARD = Guard()


_Secret = Callable[[str], "tuple[int, int] | None"]


class CredentialFinder:
    """Where the credentials of the given shapes lie in a text.

    The alternatives are compiled in groups, one expression per anchor character (``-``,
    ``_``, ``A``, ``B``, ``J``...): an expression that begins with one literal is searched for
    it at C speed (``re`` looks for the literal, then tries the rest), where one expression over
    several first characters tests every character of the text against the set (about twice
    the time on a reply); after the anchor, a guard (``_GUARDS``) turns most false starts away
    before any alternative is tried. Card numbers begin with any of five digits; they are
    looked for only in a text that ``may_hold_card``."""

    __slots__ = ("_groups", "_cards", "_tags")

    def __init__(self, names: Iterable[str]) -> None:
        chosen = set(check_names(names))
        by_anchor: dict[str, list[str]] = {}
        cards: list[str] = []
        self._tags: dict[str, tuple[int, _Secret | None]] = {}
        for shape in SHAPES:  # the table's order, whatever the order of ``names``
            if shape.name not in chosen:
                continue
            for regex, back in shape.alternatives:
                tag = f"c{len(self._tags)}"
                self._tags[tag] = (back, shape.secret)
                if shape.name == "card_number":
                    cards.append(f"{regex}(?P<{tag}>)")
                    continue
                escaped = regex.startswith("\\")
                anchor, rest = regex[int(escaped)], regex[1 + int(escaped) :]
                by_anchor.setdefault(anchor, []).append(f"{rest}(?P<{tag}>)")
        self._groups = tuple(
            (
                anchor,
                re.compile(
                    f"{re.escape(anchor)}{_GUARDS.get(anchor, _NO_GUARD).pattern(anchor)}"
                    f"(?:{'|'.join(rest)})"
                ),
            )
            for anchor, rest in by_anchor.items()
        )
        self._cards = re.compile("|".join(cards)) if cards else None

    def __bool__(self) -> bool:
        return bool(self._groups) or self._cards is not None

    def first_look(self) -> tuple[tuple[tuple[str, Guard], ...], bool, int]:
        """What a text must hold for this finder to find anything in it: each anchor with its
        guard (``Guard``), whether card numbers are looked for, and the shortest credential."""
        anchors = tuple((anchor, _GUARDS.get(anchor, _NO_GUARD)) for anchor, _ in self._groups)
        return anchors, self._cards is not None, _SHORTEST

    def _patterns(self, text: str) -> list[re.Pattern[str]]:
        """The expressions worth running on ``text``: those whose anchor it holds (an ``in``
        test costs less than a search's call), the card numbers' when it may hold one."""
        if len(text) < _SHORTEST:
            return []
        found = [pattern for anchor, pattern in self._groups if anchor in text]
        if self._cards is not None and may_hold_card(text):
            found.append(self._cards)
        return found

    def _hit(self, match: re.Match[str], text: str) -> tuple[int, int] | None:
        """The credential a match found, or ``None`` when it fails its shape's check."""
        back, secret = self._tags[match.lastgroup]  # type: ignore[index]
        start, end = match.start() - back, match.end()
        if secret is None:
            return start, end
        inner = secret(text[start:end])
        return None if inner is None else (start + inner[0], start + inner[1])

    def spans(self, text: str) -> list[tuple[int, int]]:
        """The ``(start, end)`` of each credential in ``text``, in order, not overlapping (two
        that overlap are hidden as one)."""
        found: list[tuple[int, int]] = []
        for pattern in self._patterns(text):
            match = pattern.search(text)
            while match is not None:
                hit = self._hit(match, text)
                if hit is not None:
                    found.append(hit)
                match = pattern.search(text, match.end())
        if len(found) < 2:
            return found
        found.sort()
        kept = [found[0]]
        for start, end in found[1:]:
            if start >= kept[-1][1]:
                kept.append((start, end))
            elif end > kept[-1][1]:
                kept[-1] = (kept[-1][0], end)
        return kept

    def holds_any(self, text: str) -> bool:
        """Whether ``text`` holds a credential (a pattern's hit that passes its check)."""
        for pattern in self._patterns(text):
            match = pattern.search(text)
            while match is not None:
                if self._hit(match, text) is not None:
                    return True
                match = pattern.search(text, match.end())
        return False

    def replace(self, text: str, marker: str) -> str:
        """``text`` with every credential replaced by ``marker``; the same object when none."""
        spans = self.spans(text)
        if not spans:
            return text
        pieces: list[str] = []
        at = 0
        for start, end in spans:
            pieces += (text[at:start], marker)
            at = end
        pieces.append(text[at:])
        return "".join(pieces)
