//! What a model's GenAI output messages list (`gen_ai.output.messages`, also inside
//! Strands' inference-details events): `dialects/spans.py genai_output`, and `ModelCall`, the
//! call a model asked for that every reader of a model's calls (`facts.rs`, `events.rs`,
//! `listed.rs`) makes.

use crate::jsontext::{self, Json};
use crate::rules::Rules;
use crate::traces::AnyValue;
use crate::values::{json_ident, text_args};
use crate::wire::{Fallback, Read};

/// A call a model's output lists (`spans.ModelCall`).
#[derive(Debug)]
pub struct ModelCall {
    pub name: String,
    pub call_id: Option<String>,
    /// `None`: not captured; else the arguments (an object).
    pub args: Option<Json>,
    /// Its `source`: an index into `Rules::sources`.
    pub source: usize,
}

/// What `gen_ai.output.messages` holds: JSON text of a list read by `genai_output`; any
/// other text or value is no calls and no reply; `Err` for an empty value or a list value.
pub(super) fn genai_value(
    rules: &Rules,
    value: &AnyValue<'_>,
) -> Read<(Vec<ModelCall>, Option<String>)> {
    match value {
        AnyValue::Str(text) if text.starts_with('[') => genai_output(rules, text),
        // JSON text of anything but a list, or a structured value that is no list
        AnyValue::Str(_) | AnyValue::Kv(_) | AnyValue::Int(_) | AnyValue::Double(_) => {
            Ok((Vec::new(), None))
        }
        AnyValue::Bool(_) | AnyValue::Bytes(_) => Ok((Vec::new(), None)),
        AnyValue::None | AnyValue::Array(_) => Err(Fallback),
    }
}

/// `spans.genai_output` of JSON text starting with `[`.
fn genai_output(rules: &Rules, text: &str) -> Read<(Vec<ModelCall>, Option<String>)> {
    let messages = jsontext::parse(text)?;
    let mut calls = Vec::new();
    let mut texts: Vec<&str> = Vec::new();
    let Json::Array(messages) = &messages else {
        return Ok((calls, None));
    };
    fn text_of<'j>(rules: &Rules, value: Option<&'j Json>) -> Option<&'j str> {
        match value {
            Some(Json::Str(s)) if !rules.placeholders.contains(s.as_str()) => Some(s.as_str()),
            _ => None,
        }
    }
    for message in messages {
        if !matches!(message, Json::Object(_)) {
            continue;
        }
        let Some(Json::Array(parts)) = message.get("parts") else {
            if let Some(content) = text_of(rules, message.get("content")) {
                texts.push(content);
            }
            continue;
        };
        for part in parts {
            if !matches!(part, Json::Object(_)) {
                continue;
            }
            match part.get("type") {
                Some(Json::Str(kind)) if kind == "tool_call" => {
                    let Some(name) = text_of(rules, part.get("name")) else {
                        continue;
                    };
                    let args = match part.get("arguments") {
                        None | Some(Json::Null) => Some(Json::Object(Vec::new())),
                        Some(Json::Str(text)) => text_args(rules, text)?,
                        Some(Json::Object(_)) => Some(take(part, "arguments")),
                        Some(_) => None,
                    };
                    calls.push(ModelCall {
                        name: name.to_owned(),
                        call_id: json_ident(rules, part.get("id")),
                        args,
                        source: rules.genai_output_source,
                    });
                }
                Some(Json::Str(kind)) if kind == "text" => {
                    if let Some(content) = text_of(rules, part.get("content")) {
                        texts.push(content);
                    }
                }
                _ => {}
            }
        }
    }
    let reply = (!texts.is_empty()).then(|| texts.concat());
    Ok((calls, reply))
}

/// A copy of an object member (the arguments a model listed), kept apart from the messages.
fn take(object: &Json, key: &str) -> Json {
    object.get(key).cloned().unwrap_or(Json::Null)
}
