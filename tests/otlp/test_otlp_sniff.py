"""Protobuf files whose first bytes read as JSON white space: every protobuf request starts with
a newline (field 1, length-delimited), and the length bytes after it can be white space too.
Found by the re-encoding property test (``\\n \\n\\n``: a 32-byte ResourceSpans whose Resource
is 10 bytes); these cases spell it out."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

from tooltrail.otlp import Diagnostic, read_spans
from tooltrail.otlp.read.records import is_json_record

WHITE = b" \t\r\n"


def _message(resource_value: str, schema_url: str) -> bytes:
    """A first ResourceSpans with a resource and a schema URL only (short enough for its
    length byte to be white space), then one with a span."""
    data = TracesData()
    first = data.resource_spans.add(schema_url=schema_url)
    first.resource.attributes.add(key="k").value.string_value = resource_value
    second = data.resource_spans.add()
    second.scope_spans.add().spans.add(trace_id=b"\1" * 16, span_id=b"\2" * 8, name="x")
    return data.SerializeToString()


def _white_headed() -> list[bytes]:
    """Messages whose first four bytes are all JSON white space, or white space then ``{``."""
    found = []
    for value in range(0, 40):
        for url in range(0, 140):
            body = _message("v" * value, "u" * url)
            head = body[:4].lstrip(WHITE)
            if body[:2] != b"\n{" and head[:1] in (b"", b"{"):
                found.append(body)
    return found


WHITE_HEADED = _white_headed()


def test_such_messages_exist():
    heads = {body[:4] for body in WHITE_HEADED}
    assert b"\n \n\n" in heads  # the property test's case
    assert len(heads) >= 2


@pytest.mark.parametrize("body", WHITE_HEADED[:8], ids=lambda b: repr(b[:4]))
def test_a_protobuf_file_starting_with_white_space_is_read_as_protobuf(tmp_path: Path, body):
    path = tmp_path / "one.pb"
    path.write_bytes(body)
    diagnostics: list[Diagnostic] = []
    assert len(list(read_spans([str(path)], diagnostics=diagnostics))) == 1
    assert diagnostics == []
    assert not is_json_record(body)  # the batch planner's and chunk reader's rule


def test_json_lines_after_blank_lines_stay_json(tmp_path: Path):
    line = (
        b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"01010101010101010101010101010101",'
        b'"spanId":"0202020202020202","name":"x"}]}]}]}'
    )
    path = tmp_path / "spans.jsonl"
    path.write_bytes(b"\n\n" + line + b"\n" + line.replace(b'"x"', b'"y"') + b"\n")
    diagnostics: list[Diagnostic] = []
    names = [span.name for span in read_spans([str(path)], diagnostics=diagnostics)]
    assert names == ["x", "y"]
    assert diagnostics == []
    assert is_json_record(b"\n\n" + line)
