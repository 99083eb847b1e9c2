"""The trace engine's port (``convert/engine.py``): what a suite needs picks how records are
decoded, the switch picks the engine, and the Python engine hands ``otlp`` no decoder of its
own, so its readers decode with ``otlp.decode`` alone."""

from __future__ import annotations

import pytest
from core_paths import HAVE_CORE, engine_reading, needs_core, reading_with
from fixtures import REFUND_DUMP

from tooltrail.convert import engine
from tooltrail.convert.engine import (
    READ_FACTS,
    READ_PARTS,
    SPANS,
    CoreEngine,
    Needs,
    PythonEngine,
    decoding_for,
)
from tooltrail.otlp.decode.span import Span, SpanHead
from tooltrail.otlp.read.mixed import read_spans_and_logs


@pytest.mark.parametrize(
    ("needs", "collected", "decoding"),
    [
        (Needs(), True, READ_PARTS),
        (Needs(usage=True), True, READ_PARTS),
        (Needs(), False, READ_FACTS),
        (Needs(content=True), True, SPANS),
        (Needs(usage=True, content=True), False, SPANS),
    ],
)
def test_what_the_suite_needs_picks_the_decoding(
    needs: Needs, collected: bool, decoding: engine.Decoding
) -> None:
    """Content is read from whole spans (the core's port reads none); else the core's facts
    mode, in parts only for the converter's collector."""
    assert decoding_for(needs, collected=collected) == decoding


def test_the_switch_picks_the_python_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    with reading_with(monkeypatch, engine.PYTHON):
        made = engine.engine()
        assert isinstance(made, PythonEngine)
        assert made.reading_path() == engine.PYTHON
        assert (made.decoders(READ_PARTS), made.parts(), made.builder()) == (None, None, None)
        assert made.request_decoder("protobuf", READ_FACTS) is None
        assert engine.facts_counts() == (0, 0, 0)
        items = list(read_spans_and_logs(REFUND_DUMP, **engine_reading(READ_PARTS)))
    assert items and {type(item) for item in items} <= {Span, SpanHead}


@needs_core
def test_without_the_switch_the_core_is_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    with reading_with(monkeypatch, engine.CORE):
        made = engine.engine()
        assert isinstance(made, CoreEngine)
        assert made.reading_path().startswith(engine.CORE + " ")
        assert made.decoders(SPANS) is not None and made.parts() is not None
        assert engine.engine() is made  # chosen once
        assert made.request_decoder("protobuf", READ_FACTS) is made.request_decoder(
            "protobuf", READ_FACTS
        )
        assert made.request_decoder("zstd", READ_FACTS) is None


def test_the_engine_is_chosen_again_after_reset(monkeypatch: pytest.MonkeyPatch) -> None:
    with reading_with(monkeypatch, engine.PYTHON):
        first = engine.engine()
    with reading_with(monkeypatch, engine.CORE if HAVE_CORE else engine.PYTHON):
        assert engine.engine() is not first
