"""OTLP/JSON lines through the compiled core: what its faster reading of a line must keep.

The core checks a line's UTF-8 once, as a whole, before parsing it (``core/src/json.rs``,
``parse``): a line with invalid UTF-8 anywhere is the Python path's to report, even where the
core only skips over the bytes (``links``, a scope's other members), as the Python path's
parsers refuse the whole line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_engine_differential import _SMALL, _line, _Part, _reader, assert_same, needs_core

from tooltrail import dialects
from tooltrail.convert import engine as core
from tooltrail.otlp import Limits
from tooltrail.otlp.read import ranges, records
from tooltrail.otlp.read.ranges import read_range
from tooltrail.otlp.read.records import iter_records

#: Bytes that are not UTF-8, in members the core reads and in members it only skips.
INVALID_UTF8 = {
    "in links": _line(links='[{"note":"BAD"}]'),
    "in a scope's version": _line().replace(
        b'"scopeSpans":[{', b'"scopeSpans":[{"scope":{"name":"s","version":"BAD"},'
    ),
    "in a resource member": _line().replace(
        b'{"scopeSpans"', b'{"resource":{"attributes":[],"note":"BAD"},"scopeSpans"'
    ),
    "in a span name": _line(name='"BAD"'),
}


@needs_core
@pytest.mark.parametrize("name", sorted(INVALID_UTF8))
def test_a_line_with_invalid_utf8_is_reported_as_by_the_python_path(
    name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bad = INVALID_UTF8[name].replace(b"BAD", b"x\xff\xfey")
    assert bad != INVALID_UTF8[name]
    assert _reader().json_line(INVALID_UTF8[name], "in.jsonl:1") is not None
    assert _reader().json_line(bad, "in.jsonl:2") is None
    path = tmp_path / "bad.jsonl"
    path.write_bytes(_line() + bad + _line(spanId='"0102030405060709"'))
    assert_same(path, monkeypatch, usage=True, content=True, limits=_SMALL)


def _padded(n: int, size: int) -> bytes:
    """A JSON line of one span (span id ``n``) padded to ``size`` bytes with an attribute."""
    line = _line(spanId=f'"{n + 1:016x}"', attributes=_PAD.format(""))
    pad = "p" * (size - len(line))
    return _line(spanId=f'"{n + 1:016x}"', attributes=_PAD.format(pad))


_PAD = '[{{"key":"pad","value":{{"stringValue":"{}"}}}}]'


@pytest.mark.parametrize("which", ["core", "python"])
@pytest.mark.parametrize("reader", ["records", "ranges"])
def test_lines_across_the_read_buffer_keep_their_file_and_line(
    which: str, reader: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A plain file's JSON lines are read through a buffer of their own (``LINES_BUFFER_BYTES``,
    in ``iter_records`` and in the batch pass's ``read_range``): lines shorter and longer than
    it, ending on and across its edges, blank runs and a line over the record limit between
    them, read as they are, with their line numbers."""
    buffer = 4096
    monkeypatch.setattr(records, "LINES_BUFFER_BYTES", buffer)
    monkeypatch.setattr(ranges, "LINES_BUFFER_BYTES", buffer)
    if which == "python":
        monkeypatch.setenv(core.CORE_ENV, core.PYTHON)
    else:
        monkeypatch.delenv(core.CORE_ENV, raising=False)
    core.reset()
    sizes = [buffer - 300, 300, buffer, 3 * buffer + 7, 500, 2 * buffer - 1, 40_000]
    lines = [_padded(n, size) for n, size in enumerate(sizes)]
    assert [len(line) for line in lines] == sizes
    over = b'{"resourceSpans":[' + b" " * 60_000 + b"]}\n"  # over the limit below
    body = lines[0] + lines[1] + b"\n" * (buffer + 5) + lines[2] + lines[3] + over
    body += lines[4] + b"  \r\n" + lines[5] + lines[6].rstrip(b"\n")  # no final newline
    path = tmp_path / "long.jsonl"
    path.write_bytes(body)
    diagnostics: list[Any] = []
    limits = Limits(max_record_bytes=50_000)
    if reader == "records":
        found = iter_records(path, limits=limits, diagnostics=diagnostics)
        read = [(record.line, [span.span_id for span in record.spans]) for record in found]
    else:
        part = _Part(str(path), "lines", 0, None)
        found_ = read_range(part, limits, diagnostics, dialects.INTEREST)
        read = [(extent.line, [span.span_id for span in spans]) for extent, spans in found_]
    core.reset()
    after_blank = 3 + buffer + 5
    want_lines = [1, 2, after_blank, after_blank + 1, after_blank + 3, after_blank + 5]
    want_lines.append(after_blank + 6)
    assert read == [(line, [f"{n + 1:016x}"]) for n, line in enumerate(want_lines)]
    assert [(d.line, d.message) for d in diagnostics] == [
        (after_blank + 2, "line longer than the 50000 byte record limit; skipped")
    ]
