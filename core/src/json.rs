//! One OTLP/JSON traces line in the collector's canonical shape (lowerCamelCase keys, hex ids,
//! attributes as lists of `{key, value}`) read into the values the Python path's typed reader
//! (`otlp/decode/jsontyped.py`) hands on. Anything else, and anything that reader would report
//! a problem in, now or when a value is first read, is `Fallback`: the Python path reads it.

use serde_json::{Map, Value};

use crate::traces::{AnyValue, Event, Limits, Resource, Scope, Span};
use crate::wire::{Fallback, Read};

/// A parsed line, which the values read from it borrow.
pub struct Owned {
    pub doc: Value,
}

/// Parses a line; `Fallback` when it is not JSON serde reads as orjson does.
pub fn parse(line: &[u8]) -> Read<Owned> {
    let doc: Value = serde_json::from_slice(line).map_err(|_| Fallback)?;
    Ok(Owned { doc })
}

/// The resources of a parsed line, ids as raw bytes in `ids` (borrowed by the spans).
pub fn read_request<'a>(
    owned: &'a Owned,
    ids: &'a mut Vec<[u8; 16]>,
    limits: &Limits,
) -> Read<Vec<Resource<'a>>> {
    let top = object(&owned.doc)?;
    only(top, &["resourceSpans"])?;
    let groups = top
        .get("resourceSpans")
        .ok_or(Fallback)?
        .as_array()
        .ok_or(Fallback)?;
    // Ids first (hex to bytes), so that spans can borrow them.
    for group in groups {
        for scope in list(object(group)?.get("scopeSpans"))? {
            for span in list(object(scope)?.get("spans"))? {
                let span = object(span)?;
                ids.push(hex_id(span.get("traceId"), 16)?);
                let own = hex_id(span.get("spanId"), 8)?;
                if own[..8].iter().all(|b| *b == 0) {
                    return Err(Fallback);
                }
                ids.push(own);
                ids.push(match span.get("parentSpanId") {
                    None | Some(Value::Null) => [0; 16],
                    Some(Value::String(s)) if s.is_empty() => [0; 16],
                    parent => hex_id(parent, 8)?,
                });
            }
        }
    }
    let ids: &'a [[u8; 16]] = ids;
    let mut next = ids.iter();
    let mut out = Vec::with_capacity(groups.len());
    for group in groups {
        let group = object(group)?;
        only(group, &["resource", "scopeSpans", "schemaUrl"])?;
        string_or_absent(group.get("schemaUrl"))?;
        let attributes = resource(group.get("resource"), limits)?;
        let mut scopes = Vec::new();
        for scope in list(group.get("scopeSpans"))? {
            let scope = object(scope)?;
            only(scope, &["scope", "spans", "schemaUrl"])?;
            string_or_absent(scope.get("schemaUrl"))?;
            let name = match scope.get("scope") {
                Some(Value::Object(s)) => s.get("name").and_then(Value::as_str).unwrap_or(""),
                _ => "",
            };
            let mut spans = Vec::new();
            for span in list(scope.get("spans"))? {
                let trace = next.next().ok_or(Fallback)?;
                let own = next.next().ok_or(Fallback)?;
                let parent = next.next().ok_or(Fallback)?;
                spans.push(read_span(object(span)?, trace, own, parent, limits)?);
            }
            scopes.push(Scope { name, spans });
        }
        out.push(Resource { attributes, scopes });
    }
    Ok(out)
}

const SPAN_KEYS: &[&str] = &[
    "traceId",
    "spanId",
    "parentSpanId",
    "name",
    "kind",
    "startTimeUnixNano",
    "endTimeUnixNano",
    "attributes",
    "events",
    "status",
    "traceState",
    "flags",
    "droppedAttributesCount",
    "droppedEventsCount",
    "links",
    "droppedLinksCount",
];

fn read_span<'a>(
    span: &'a Map<String, Value>,
    trace: &'a [u8; 16],
    own: &'a [u8; 16],
    parent: &'a [u8; 16],
    limits: &Limits,
) -> Read<Span<'a>> {
    only(span, SPAN_KEYS)?;
    string_or_absent(span.get("traceState"))?;
    for key in [
        "flags",
        "droppedAttributesCount",
        "droppedEventsCount",
        "droppedLinksCount",
    ] {
        if let Some(value) = span.get(key) {
            value
                .as_i64()
                .or(value.as_u64().map(|_| 0))
                .ok_or(Fallback)?;
        }
    }
    match span.get("links") {
        None | Some(Value::Null) | Some(Value::Array(_)) => {}
        _ => return Err(Fallback),
    }
    let (status_code, status_message) = match span.get("status") {
        None | Some(Value::Null) => (0, ""),
        Some(Value::Object(status)) => {
            only(status, &["code", "message"])?;
            let code = match status.get("code") {
                None => 0,
                Some(v) => i32::try_from(v.as_i64().ok_or(Fallback)?).map_err(|_| Fallback)?,
            };
            (code, string_or_absent(status.get("message"))?)
        }
        _ => return Err(Fallback),
    };
    let kind = match span.get("kind") {
        None => 0,
        Some(v) => i32::try_from(v.as_i64().ok_or(Fallback)?).map_err(|_| Fallback)?,
    };
    let mut attributes = Vec::new();
    if let Some(pairs) = span.get("attributes") {
        if !pairs.is_null() {
            attributes = key_values(pairs, limits, 0)?;
        }
    }
    if attributes.len() > limits.max_attributes || has_repeated_key(&attributes) {
        return Err(Fallback);
    }
    let mut events = Vec::new();
    match span.get("events") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            if items.len() > limits.max_events_per_span {
                return Err(Fallback);
            }
            for item in items {
                events.push(event(item, limits)?);
            }
        }
        _ => return Err(Fallback),
    }
    Ok(Span {
        trace_id: trace,
        span_id: &own[..8],
        parent_span_id: if parent[..8].iter().all(|b| *b == 0) {
            b""
        } else {
            &parent[..8]
        },
        name: string_or_absent(span.get("name"))?,
        kind,
        start_ns: time(span.get("startTimeUnixNano"), false)?,
        end_ns: time(span.get("endTimeUnixNano"), false)?,
        status_code,
        status_message,
        attributes,
        events,
    })
}

fn event<'a>(item: &'a Value, limits: &Limits) -> Read<Event<'a>> {
    let event = object(item)?;
    only(
        event,
        &[
            "name",
            "timeUnixNano",
            "attributes",
            "droppedAttributesCount",
        ],
    )?;
    let attributes = match event.get("attributes") {
        None | Some(Value::Null) => Vec::new(),
        Some(pairs) => key_values(pairs, limits, 0)?,
    };
    if attributes.len() > limits.max_attributes {
        return Err(Fallback);
    }
    let dropped = match event.get("droppedAttributesCount") {
        None | Some(Value::Null) => 0,
        Some(v) => u32::try_from(v.as_u64().ok_or(Fallback)?).map_err(|_| Fallback)?,
    };
    Ok(Event {
        name: string_or_absent(event.get("name"))?,
        time_ns: time(event.get("timeUnixNano"), true)?,
        attributes,
        dropped_attributes_count: dropped,
    })
}

fn resource<'a>(value: Option<&'a Value>, limits: &Limits) -> Read<Vec<(&'a str, AnyValue<'a>)>> {
    let resource = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(r)) if r.is_empty() => return Ok(Vec::new()),
        Some(Value::Object(r)) => r,
        _ => return Err(Fallback),
    };
    let attributes = match resource.get("attributes") {
        None | Some(Value::Null) => Vec::new(),
        Some(pairs) => key_values(pairs, limits, 0)?,
    };
    if attributes.len() > limits.max_attributes {
        return Err(Fallback);
    }
    Ok(attributes)
}

/// A list of `{key, value}` objects (an attributes object of plain JSON: `Fallback`).
fn key_values<'a>(
    pairs: &'a Value,
    limits: &Limits,
    depth: usize,
) -> Read<Vec<(&'a str, AnyValue<'a>)>> {
    let mut out = Vec::new();
    for pair in pairs.as_array().ok_or(Fallback)? {
        let pair = object(pair)?;
        only(pair, &["key", "value"])?;
        let key = pair.get("key").and_then(Value::as_str).ok_or(Fallback)?;
        let value = match pair.get("value") {
            None | Some(Value::Null) => AnyValue::None,
            Some(value) => any_value(value, limits, depth)?,
        };
        out.push((key, value));
    }
    Ok(out)
}

const DEPTH_CAP: usize = 32;

fn any_value<'a>(value: &'a Value, limits: &Limits, depth: usize) -> Read<AnyValue<'a>> {
    let value = object(value)?;
    let mut members = value.iter();
    let Some((kind, item)) = members.next() else {
        return Ok(AnyValue::None);
    };
    if members.next().is_some() {
        return Err(Fallback); // several members: the last one read wins in Python
    }
    Ok(match (kind.as_str(), item) {
        ("stringValue", Value::String(s)) => {
            if s.len() > limits.max_attribute_value_bytes {
                return Err(Fallback);
            }
            AnyValue::Str(s)
        }
        ("intValue", Value::Number(n)) => AnyValue::Int(n.as_i64().ok_or(Fallback)?),
        ("intValue", Value::String(s)) => AnyValue::Int(decimal(s)?),
        ("boolValue", Value::Bool(b)) => AnyValue::Bool(*b),
        ("doubleValue", Value::Number(n)) => {
            let d = if let Some(i) = n.as_i64() {
                i as f64
            } else if n.is_u64() {
                return Err(Fallback);
            } else {
                n.as_f64().ok_or(Fallback)?
            };
            if d == 0.0 && d.is_sign_negative() {
                return Err(Fallback);
            }
            AnyValue::Double(d)
        }
        ("arrayValue" | "kvlistValue", _) if depth >= limits.max_depth.min(DEPTH_CAP) => {
            return Err(Fallback)
        }
        ("arrayValue", Value::Object(members)) => {
            only(members, &["values"])?;
            let mut items = Vec::new();
            match members.get("values") {
                None => {}
                Some(Value::Array(values)) => {
                    for v in values {
                        items.push(any_value(v, limits, depth + 1)?);
                    }
                }
                _ => return Err(Fallback),
            }
            AnyValue::Array(items)
        }
        ("kvlistValue", Value::Object(members)) => {
            only(members, &["values"])?;
            let pairs = match members.get("values") {
                None => Vec::new(),
                Some(values @ Value::Array(_)) => key_values(values, limits, depth + 1)?,
                _ => return Err(Fallback),
            };
            if pairs.len() > limits.max_attributes {
                return Err(Fallback);
            }
            AnyValue::Kv(pairs)
        }
        _ => return Err(Fallback),
    })
}

/// An int64 written as ASCII decimal digits (an optional `-`), as the Python path reads it.
fn decimal(text: &str) -> Read<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || digits.len() > 19 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Fallback);
    }
    text.parse::<i64>().map_err(|_| Fallback)
}

/// A time: a JSON integer (in int64 for a span, as the typed reader takes it; any uint64 in an
/// event), or a decimal string of a uint64 ("" is 0). Negative: `Fallback`.
fn time(value: Option<&Value>, numbers_past_int64: bool) -> Read<u64> {
    match value {
        None => Ok(0),
        Some(Value::Number(n)) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => u64::try_from(i).map_err(|_| Fallback),
            (None, Some(u)) if numbers_past_int64 => Ok(u),
            _ => Err(Fallback),
        },
        Some(Value::String(s)) if s.is_empty() => Ok(0),
        Some(Value::String(s)) => {
            if s.len() > 20 || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(Fallback);
            }
            s.parse::<u64>().map_err(|_| Fallback)
        }
        _ => Err(Fallback),
    }
}

/// A canonical hex id of `size` bytes (digits in either case), in a 16-byte buffer.
fn hex_id(value: Option<&Value>, size: usize) -> Read<[u8; 16]> {
    let text = value.and_then(Value::as_str).ok_or(Fallback)?.as_bytes();
    if text.len() != 2 * size {
        return Err(Fallback);
    }
    let mut out = [0u8; 16];
    for (i, pair) in text.chunks_exact(2).enumerate() {
        out[i] = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    if out[..size].iter().all(|b| *b == 0) && size == 16 {
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

fn object(value: &Value) -> Read<&Map<String, Value>> {
    value.as_object().ok_or(Fallback)
}

/// The items of an optional list (absent and `null` are empty).
fn list(value: Option<&Value>) -> Read<&[Value]> {
    match value {
        None | Some(Value::Null) => Ok(&[]),
        Some(Value::Array(items)) => Ok(items),
        _ => Err(Fallback),
    }
}

fn string_or_absent(value: Option<&Value>) -> Read<&str> {
    match value {
        None => Ok(""),
        Some(Value::String(s)) => Ok(s),
        _ => Err(Fallback),
    }
}

/// `Fallback` for a member outside `known` (the typed reader forbids unknown fields).
fn only(object: &Map<String, Value>, known: &[&str]) -> Read<()> {
    if object.keys().all(|k| known.contains(&k.as_str())) {
        Ok(())
    } else {
        Err(Fallback)
    }
}

fn has_repeated_key(pairs: &[(&str, AnyValue<'_>)]) -> bool {
    let mut keys: Vec<&str> = pairs.iter().map(|(k, _)| *k).collect();
    keys.sort_unstable();
    keys.windows(2).any(|w| w[0] == w[1])
}
