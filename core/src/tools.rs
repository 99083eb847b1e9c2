//! The tool readers of other conventions than GenAI (`dialects/tools.py`), in their common
//! case: OpenInference `TOOL` spans (`read_openinference`) and Vercel `ai.toolCall` spans
//! (`read_vercel`). Every key comes from rules.json (`Rules::openinference`, `Rules::vercel`).
//!
//! What the port does not read exactly is `Fallback`, and the span goes to Python whole: Python
//! reprs, call envelopes (`{"args": [...], "kwargs": {...}}`), empty or byte values, JSON
//! text the two Python parsers might read differently, built-in final-answer tools.

use crate::facts::{ident, text_args, Args, Call};
use crate::rules::{Rules, Slots};
use crate::traces::{AnyValue, Span};
use crate::wire::{Fallback, Read};

/// The call of a tool span that `reader` reads: `Ok(None)` for a span that is not a call,
/// `Err` for a reader not ported or a case the port does not cover.
pub fn call<'s, 'a>(
    rules: &Rules,
    reader: &str,
    span: &Span<'a>,
    attrs: &Slots<'s, 'a>,
) -> Read<Option<Call<'s, 'a>>> {
    let found = match reader {
        "openinference" => openinference(rules, span, attrs)?,
        "vercel" => vercel(rules, attrs)?,
        _ => return Err(Fallback),
    };
    match found {
        // `roles.classify` asks the scope whether the name is its final answer: left to Python
        Some(call) if rules.final_names.contains(&call.name) => Err(Fallback),
        found => Ok(found),
    }
}

/// `tools.read_openinference`: the name from its key, else the span name; arguments JSON
/// text or a structured value, neither an envelope.
fn openinference<'s, 'a>(
    rules: &Rules,
    span: &Span<'a>,
    attrs: &Slots<'s, 'a>,
) -> Read<Option<Call<'s, 'a>>> {
    let oi = &rules.openinference;
    let name = rules
        .text(attrs.get(oi.name))
        .or_else(|| (!rules.placeholders.contains(span.name)).then_some(span.name));
    let Some(name) = name else {
        return Ok(None);
    };
    let call_id = oi
        .call_ids
        .iter()
        .find_map(|slot| ident(rules, attrs.get(*slot)));
    let (args, source) = match attrs.get(oi.args) {
        None => (Args::None, oi.name_source),
        Some(value) => (structured_args(rules, value)?, oi.args_source),
    };
    Ok(Some(Call {
        name: name.to_owned(),
        args,
        call_id,
        source,
    }))
}

/// `tools.read_vercel`: the first argument key present decides.
fn vercel<'s, 'a>(rules: &Rules, attrs: &Slots<'s, 'a>) -> Read<Option<Call<'s, 'a>>> {
    let v = &rules.vercel;
    let Some(name) = rules.text(attrs.get(v.name)) else {
        return Ok(None);
    };
    let call_id = ident(rules, attrs.get(v.call_id));
    let (args, source) = match v.args.iter().find(|(slot, _)| attrs.has(*slot)) {
        None => (Args::None, v.name_source),
        Some((slot, source)) => (
            structured_args(rules, attrs.get(*slot).ok_or(Fallback)?)?,
            *source,
        ),
    };
    Ok(Some(Call {
        name: name.to_owned(),
        args,
        call_id,
        source,
    }))
}

/// `values.args_from` of a value (with `literal=True` where it matters: text that is no JSON
/// object is declined when it might be a repr), with `unwrap_call_envelope` declined.
fn structured_args<'s, 'a>(rules: &Rules, value: &'s AnyValue<'a>) -> Read<Args<'s, 'a>> {
    let args = match value {
        // an empty value, bytes: rare, and read by other helpers in Python
        AnyValue::None | AnyValue::Bytes(_) => return Err(Fallback),
        AnyValue::Str(text) => match text_args(rules, text)? {
            Some(json) => {
                if json.get(ENVELOPE_KEY).is_some() {
                    return Err(Fallback);
                }
                Args::Json(json)
            }
            None => Args::None,
        },
        AnyValue::Kv(pairs) => {
            if pairs.iter().any(|(key, _)| *key == ENVELOPE_KEY) {
                return Err(Fallback);
            }
            Args::Value(value)
        }
        AnyValue::Bool(_) | AnyValue::Int(_) | AnyValue::Double(_) | AnyValue::Array(_) => {
            Args::None
        }
    };
    Ok(args)
}

/// The key without which `values.unwrap_call_envelope` returns a dict as it is.
const ENVELOPE_KEY: &str = "kwargs";
