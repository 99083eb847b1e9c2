//! An OTLP protobuf traces message (`ExportTraceServiceRequest` or `TracesData`: both are
//! field 1, `resource_spans`) read into borrowed Rust values, all of it checked first.
//!
//! The core reads a record only when the Python path would read it without a diagnostic:
//! valid ids, UTF-8 strings, no value over a limit, no field twice where protobuf would merge
//! or overwrite. Anything else is `Fallback`, and the Python decoder reads that record.

use crate::keys::has_repeated_key;
use crate::wire::{bytes, fixed64, once, text, varint, Fallback, Fields, Read, Value as Wire};

/// The limits of `otlp/decode/limits.py` that decide whether a record reads cleanly.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub max_attribute_value_bytes: usize,
    pub max_depth: usize,
    pub max_attributes: usize,
    pub max_events_per_span: usize,
}

/// Nesting the core reads at most, whatever `max_depth` says: deeper values stay with the
/// Python path (the protobuf runtime's own recursion limit is 100).
const DEPTH_CAP: usize = 32;

/// An `AnyValue` as the Python path turns it into Python.
#[derive(Debug, PartialEq)]
pub enum AnyValue<'a> {
    None,
    Str(&'a str),
    Bool(bool),
    Int(i64),
    Double(f64),
    Bytes(&'a [u8]),
    Array(Vec<AnyValue<'a>>),
    Kv(Vec<(&'a str, AnyValue<'a>)>),
}

#[derive(Debug)]
pub struct Event<'a> {
    pub name: &'a str,
    pub time_ns: u64,
    pub attributes: Vec<(&'a str, AnyValue<'a>)>,
    pub dropped_attributes_count: u32,
}

#[derive(Debug)]
pub struct Span<'a> {
    pub trace_id: &'a [u8],
    pub span_id: &'a [u8],
    /// Empty for a root (no parent, or the all-zero parent).
    pub parent_span_id: &'a [u8],
    pub name: &'a str,
    pub kind: i32,
    pub start_ns: u64,
    pub end_ns: u64,
    pub status_code: i32,
    pub status_message: &'a str,
    pub attributes: Vec<(&'a str, AnyValue<'a>)>,
    pub events: Vec<Event<'a>>,
}

#[derive(Debug)]
pub struct Scope<'a> {
    pub name: &'a str,
    pub spans: Vec<Span<'a>>,
}

#[derive(Debug)]
pub struct Resource<'a> {
    pub attributes: Vec<(&'a str, AnyValue<'a>)>,
    /// `scope_spans`, then the old `instrumentation_library_spans`, as the Python path lists them.
    pub scopes: Vec<Scope<'a>>,
}

/// The resources of one traces message, or `Fallback`.
pub fn read_traces<'a>(data: &'a [u8], limits: &Limits) -> Read<Vec<Resource<'a>>> {
    let mut out = Vec::new();
    for field in Fields::new(data) {
        if let (1, value) = field? {
            out.push(resource_spans(bytes(value)?, limits)?);
        }
    }
    Ok(out)
}

fn resource_spans<'a>(data: &'a [u8], limits: &Limits) -> Read<Resource<'a>> {
    let mut attributes = Vec::new();
    let mut scopes = Vec::new();
    let mut old = Vec::new();
    let mut seen = 0u32;
    for field in Fields::new(data) {
        match field? {
            (1, value) => {
                once(&mut seen, 1)?;
                attributes = resource(bytes(value)?, limits)?;
            }
            (2, value) => scopes.push(scope_spans(bytes(value)?, limits)?),
            (1000, value) => old.push(scope_spans(bytes(value)?, limits)?),
            (3, value) => {
                text(value)?; // schema_url
            }
            _ => {}
        }
    }
    scopes.extend(old);
    Ok(Resource { attributes, scopes })
}

fn resource<'a>(data: &'a [u8], limits: &Limits) -> Read<Vec<(&'a str, AnyValue<'a>)>> {
    let mut attributes = Vec::new();
    for field in Fields::new(data) {
        match field? {
            (1, value) => attributes.push(key_value(bytes(value)?, limits, 0)?),
            (2, value) => {
                varint(value)?;
            }
            _ => {}
        }
    }
    if attributes.len() > limits.max_attributes {
        return Err(Fallback);
    }
    Ok(attributes)
}

fn scope_spans<'a>(data: &'a [u8], limits: &Limits) -> Read<Scope<'a>> {
    let mut name = "";
    let mut spans = Vec::new();
    let mut seen = 0u32;
    for field in Fields::new(data) {
        match field? {
            (1, value) => {
                once(&mut seen, 1)?;
                name = scope(bytes(value)?, limits)?;
            }
            (2, value) => spans.push(span(bytes(value)?, limits)?),
            (3, value) => {
                text(value)?; // schema_url
            }
            _ => {}
        }
    }
    Ok(Scope { name, spans })
}

/// An `InstrumentationScope`: its name (the rest is only checked).
fn scope<'a>(data: &'a [u8], limits: &Limits) -> Read<&'a str> {
    let mut name = "";
    let mut seen = 0u32;
    for field in Fields::new(data) {
        match field? {
            (1, value) => {
                once(&mut seen, 1)?;
                name = text(value)?;
            }
            (2, value) => {
                text(value)?;
            }
            (3, value) => {
                key_value(bytes(value)?, limits, 0)?;
            }
            (4, value) => {
                varint(value)?;
            }
            _ => {}
        }
    }
    Ok(name)
}

fn span<'a>(data: &'a [u8], limits: &Limits) -> Read<Span<'a>> {
    let mut out = Span {
        trace_id: b"",
        span_id: b"",
        parent_span_id: b"",
        name: "",
        kind: 0,
        start_ns: 0,
        end_ns: 0,
        status_code: 0,
        status_message: "",
        attributes: Vec::new(),
        events: Vec::new(),
    };
    let mut seen = 0u32;
    for field in Fields::new(data) {
        let (number, value) = field?;
        match number {
            1 => out.trace_id = bytes(value)?,
            2 => out.span_id = bytes(value)?,
            3 => {
                text(value)?; // trace_state
            }
            4 => out.parent_span_id = bytes(value)?,
            5 => out.name = text(value)?,
            6 => out.kind = varint(value)? as i32, // an enum: the low 32 bits, as protobuf reads it
            7 => out.start_ns = fixed64(value)?,
            8 => out.end_ns = fixed64(value)?,
            9 => out.attributes.push(key_value(bytes(value)?, limits, 0)?),
            11 => out.events.push(event(bytes(value)?, limits)?),
            13 => {
                bytes(value)?; // links: kept by the Python path for re-encoding only
            }
            15 => (out.status_code, out.status_message) = status(bytes(value)?)?,
            10 | 12 | 14 => {
                varint(value)?;
            }
            16 => {
                if !matches!(value, Wire::Fixed32(_)) {
                    return Err(Fallback);
                }
            }
            _ => continue,
        }
        if number != 9 && number != 11 && number != 13 {
            once(&mut seen, number)?;
        }
    }
    if out.trace_id.len() != 16 || out.trace_id.iter().all(|b| *b == 0) {
        return Err(Fallback);
    }
    if out.span_id.len() != 8 || out.span_id.iter().all(|b| *b == 0) {
        return Err(Fallback);
    }
    if !out.parent_span_id.is_empty() {
        if out.parent_span_id.len() != 8 {
            return Err(Fallback);
        }
        if out.parent_span_id.iter().all(|b| *b == 0) {
            out.parent_span_id = b"";
        }
    }
    if out.attributes.len() > limits.max_attributes || out.events.len() > limits.max_events_per_span
    {
        return Err(Fallback);
    }
    // A key twice: the mapped reader and the wire-order reader of the Python path disagree on
    // which value is seen; left to the Python path.
    if has_repeated_key(out.attributes.iter().map(|(k, _)| *k)) {
        return Err(Fallback);
    }
    Ok(out)
}

fn status(data: &[u8]) -> Read<(i32, &str)> {
    let (mut code, mut message) = (0, "");
    let mut seen = 0u32;
    for field in Fields::new(data) {
        match field? {
            (2, value) => {
                once(&mut seen, 2)?;
                message = text(value)?;
            }
            (3, value) => {
                once(&mut seen, 3)?;
                code = varint(value)? as i32;
            }
            _ => {}
        }
    }
    Ok((code, message))
}

fn event<'a>(data: &'a [u8], limits: &Limits) -> Read<Event<'a>> {
    let mut out = Event {
        name: "",
        time_ns: 0,
        attributes: Vec::new(),
        dropped_attributes_count: 0,
    };
    let mut seen = 0u32;
    for field in Fields::new(data) {
        match field? {
            (1, value) => {
                once(&mut seen, 1)?;
                out.time_ns = fixed64(value)?;
            }
            (2, value) => {
                once(&mut seen, 2)?;
                out.name = text(value)?;
            }
            (3, value) => out.attributes.push(key_value(bytes(value)?, limits, 0)?),
            (4, value) => {
                once(&mut seen, 4)?;
                out.dropped_attributes_count = varint(value)? as u32;
            }
            _ => {}
        }
    }
    if out.attributes.len() > limits.max_attributes {
        return Err(Fallback);
    }
    Ok(out)
}

fn key_value<'a>(data: &'a [u8], limits: &Limits, depth: usize) -> Read<(&'a str, AnyValue<'a>)> {
    let (mut key, mut value) = ("", AnyValue::None);
    let mut seen = 0u32;
    for field in Fields::new(data) {
        match field? {
            (1, raw) => {
                once(&mut seen, 1)?;
                key = text(raw)?;
            }
            (2, raw) => {
                once(&mut seen, 2)?;
                value = any_value(bytes(raw)?, limits, depth)?;
            }
            _ => {}
        }
    }
    Ok((key, value))
}

fn any_value<'a>(data: &'a [u8], limits: &Limits, depth: usize) -> Read<AnyValue<'a>> {
    let mut out = AnyValue::None;
    let mut seen = 0u32;
    for field in Fields::new(data) {
        let (number, raw) = field?;
        if number > 7 {
            return Err(Fallback); // a oneof member this reader does not know
        }
        once(&mut seen, 0)?; // one member of the oneof, once
        out = match number {
            1 => AnyValue::Str(short(text(raw)?, limits)?),
            2 => AnyValue::Bool(varint(raw)? != 0),
            3 => AnyValue::Int(varint(raw)? as i64),
            4 => AnyValue::Double(f64::from_bits(fixed64(raw)?)),
            5 | 6 if depth >= limits.max_depth.min(DEPTH_CAP) => return Err(Fallback),
            5 => {
                let mut items = Vec::new();
                for item in Fields::new(bytes(raw)?) {
                    match item? {
                        (1, v) => items.push(any_value(bytes(v)?, limits, depth + 1)?),
                        _ => return Err(Fallback),
                    }
                }
                AnyValue::Array(items)
            }
            6 => {
                let mut pairs = Vec::new();
                for item in Fields::new(bytes(raw)?) {
                    match item? {
                        (1, v) => pairs.push(key_value(bytes(v)?, limits, depth + 1)?),
                        _ => return Err(Fallback),
                    }
                }
                if pairs.len() > limits.max_attributes {
                    return Err(Fallback);
                }
                AnyValue::Kv(pairs)
            }
            7 => {
                let b = bytes(raw)?;
                if b.len() > limits.max_attribute_value_bytes {
                    return Err(Fallback);
                }
                AnyValue::Bytes(b)
            }
            _ => return Err(Fallback),
        };
    }
    Ok(out)
}

/// A string within `max_attribute_value_bytes` (a longer one is cut, with a diagnostic, by
/// the Python path).
fn short<'a>(value: &'a str, limits: &Limits) -> Read<&'a str> {
    if value.len() > limits.max_attribute_value_bytes {
        return Err(Fallback);
    }
    Ok(value)
}
