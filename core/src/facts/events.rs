//! What span events say (Strands records tool arguments, replies and a model's calls in
//! events, not attributes): `dialects/spans.py _event_reply` and `model_calls`' event branch,
//! `dialects/tools.py _strands_event_args` and `_genai_failure`'s Strands branch.
//!
//! An event's attributes answer as a Python dict does: the last value of a repeated key.
//! Values the Python readers would take apart as decoded lists or dicts (a structured
//! message, a list value of messages) are `Fallback`.

use super::output::{genai_value, ModelCall};
use crate::jsontext::{self, Json};
use crate::rules::{Rules, Slots};
use crate::traces::{AnyValue, Span};
use crate::values::{ident, json_ident, last, message_text, text_args, Args};
use crate::wire::{Fallback, Read};

/// The fields of an event's body the Python readers name in code, as they name a message's
/// `parts` (the shape of the body, not a rule of rules.json): a `gen_ai.choice` event's
/// reply, a tool message event's call id.
const CHOICE_MESSAGE: &str = "message";
const MESSAGE_ID: &str = "id";

/// `spans._event_reply`: the text of the span's last `gen_ai.choice` event, or of its last
/// inference-details event with output messages.
pub(super) fn reply(rules: &Rules, span: &Span<'_>) -> Read<Option<String>> {
    for event in span.events.iter().rev() {
        if event.name == rules.choice_event {
            return value_text(rules, last(&event.attributes, CHOICE_MESSAGE));
        }
        if event.name == rules.details_event {
            match last(&event.attributes, &rules.details_output) {
                None | Some(AnyValue::None) => {}
                Some(value) => return Ok(genai_value(rules, value)?.1),
            }
        }
    }
    Ok(None)
}

/// `spans.model_calls`' last branch: the calls of the first inference-details event with
/// output messages; `None` without one.
pub(super) fn model_calls(rules: &Rules, span: &Span<'_>) -> Read<Option<Vec<ModelCall>>> {
    for event in &span.events {
        if event.name == rules.details_event {
            match last(&event.attributes, &rules.details_output) {
                None | Some(AnyValue::None) => {}
                Some(value) => return Ok(Some(genai_value(rules, value)?.0)),
            }
        }
    }
    Ok(None)
}

/// A tool call's arguments found in events: the arguments, the call id the event names and
/// the `source` (an index into `Rules::sources`).
pub(super) struct Found<'s, 'a> {
    pub args: Args<'s, 'a>,
    pub call_id: Option<String>,
    pub source: usize,
}

/// `tools._strands_event_args`: the first tool message event with arguments, or the first
/// inference-details event whose input messages call the tool `name`; `None` without one.
pub(super) fn tool_args<'s, 'a>(
    rules: &Rules,
    span: &'s Span<'a>,
    name: &str,
) -> Read<Option<Found<'s, 'a>>> {
    let (message, details) = (&rules.genai.strands_message, &rules.genai.strands_details);
    let others = &rules.genai.other_events;
    if span
        .events
        .iter()
        .any(|e| others.iter().any(|name| name == e.name))
    {
        return Err(Fallback); // arguments maybe in an event the port does not read
    }
    for event in &span.events {
        let attrs = &event.attributes;
        if event.name == message.event {
            let args = match last(attrs, &message.key) {
                Some(AnyValue::Str(text)) => text_args(rules, text)?.map(Args::Json),
                Some(value @ AnyValue::Kv(_)) => Some(Args::Value(value)),
                Some(AnyValue::Bytes(_)) => return Err(Fallback),
                _ => None,
            };
            if let Some(args) = args {
                let call_id = ident(rules, last(attrs, MESSAGE_ID));
                return Ok(Some(Found {
                    args,
                    call_id,
                    source: message.source,
                }));
            }
        } else if event.name == details.event {
            let messages = match last(attrs, &details.key) {
                Some(AnyValue::Str(text)) if text.starts_with('[') => jsontext::parse(text)?,
                Some(AnyValue::Array(_)) => return Err(Fallback),
                _ => continue, // no list: no parts
            };
            if let Some(found) = called(rules, &messages, name, details.source)? {
                return Ok(Some(found));
            }
        }
    }
    Ok(None)
}

/// The first `tool_call` part of `messages` naming `name`: its arguments (`args_from`: absent
/// is none) and id.
fn called<'s, 'a>(
    rules: &Rules,
    messages: &Json,
    name: &str,
    source: usize,
) -> Read<Option<Found<'s, 'a>>> {
    let Json::Array(messages) = messages else {
        return Ok(None);
    };
    for message in messages {
        let Some(Json::Array(parts)) = message.get("parts") else {
            continue;
        };
        for part in parts {
            let is_call = matches!(part.get("type"), Some(Json::Str(kind)) if kind == "tool_call");
            if !is_call || !matches!(part.get("name"), Some(Json::Str(n)) if n == name) {
                continue;
            }
            let args = match part.get("arguments") {
                Some(Json::Str(text)) => text_args(rules, text)?,
                Some(object @ Json::Object(_)) => Some(object.clone()),
                _ => None,
            };
            return Ok(Some(Found {
                args: args.map_or(Args::None, Args::Json),
                call_id: json_ident(rules, part.get("id")),
                source,
            }));
        }
    }
    Ok(None)
}

/// `tools._genai_failure`'s Strands branch, asked of a span with the status key: a failed
/// call's text (its first `gen_ai.choice` event's, else its result's, else `"error"`);
/// `None` for another status.
pub(super) fn tool_failure(
    rules: &Rules,
    span: &Span<'_>,
    attrs: &Slots<'_, '_>,
) -> Read<Option<String>> {
    let (key, failed) = &rules.genai.status;
    if !matches!(attrs.get(*key), Some(AnyValue::Str(status)) if status == failed) {
        return Ok(None);
    }
    for event in &span.events {
        if event.name == rules.choice_event {
            let reply = value_text(rules, last(&event.attributes, CHOICE_MESSAGE))?;
            if let Some(reply) = reply.filter(|r| !r.is_empty()) {
                return Ok(Some(reply));
            }
        }
    }
    let result = value_text(rules, attrs.get(rules.genai.adk_failure.result))?;
    Ok(Some(
        result
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| "error".to_owned()),
    ))
}

/// `values.message_text` of an attribute value: text (JSON text of a string, of text blocks
/// or of an object parsed as `json_value` parses it); `Fallback` for a list or structured
/// value (decoded by the Python path) and JSON text the two parsers might read apart.
fn value_text(rules: &Rules, value: Option<&AnyValue<'_>>) -> Read<Option<String>> {
    let text = match value {
        Some(AnyValue::Str(text)) => *text,
        Some(AnyValue::Array(_) | AnyValue::Kv(_)) => return Err(Fallback),
        _ => return Ok(None),
    };
    let parsed = match text.as_bytes().first() {
        Some(b'{') if jsontext::has_long_digits(text) => return Err(Fallback),
        Some(b'{' | b'[' | b'"') => jsontext::parse(text)?,
        _ => return Ok(rules.text(value).map(str::to_owned)),
    };
    match parsed {
        Json::Str(inner) => Ok((!rules.placeholders.contains(&inner)).then_some(inner)),
        other => Ok(message_text(rules, &other)),
    }
}
