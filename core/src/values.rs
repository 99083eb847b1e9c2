//! The readings of attribute values every dialect reader shares (`dialects/values.py`): a
//! call's arguments (`args_from`), an id (`ident`), a message's text (`message_text`), and a
//! key looked up as a Python dict answers it. The span readers (`facts.rs`, `facts/*.rs`)
//! and the tool readers (`tools.rs`) both use them, so they live below both.

use crate::jsontext::{self, Json};
use crate::rules::Rules;
use crate::traces::AnyValue;
use crate::wire::{Fallback, Read};

/// A tool call's arguments as `values.args_from` gives them.
#[derive(Debug)]
pub enum Args<'s, 'a> {
    None,
    /// Parsed JSON text: an object.
    Json(Json),
    /// A structured value (a kvlist): the dict the decoder makes of it.
    Value(&'s AnyValue<'a>),
}

/// `values.args_from` of an attribute value: JSON text of an object, a structured value;
/// `Fallback` for bytes.
pub(crate) fn value_args<'s, 'a>(
    rules: &Rules,
    value: Option<&'s AnyValue<'a>>,
) -> Read<Args<'s, 'a>> {
    Ok(match value {
        Some(AnyValue::Str(text)) => text_args(rules, text)?.map_or(Args::None, Args::Json),
        Some(value @ AnyValue::Kv(_)) => Args::Value(value),
        Some(AnyValue::Bytes(_)) => return Err(Fallback),
        _ => Args::None,
    })
}

/// `values.args_from` of a string: a placeholder or text that is not a JSON object is no
/// arguments; text the two Python parsers might read differently is `Fallback`.
pub(crate) fn text_args(rules: &Rules, text: &str) -> Read<Option<Json>> {
    if rules.placeholders.contains(text) {
        return Ok(None);
    }
    if jsontext::has_long_digits(text) {
        return Err(Fallback);
    }
    match jsontext::parse(text)? {
        json @ Json::Object(_) => Ok(Some(json)),
        _ => Ok(None),
    }
}

/// `values.args_from(text, literal=True)`: JSON text of an object, else no arguments; text
/// that may be a Python literal (`{` after whitespace, not JSON) is declined.
pub(crate) fn literal_args(rules: &Rules, text: &str) -> Read<Option<Json>> {
    if rules.placeholders.contains(text) {
        return Ok(None);
    }
    let rest = text.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    match rest.chars().next() {
        Some('{') => text_args(rules, text),
        // whitespace to Python's `str.lstrip` (other scripts', `\x1c`..`\x1f`), not to Rust's
        Some(c) if !c.is_ascii() || c.is_ascii_control() => Err(Fallback),
        _ => Ok(None), // no object in JSON, and no literal tried
    }
}

/// `values.ident`: a non-placeholder string, or an int as text.
pub(crate) fn ident(rules: &Rules, value: Option<&AnyValue<'_>>) -> Option<String> {
    match value {
        Some(AnyValue::Str(s)) if !rules.placeholders.contains(*s) => Some((*s).to_owned()),
        Some(AnyValue::Int(i)) => Some(i.to_string()),
        _ => None,
    }
}

/// `ident` of a JSON value.
pub(crate) fn json_ident(rules: &Rules, value: Option<&Json>) -> Option<String> {
    match value {
        Some(Json::Str(s)) if !rules.placeholders.contains(s.as_str()) => Some(s.clone()),
        Some(Json::Int(i)) => Some(i.to_string()),
        Some(Json::UInt(u)) => Some(u.to_string()),
        _ => None,
    }
}

/// `values.message_text` of a parsed value that is not a string: a list's text blocks
/// joined, an object's `text` (else `content`).
pub(crate) fn message_text(rules: &Rules, value: &Json) -> Option<String> {
    fn text<'j>(rules: &Rules, value: Option<&'j Json>) -> Option<&'j str> {
        match value {
            Some(Json::Str(s)) if !rules.placeholders.contains(s.as_str()) => Some(s.as_str()),
            _ => None,
        }
    }
    match value {
        Json::Array(blocks) => {
            let parts: Vec<&str> = blocks
                .iter()
                .filter_map(|b| text(rules, b.get("text")))
                .collect();
            (!parts.is_empty()).then(|| parts.concat())
        }
        Json::Object(_) => {
            text(rules, value.get("text").or_else(|| value.get("content"))).map(str::to_owned)
        }
        _ => None,
    }
}

/// The last value of `key` among `pairs` (a dict's answer).
pub(crate) fn last<'s, 'a>(
    pairs: &'s [(&'a str, AnyValue<'a>)],
    key: &str,
) -> Option<&'s AnyValue<'a>> {
    pairs.iter().rev().find(|(k, _)| *k == key).map(|(_, v)| v)
}
