# The Python API of tooltrail's compiled core (core/src/py/): shipped in the wheel as the
# module's stub (with py.typed), and read by mypy from this checkout too ([tool.mypy]
# mypy_path), whether or not the core is installed. The core takes the classes of
# tooltrail's objects as arguments instead of importing them, so what it makes of them is
# typed `object` here; a class handed in for the facts mode or the builder must have
# `__match_args__` starting with the fields the core fills by position (checked when the
# `Reader` or `Builder` is made: a `ValueError` otherwise). tests/architecture/
# test_core_stub.py holds this file to the module's names.

from collections.abc import Callable, Iterable, Sequence
from typing import Final, final

__version__: Final[str]
#: What `Reader` takes: 1, its `facts` argument; 2, and it reads in parts (`trace_parts`,
#: `CoreTrace`, `Builder.build_core`).
FACTS_MODE: Final[int]

#: A class the core makes objects of, called with the fields by position.
_Class = Callable[..., object]
#: `(names, name_prefixes, keys)` of an `otlp.decode.span.Interest`.
_Interest = tuple[Sequence[str], Sequence[str], Sequence[str]]
#: `(max_attribute_value_bytes, max_depth, max_attributes, max_events_per_span)`.
_Limits = tuple[int, int, int, int]
#: `(rules.json's text, FactSpan, SpanFact, DialectCall, ModelCall)`.
_FactsTerms = tuple[str, _Class, _Class, _Class, _Class]

@final
class Reader:
    """Reads records for one set of classes (`Span`, `SpanHead`, `SpanEvent`), interest and
    limits; in the facts mode (`facts`), spans the port covers as their converter facts."""

    def __new__(
        cls,
        span: _Class,
        head: _Class,
        event: _Class,
        interest: _Interest | None,
        limits: _Limits,
        facts: _FactsTerms | None = None,
    ) -> Reader: ...
    def counts(self) -> tuple[int, int, int]:
        """`(facts, spans, heads)` handed out so far."""
    def traces(self, data: bytes, origin: str) -> list[object] | None:
        """The spans of one protobuf traces message, or `None` for the Python decoder."""
    def trace_parts(self, data: bytes, origin: str) -> list[object] | None:
        """As `traces`, heads and fact spans in `TracePart`s (facts mode only)."""
    def json_line(self, line: bytes, origin: str) -> list[object] | None:
        """The spans of one OTLP/JSON line, or `None` for the Python path."""
    def json_line_parts(self, line: bytes, origin: str) -> list[object] | None:
        """As `json_line`, in `TracePart`s (facts mode only)."""

@final
class TracePart:
    """Consecutive spans of one trace of one record, held in Rust (made by
    `Reader.trace_parts` and `Reader.json_line_parts` only: no constructor)."""

    @property
    def trace_id(self) -> str: ...
    @property
    def count(self) -> int: ...
    @property
    def origin(self) -> str: ...
    def fact_spans(self) -> list[object]:
        """The part's `FactSpan`s and `SpanHead`s; takes the part."""

@final
class CoreTrace:
    """One trace collected in Rust from `TracePart`s, as `TraceFacts.add` collects spans."""

    def __new__(cls, trace_id: str, max_spans: int, read_usage: bool) -> CoreTrace: ...
    def add(self, part: TracePart) -> None:
        """Record the spans of `part` (of this trace; it is taken)."""
    @property
    def trace_id(self) -> str: ...
    @property
    def max_spans(self) -> int: ...
    @property
    def span_count(self) -> int: ...
    @property
    def dropped(self) -> int: ...
    @property
    def conversation_id(self) -> str | None: ...
    @property
    def case_id(self) -> str | None: ...
    @property
    def log_events(self) -> None: ...
    @property
    def read_usage(self) -> bool: ...
    @property
    def read_content(self) -> bool: ...
    def export(self) -> dict[str, object]:
        """The keyword arguments of the equal `TraceFacts`."""

@final
class Builder:
    """Builds `EvalTrace`s of `TraceFacts` or `CoreTrace`s.

    `classes`: `(EvalTrace, ToolCall, Turn, deferred_spans, AgentSpan)` of `tooltrail.model`;
    `rules`: `(calls.fits, calls.lost_precision, final.is_final_answer, final.final_text)`.
    """

    def __new__(
        cls,
        classes: tuple[
            _Class, _Class, _Class, Callable[[list[tuple[object, ...]]], object], _Class
        ],
        rules: tuple[
            Callable[[object, object], object],
            Callable[[object, object], object],
            Callable[[str, str], object],
            Callable[[object], str | None],
        ],
    ) -> Builder: ...
    def build(self, traces: Iterable[object]) -> object | None:
        """The `EvalTrace` of a sequence of `TraceFacts`, or `None` for the Python builder."""
    def build_core(self, traces: Iterable[CoreTrace]) -> object | None:
        """The `EvalTrace` of a sequence of `CoreTrace`s, or `None` for the Python builder."""
    def counts(self) -> tuple[int, int, int, int]:
        """`(built, declined for a field's shape, for a comparison that raised, for no trace)`."""

@final
class Screen:
    """Redaction's first look: whether a text surely holds nothing to hide.

    `names`: the normalized key names; `anchors`: `(anchor, allowed, count, words, behind)` per
    anchor of the credential shapes (`credentials.Guard`); `cards`: card numbers are looked for;
    `shortest`: the shortest credential. `ValueError` for a name or anchor beyond ASCII,
    or more names or anchors than it holds.
    """

    def __new__(
        cls,
        names: Sequence[str],
        anchors: Sequence[tuple[str, str, int, Sequence[str], str]],
        cards: bool,
        shortest: int,
    ) -> Screen: ...
    def clear(self, text: str) -> bool:
        """`True` only when `text` holds no key name, escape or credential; `False`: maybe."""
    def clear_strings(
        self,
        values: dict[str, object],
        skip: frozenset[str],
        max_chars: int,
        extra: str | None = None,
    ) -> int | None:
        """How many strings there are (`extra` and the values not under a key of `skip`) when
        each is at most `max_chars` long and `clear`, and every other value is an `int`, a
        `float` or a `bool`; `None` for anything else."""
