"""OTLP/JSON flavours seen in the wild, decoded by decode_json_request (no json_format)."""

from __future__ import annotations

import base64
import math

import orjson
import pytest

from tooltrail.otlp import DecodeError, Diagnostic, decode_json_request

TRACE = "5a50218595e4f754599d6af1d3f8d89d"
SPAN = "db1518f67e439f59"
PARENT = "3fb244ff5120ecfc"


def _request(span: dict, *, key="scopeSpans", resource=None) -> dict:
    return {
        "resourceSpans": [
            {
                "resource": resource or {"attributes": []},
                key: [{"scope": {"name": "s"}, "spans": [span]}],
            }
        ]
    }


def _span(**fields) -> dict:
    span = {
        "traceId": TRACE,
        "spanId": SPAN,
        "parentSpanId": PARENT,
        "name": "execute_tool lookup_order",
        "kind": 1,
        "startTimeUnixNano": "1796002339386388406",
        "endTimeUnixNano": "1796002339388009260",
        "status": {},
    }
    span.update(fields)
    return span


def _one(request, **kwargs):
    diagnostics: list[Diagnostic] = []
    spans = decode_json_request(request, diagnostics=diagnostics, **kwargs)
    assert diagnostics == [], diagnostics
    assert len(spans) == 1
    return spans[0]


def test_collector_style_request_decodes_ids_times_and_kind():
    span = _one(orjson.dumps(_request(_span())))
    assert (span.trace_id, span.span_id, span.parent_span_id) == (TRACE, SPAN, PARENT)
    assert (span.start_ns, span.end_ns) == (1796002339386388406, 1796002339388009260)
    assert span.kind == 1 and span.name == "execute_tool lookup_order" and span.scope_name == "s"


def test_upper_case_hex_ids_are_read_as_lower_case():
    span = _one(
        _request(_span(traceId=TRACE.upper(), spanId=SPAN.upper(), parentSpanId=PARENT.upper()))
    )
    assert (span.trace_id, span.span_id, span.parent_span_id) == (TRACE, SPAN, PARENT)


def test_base64_ids_are_recognised_by_their_length():
    b64 = lambda h: base64.b64encode(bytes.fromhex(h)).decode()  # noqa: E731
    span = _one(_request(_span(traceId=b64(TRACE), spanId=b64(SPAN), parentSpanId=b64(PARENT))))
    assert (span.trace_id, span.span_id, span.parent_span_id) == (TRACE, SPAN, PARENT)


@pytest.mark.parametrize("parent", ["", None, "0000000000000000"])
def test_empty_missing_or_zero_parent_means_root(parent):
    fields = _span()
    if parent is None:
        del fields["parentSpanId"]
    else:
        fields["parentSpanId"] = parent
    assert _one(_request(fields)).parent_span_id == ""


def test_times_as_json_numbers_are_exact():
    span = _one(b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"%s","spanId":"%s",'
                b'"startTimeUnixNano":1796002339386388406,"endTimeUnixNano":1796002339388009261}]}]}]}'
                % (TRACE.encode(), SPAN.encode()))  # fmt: skip
    assert (span.start_ns, span.end_ns) == (1796002339386388406, 1796002339388009261)


def test_enum_names_are_accepted_for_kind_and_status():
    span = _one(
        _request(
            _span(kind="SPAN_KIND_CLIENT", status={"code": "STATUS_CODE_ERROR", "message": "boom"})
        )
    )
    assert (span.kind, span.status_code, span.status_message) == (3, 2, "boom")


def test_snake_case_keys_are_accepted():
    request = {
        "resource_spans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"string_value": "svc"}}]
                },
                "scope_spans": [
                    {
                        "scope": {"name": "s"},
                        "spans": [
                            {
                                "trace_id": TRACE, "span_id": SPAN, "parent_span_id": PARENT,
                                "name": "n", "start_time_unix_nano": "5", "end_time_unix_nano": "6",
                                "attributes": [{"key": "n", "value": {"int_value": "7"}}],
                            }
                        ],
                    }
                ],
            }
        ]
    }  # fmt: skip
    span = _one(request)
    assert (span.span_id, span.start_ns, span.end_ns) == (SPAN, 5, 6)
    assert span.resource == {"service.name": "svc"} and dict(span.attributes) == {"n": 7}


def test_pre_2022_instrumentation_library_spans_are_read():
    request = {
        "resourceSpans": [
            {
                "instrumentationLibrarySpans": [
                    {"instrumentationLibrary": {"name": "old"}, "spans": [_span()]}
                ]
            }
        ]
    }
    span = _one(request)
    assert span.scope_name == "old" and span.span_id == SPAN


FALSE = {"boolValue": False}


def test_every_any_value_shape_is_decoded():
    attributes = [
        {"key": "s", "value": {"stringValue": "text"}},
        {"key": "b", "value": {"boolValue": True}},
        {"key": "i", "value": {"intValue": "9007199254740993"}},
        {"key": "i_number", "value": {"intValue": -3}},
        {"key": "d", "value": {"doubleValue": 2.5}},
        {"key": "nan", "value": {"doubleValue": "NaN"}},
        {"key": "inf", "value": {"doubleValue": "-Infinity"}},
        {"key": "y", "value": {"bytesValue": base64.b64encode(b"\x00\xff").decode()}},
        {"key": "a", "value": {"arrayValue": {"values": [{"stringValue": "x"}, {"intValue": 1}]}}},
        {"key": "a_empty", "value": {"arrayValue": {}}},
        {"key": "k", "value": {"kvlistValue": {"values": [{"key": "i", "value": FALSE}]}}},
        {"key": "empty", "value": {}},
    ]  # fmt: skip
    attrs = dict(_one(_request(_span(attributes=attributes))).attributes)
    nan, inf = attrs.pop("nan"), attrs.pop("inf")
    assert math.isnan(nan) and inf == float("-inf")
    assert attrs == {
        "s": "text", "b": True, "i": 9007199254740993, "i_number": -3, "d": 2.5,
        "y": b"\x00\xff", "a": ["x", 1], "a_empty": [], "k": {"i": False}, "empty": None,
    }  # fmt: skip


def test_dict_shaped_attributes_from_json_column_exports_are_read():
    attributes = {"gen_ai.tool.name": "lookup_order", "n": 3, "wrapped": {"stringValue": "w"}}
    attrs = _one(_request(_span(attributes=attributes))).attributes
    assert dict(attrs) == {"gen_ai.tool.name": "lookup_order", "n": 3, "wrapped": "w"}


def test_events_are_decoded_with_their_attributes():
    content = {"key": "content", "value": {"stringValue": '{"a": 1}'}}
    events = [{"timeUnixNano": "7", "name": "gen_ai.tool.message", "attributes": [content]}]
    (event,) = _one(_request(_span(events=events))).events
    assert (event.name, event.time_ns, dict(event.attributes)) == (
        "gen_ai.tool.message",
        7,
        {"content": '{"a": 1}'},
    )


def test_eager_and_lazy_decoding_agree():
    attributes = [
        {
            "key": "k",
            "value": {"kvlistValue": {"values": [{"key": "x", "value": {"intValue": "1"}}]}},
        }
    ]
    lazy = _one(_request(_span(attributes=attributes)), lazy=True)
    eager = _one(_request(_span(attributes=attributes)), lazy=False)
    assert type(eager.attributes) is dict
    assert lazy.attributes == eager.attributes == {"k": {"x": 1}}


def test_logs_documents_hold_no_spans():
    assert decode_json_request({"resourceLogs": []}) == []


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        ({"resourceSpans": {"not": "a list"}}, "resourceSpans"),
        ({"resourceSpans": [{"scopeSpans": "nope"}]}, "resourceSpans[0].scopeSpans"),
        ({"something": 1}, "resourceSpans"),
        ([1, 2], "(document)"),
    ],
)
def test_a_structurally_bad_request_raises_with_the_field_path(request_, field):
    with pytest.raises(DecodeError) as raised:
        decode_json_request(request_)
    assert raised.value.field == field


def test_invalid_json_text_raises():
    with pytest.raises(DecodeError, match="invalid JSON"):
        decode_json_request(b'{"resourceSpans": [')
