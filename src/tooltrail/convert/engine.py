"""The trace engine: the one place that names either engine and picks one.

Records come in framed, with their origin, from ``otlp.read``; traces go out built
(``EvalTrace``), with diagnostics. Between the two, every stage can be done by the Python
converter (the reference) or by the compiled core (``tooltrail_core``, the separate
distribution in ``core/``): decoding a record, classifying its spans by the dialect rules,
collecting a trace, building it. ``engine()`` is the choice, made once per process:
``PythonEngine``, or ``CoreEngine`` when the core is installed and ``TOOLTRAIL_CORE=python``
is not set. Without the core installed, tooltrail reads with the Python engine and logs that
once per process (logger ``tooltrail.core``). The core is imported on the first read, never
by ``tooltrail --help`` or ``import tooltrail.live``.

What a consumer asks of the engine is typed, not picked from flags:

- ``Needs``: what the suite reads besides the calls (usage, content), given by whoever runs it;
- ``decoding_for(needs, collected)``: how its records are decoded, as a ``Decoding``;
- ``TraceEngine.decoders(decoding)``: the ``RecordDecoders`` ``otlp.read`` calls first (the
  core's; ``None`` on the Python engine), ``TraceEngine.request_decoder`` for ``serve``'s
  request bodies;
- ``TraceEngine.parts()``: the core's classes of a run of spans and of a trace it keeps, for
  ``convert.collect.TraceCollector``; ``TraceEngine.builder()``: the core's builder, for
  ``convert.build.build_eval_trace``.

The core declines whatever it does not read exactly as the Python engine would: a record
with anything to report (decoded by the Python decoders, so diagnostics come from one
implementation), a span its port of the dialect rules does not cover (handed out as a
``Span``, classified in Python, counted: ``facts_counts``), a trace whose fields it cannot
build (built in Python, counted: ``build_counts``). A new dialect rule that needs code may be
written in the Python engine alone, where the core declines the spans it concerns
(docs/architecture.md, "Where a change goes").
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tooltrail import dialects
from tooltrail.convert.calls import fits, lost_precision
from tooltrail.convert.facts import CoreTrace, FactSpan, SpanFact
from tooltrail.dialects import DialectCall, ModelCall, rules
from tooltrail.dialects.final import final_text, is_final_answer
from tooltrail.model import AgentSpan, EvalTrace, ToolCall, Turn, deferred_spans
from tooltrail.otlp.decode.lazy import Where
from tooltrail.otlp.decode.limits import Limits
from tooltrail.otlp.decode.span import Interest, Span, SpanEvent, SpanHead
from tooltrail.otlp.read.decoders import RecordDecoders
from tooltrail.redact import install_first_look

#: The switch: ``python`` reads with the Python engine even when the core is installed.
CORE_ENV = "TOOLTRAIL_CORE"
#: What ``reading_path()`` says of each engine.
CORE, PYTHON = "core", "python"
#: ``reading_path()`` when the core is wanted but cannot be imported.
PYTHON_NO_CORE = "python (the core is not installed)"
#: The one line logged when the core is wanted but not installed.
NOT_INSTALLED = (
    "tooltrail's compiled core (tooltrail-core) is not installed: reading with the Python "
    "path (slower, same results); install it with: pip install ./core"
)
#: The one line logged when the installed core does not fit this tooltrail.
MISMATCH = (
    "tooltrail's compiled core (tooltrail-core {version}) does not fit this tooltrail "
    "({problem}): {what} (same results, slower); install both from one checkout: "
    "pip install . ./core"
)
#: The core's ``FACTS_MODE`` from which its readers hand out ``FactSpan``s, and ``TracePart``s.
FACTS_MODE, PARTS_MODE = 1, 2

_log = logging.getLogger("tooltrail.core")
_state: dict[str, Any] = {}
#: Whether the notice was logged: once per process, even across ``reset``.
_said: list[bool] = []
#: The core's builder, made once per core module, even across ``reset`` (its counts are the
#: process's): ``[(module, builder)]``.
_builders: list[tuple[Any, CoreBuilder | None]] = []


@dataclass(frozen=True, slots=True)
class Needs:
    """What the traces are read for besides their calls: what each trace used (``usage``:
    model calls, tokens, turn latencies, for the budget checks) and what was said and
    returned (``content``: tool results, each turn's input and reply, for judges). Whoever
    runs a suite says so from its checks (``score``'s needs of a suite)."""

    usage: bool = False
    content: bool = False


@dataclass(frozen=True, slots=True)
class Decoding:
    """How a consumer's records are decoded. Spans outside ``interest`` come as ``SpanHead``.
    ``facts``: the core classifies the spans its port of the dialect rules covers and hands
    out ``FactSpan``s (for consumers whose spans go to ``TraceFacts`` only); ``parts``: it
    keeps them and hands out a ``TracePart`` per run of one trace's spans (for the
    converter's collector only). The Python engine reads the same either way."""

    interest: Interest
    facts: bool = False
    parts: bool = False


#: Spans: every span of interest decoded whole.
SPANS = Decoding(dialects.INTEREST)
#: The facts mode, span by span (``serve``, which keeps what it receives).
READ_FACTS = Decoding(dialects.INTEREST, facts=True)
#: The facts mode in parts (``read_traces``, the batch pass).
READ_PARTS = Decoding(dialects.INTEREST, facts=True, parts=True)


def decoding_for(needs: Needs, *, collected: bool = True) -> Decoding:
    """How records are decoded for ``needs``: whole spans when content is read (the core's
    port reads none), else the facts mode, in parts when the spans go to the converter's
    collector (``collected``), one by one when the consumer keeps them itself (``serve``)."""
    if needs.content:
        return SPANS
    return READ_PARTS if collected else READ_FACTS


#: Reads one whole OTLP traces request body: its spans, or ``None`` for the Python decoder.
RequestDecoder = Callable[[bytes, str, Limits], list[Any] | None]


class CoreBuilder(Protocol):
    """The core's ``Builder``: an ``EvalTrace`` from open traces, or ``None`` to have the
    Python builder build it (``convert.build``)."""

    def build(self, traces: Sequence[Any]) -> EvalTrace | None: ...
    def build_core(self, traces: Sequence[Any]) -> EvalTrace | None: ...
    def counts(self) -> tuple[int, int, int, int]: ...


@dataclass(frozen=True, slots=True)
class PartKinds:
    """The core's classes of a run of spans (``TracePart``) and of the trace it keeps of such
    runs (``CoreTrace``), for ``convert.collect.TraceCollector``."""

    part: type
    trace: Callable[[str, int, bool], CoreTrace]


class TraceEngine(Protocol):
    """The port: what the readers, the collector and the builder ask of an engine."""

    def reading_path(self) -> str:
        """``"core <version>"``, ``"python"`` or ``PYTHON_NO_CORE``."""
        ...

    def decoders(self, decoding: Decoding) -> RecordDecoders | None:
        """The decoders ``otlp.read`` tries first for ``decoding``; ``None``: its own."""
        ...

    def request_decoder(self, encoding: str, decoding: Decoding) -> RequestDecoder | None:
        """The reader of one ``protobuf`` or ``json`` request body; ``None``: the Python one."""
        ...

    def parts(self) -> PartKinds | None:
        """The classes of the runs of spans the engine keeps; ``None``: it keeps none."""
        ...

    def builder(self) -> CoreBuilder | None:
        """The builder tried before the Python one; ``None``: the Python one alone."""
        ...


class PythonEngine:
    """The reference: otlp's decoders, the Python dialect readers, collector and builder."""

    def __init__(self, path: str = PYTHON) -> None:
        self.path = path

    def reading_path(self) -> str:
        return self.path

    def decoders(self, decoding: Decoding) -> RecordDecoders | None:
        return None

    def request_decoder(self, encoding: str, decoding: Decoding) -> RequestDecoder | None:
        return None

    def parts(self) -> PartKinds | None:
        return None

    def builder(self) -> CoreBuilder | None:
        return None


class CoreEngine:
    """The compiled core: its ``Reader`` decodes (and in the facts mode classifies and keeps)
    what it reads exactly as the Python engine would, its ``Builder`` builds; either declines
    the rest to the Python engine."""

    def __init__(self, module: Any) -> None:
        self.module = module
        #: The core's readers, one per (decoding, limits); ``None`` where the core cannot make one.
        self.readers: dict[tuple[Decoding, Limits], Any] = {}
        #: Readers made without the facts mode's terms (a core that cannot read these rules).
        self.without_facts: set[int] = set()
        #: The request decoders made, by (encoding, decoding): ``serve`` asks per request.
        self.request_decoders: dict[tuple[str, Decoding], RequestDecoder] = {}

    def reading_path(self) -> str:
        return f"{CORE} {self.module.__version__}"

    def decoders(self, decoding: Decoding) -> RecordDecoders:
        reader = self._reader_of(decoding)
        parts = self._parts(decoding)
        without_facts = self.without_facts

        def decoder(in_parts: str, in_spans: str) -> Callable[[bytes, Where], list[Any] | None]:
            """A record decoder calling the reader's method ``in_parts`` when it reads in
            parts, else ``in_spans``."""

            def decode(data: bytes, where: Where) -> list[Any] | None:
                made = reader(where.limits)
                if made is None:
                    return None
                method = in_parts if parts and id(made) not in without_facts else in_spans
                return getattr(made, method)(data, where.origin)  # type: ignore[no-any-return]

            return decode

        return RecordDecoders(
            protobuf=decoder("trace_parts", "traces"),
            json_line=decoder("json_line_parts", "json_line"),
        )

    def request_decoder(self, encoding: str, decoding: Decoding) -> RequestDecoder | None:
        if encoding not in ("protobuf", "json"):
            return None
        key = (encoding, decoding)
        known = self.request_decoders.get(key)
        if known is None:
            known = self.request_decoders[key] = self._request_decoder(encoding, decoding)
        return known

    def _request_decoder(self, encoding: str, decoding: Decoding) -> RequestDecoder:
        reader = self._reader_of(decoding)
        method = "traces" if encoding == "protobuf" else "json_line"

        def decode(body: bytes, origin: str, limits: Limits) -> list[Any] | None:
            made = reader(limits)
            return None if made is None else getattr(made, method)(body, origin)  # type: ignore[no-any-return]

        return decode

    def parts(self) -> PartKinds | None:
        if getattr(self.module, "FACTS_MODE", 0) < PARTS_MODE:
            return None
        return PartKinds(part=self.module.TracePart, trace=self.module.CoreTrace)

    def builder(self) -> CoreBuilder | None:
        if not _builders or _builders[0][0] is not self.module:
            _builders[:] = [(self.module, self._made_builder())]
        return _builders[0][1]

    def facts_counts(self) -> tuple[int, int, int]:
        """``(facts, spans, heads)`` its readers handed out (``facts_counts``)."""
        totals = [0, 0, 0]
        for reader in self.readers.values():
            counts = getattr(reader, "counts", None)  # (a core before the facts mode has none)
            for index, count in enumerate(counts() if counts is not None else ()):
                totals[index] += count
        return totals[0], totals[1], totals[2]

    def build_counts(self) -> tuple[int, int, int, int]:
        """What its builder built and declined (``build_counts``), if it made one."""
        builder = _builders[0][1] if _builders and _builders[0][0] is self.module else None
        return (0, 0, 0, 0) if builder is None else builder.counts()

    def _made_builder(self) -> CoreBuilder | None:
        made = getattr(self.module, "Builder", None)
        if made is None:  # (a core built before the builder's port has none)
            return None
        try:
            return made(  # type: ignore[no-any-return]
                (EvalTrace, ToolCall, Turn, deferred_spans, AgentSpan),
                (fits, lost_precision, is_final_answer, final_text),
            )
        except (TypeError, ValueError) as problem:  # a core of another release
            say_mismatch(self.module, "traces are built by the Python builder", problem)
            return None

    def _facts_terms(self, decoding: Decoding) -> tuple[Any, ...] | None:
        """The facts mode's terms for the core's ``Reader``: the dialect rules (the text of
        ``dialects/rules.json``, the one statement of them) and the classes it builds; or
        ``None`` for spans, and for a core built before the facts mode (it reads as before,
        it does not fail)."""
        if not decoding.facts or getattr(self.module, "FACTS_MODE", 0) < FACTS_MODE:
            return None
        return (rules.TEXT, FactSpan, SpanFact, DialectCall, ModelCall)

    def _parts(self, decoding: Decoding) -> bool:
        """Whether the core reads for ``decoding`` in parts: only in the facts mode, and only
        a core that has them (an older one hands out its spans one by one)."""
        if not decoding.parts or self._facts_terms(decoding) is None:
            return False
        return bool(getattr(self.module, "FACTS_MODE", 0) >= PARTS_MODE)

    def _reader_of(self, decoding: Decoding) -> Callable[[Limits], Any]:
        """The core's ``Reader`` for ``decoding`` and a ``Limits``, made once per process (a
        reader of single requests asks for it per request); ``None`` when this core cannot
        make one at all, and the record goes to the Python decoders."""
        interest = decoding.interest
        terms = (sorted(interest.names), list(interest.name_prefixes), list(interest.keys))
        facts = self._facts_terms(decoding)
        made = self.readers

        def reader(limits: Limits) -> Any:
            key = (decoding, limits)
            if key not in made:
                sizes = (
                    limits.max_attribute_value_bytes,
                    limits.max_depth,
                    limits.max_attributes,
                    limits.max_events_per_span,
                )
                made[key] = self._made_reader((Span, SpanHead, SpanEvent, terms, sizes), facts)
            return made[key]

        return reader

    def _made_reader(self, terms: tuple[Any, ...], facts: tuple[Any, ...] | None) -> Any:
        """A ``Reader`` of the core, or ``None``. A core and a package installed from
        different checkouts may not agree: a core that cannot read this package's dialect
        rules reads spans without the facts mode, and one that refuses the classes and limits
        is not used. Either is said once (``MISMATCH``), with the core's own words; nothing
        is misread."""
        if facts is not None:
            try:
                return self.module.Reader(*terms, facts)
            except (TypeError, ValueError) as problem:
                say_mismatch(self.module, "its facts mode is off", problem)
        try:
            made = self.module.Reader(*terms)
        except (TypeError, ValueError) as problem:
            say_mismatch(self.module, "reading with the Python path", problem)
            return None
        if facts is not None:
            self.without_facts.add(id(made))
        return made


def engine() -> TraceEngine:
    """The engine of this process: the core's when it is in use, else the Python one."""
    made: TraceEngine | None = _state.get("engine")
    if made is None:
        module = core_module()
        if module is not None:
            made = CoreEngine(module)
        else:
            made = PythonEngine(PYTHON_NO_CORE if _state["missing"] else PYTHON)
        _state["engine"] = made
    return made


def core_module() -> Any:
    """The imported ``tooltrail_core``, or ``None`` for the Python engine (switched off, or
    not installed: then said once)."""
    if "module" in _state:
        return _state["module"]
    module, missing = _imported_core()
    _state["missing"] = missing
    if missing and not _said:
        _said.append(True)
        _log.warning(NOT_INSTALLED)
    _state["module"] = module
    _redact_with(module)
    return module


def _imported_core() -> tuple[Any, bool]:
    """``(tooltrail_core or None, whether it is wanted but not installed)``: ``None`` too when
    the switch says ``python``."""
    if os.environ.get(CORE_ENV, "").strip().lower() == PYTHON:
        return None, False
    try:
        return importlib.import_module("tooltrail_core"), False
    except ImportError:
        return None, True


def _redact_with(module: Any) -> None:
    """Redaction's first look (``tooltrail.redact.install_first_look``): the core's ``Screen``
    when ``module`` has one (a core from before it has not), else the Python screen alone."""
    install_first_look(getattr(module, "Screen", None) if module is not None else None)


def use_compiled_redaction() -> None:
    """Give redaction the core's first look in a process that reads no records (the live
    processor), which would not import the core otherwise: when it is installed and not
    switched off, quietly (nothing is read, so nothing is said when it is missing)."""
    if "module" in _state:
        return  # ``core_module`` chose, and installed what it found
    _redact_with(_imported_core()[0])


def reading_path() -> str:
    """How records are read: ``"core <version>"`` by the compiled core, else ``"python"``
    (switched off) or ``PYTHON_NO_CORE``."""
    return engine().reading_path()


def reset() -> None:
    """Forget the choice, so that the next read looks at ``TOOLTRAIL_CORE`` again (tests)."""
    _state.clear()


def core_classes() -> PartKinds | None:
    """The core's part classes when the engine in use reads in parts, else ``None``."""
    return engine().parts()


def facts_counts() -> tuple[int, int, int]:
    """``(facts, spans, heads)``: the spans the core's readers of this process (since the last
    ``reset``) handed out as converter facts (``FactSpan``), as whole ``Span`` (spans the
    core's port of the dialect rules declines, left to the Python readers) and as
    ``SpanHead``. Zeros on the Python engine. To tell how much the facts mode covers."""
    made = engine()
    return made.facts_counts() if isinstance(made, CoreEngine) else (0, 0, 0)


def build_counts() -> tuple[int, int, int, int]:
    """``(built, declined for a field's shape, for a comparison that raised, for no trace)``:
    the traces the core's builder of this process built, and those it left to the Python
    builder. Zeros on the Python engine. To tell how much the core builds."""
    made = engine()
    return made.build_counts() if isinstance(made, CoreEngine) else (0, 0, 0, 0)


def say_mismatch(module: Any, what: str, problem: Exception) -> None:
    """Log ``MISMATCH`` for ``module``: once per process for each ``what`` (what is done
    instead)."""
    said: set[str] = _state.setdefault("mismatch", set())
    if what not in said:
        said.add(what)
        version = getattr(module, "__version__", "?")
        _log.warning(MISMATCH.format(version=version, problem=problem, what=what))
