"""The one place that picks the reading path: the compiled core (``tooltrail_core``, the
separate distribution in ``core/``) when it is installed, else the Python decoders.

The core reads a protobuf traces record, or an OTLP/JSON line in the collector's canonical
shape, into the same ``Span`` / ``SpanHead`` / ``SpanEvent`` objects the Python decoders make,
or declines it (``None``): any record the Python path would report a problem in, or read
through an unusual spelling. A declined record is decoded by the Python path, the reference,
so diagnostics come from one implementation only. Everything else (framing, compression,
whole JSON documents, JSON inside length-prefixed records, log records) is the Python path's
in this stage, and so is every read without an ``Interest``: the core's spans are what the
converter reads, without the wire form that re-encoding needs (``Span.wire``).

In the facts mode (an ``Interest`` with ``facts``: ``convert.facts.READ_FACTS``, for readers
whose spans go to ``TraceFacts`` only) the core also classifies each span by the dialect
rules (``dialects/rules.json``, handed over as text) and hands out a ``FactSpan``, the
converter's ``SpanFact`` built, for the spans its port covers; any other span comes as a
``Span`` and the Python readers classify it (docs/core-path.md).

``TOOLTRAIL_CORE=python`` picks the Python path. Without the core installed, tooltrail reads
with the Python path and logs that once per process (logger ``tooltrail.core``). The core is
imported on the first read, never by ``tooltrail --help`` or ``import tooltrail.live``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from tooltrail.otlp.decode.lazy import Where
from tooltrail.otlp.decode.limits import Limits
from tooltrail.otlp.decode.pb import spans_from_bytes
from tooltrail.otlp.decode.span import Interest, Span, SpanEvent, SpanHead

#: The switch: ``python`` reads with the Python path even when the core is installed.
CORE_ENV = "TOOLTRAIL_CORE"
#: What ``reading_path()`` says of each path.
CORE, PYTHON = "core", "python"
#: ``reading_path()`` when the core is wanted but cannot be imported.
PYTHON_NO_CORE = "python (the core is not installed)"
#: The one line logged when the core is wanted but not installed.
NOT_INSTALLED = (
    "tooltrail's compiled core (tooltrail-core) is not installed: reading with the Python "
    "path (slower, same results); install it with: pip install ./core"
)

_log = logging.getLogger("tooltrail.core")
_state: dict[str, Any] = {}
#: Whether the notice was logged: once per process, even across ``reset``.
_said: list[bool] = []


def core_module() -> Any:
    """The imported ``tooltrail_core``, or ``None`` for the Python path (switched off, or not
    installed: then said once)."""
    if "module" in _state:
        return _state["module"]
    module = None
    _state["missing"] = False
    if os.environ.get(CORE_ENV, "").strip().lower() != PYTHON:
        try:
            import tooltrail_core as module  # type: ignore[import-not-found,no-redef]
        except ImportError:
            module = None
            _state["missing"] = True
            if not _said:
                _said.append(True)
                _log.warning(NOT_INSTALLED)
    _state["module"] = module
    return module


def reading_path() -> str:
    """``"core <version>"`` when records are read by the compiled core, else ``"python"``
    (switched off) or ``PYTHON_NO_CORE``."""
    module = core_module()
    if module is not None:
        return f"{CORE} {module.__version__}"
    return PYTHON_NO_CORE if _state["missing"] else PYTHON


def reset() -> None:
    """Forget the choice, so that the next read looks at ``TOOLTRAIL_CORE`` again (tests)."""
    _state.clear()


def traces_from_bytes(interest: Interest | None) -> Callable[[bytes, Where], list[Any]]:
    """How a protobuf traces record is decoded: by the core when it is in use and takes the
    record, else by ``decode.pb.spans_from_bytes``. Only for a reader with an ``interest``
    (the converter's): the core's spans do not keep their wire form (``Span.wire``), which a
    reader without one may re-encode."""
    module = core_module() if interest is not None else None
    if module is None:

        def python(data: bytes, where: Where) -> list[Any]:
            return spans_from_bytes(data, where, lazy=True, interest=interest)

        return python
    reader = _readers(module, interest)
    method = "trace_parts" if _parts_mode(module, interest) else "traces"

    def core(data: bytes, where: Where) -> list[Any]:
        made = reader(where.limits)
        spans: list[Any] | None = None
        if made is not None:
            spans = getattr(made, method if _has_facts(made) else "traces")(data, where.origin)
        if spans is None:  # a record the Python path reads (and reports on)
            return spans_from_bytes(data, where, lazy=True, interest=interest)
        return spans

    return core


def json_lines(interest: Interest | None) -> Callable[[bytes, Where], list[Any] | None] | None:
    """How the core reads one OTLP/JSON line (a ``records`` signal's ``from_json_line``):
    its spans, or ``None`` to have the Python path parse (and report on) it; ``None`` itself
    on the Python path, and without an ``interest`` (see ``traces_from_bytes``)."""
    module = core_module() if interest is not None else None
    if module is None:
        return None
    reader = _readers(module, interest)
    method = "json_line_parts" if _parts_mode(module, interest) else "json_line"

    def core(line: bytes, where: Where) -> list[Any] | None:
        made = reader(where.limits)
        if made is None:
            return None
        return getattr(made, method if _has_facts(made) else "json_line")(line, where.origin)  # type: ignore[no-any-return]

    return core


def _facts_mode(module: Any, interest: Interest | None) -> tuple[Any, ...] | None:
    """The facts mode's terms for the core's ``Reader`` (``Interest.facts``), or ``None``:
    spans, for a reader without it, or a core built before the facts mode (it has no
    ``FACTS_MODE``: an older ``tooltrail-core`` reads as before, it does not fail)."""
    if interest is None or interest.facts is None:
        return None
    if getattr(module, "FACTS_MODE", 0) < 1:
        return None
    return interest.facts


#: The core's ``FACTS_MODE`` from which its readers hand out ``TracePart``s.
PARTS_MODE = 2


def _parts_mode(module: Any, interest: Interest | None) -> bool:
    """Whether the core reads for ``interest`` in parts (``Interest.parts``): only in the facts
    mode, and only a core that has them (an older one hands out its spans one by one)."""
    if interest is None or not interest.parts or _facts_mode(module, interest) is None:
        return False
    return bool(getattr(module, "FACTS_MODE", 0) >= PARTS_MODE)


def core_classes() -> tuple[type, type] | None:
    """``(TracePart, CoreTrace)`` of the core in use when it reads in parts, else ``None``: the
    converter's collector tells a part from a span by its class, and keeps a trace of parts in
    a ``CoreTrace``."""
    module = core_module()
    if module is None or getattr(module, "FACTS_MODE", 0) < PARTS_MODE:
        return None
    return module.TracePart, module.CoreTrace


def facts_counts() -> tuple[int, int, int]:
    """``(facts, spans, heads)``: the spans the core's readers of this process (since the last
    ``reset``) handed out as converter facts (``FactSpan``), as whole ``Span`` (spans the
    core's port of the dialect rules does not cover, left to the Python readers) and as
    ``SpanHead``. Zeros on the Python path. To tell how much the facts mode covers."""
    totals = [0, 0, 0]
    for reader in _state.get("readers", {}).values():
        counts = getattr(reader, "counts", None)  # (a core before the facts mode has none)
        for index, count in enumerate(counts() if counts is not None else ()):
            totals[index] += count
    return totals[0], totals[1], totals[2]


def _readers(module: Any, interest: Interest | None) -> Callable[[Limits], Any]:
    """The core's ``Reader`` for ``interest`` and a ``Limits``, made once per process (a reader
    of single requests, ``decode_mixed_json``, asks for it per request); ``None`` when this core
    cannot make one at all (``_made``), and the record goes to the Python path."""
    terms = (
        None
        if interest is None
        else (sorted(interest.names), list(interest.name_prefixes), list(interest.keys))
    )
    made: dict[tuple[Interest | None, Limits], Any] = _state.setdefault("readers", {})
    facts = _facts_mode(module, interest)

    def reader(limits: Limits) -> Any:
        key = (interest, limits)
        if key not in made:
            sizes = (
                limits.max_attribute_value_bytes,
                limits.max_depth,
                limits.max_attributes,
                limits.max_events_per_span,
            )
            made[key] = _made(module, (Span, SpanHead, SpanEvent, terms, sizes), facts)
        return made[key]

    return reader


def _made(module: Any, terms: tuple[Any, ...], facts: tuple[Any, ...] | None) -> Any:
    """A ``Reader`` of ``module``, or ``None``. A core and a package installed from different
    checkouts may not agree: a core that cannot read this package's dialect rules reads
    spans without the facts mode, and one that refuses the classes and limits is not used.
    Either is said once (``MISMATCH``), with the core's own words; nothing is misread."""
    if facts is not None:
        try:
            return module.Reader(*terms, facts)
        except (TypeError, ValueError) as problem:
            say_mismatch(module, "its facts mode is off", problem)
    try:
        made = module.Reader(*terms)
    except (TypeError, ValueError) as problem:
        say_mismatch(module, "reading with the Python path", problem)
        return None
    _state.setdefault("without_facts", set()).add(id(made))
    return made


def _has_facts(reader: Any) -> bool:
    """Whether ``reader`` was made with the facts mode's terms (``_made`` may make one without)."""
    return id(reader) not in _state.get("without_facts", ())


#: The one line logged when the installed core does not fit this tooltrail.
MISMATCH = (
    "tooltrail's compiled core (tooltrail-core {version}) does not fit this tooltrail "
    "({problem}): {what} (same results, slower); install both from one checkout: "
    "pip install . ./core"
)


def say_mismatch(module: Any, what: str, problem: Exception) -> None:
    """Log ``MISMATCH`` for ``module``: once per process for each ``what`` (what is done
    instead)."""
    said: set[str] = _state.setdefault("mismatch", set())
    if what not in said:
        said.add(what)
        version = getattr(module, "__version__", "?")
        _log.warning(MISMATCH.format(version=version, problem=problem, what=what))


def request_reader(
    encoding: str, interest: Interest | None
) -> Callable[[bytes, str, Limits], list[Any] | None] | None:
    """How the core reads one whole OTLP traces request body (``tooltrail serve``'s intake):
    ``protobuf`` (an ``ExportTraceServiceRequest``, over HTTP or gRPC) through
    ``Reader.traces``, ``json`` (one OTLP/JSON document, pretty-printed or not) through
    ``Reader.json_line``. The reader returns the spans, or ``None`` for a body the Python
    decoder must read (and report on). ``None`` itself on the Python path, for another
    encoding, and without an ``interest`` (see ``traces_from_bytes``)."""
    module = core_module() if interest is not None else None
    if module is None or encoding not in ("protobuf", "json"):
        return None
    readers = _readers(module, interest)
    if encoding == "protobuf":

        def protobuf(body: bytes, origin: str, limits: Limits) -> list[Any] | None:
            made = readers(limits)
            return None if made is None else made.traces(body, origin)  # type: ignore[no-any-return]

        return protobuf

    def json(body: bytes, origin: str, limits: Limits) -> list[Any] | None:
        made = readers(limits)
        return None if made is None else made.json_line(body, origin)  # type: ignore[no-any-return]

    return json
