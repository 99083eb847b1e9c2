//! One OTLP/JSON traces line in the collector's canonical shape (lowerCamelCase keys, hex ids,
//! attributes as lists of `{key, value}`) read into the values the Python path's typed reader
//! (`otlp/decode/jsontyped.py`) hands on. Anything else, and anything that reader would report
//! a problem in, now or when a value is first read, is `Fallback`: the Python path reads it.
//!
//! The line is deserialized into structs that borrow its strings (unescaped ones), with the
//! typed reader's rules: unknown members refused, `null` only where it allows one.

use std::borrow::Cow;

use serde::de::{self, Deserializer, IgnoredAny, Visitor};
use serde::Deserialize;

use crate::keys::has_repeated_key;
use crate::traces::{AnyValue, Event, Limits, Resource, Scope, Span};
use crate::wire::{Fallback, Read};

type Text<'a> = Cow<'a, str>;

/// A field that may be absent but not `null` (serde reads `null` as `None` otherwise).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request<'a> {
    #[serde(rename = "resourceSpans", borrow)]
    resource_spans: Vec<ResourceSpans<'a>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ResourceSpans<'a> {
    #[serde(default, borrow)]
    resource: Option<ResourceJson<'a>>,
    #[serde(rename = "scopeSpans", default, borrow)]
    scope_spans: Option<Vec<ScopeSpans<'a>>>,
    #[serde(rename = "schemaUrl", default, borrow)]
    _schema_url: Text<'a>,
}

/// Plain JSON in the typed reader: only its attributes are read, other members pass.
#[derive(Deserialize)]
struct ResourceJson<'a> {
    #[serde(default, borrow)]
    attributes: Option<Vec<KeyValue<'a>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScopeSpans<'a> {
    #[serde(default, borrow)]
    scope: Option<ScopeJson<'a>>,
    #[serde(default, borrow)]
    spans: Option<Vec<SpanJson<'a>>>,
    #[serde(rename = "schemaUrl", default, borrow)]
    _schema_url: Text<'a>,
}

#[derive(Deserialize)]
struct ScopeJson<'a> {
    #[serde(default, borrow)]
    name: Option<Text<'a>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SpanJson<'a> {
    #[serde(default, borrow)]
    trace_id: Text<'a>,
    #[serde(default, borrow)]
    span_id: Text<'a>,
    #[serde(default, borrow)]
    parent_span_id: Option<Text<'a>>,
    #[serde(default, borrow)]
    name: Text<'a>,
    #[serde(default)]
    kind: i64,
    #[serde(default, borrow)]
    start_time_unix_nano: Time<'a>,
    #[serde(default, borrow)]
    end_time_unix_nano: Time<'a>,
    #[serde(default, borrow)]
    attributes: Option<Vec<KeyValue<'a>>>,
    #[serde(default, borrow)]
    events: Option<Vec<EventJson<'a>>>,
    #[serde(default, borrow)]
    status: Option<Status<'a>>,
    #[serde(rename = "traceState", default, borrow)]
    _trace_state: Text<'a>,
    #[serde(default)]
    flags: Int,
    #[serde(default)]
    dropped_attributes_count: Int,
    #[serde(default)]
    dropped_events_count: Int,
    #[serde(default)]
    links: Option<Vec<IgnoredAny>>,
    #[serde(default)]
    dropped_links_count: Int,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Status<'a> {
    #[serde(default)]
    code: i64,
    #[serde(default, borrow)]
    message: Text<'a>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct EventJson<'a> {
    #[serde(default, borrow)]
    name: Text<'a>,
    #[serde(default, borrow)]
    time_unix_nano: Time<'a>,
    #[serde(default, borrow)]
    attributes: Option<Vec<KeyValue<'a>>>,
    #[serde(default)]
    dropped_attributes_count: Option<u32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyValue<'a> {
    #[serde(borrow)]
    key: Text<'a>,
    #[serde(default, borrow)]
    value: Option<AnyValueJson<'a>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct AnyValueJson<'a> {
    #[serde(default, deserialize_with = "present", borrow)]
    string_value: Option<Text<'a>>,
    #[serde(default, deserialize_with = "present", borrow)]
    int_value: Option<Time<'a>>,
    #[serde(default, deserialize_with = "present")]
    bool_value: Option<bool>,
    #[serde(default, deserialize_with = "present")]
    double_value: Option<f64>,
    #[serde(default, deserialize_with = "present")]
    bytes_value: Option<IgnoredAny>,
    #[serde(default, deserialize_with = "present", borrow)]
    array_value: Option<Members<'a, AnyValueJson<'a>>>,
    #[serde(default, deserialize_with = "present", borrow)]
    kvlist_value: Option<Members<'a, KeyValue<'a>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(bound(deserialize = "T: Deserialize<'de>, 'de: 'a"))]
struct Members<'a, T> {
    #[serde(default)]
    values: Option<Vec<T>>,
    #[serde(skip)]
    _of: std::marker::PhantomData<&'a ()>,
}

/// An integer (any JSON integer; a float is refused), as the typed reader's `int` fields.
#[derive(Default)]
struct Int;

impl<'de> Deserialize<'de> for Int {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Int;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an integer")
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Int, E> {
                Ok(Int)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Int, E> {
                Ok(Int)
            }
        }
        d.deserialize_any(V)
    }
}

/// A JSON integer or a string of one, kept as written (borrowed from the line unless it has
/// an escape): `Time::time` and `Time::int` say what it is worth.
#[derive(Default)]
enum Time<'a> {
    #[default]
    Zero,
    Signed(i64),
    Unsigned(u64),
    Decimal(Text<'a>),
}

impl<'de: 'a, 'a> Deserialize<'de> for Time<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Time<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an integer or a decimal string")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Time<'a>, E> {
                Ok(Time::Signed(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Time<'a>, E> {
                Ok(match i64::try_from(v) {
                    Ok(i) => Time::Signed(i),
                    Err(_) => Time::Unsigned(v),
                })
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Time<'a>, E> {
                Ok(Time::Decimal(Text::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Time<'a>, E> {
                Ok(Time::Decimal(Text::Owned(v.to_owned())))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl Time<'_> {
    /// A span's time (a JSON integer in int64, as the typed reader takes it) or an event's
    /// (any uint64), or a decimal string of a uint64 ("" is 0). Negative: `Fallback`.
    fn time(&self, numbers_past_int64: bool) -> Read<u64> {
        match self {
            Time::Zero => Ok(0),
            Time::Signed(i) => u64::try_from(*i).map_err(|_| Fallback),
            Time::Unsigned(u) if numbers_past_int64 => Ok(*u),
            Time::Unsigned(_) => Err(Fallback),
            Time::Decimal(s) if s.is_empty() => Ok(0),
            Time::Decimal(s) if s.len() > 20 => Err(Fallback),
            Time::Decimal(s) => decimal(s),
        }
    }

    /// An `intValue`: a JSON integer in int64, or ASCII decimal digits (an optional `-`).
    fn int(&self) -> Read<i64> {
        match self {
            Time::Signed(i) => Ok(*i),
            Time::Decimal(text) => {
                let (negative, digits) = match text.strip_prefix('-') {
                    Some(digits) => (true, digits),
                    None => (false, text.as_ref()),
                };
                if digits.len() > 19 {
                    return Err(Fallback);
                }
                let value = i128::from(decimal(digits)?); // (19 digits fit in a u64)
                i64::try_from(if negative { -value } else { value }).map_err(|_| Fallback)
            }
            _ => Err(Fallback),
        }
    }
}

/// The value of a non-empty run of ASCII decimal digits within u64, in one pass (what
/// checking the digits and then `str::parse` gave, for half the instructions: two times a
/// span, and an `intValue`).
fn decimal(text: &str) -> Read<u64> {
    if text.is_empty() {
        return Err(Fallback);
    }
    text.bytes().try_fold(0u64, |value, b| {
        if !b.is_ascii_digit() {
            return Err(Fallback);
        }
        (value.checked_mul(10))
            .and_then(|v| v.checked_add(u64::from(b - b'0')))
            .ok_or(Fallback)
    })
}

/// Parses a line; `Fallback` when it is not a traces request in the canonical shape.
///
/// The whole line is checked to be UTF-8 first, as the Python path's parsers check it (a
/// line with invalid UTF-8 anywhere, even in a member only skipped, is theirs to report),
/// and once: `serde_json::from_slice` would check each string on its own, a call per key and
/// value that cost more than parsing them (callgrind: 7.6k instructions a span of 1.5 kB).
pub fn parse(line: &[u8]) -> Read<Request<'_>> {
    let text = std::str::from_utf8(line).map_err(|_| Fallback)?;
    serde_json::from_str(text).map_err(|_| Fallback)
}

/// The resources of a parsed line, ids as raw bytes in `ids` (borrowed by the spans).
pub fn read_request<'a>(
    request: &'a Request<'a>,
    ids: &'a mut Vec<[u8; 16]>,
    limits: &Limits,
) -> Read<Vec<Resource<'a>>> {
    for group in &request.resource_spans {
        for scope in group.scope_spans.iter().flatten() {
            for span in scope.spans.iter().flatten() {
                ids.push(hex_id(&span.trace_id, 16)?);
                let own = hex_id(&span.span_id, 8)?;
                if own[..8].iter().all(|b| *b == 0) {
                    return Err(Fallback);
                }
                ids.push(own);
                ids.push(match span.parent_span_id.as_deref() {
                    None | Some("") => [0; 16],
                    Some(parent) => hex_id(parent, 8)?,
                });
            }
        }
    }
    let ids: &'a [[u8; 16]] = ids;
    let mut next = ids.iter();
    let mut out = Vec::with_capacity(request.resource_spans.len());
    for group in &request.resource_spans {
        let attributes = match &group.resource {
            Some(ResourceJson {
                attributes: Some(pairs),
            }) => key_values(pairs, limits, 0)?,
            _ => Vec::new(),
        };
        if attributes.len() > limits.max_attributes {
            return Err(Fallback);
        }
        let mut scopes = Vec::new();
        for scope in group.scope_spans.iter().flatten() {
            let name = scope
                .scope
                .as_ref()
                .and_then(|s| s.name.as_deref())
                .unwrap_or("");
            let mut spans = Vec::new();
            for span in scope.spans.iter().flatten() {
                let trace = next.next().ok_or(Fallback)?;
                let own = next.next().ok_or(Fallback)?;
                let parent = next.next().ok_or(Fallback)?;
                spans.push(read_span(span, trace, own, parent, limits)?);
            }
            scopes.push(Scope { name, spans });
        }
        out.push(Resource { attributes, scopes });
    }
    Ok(out)
}

fn read_span<'a>(
    span: &'a SpanJson<'a>,
    trace: &'a [u8; 16],
    own: &'a [u8; 16],
    parent: &'a [u8; 16],
    limits: &Limits,
) -> Read<Span<'a>> {
    let (status_code, status_message) = match &span.status {
        None => (0, ""),
        Some(status) => (
            i32::try_from(status.code).map_err(|_| Fallback)?,
            status.message.as_ref(),
        ),
    };
    let attributes = match &span.attributes {
        None => Vec::new(),
        Some(pairs) => key_values(pairs, limits, 0)?,
    };
    if attributes.len() > limits.max_attributes
        || has_repeated_key(attributes.iter().map(|(k, _)| *k))
    {
        return Err(Fallback);
    }
    let mut events = Vec::new();
    if let Some(items) = &span.events {
        if items.len() > limits.max_events_per_span {
            return Err(Fallback);
        }
        for item in items {
            events.push(event(item, limits)?);
        }
    }
    let _ = (
        &span.flags,
        &span.dropped_attributes_count,
        &span.dropped_events_count,
    );
    let _ = (&span.links, &span.dropped_links_count);
    Ok(Span {
        trace_id: trace,
        span_id: &own[..8],
        parent_span_id: if parent[..8].iter().all(|b| *b == 0) {
            b""
        } else {
            &parent[..8]
        },
        name: span.name.as_ref(),
        kind: i32::try_from(span.kind).map_err(|_| Fallback)?,
        start_ns: span.start_time_unix_nano.time(false)?,
        end_ns: span.end_time_unix_nano.time(false)?,
        status_code,
        status_message,
        attributes,
        events,
    })
}

fn event<'a>(event: &'a EventJson<'a>, limits: &Limits) -> Read<Event<'a>> {
    let attributes = match &event.attributes {
        None => Vec::new(),
        Some(pairs) => key_values(pairs, limits, 0)?,
    };
    if attributes.len() > limits.max_attributes {
        return Err(Fallback);
    }
    Ok(Event {
        name: event.name.as_ref(),
        time_ns: event.time_unix_nano.time(true)?,
        attributes,
        dropped_attributes_count: event.dropped_attributes_count.unwrap_or(0),
    })
}

fn key_values<'a>(
    pairs: &'a [KeyValue<'a>],
    limits: &Limits,
    depth: usize,
) -> Read<Vec<(&'a str, AnyValue<'a>)>> {
    let mut out = Vec::with_capacity(pairs.len());
    for pair in pairs {
        let value = match &pair.value {
            None => AnyValue::None,
            Some(value) => any_value(value, limits, depth)?,
        };
        out.push((pair.key.as_ref(), value));
    }
    Ok(out)
}

const DEPTH_CAP: usize = 32;

fn any_value<'a>(value: &'a AnyValueJson<'a>, limits: &Limits, depth: usize) -> Read<AnyValue<'a>> {
    let members = usize::from(value.string_value.is_some())
        + usize::from(value.int_value.is_some())
        + usize::from(value.bool_value.is_some())
        + usize::from(value.double_value.is_some())
        + usize::from(value.bytes_value.is_some())
        + usize::from(value.array_value.is_some())
        + usize::from(value.kvlist_value.is_some());
    if members > 1 || value.bytes_value.is_some() {
        return Err(Fallback); // several members (the last read wins in Python), or base64
    }
    if let Some(s) = &value.string_value {
        if s.len() > limits.max_attribute_value_bytes {
            return Err(Fallback);
        }
        return Ok(AnyValue::Str(s.as_ref()));
    }
    if let Some(n) = &value.int_value {
        return Ok(AnyValue::Int(n.int()?));
    }
    if let Some(b) = value.bool_value {
        return Ok(AnyValue::Bool(b));
    }
    if let Some(d) = value.double_value {
        if d == 0.0 && d.is_sign_negative() {
            return Err(Fallback);
        }
        return Ok(AnyValue::Double(d));
    }
    let nested = value.array_value.is_some() || value.kvlist_value.is_some();
    if nested && depth >= limits.max_depth.min(DEPTH_CAP) {
        return Err(Fallback);
    }
    if let Some(members) = &value.array_value {
        let mut items = Vec::new();
        for item in members.values.iter().flatten() {
            items.push(any_value(item, limits, depth + 1)?);
        }
        return Ok(AnyValue::Array(items));
    }
    if let Some(members) = &value.kvlist_value {
        let pairs = match &members.values {
            None => Vec::new(),
            Some(pairs) => key_values(pairs, limits, depth + 1)?,
        };
        if pairs.len() > limits.max_attributes {
            return Err(Fallback);
        }
        return Ok(AnyValue::Kv(pairs));
    }
    Ok(AnyValue::None)
}

/// A canonical hex id of `size` bytes (digits in either case), in a 16-byte buffer; the
/// all-zero trace id is refused.
fn hex_id(text: &str, size: usize) -> Read<[u8; 16]> {
    let text = text.as_bytes();
    if text.len() != 2 * size {
        return Err(Fallback);
    }
    let mut out = [0u8; 16];
    for (i, pair) in text.chunks_exact(2).enumerate() {
        out[i] = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    if size == 16 && out.iter().all(|b| *b == 0) {
        return Err(Fallback);
    }
    Ok(out)
}

fn nibble(c: u8) -> Read<u8> {
    match c {
        b'0'..=b'9' => Ok(c - b'0'),
        b'a'..=b'f' => Ok(c - b'a' + 10),
        b'A'..=b'F' => Ok(c - b'A' + 10),
        _ => Err(Fallback),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `decimal` and `Time::int` take what checking the digits and `str::parse` took.
    #[test]
    fn decimals_read_as_str_parse_reads_them() {
        for text in [
            "",
            "0",
            "7",
            "007",
            "-",
            "-0",
            "-12",
            "+1",
            "1a",
            " 1",
            "1.5",
            "١",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "-9223372036854775809",
            "18446744073709551615",
            "18446744073709551616",
            "99999999999999999999",
            "00000000000000000001",
            "000000000000000000001",
        ] {
            let digits = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
            let want = if digits {
                text.parse::<u64>().ok()
            } else {
                None
            };
            assert_eq!(decimal(text).ok(), want, "{text:?}");
            let unsigned = text.strip_prefix('-').unwrap_or(text);
            let plain = !unsigned.is_empty()
                && unsigned.len() <= 19
                && unsigned.bytes().all(|b| b.is_ascii_digit());
            let want = if plain {
                text.parse::<i64>().ok()
            } else {
                None
            };
            let got = Time::Decimal(Text::Borrowed(text)).int().ok();
            assert_eq!(got, want, "{text:?}");
        }
    }
}
