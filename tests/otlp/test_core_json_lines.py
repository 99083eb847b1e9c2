"""OTLP/JSON lines through the compiled core: what its faster reading of a line must keep.

The core checks a line's UTF-8 once, as a whole, before parsing it (``core/src/json.rs``,
``parse``): a line with invalid UTF-8 anywhere is the Python path's to report, even where the
core only skips over the bytes (``links``, a scope's other members), as the Python path's
parsers refuse the whole line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_core_differential import _SMALL, _line, _reader, assert_same, needs_core

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
