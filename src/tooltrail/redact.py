"""Redaction and size caps: the one rule for what of a tool call may leave the process.

Tool arguments carry customer data. A key whose name is configured (compared without case,
``_`` or ``-``: ``card_number``, ``cardNumber`` and ``CARD-NUMBER`` are one key) or matches a
configured pattern has its value replaced by the marker, at any depth. Value patterns replace
the matching text inside any string: the credential shapes of ``tooltrail.credentials`` (bearer
and basic credentials, providers' API keys, JWTs, private key blocks, Luhn-checked card numbers,
all on unless ``credentials`` names fewer), then the user's own regular expressions. A card
number given as an integer is hidden too. Strings longer than
``max_value_chars`` are cut with a marker, and arguments whose canonical JSON is still longer
than ``max_args_bytes`` are cut as text (then no longer JSON) with the same kind of marker.

A string inside arguments is looked into whatever its shape: JSON text (with or without white
space around it, encoded once or several times), a Python literal (parsed with
``ast.literal_eval``, never evaluated), or ``key=value`` / ``key: value`` text, which is hidden
whole when it assigns a secret key. Nesting is followed to any depth within a bounded cost per
value: at most ``NESTED_PARSE_BUDGET`` characters of nested text are parsed per value (besides
the value itself), and containers deeper than ``MAX_DEPTH`` are hidden; past either bound a
string that assigns a secret key is hidden whole, never passed on unparsed.

Free text made from arguments (a check's explanation, a reply, an error) goes through
``Redaction.redact_text``: each ``key: value`` or ``key=value`` of a secret key, in any quoting
(JSON, Python repr, escaped inside nested text), has its value replaced by the marker.

This module sits in layer 0 so that evaluation (``tooltrail.score``), evaluation events and
reports apply the same rules as the live processor and the receiver.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import orjson

from tooltrail.credentials import SHAPE_NAMES, CredentialFinder, is_card_number
from tooltrail.credentials import check_names as check_credential_names

#: What a redacted value becomes.
DEFAULT_MARKER = "[REDACTED]"
#: Key names redacted when the user configures none (compared without case, ``_`` and ``-``).
DEFAULT_KEYS: tuple[str, ...] = (
    "password",
    "passwd",
    "secret",
    "client_secret",
    "api_key",
    "access_token",
    "refresh_token",
    "authorization",
    "card_number",
    "cvv",
    "cvc",
    "ssn",
)
#: The credential shapes redacted when the user names none: every one tooltrail knows
#: (``tooltrail.credentials.SHAPES``, listed in docs/live.md).
DEFAULT_CREDENTIALS: tuple[str, ...] = SHAPE_NAMES
DEFAULT_MAX_VALUE_CHARS = 4096
DEFAULT_MAX_ARGS_BYTES = 65536
#: Python reprs longer than this are not parsed for redaction (they are redacted whole).
_MAX_LITERAL_CHARS = 1 << 20
#: Characters of nested text (JSON or Python literals inside a value's strings) parsed per value;
#: the value's own text is parsed whatever its size.
NESTED_PARSE_BUDGET = 1 << 21
#: Containers nested deeper than this (objects, lists, and text nested in text) are hidden.
MAX_DEPTH = 64
_INT64 = 1 << 63
#: Integers with 13 to 19 digits, the lengths of card numbers.
_CARD_LOW, _CARD_HIGH = 10**12, 10**19
#: Escapes that can spell a key name in JSON or Python text (``\u0070assword``, ``\x70``).
_ESCAPE = re.compile(r"\\[uUxN0-7]")
#: ``key`` then an optional (escaped) closing quote, then ``:``, ``=`` or ``=>``, with white
#: space around it, also escaped (``\\n`` in a repr or in JSON text).
_ASSIGNMENT = re.compile(
    r"(?<![\w-])([\w-]+)(\\*['\"])?(?:\s|\\+[ntr])*(?:=>|[:=])(?:\s|\\+[ntr])*"
)
#: A quoted value's opening: a Python string prefix (``b'...'``), escapes, the quote.
_QUOTE = re.compile(r"(?:[bBrRuU]{1,2}(?=\\*['\"]))?(\\*)(['\"])")
#: Where an unquoted value ends: a delimiter, a closing bracket, or a (possibly escaped) quote.
_BARE_END = re.compile(r"[,;&\r\n)\]}]|(?<!\\)\\*['\"]")
_CLOSE = {"{": "}", "[": "]", "(": ")"}
#: Free texts whose redaction a ``Redaction`` remembers (then it starts again), and the
#: longest one it remembers: at most 4 MiB of text held.
_TEXT_CACHE_SIZE = 4096
_CACHED_TEXT_CHARS = 1024
#: Cached for a text that redaction leaves as it is.
_UNCHANGED = "\x00unchanged"


def normalize_key(key: str) -> str:
    """The form keys are compared in: lower case, without ``_`` and ``-``."""
    return key.lower().replace("_", "").replace("-", "")


def truncation_marker(dropped: int) -> str:
    """Appended to a string that was cut; says how many characters were dropped."""
    return f"...[truncated {dropped} chars]"


#: Makes a compiled first look for a redaction's screen from its rules: ``(names, anchors,
#: cards, shortest)``, each anchor ``(anchor, allowed, count, words, behind)`` (its
#: ``credentials.Guard``; ``CredentialFinder.first_look``), to an object whose ``clear(text)``
#: is ``True`` only where the screen would find nothing (the compiled core's ``Screen``).
FirstLook = tuple[str, str, int, tuple[str, ...], str]
FirstLookMaker = Callable[[tuple[str, ...], tuple[FirstLook, ...], bool, int], Any]
#: The maker in use (at most one) and how many times one was installed: a redaction made
#: before an install asks again.
_first_look: list[FirstLookMaker] = []
_installs = [0]


def install_first_look(make: FirstLookMaker | None) -> None:
    """Screen text with ``make``'s first look before the Python screen, from now on, in every
    redaction (``convert.engine`` installs the compiled core's); ``None``: the Python screen
    alone."""
    _first_look[:] = [] if make is None else [make]
    _installs[0] += 1


#: A redaction's first look before one is made: none, made at no install.
_NO_LOOK: tuple[int, Any] = (-1, None)


@dataclass(frozen=True)
class Redaction:
    """Which argument keys and values to hide, and how large arguments may be.

    ``keys``: exact key names (``DEFAULT_KEYS`` unless given; pass ``()`` for none).
    ``key_patterns``: regular expressions searched in key names (``re.search``, no case).
    ``value_patterns``: regular expressions whose matches inside any string value are replaced.
    ``credentials``: the credential shapes hidden wherever they appear (``DEFAULT_CREDENTIALS``,
    every shape, unless given; ``()`` for none), before the value patterns.
    """

    keys: tuple[str, ...] = DEFAULT_KEYS
    key_patterns: tuple[str, ...] = ()
    value_patterns: tuple[str, ...] = ()
    marker: str = DEFAULT_MARKER
    max_value_chars: int = DEFAULT_MAX_VALUE_CHARS
    max_args_bytes: int = DEFAULT_MAX_ARGS_BYTES
    credentials: tuple[str, ...] = DEFAULT_CREDENTIALS
    _names: frozenset[str] = field(init=False, repr=False, compare=False)
    _key_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _value_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _tail_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    #: The normalized key names (``_names_in``).
    _name_list: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _finder: CredentialFinder = field(init=False, repr=False, compare=False)
    #: Whether any credential shape is on (``bool(_finder)``, kept: it is asked per text).
    _finds: bool = field(init=False, repr=False, compare=False)
    #: Whether integers are looked at (the ``card_number`` shape is on).
    _cards: bool = field(init=False, repr=False, compare=False)
    #: Free texts seen recently and what they became: explanations repeat from trace to trace.
    _texts: dict[str, str] = field(init=False, repr=False, compare=False)
    #: ``(installs, first look)``: the compiled first look (``install_first_look``) made for
    #: these rules at that many installs, or ``None``.
    _look: tuple[int, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.max_value_chars < 16 or self.max_args_bytes < 64:
            raise ValueError("max_value_chars must be >= 16 and max_args_bytes >= 64")
        names = frozenset(normalize_key(k) for k in self.keys if k)
        object.__setattr__(self, "_names", names)
        alternatives = "|".join(re.escape(n) for n in sorted(names))
        object.__setattr__(self, "_tail_re", re.compile(f"(?:{alternatives})$") if names else None)
        object.__setattr__(self, "_name_list", tuple(sorted(names)))
        object.__setattr__(self, "_key_re", _combine(self.key_patterns, re.IGNORECASE))
        object.__setattr__(self, "_value_re", _combine(self.value_patterns, 0))
        object.__setattr__(self, "credentials", check_credential_names(self.credentials))
        object.__setattr__(self, "_finder", CredentialFinder(self.credentials))
        object.__setattr__(self, "_finds", bool(self._finder))
        object.__setattr__(self, "_cards", "card_number" in self.credentials)
        object.__setattr__(self, "_texts", {})
        object.__setattr__(self, "_look", _NO_LOOK)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without its compiled first look (another process makes its own)."""
        state = dict(self.__dict__)
        state["_look"] = _NO_LOOK
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def needs_no_cleaning(self, text: str) -> bool:
        """A fast, conservative test on (JSON) text: ``True`` only when it names no configured
        key, holds no escape that could spell one (``\\u``, ``\\x``...) nor a credential
        (one scan of the credential shapes' combined expression) and is too short to hold an
        over-long string, so parsing it would change nothing.
        With key patterns or value patterns (the user's own) configured the answer is always
        ``False``."""
        if len(text) > self.max_value_chars:
            return False
        return self._names_nothing(text)

    def texts_need_no_cleaning(self, texts: list[str]) -> bool:
        """``needs_no_cleaning`` for several texts at once (one scan of them joined)."""
        if len(texts) == 1:
            return self.needs_no_cleaning(texts[0])
        if max(map(len, texts)) > self.max_value_chars:
            return False
        return self._names_nothing("\x00".join(texts))

    def strings_need_no_cleaning(
        self, values: Mapping[str, Any], skip: frozenset[str], extra: str | None = None
    ) -> bool:
        """``texts_need_no_cleaning`` of the string values of ``values`` (but those under a
        key of ``skip``) and of ``extra``, when every other value is an ``int``, a ``float``
        or a ``bool``; ``False`` when one is not (a structured value) or there is no text at
        all. The first look screens a dict's values in one call when it can; what it does not
        clear is asked of the Python screen, as before."""
        if self._key_re is not None or self._value_re is not None:
            return False  # what ``_names_nothing`` answers with the user's own patterns
        clear_strings = getattr(self._first_look(), "clear_strings", None)
        if clear_strings is not None and type(values) is dict:
            strings = clear_strings(values, skip, self.max_value_chars, extra)
            if strings is not None:
                return strings > 0
        texts: list[str] = []
        for key, value in values.items():
            kind = type(value)
            if kind is str:
                if key not in skip:
                    texts.append(value)
            elif kind is not int and kind is not float and kind is not bool:
                return False
        if extra is not None:
            texts.append(extra)
        return bool(texts) and self.texts_need_no_cleaning(texts)

    def _names_nothing(self, text: str) -> bool:
        """Whether ``text`` surely holds nothing to hide, whatever its length."""
        if self._key_re is not None or self._value_re is not None:
            return False
        look = self._first_look()
        if look is not None and look.clear(text):
            return True
        if "\\" in text and _ESCAPE.search(text) is not None:  # escapes can spell a key
            return False
        if self._names_in(text):
            return False
        return not self._finds or not self._finder.holds_any(text)

    def _first_look(self) -> Any:
        """The installed maker's first look for these rules (``None``: none). Its callers
        first turn away rules with the user's own key or value patterns, which it cannot
        answer for."""
        installs, look = self._look
        if installs != _installs[0]:
            look = self._make_first_look()
        return look

    def _make_first_look(self) -> Any:
        """The installed maker's first look for these rules (``None``: none installed, or it
        declines them), kept until another maker is installed. The Python screen stays the
        reference: the first look answers only ``clear``, and anything else goes on to it
        (``tests/model/test_redact_first_look.py`` holds the two to that)."""
        installs, look = _installs[0], None
        if _first_look:
            guards, cards, shortest = self._finder.first_look() if self._finds else ((), False, 0)
            anchors = tuple(
                (anchor, guard.allowed, guard.count, guard.words, guard.behind)
                for anchor, guard in guards
            )
            try:
                look = _first_look[0](self._name_list, anchors, cards, shortest)
            except ValueError:  # names or anchors it cannot test (beyond ASCII)
                look = None
        object.__setattr__(self, "_look", (installs, look))
        return look

    def _names_in(self, text: str) -> bool:
        """Whether a configured key name occurs anywhere in ``text`` (normalized). One ``in``
        test a name: the C substring search beats one expression of every name as
        alternatives, which ``re`` tries at each character (0.9 against 1.4 us for the 12
        default names over a tool span's 140 characters, 3.7 against 10.2 us for 62 names)."""
        if not self._name_list:
            return False
        normalized = normalize_key(text)
        for name in self._name_list:
            if name in normalized:
                return True
        return False

    def is_secret_key(self, key: str) -> bool:
        """Whether the value under ``key`` must be hidden."""
        if normalize_key(key) in self._names:
            return True
        return self._key_re is not None and self._key_re.search(key) is not None

    def _assigns(self, key: str) -> bool:
        """Whether ``key`` in ``key=value`` text is secret: a secret key, or a word ending in a
        configured name (``user_password``), since free text has no exact key boundaries."""
        if self.is_secret_key(key):
            return True
        return self._tail_re is not None and self._tail_re.search(normalize_key(key)) is not None

    def mentions_secret_key(self, text: str) -> bool:
        """Whether text assigns a secret key (``password=``, ``'ssn': ``, ``\\"api_key\\":``)."""
        if self._key_re is None and not self._names_in(text):
            return False
        return any(self._assigns(m.group(1)) for m in _ASSIGNMENT.finditer(text))

    def redact_text(self, text: str) -> str:
        """Free text (an explanation, a reply, an error) with the value of every secret
        ``key: value`` / ``key=value`` replaced by the marker, whatever its quoting, and the
        credential shapes and value patterns applied. Not capped. The same object back when
        nothing changed."""
        if not self._finds and self._value_re is None and ":" not in text and "=" not in text:
            return text  # no assignment, nothing to replace: most explanations
        if len(text) > _CACHED_TEXT_CHARS:
            return self._redact_text(text)
        cache = self._texts
        known = cache.get(text)
        if known is not None:
            return text if known is _UNCHANGED else known
        redacted = self._redact_text(text)
        if len(cache) >= _TEXT_CACHE_SIZE:
            cache.clear()
        cache[text] = _UNCHANGED if redacted is text else redacted
        return redacted

    def _redact_text(self, text: str) -> str:
        if ":" not in text and "=" not in text:  # no assignment: value patterns at most
            return self.replace_values(text)
        if self._names_nothing(text):
            return text
        pieces: list[str] = []
        at = 0
        match = _ASSIGNMENT.search(text)
        while match is not None:
            if self._assigns(match.group(1)):
                start, end = _value_span(text, match.end())
                pieces += (text[at:start], self.marker)
                at = end
                match = _ASSIGNMENT.search(text, max(end, match.end()))
            else:
                match = _ASSIGNMENT.search(text, match.end())
        redacted = "".join(pieces) + text[at:] if pieces else text
        replaced = self.replace_values(redacted)
        return text if replaced == text else replaced

    def clean(self, value: Any) -> tuple[Any, bool]:
        """``value`` with secrets replaced and long strings cut, and whether anything changed.

        Containers are copied only where something changed; the input is never mutated.
        """
        return _clean(self, value, 0, _Budget())

    def clean_text(self, text: str) -> str:
        """A string inside arguments, with value patterns applied and its length capped."""
        return self.cap(self.replace_values(text), self.max_value_chars)

    def replace_values(self, text: str) -> str:
        """``text`` with every credential and every match of the value patterns replaced by
        the marker; the same object when nothing matched."""
        if self._finds:
            text = self._finder.replace(text, self.marker)
        return text if self._value_re is None else self._value_re.sub(self.marker, text)

    def texts_hold_no_values(self, texts: list[str]) -> bool:
        """Whether ``replace_values`` would leave every one of ``texts`` as it is: ``False``
        with value patterns of the user's, else one scan of the texts joined for credentials."""
        if self._value_re is not None:
            return False
        return not self._finds or not self._finder.holds_any("\x00".join(texts))

    @property
    def replaces_values(self) -> bool:
        """Whether ``replace_values`` can change a text (credential shapes or value patterns)."""
        return self._finds or self._value_re is not None

    def hides_number(self, value: int) -> bool:
        """Whether an integer is a card number (13 to 19 digits, Luhn-checked) to hide."""
        return (
            self._cards and _CARD_LOW <= abs(value) < _CARD_HIGH and is_card_number(str(abs(value)))
        )

    def cap(self, text: str, limit: int) -> str:
        """``text`` cut to ``limit`` characters, marker included, when it is longer."""
        if len(text) <= limit:
            return text
        keep = max(0, limit - 32)
        return text[:keep] + truncation_marker(len(text) - keep)


class _Explained(Protocol):
    explanation: str


_E = TypeVar("_E", bound=_Explained)


def redacted_explanations(rules: Redaction, scores: list[_E]) -> list[_E]:
    """``scores`` (dataclasses with an ``explanation``, such as ``Score``) with each explanation
    through ``rules.redact_text``: a copy of a score whose text changed, the same list when none
    did. Evaluation applies it to every score it returns, so no report, results file, event or
    assertion message quotes a secret an explanation held."""
    out: list[_E] | None = None
    for i, score in enumerate(scores):
        given = score.explanation
        text = rules.redact_text(given if type(given) is str else str(given))  # a plug-in's
        if text is not given and out is None:
            out = scores[:i]
        if out is not None:
            out.append(score if text is given else _with_explanation(score, text))
    return scores if out is None else out


def _with_explanation(score: _E, text: str) -> _E:
    copy: _E = dataclasses.replace(score, explanation=text)  # type: ignore[type-var]
    return copy


def _value_span(text: str, start: int) -> tuple[int, int]:
    """Where the value that begins at ``start`` lies: between its quotes when quoted (the closing
    quote is the first one escaped exactly as the opening one, so the quoting of nested text
    is followed), to the matching bracket, else up to a delimiter; to the end when unclosed.
    Linear in the text: every character is looked at a bounded number of times."""
    quote = _QUOTE.match(text, start)
    if quote is not None:
        slashes, mark = len(quote.group(1)), quote.group(2)
        inner = pos = quote.end()
        while (found := text.find(mark, pos)) >= 0:
            run = found
            while run > inner and text[run - 1] == "\\":
                run -= 1
            if found - run == slashes:
                return inner, run
            pos = found + 1
        return inner, len(text)
    opener = text[start : start + 1]
    if opener in _CLOSE:
        closer, depth = _CLOSE[opener], 0
        for pos in range(start, len(text)):
            char = text[pos]
            if char == opener:
                depth += 1
            elif char == closer:
                depth -= 1
                if depth == 0:
                    return start, pos + 1
        return start, len(text)
    end = _BARE_END.search(text, start)
    return start, len(text) if end is None else end.start()


def _combine(patterns: Iterable[str], flags: int) -> re.Pattern[str] | None:
    patterns = [p for p in patterns if p]
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{p})" for p in patterns), flags)


class _Budget:
    """Characters of nested text a value may still have parsed (``NESTED_PARSE_BUDGET``)."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = NESTED_PARSE_BUDGET

    def take(self, size: int) -> bool:
        if size > self.left:
            return False
        self.left -= size
        return True


def _clean(rules: Redaction, value: Any, depth: int, budget: _Budget) -> tuple[Any, bool]:
    kind = type(value)
    if kind is str:
        return _clean_string(rules, value, depth, budget)
    if kind is int:
        return (rules.marker, True) if rules.hides_number(value) else (value, False)
    if kind is float or kind is bool or value is None:
        return value, False
    if depth > MAX_DEPTH:  # deeper than any real argument: hide rather than recurse further
        return rules.marker, True
    if kind is dict or (kind is not list and kind is not tuple and isinstance(value, Mapping)):
        out: dict[Any, Any] | None = None
        for i, (k, v) in enumerate(value.items()):
            if type(k) is str and rules.is_secret_key(k):
                new, changed = rules.marker, v != rules.marker
            else:
                new, changed = _clean(rules, v, depth + 1, budget)
            if changed and out is None:
                out = dict(list(value.items())[:i])
            if out is not None:
                out[k] = new
        return (out, True) if out is not None else (value, False)
    if kind is list or kind is tuple:
        items: list[Any] | None = None
        for i, v in enumerate(value):
            new, changed = _clean(rules, v, depth + 1, budget)
            if changed and items is None:
                items = list(value[:i])
            if items is not None:
                items.append(new)
        if items is None:
            return value, False
        return (items if kind is list else tuple(items)), True
    return _clean_other(rules, value, depth, budget)


def _clean_other(rules: Redaction, value: Any, depth: int, budget: _Budget) -> tuple[Any, bool]:
    """Any other object (``@tool`` arguments may be dataclasses, bytes...) is written as its
    ``str`` (``canonical_json``), so that text is what is judged: cleaned as a string when it
    changes, else the object itself."""
    try:
        text = str(value)
    except Exception:  # noqa: BLE001 - an object that cannot say what it is shows nothing
        return rules.marker, True
    cleaned, changed = _clean_string(rules, text, depth, budget)
    return (cleaned, True) if changed else (value, False)


#: How nested text may start: JSON or a Python literal (object, list, tuple, encoded string).
_NESTED_HEADS = frozenset("{[(\"'")


def _clean_string(rules: Redaction, text: str, depth: int, budget: _Budget) -> tuple[str, bool]:
    """A string inside arguments: nested JSON or Python-literal text cleaned and written back
    in its encoding; else, when it assigns a secret key (``password=x``), the marker; else
    value patterns and the length cap."""
    if rules.needs_no_cleaning(text):
        return text, False
    head = text.lstrip()[:1]
    if head in _NESTED_HEADS and depth <= MAX_DEPTH and (depth == 0 or budget.take(len(text))):
        inner = _clean_encoded(rules, text, depth + 1, budget)
        if inner is not None:
            return inner, inner != text
    if rules.mentions_secret_key(text):
        return rules.marker, True
    cleaned = rules.clean_text(text)
    return cleaned, cleaned is not text and cleaned != text


def canonical_json(args: Any) -> str:
    """Arguments as canonical JSON: sorted keys, compact, UTF-8 text (not ``\\u``-escaped).

    Integers beyond 64 bits and non-finite floats keep their value (orjson would refuse the
    first and turn the second into ``null``), through the standard library's encoder.
    """
    if not _needs_stdlib(args, 0):
        try:
            return orjson.dumps(
                args, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
            ).decode()
        except TypeError:
            pass
    return json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _needs_stdlib(value: Any, depth: int) -> bool:
    if isinstance(value, float):
        return not math.isfinite(value)
    if isinstance(value, int):
        return not -_INT64 <= value < _INT64
    if depth > 64:
        return False
    if isinstance(value, Mapping):
        return any(_needs_stdlib(v, depth + 1) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_needs_stdlib(v, depth + 1) for v in value)
    return False


def tool_args_text(rules: Redaction, args: Mapping[str, Any]) -> tuple[str, bool]:
    """The ``tool_args`` attribute for ``args``: redacted canonical JSON, and whether it was cut.

    Fast path: encode first; when the text shows nothing to hide (and no ``null`` that might
    have been a NaN), it is the answer. Otherwise clean the arguments, then encode.
    """
    try:
        text = orjson.dumps(args, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:  # integers beyond 64 bits
        text = ""
    if not text or "null" in text or not rules.needs_no_cleaning(text):
        cleaned, _ = rules.clean(args)
        text = canonical_json(cleaned)
    if len(text) > rules.max_args_bytes:
        return rules.cap(text, rules.max_args_bytes), True
    return text, False


def clean_attribute(rules: Redaction, value: Any) -> tuple[Any, bool]:
    """An attribute value of a tool span with secrets hidden and size capped, and whether changed.

    Structured values are cleaned in place of their items. Text holding JSON (possibly encoded
    twice, as MLflow does) or a Python literal (LangChain) is parsed, cleaned and written back
    in the same encoding; text that cannot be parsed but assigns a secret key is hidden whole.
    """
    kind = type(value)
    if kind is str:
        return _clean_text_attribute(rules, value)
    if kind is int:
        return (rules.marker, True) if rules.hides_number(value) else (value, False)
    if kind is float or kind is bool:
        return value, False
    if isinstance(value, (Mapping, list, tuple)):
        cleaned, changed = rules.clean(value)
        return (cleaned, True) if changed else (value, False)
    return value, False


def values_replaced(rules: Redaction, value: Any) -> tuple[Any, bool]:
    """``value`` (an attribute of a span that is not a tool call: a model's messages, a reply)
    with ``Redaction.replace_values`` applied to its text, at any depth, and card numbers
    given as integers hidden; and whether anything changed. Keys are not looked at: what
    such spans hold is the conversation, whose JSON is left as written (credential shapes
    never span a quote, so JSON text stays JSON)."""
    kind = type(value)
    if kind is str:
        replaced = rules.replace_values(value)
        return replaced, replaced is not value
    if kind is int:
        return (rules.marker, True) if rules.hides_number(value) else (value, False)
    if kind is list or kind is tuple:
        items: list[Any] | None = None
        for i, item in enumerate(value):
            new, changed = values_replaced(rules, item)
            if changed and items is None:
                items = list(value[:i])
            if items is not None:
                items.append(new)
        if items is None:
            return value, False
        return (items if kind is list else tuple(items)), True
    if isinstance(value, Mapping):
        out: dict[Any, Any] | None = None
        for i, (k, v) in enumerate(value.items()):
            new, changed = values_replaced(rules, v)
            if changed and out is None:
                out = dict(list(value.items())[:i])
            if out is not None:
                out[k] = new
        return (out, True) if out is not None else (value, False)
    return value, False


def _clean_text_attribute(rules: Redaction, text: str) -> tuple[str, bool]:
    return _clean_string(rules, text, 0, _Budget())


def _clean_encoded(rules: Redaction, text: str, depth: int, budget: _Budget) -> str | None:
    """JSON or Python-literal text, cleaned and re-encoded in the same language; ``None`` when
    it is neither (or too large to parse as a literal)."""
    try:
        parsed = json.loads(text)
        encode: Callable[[Any], str] = _json_text
    except (ValueError, RecursionError):
        if len(text) > _MAX_LITERAL_CHARS:
            return None
        try:
            parsed = ast.literal_eval(text.strip())
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return None
        encode = repr
    if isinstance(parsed, str):  # text encoded once more (MLflow), or a quoted literal
        cleaned, changed = _clean_string(rules, parsed, depth, budget)
        return encode(cleaned) if changed else text
    if isinstance(parsed, (dict, list, tuple)):
        cleaned, changed = _clean(rules, parsed, depth, budget)
        return encode(cleaned) if changed else text
    if parsed is None or isinstance(parsed, (int, float, complex)):
        return text
    return None  # a set, bytes...: judged as text (hidden whole when it assigns a secret key)


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


#: The rules used when a caller names none: explanations (``tooltrail.score``) and what a
#: judge check sends (``checks.judge_prompts``) are redacted with the same default.
DEFAULT_REDACTION = Redaction()
