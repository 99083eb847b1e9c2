//! The calls (and reply) a model span lists outside GenAI output messages: Google ADK's
//! `LlmResponse` (`dialects/spans.py _adk_response`) and OpenInference's flattened calls
//! (`_openinference_calls`, `llm.output_messages.{i}.message.tool_calls.{j}.{field}`).

use std::collections::BTreeMap;

use super::output::ModelCall;
use crate::jsontext::{self, Json};
use crate::rules::Rules;
use crate::traces::AnyValue;
use crate::values::{ident, json_ident, literal_args, text_args};
use crate::wire::{Fallback, Read};

/// The members of an `LlmResponse` the Python reader walks (the response's shape: code on
/// both sides, as a message's `parts`).
const CONTENT: &str = "content";
const PARTS: &str = "parts";
const FUNCTION_CALL: &str = "function_call";
const NAME: &str = "name";
const ARGS: &str = "args";
const ID: &str = "id";
const TEXT: &str = "text";
const THOUGHT: &str = "thought";

/// `spans._adk_response`: the `function_call` parts (in order) and the text parts (joined;
/// parts marked `thought` left out) of the response's JSON text. `Fallback` for a
/// structured value (a dict to the Python reader) and JSON text the parsers may read apart.
pub(super) fn adk_response(
    rules: &Rules,
    value: Option<&AnyValue<'_>>,
) -> Read<(Vec<ModelCall>, Option<String>)> {
    let nothing = || Ok((Vec::new(), None));
    let text = match value {
        Some(AnyValue::Str(text)) if text.starts_with('{') => *text,
        Some(AnyValue::Kv(_)) => return Err(Fallback),
        _ => return nothing(), // no dict: text of another kind, a list, a number, no value
    };
    if jsontext::has_long_digits(text) {
        return Err(Fallback); // the standard library's parse, not orjson's
    }
    let response = jsontext::parse(text)?;
    let parts = match response.get(CONTENT) {
        Some(content @ Json::Object(_)) => match content.get(PARTS) {
            Some(Json::Array(parts)) => parts,
            _ => return nothing(),
        },
        _ => return nothing(),
    };
    let mut calls = Vec::new();
    let mut texts: Vec<&str> = Vec::new();
    for part in parts {
        if !matches!(part, Json::Object(_)) {
            continue;
        }
        if let Some(call @ Json::Object(_)) = part.get(FUNCTION_CALL) {
            if let Some(Json::Str(name)) = call.get(NAME) {
                if !rules.placeholders.contains(name.as_str()) {
                    let args = match call.get(ARGS) {
                        None | Some(Json::Null) => Some(Json::Object(Vec::new())),
                        Some(Json::Str(text)) => text_args(rules, text)?,
                        Some(object @ Json::Object(_)) => Some(object.clone()),
                        Some(_) => None,
                    };
                    calls.push(ModelCall {
                        name: name.clone(),
                        call_id: json_ident(rules, call.get(ID)),
                        args,
                        source: rules.adk_response.1,
                    });
                }
            }
            continue;
        }
        if let Some(Json::Str(text)) = part.get(TEXT) {
            if !rules.placeholders.contains(text.as_str()) && !truthy(part.get(THOUGHT)) {
                texts.push(text);
            }
        }
    }
    Ok((calls, (!texts.is_empty()).then(|| texts.concat())))
}

/// Python's truth value of a parsed JSON value (`None`: absent).
fn truthy(value: Option<&Json>) -> bool {
    match value {
        None | Some(Json::Null) => false,
        Some(Json::Bool(b)) => *b,
        Some(Json::Int(i)) => *i != 0,
        Some(Json::UInt(u)) => *u != 0,
        Some(Json::Float(f)) => *f != 0.0,
        Some(Json::Str(s)) => !s.is_empty(),
        Some(Json::Array(items)) => !items.is_empty(),
        Some(Json::Object(members)) => !members.is_empty(),
    }
}

/// The digits of a flattened index the port reads: ASCII, no leading zero (two keys that
/// Python's `int` reads as one index are declined), within `u32`.
fn index(text: &str) -> Read<Option<u32>> {
    if text.is_empty() {
        return Ok(None);
    }
    if !text.is_ascii() {
        return Err(Fallback); // `str.isdigit` of other scripts' digits: left to Python
    }
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Ok(None);
    }
    if text.len() > 1 && text.starts_with('0') {
        return Err(Fallback);
    }
    text.parse().map(Some).map_err(|_| Fallback)
}

/// `spans._openinference_calls`: the calls flattened into the span's keys, in the order of
/// (message, call) index, each with its name, arguments (`args_from(..., literal=True)`)
/// and id.
pub(super) fn openinference_calls(
    rules: &Rules,
    attributes: &[(&str, AnyValue<'_>)],
) -> Read<Vec<ModelCall>> {
    let flat = &rules.openinference_calls;
    let mut found: BTreeMap<(u32, u32), [Option<&AnyValue<'_>>; 3]> = BTreeMap::new();
    for (key, value) in attributes {
        let Some(rest) = key.strip_prefix(flat.prefix.as_str()) else {
            continue;
        };
        let Some((head, tail)) = rest.split_once(flat.infix.as_str()) else {
            continue;
        };
        let (at, field) = tail.split_once('.').unwrap_or((tail, ""));
        let (Some(message), Some(call)) = (index(head)?, index(at)?) else {
            continue;
        };
        let fields = found.entry((message, call)).or_default();
        let slot = [&flat.name, &flat.args, &flat.call_id]
            .iter()
            .position(|name| name.as_str() == field);
        if let Some(slot) = slot {
            fields[slot] = Some(value); // a repeated key: its last value, as a dict's
        }
    }
    let mut calls = Vec::new();
    for [name, args, call_id] in found.into_values() {
        let Some(name) = rules.text(name) else {
            continue;
        };
        let args = match args {
            Some(AnyValue::Str(text)) => literal_args(rules, text)?,
            Some(AnyValue::Kv(_) | AnyValue::Bytes(_)) => return Err(Fallback),
            _ => None,
        };
        calls.push(ModelCall {
            name: name.to_owned(),
            call_id: ident(rules, call_id),
            args,
            source: flat.source,
        });
    }
    Ok(calls)
}
