//! What `convert/facts.py TraceFacts.add` keeps of a span, read in the core: the span's role
//! (`dialects/roles.py classify`) and, for the spans the port covers exactly, the ready facts.
//!
//! The port covers the GenAI semantic conventions' common case: `execute_tool` spans with
//! `gen_ai.tool.call.arguments` (JSON text or a structured value), the common case of the
//! OpenInference, Vercel, Traceloop, Pydantic AI v2, MLflow and LangSmith tool readers
//! (`tools.rs`), agent, workflow and root spans (the reply under any `agents.reply` key of
//! encoding `reply`, else a model's; labels, conversation and case ids), model spans
//! (`gen_ai.output.messages` read for calls and reply, else Vercel's listed calls and reply
//! and OpenInference's reply), usage counts, and every span classified as "other". Any span
//! it does not cover exactly is `Outcome::Full`: handed to Python as a whole `Span`, which
//! the Python readers classify. The differential tests (`tests/otlp/test_core_differential.py`,
//! `test_core_facts.py`) hold the two equal.

mod events;
mod listed;
pub mod output;

use std::borrow::Cow;

use crate::jsontext::{self, Json};
use crate::rules::{
    Meaning, Rules, Slots, ROLE_AGENT, ROLE_MODEL, ROLE_OTHER, ROLE_TOOL, ROLE_WORKFLOW,
};
use crate::tools::{self, may_mark_failure, Call};
use crate::traces::{AnyValue, Span};
use crate::values::{ident, json_ident, last, message_text, text_args, value_args, Args};
use crate::wire::{Fallback, Read};
use output::{genai_value, ModelCall};

/// `STATUS_ERROR` of `otlp/decode/span.py`.
const STATUS_ERROR: i32 = 2;
/// `facts.MAX_LABEL_CHARS`: longest string label, in characters.
const MAX_LABEL_CHARS: usize = 1024;

/// What the core hands Python for a span of interest.
#[derive(Debug)]
pub enum Outcome<'s, 'a> {
    /// A span with a parent that is neither tool, agent nor model: a `SpanHead`.
    Head,
    /// Not covered: the whole `Span`, for Python to classify.
    Full,
    Facts(Box<Facts<'s, 'a>>),
}

/// The `SpanFact` of one span, and the trace notes `TraceFacts.add` takes from it.
#[derive(Debug)]
pub struct Facts<'s, 'a> {
    pub role: i64,
    pub error: Option<Cow<'a, str>>,
    pub call: Option<Call<'s, 'a>>,
    pub agent: Option<String>,
    pub reply: Option<String>,
    pub model_calls: Vec<ModelCall>,
    pub labels: Option<Vec<(&'a str, &'s AnyValue<'a>)>>,
    pub usage: Option<(u64, u64, Option<&'a str>)>,
    pub asked_unlisted: bool,
    /// Whether `TraceFacts` notes this span's conversation and case ids (agent and other
    /// spans, and roots).
    pub noted: bool,
    pub conversation: Option<String>,
    pub case_id: Option<&'a str>,
}

/// What `span` gives `TraceFacts` (its resource's attributes for the case id).
pub fn read<'s, 'a>(
    rules: &Rules,
    span: &'s Span<'a>,
    resource: &'s [(&'a str, AnyValue<'a>)],
) -> Outcome<'s, 'a> {
    let attrs = Slots::of(rules, &span.attributes);
    let Some(meaning) = classify(rules, span, &attrs) else {
        if !span.parent_span_id.is_empty() {
            return Outcome::Head;
        }
        return facts(rules, span, resource, &attrs, ROLE_OTHER, None).map_or(Outcome::Full, done);
    };
    let (role, call) = match meaning {
        Meaning::Agent => (ROLE_AGENT, None),
        Meaning::Model => (ROLE_MODEL, None),
        Meaning::Workflow => (ROLE_WORKFLOW, None),
        Meaning::Tool(reader) if reader == "genai" => match genai_call(rules, span, &attrs) {
            Ok(Some(call)) => (ROLE_TOOL, Some(call)),
            Ok(None) if !span.parent_span_id.is_empty() => return Outcome::Head,
            Ok(None) => (ROLE_OTHER, None),
            Err(Fallback) => return Outcome::Full,
        },
        Meaning::Tool(reader) => match tools::call(rules, reader, span, &attrs) {
            Ok(Some(call)) => (ROLE_TOOL, Some(call)),
            Ok(None) if !span.parent_span_id.is_empty() => return Outcome::Head,
            Ok(None) => (ROLE_OTHER, None),
            Err(Fallback) => return Outcome::Full, // a reader not ported, or a case not covered
        },
    };
    facts(rules, span, resource, &attrs, role, call).map_or(Outcome::Full, done)
}

fn done<'s, 'a>(facts: Facts<'s, 'a>) -> Outcome<'s, 'a> {
    Outcome::Facts(Box::new(facts))
}

/// `roles.classify`'s table lookups: by span name, marker attribute (in order), name prefix.
fn classify<'r>(rules: &'r Rules, span: &Span<'_>, attrs: &Slots<'_, '_>) -> Option<&'r Meaning> {
    if let Some(meaning) = rules.by_span_name.get(span.name) {
        return Some(meaning);
    }
    for (slot, table) in &rules.markers {
        if let Some(AnyValue::Str(value)) = attrs.get(*slot) {
            if let Some(meaning) = table.get(*value) {
                return Some(meaning);
            }
        }
    }
    let (prefix, meaning) = &rules.name_prefix;
    span.name.starts_with(prefix.as_str()).then_some(meaning)
}

/// `tools.read_genai` in the common case: `Ok(None)` for a span that is not a call, `Err`
/// for one the port does not read (arguments elsewhere, failures in results, envelopes,
/// output functions, deferred and final-answer calls).
fn genai_call<'s, 'a>(
    rules: &Rules,
    span: &'s Span<'a>,
    attrs: &Slots<'s, 'a>,
) -> Read<Option<Call<'s, 'a>>> {
    let g = &rules.genai;
    let mut name = rules.text(attrs.get(g.name)).map(str::to_owned);
    if name.is_none() {
        for prefix in &g.name_after_prefix {
            if let Some(rest) = span.name.strip_prefix(prefix.as_str()) {
                name = python_strip(rest)?
                    .filter(|n| !rules.placeholders.contains(*n))
                    .map(str::to_owned);
                break;
            }
        }
    }
    let Some(name) = name else {
        return Ok(None);
    };
    if name == g.not_a_tool_name || span.name == g.not_a_tool_span {
        return Ok(None);
    }
    if g.declined.iter().any(|slot| attrs.has(*slot)) || rules.final_names.contains(&name) {
        return Err(Fallback);
    }
    let (key, prefix) = &g.output_function;
    if let Some(AnyValue::Str(msg)) = attrs.get(*key) {
        if msg.starts_with(prefix.as_str()) {
            return Err(Fallback); // an output function: not a call
        }
    }
    let adk = &g.adk_failure;
    if attrs.has(adk.event) || attrs.has(adk.adk_result) {
        // `tools._genai_failure`: the result (or ADK's own) marked by the retry plugin
        let result = if attrs.has(adk.result) {
            attrs.get(adk.result)
        } else {
            attrs.get(adk.adk_result)
        };
        if let Some(AnyValue::Str(text)) = result {
            if text.contains(adk.marker.as_str()) {
                return Err(Fallback);
            }
        }
        if may_mark_failure(result, &g.mcp_failure.marker) {
            return Err(Fallback); // an MCP tool's result, maybe marked failed (kagent)
        }
    }
    let mcp = &g.mcp_failure;
    if attrs.has(mcp.when) && may_mark_failure(attrs.get(mcp.result), &mcp.marker) {
        return Err(Fallback); // `tools._mcp_tool_error`: a result marked `isError`, maybe
    }
    let mut call_id = ident(rules, attrs.get(g.call_id));
    let mut source = g.args_source;
    let (adk, adk_pair, adk_source) = g.adk_args;
    let (pydantic, pydantic_source) = g.pydantic_args;
    let args = match attrs.get(g.args) {
        // arguments elsewhere (`tools._genai_args_elsewhere`): ADK's legacy key (`"{}"` twice:
        // not captured), Pydantic AI v2's, keys the port does not read, else events (Strands)
        None | Some(AnyValue::None) if attrs.has(adk) => {
            source = adk_source;
            let raw = attrs.get(adk);
            let empty = |value: Option<&AnyValue<'_>>| matches!(value, Some(AnyValue::Str("{}")));
            if empty(raw) && empty(attrs.get(adk_pair)) {
                Args::None
            } else {
                value_args(rules, raw)?
            }
        }
        None | Some(AnyValue::None) if attrs.has(pydantic) => {
            source = pydantic_source;
            value_args(rules, attrs.get(pydantic))?
        }
        None | Some(AnyValue::None) if g.elsewhere.iter().any(|slot| attrs.has(*slot)) => {
            return Err(Fallback)
        }
        None | Some(AnyValue::None) => {
            source = g.name_source;
            match events::tool_args(rules, span, &name)? {
                None => Args::None,
                Some(found) => {
                    source = found.source;
                    call_id = call_id.or(found.call_id);
                    found.args
                }
            }
        }
        value => value_args(rules, value)?,
    };
    let failure = if attrs.has(g.status.0) {
        events::tool_failure(rules, span, attrs)?
    } else {
        None
    };
    // `tools._genai_failure`: `error.type`, set on a failed call only, when nothing says more
    let failure = failure.or_else(|| rules.text(attrs.get(g.error_type)).map(str::to_owned));
    Ok(Some(Call {
        name,
        args,
        call_id,
        source,
        failure,
    }))
}

/// Python's `str.strip()` where it agrees with ASCII trimming: `Err` when either end is
/// a character Python might count as whitespace and Rust not (or the other way round).
fn python_strip(text: &str) -> Read<Option<&str>> {
    let trimmed =
        text.trim_matches(|c: char| matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c'));
    let odd = |c: Option<char>| c.is_some_and(|c| !c.is_ascii() || c.is_ascii_control());
    if odd(trimmed.chars().next()) || odd(trimmed.chars().next_back()) {
        return Err(Fallback);
    }
    Ok(Some(trimmed))
}

/// The facts of a span of `role` (`TraceFacts.add` after `classify`).
fn facts<'s, 'a>(
    rules: &Rules,
    span: &'s Span<'a>,
    resource: &'s [(&'a str, AnyValue<'a>)],
    attrs: &Slots<'s, 'a>,
    role: i64,
    call: Option<Call<'s, 'a>>,
) -> Read<Facts<'s, 'a>> {
    let parent = !span.parent_span_id.is_empty();
    let mut out = Facts {
        role,
        error: None,
        call: None,
        agent: None,
        reply: None,
        model_calls: Vec::new(),
        labels: None,
        usage: None,
        asked_unlisted: false,
        noted: false,
        conversation: None,
        case_id: None,
    };
    match role {
        ROLE_TOOL => {
            let failure = call.as_ref().and_then(|c| c.failure.as_deref());
            if span.status_code == STATUS_ERROR || failure.is_some_and(|f| !f.is_empty()) {
                // the exception's message, else the status's, else the call's failure
                let message = exception_message(rules, span)
                    .or((!span.status_message.is_empty()).then_some(span.status_message));
                out.error = Some(match (message, failure) {
                    (Some(message), _) => Cow::Borrowed(message),
                    (None, Some(failure)) if !failure.is_empty() => Cow::Owned(failure.to_owned()),
                    _ => Cow::Borrowed("error"),
                });
            }
            if rules.handoff.iter().any(|slot| attrs.has(*slot)) {
                return Err(Fallback); // `SpanFact.handoff`: read by Python
            }
            out.call = call;
            out.agent = agent_name(rules, span, attrs, false)?;
        }
        ROLE_AGENT => {
            out.agent = agent_name(rules, span, attrs, true)?;
            out.reply = agent_reply(rules, span, attrs)?;
        }
        ROLE_MODEL => {
            let (calls, reply) = model_output(rules, span, attrs)?;
            out.reply = reply;
            if calls.is_empty() {
                out.asked_unlisted = out.reply.is_none() && asked_for_tools(rules, attrs)?;
            }
            out.model_calls = calls;
            out.usage = usage(rules, attrs)?;
        }
        _ => out.reply = agent_reply(rules, span, attrs)?, // workflow and other spans
    }
    if role == ROLE_AGENT || role == ROLE_OTHER || !parent {
        out.labels = Some(labels(rules, &span.attributes));
        out.noted = true;
        out.conversation = conversation(rules, attrs)?;
        out.case_id = case_id(rules, attrs, resource);
    }
    Ok(out)
}

/// `spans.agent_name`.
fn agent_name(
    rules: &Rules,
    span: &Span<'_>,
    attrs: &Slots<'_, '_>,
    invoked: bool,
) -> Read<Option<String>> {
    for slot in &rules.agent_name {
        if let Some(name) = rules.text(attrs.get(*slot)) {
            return Ok(Some(name.to_owned()));
        }
    }
    if !invoked {
        return Ok(None);
    }
    let (kind, values, key) = &rules.invoked_traceloop;
    if let Some(AnyValue::Str(value)) = attrs.get(*kind) {
        if values.iter().any(|v| v == value) {
            return Ok(rules.text(attrs.get(*key)).map(str::to_owned));
        }
    }
    if let Some(rest) = span.name.strip_prefix(rules.invoke_prefix.as_str()) {
        let name = python_strip(rest)?;
        return Ok(name
            .filter(|n| !rules.placeholders.contains(*n))
            .map(str::to_owned));
    }
    let (kinds, values) = &rules.invoked_span_name;
    for slot in kinds {
        if let Some(AnyValue::Str(value)) = attrs.get(*slot) {
            if values.iter().any(|v| v == value) {
                return Ok((!rules.placeholders.contains(span.name)).then(|| span.name.to_owned()));
            }
        }
    }
    Ok(None)
}

/// `spans.exception_message`: the text of the span's last `exception` event.
fn exception_message<'a>(rules: &Rules, span: &Span<'a>) -> Option<&'a str> {
    let event = span
        .events
        .iter()
        .rev()
        .find(|e| e.name == rules.exception_event)?;
    let (message, kind) = &rules.exception_text;
    let text = |key: &str| match last(&event.attributes, key) {
        Some(AnyValue::Str(s)) if !rules.placeholders.contains(*s) => Some(*s),
        _ => None,
    };
    text(message).or_else(|| text(kind))
}

/// `spans.agent_reply`: the first `agents.reply` key present decides (its text read by
/// `reply_text`); without one, `model_reply`. `Err` for a row of another encoding than
/// `reply` (MLflow's twice-encoded output) and a value that is not text (its `str()` is
/// Python's).
fn agent_reply(rules: &Rules, span: &Span<'_>, attrs: &Slots<'_, '_>) -> Read<Option<String>> {
    for row in &rules.agent_reply {
        match attrs.get(row.slot) {
            None => {}
            Some(_) if row.declined => return Err(Fallback),
            Some(AnyValue::None) if !row.decides => {}
            Some(AnyValue::Str(text)) => return reply_text(rules, text),
            Some(_) => return Err(Fallback),
        }
    }
    model_reply(rules, span, attrs)
}

/// `spans._reply_text` of text: JSON text parsed as `values.json_value` parses it (an
/// object, a list, a string), a framework's wrapper unwrapped, else the text itself.
fn reply_text(rules: &Rules, text: &str) -> Read<Option<String>> {
    let parsed = match text.as_bytes().first() {
        Some(b'{') if jsontext::has_long_digits(text) => return Err(Fallback),
        Some(b'{' | b'[' | b'"') => jsontext::parse(text)?,
        _ => return Ok(reply_str(rules, text)?.map(str::to_owned)),
    };
    match &parsed {
        Json::Str(inner) => Ok(reply_str(rules, inner)?.map(str::to_owned)),
        // an output with no wrapper may hold the run's messages (`spans._said_last`): Python's
        other => unwrap_reply(rules, other, 0)?.map(Some).ok_or(Fallback),
    }
}

/// `spans._unwrap_reply` of a string: itself unless a placeholder or a redaction marker
/// (empty text among them); `Err` for text ending in `)`, which may be a result object's repr
/// (`dialects/reprs.py`, the Python readers'), or in an ellipsis, which may be one cut to
/// length (`spans._REPR_START`).
fn reply_str<'t>(rules: &Rules, text: &'t str) -> Read<Option<&'t str>> {
    if text.ends_with(')') || text.ends_with("...") || text.ends_with('\u{2026}') {
        return Err(Fallback);
    }
    Ok((!rules.placeholders.contains(text)).then_some(text))
}

/// `spans._unwrap_reply` of a parsed value: the first wrapper key (`agents.reply_wrappers`)
/// of an object, followed to `MAX_WRAPPERS` deep, else `values.message_text`.
fn unwrap_reply(rules: &Rules, value: &Json, depth: usize) -> Read<Option<String>> {
    match value {
        Json::Str(text) => Ok(reply_str(rules, text)?.map(str::to_owned)),
        Json::Object(_) if depth < MAX_WRAPPERS => {
            for key in &rules.reply_wrappers {
                if let Some(inner) = value.get(key) {
                    return unwrap_reply(rules, inner, depth + 1);
                }
            }
            Ok(message_text(rules, value))
        }
        _ => Ok(message_text(rules, value)),
    }
}

/// `spans._unwrap_reply`'s depth limit.
const MAX_WRAPPERS: usize = 4;

/// `spans.model_reply`: the text of GenAI output messages, else Vercel's or OpenInference's
/// reply key, else ADK's response's, else the reply events'.
fn model_reply(rules: &Rules, span: &Span<'_>, attrs: &Slots<'_, '_>) -> Read<Option<String>> {
    if let Some(value) = attrs.get(rules.genai_output) {
        return Ok(genai_value(rules, value)?.1);
    }
    match attrs.get(rules.vercel_reply) {
        None | Some(AnyValue::None) => {}
        Some(AnyValue::Str(text)) => return Ok((!text.is_empty()).then(|| (*text).to_owned())),
        Some(_) => return Ok(None),
    }
    if let Some(AnyValue::Str(text)) = attrs.get(rules.openinference_reply) {
        if !text.is_empty() {
            return Ok(Some((*text).to_owned()));
        }
    }
    let adk = rules.adk_response.0;
    if attrs.has(adk) {
        if let (_, Some(reply)) = listed::adk_response(rules, attrs.get(adk))? {
            return Ok(Some(reply));
        }
    }
    if rules.reply_elsewhere.iter().any(|slot| attrs.has(*slot)) || flat_reply(rules, span) {
        return Err(Fallback);
    }
    events::reply(rules, span)
}

/// Whether the span has a key of a flattened `messages.response` row (the Python readers').
fn flat_reply(rules: &Rules, span: &Span<'_>) -> bool {
    let prefixes = &rules.reply_elsewhere_prefixes;
    !prefixes.is_empty()
        && span
            .attributes
            .iter()
            .any(|(key, _)| prefixes.iter().any(|p| key.starts_with(p.as_str())))
}

/// `spans.model_output`: the calls and reply of GenAI output messages, else of ADK's
/// response (its reply else the reply events'), else `model_calls` and `model_reply`.
fn model_output(
    rules: &Rules,
    span: &Span<'_>,
    attrs: &Slots<'_, '_>,
) -> Read<(Vec<ModelCall>, Option<String>)> {
    if let Some(value) = attrs.get(rules.genai_output) {
        return genai_value(rules, value);
    }
    let adk = rules.adk_response.0;
    if attrs.has(adk) {
        let (calls, reply) = listed::adk_response(rules, attrs.get(adk))?;
        let reply = match reply {
            Some(reply) => Some(reply),
            None => events::reply(rules, span)?,
        };
        return Ok((calls, reply));
    }
    if rules.reply_elsewhere.iter().any(|slot| attrs.has(*slot)) || flat_reply(rules, span) {
        return Err(Fallback);
    }
    let calls = model_calls(rules, span, attrs)?;
    Ok((calls, model_reply(rules, span, attrs)?))
}

/// `spans.model_calls` of a span without GenAI output messages or ADK's response: Vercel's
/// listed calls, OpenInference's flattened calls, else the calls of an inference-details
/// event.
fn model_calls(rules: &Rules, span: &Span<'_>, attrs: &Slots<'_, '_>) -> Read<Vec<ModelCall>> {
    match attrs.get(rules.vercel_calls.slot) {
        None => {}
        Some(AnyValue::Str(text)) => return vercel_calls(rules, text),
        Some(_) => return Err(Fallback),
    }
    let (marker, llm) = &rules.openinference_llm;
    if matches!(attrs.get(*marker), Some(AnyValue::Str(kind)) if kind == llm) {
        return listed::openinference_calls(rules, &span.attributes);
    }
    Ok(events::model_calls(rules, span)?.unwrap_or_default())
}

/// `spans._vercel_calls` of JSON text: the listed objects with a name, their arguments
/// (`input`, else `args`) read as `values.args_from` reads them. `Err` for JSON text encoded
/// once more and list items that are JSON text themselves.
fn vercel_calls(rules: &Rules, text: &str) -> Read<Vec<ModelCall>> {
    let v = &rules.vercel_calls;
    let items = match text.as_bytes().first() {
        Some(b'[') => jsontext::parse(text)?,
        Some(b'"') => return Err(Fallback),
        _ => return Ok(Vec::new()), // an object or other text: no list, no calls
    };
    let Json::Array(items) = &items else {
        return Ok(Vec::new());
    };
    let mut calls = Vec::new();
    for item in items {
        match item {
            Json::Object(_) => {}
            Json::Str(inner) if inner.starts_with('{') => return Err(Fallback),
            _ => continue,
        }
        let Some(Json::Str(name)) = item.get(&v.name) else {
            continue;
        };
        if rules.placeholders.contains(name.as_str()) {
            continue;
        }
        let raw = v.args.iter().find_map(|key| item.get(key));
        let args = match raw {
            Some(Json::Str(text)) => text_args(rules, text)?,
            Some(object @ Json::Object(_)) => Some(object.clone()),
            _ => None,
        };
        calls.push(ModelCall {
            name: name.clone(),
            call_id: json_ident(rules, item.get(&v.call_id)),
            args,
            source: v.source,
        });
    }
    Ok(calls)
}

/// `spans.asked_for_tools`: a finish reason that says the response asked for tools.
fn asked_for_tools(rules: &Rules, attrs: &Slots<'_, '_>) -> Read<bool> {
    let asks = |reason: &str| -> Read<bool> {
        if !reason.is_ascii() {
            return Err(Fallback); // Python's lower() of other scripts: left to Python
        }
        Ok(rules.tool_finish.contains(&reason.to_ascii_lowercase()))
    };
    for slot in &rules.finish_reasons {
        let reasons = match attrs.get(*slot) {
            Some(value @ AnyValue::Str(_)) => std::slice::from_ref(value),
            Some(AnyValue::Array(items)) => items.as_slice(),
            _ => continue,
        };
        for reason in reasons {
            if let AnyValue::Str(reason) = reason {
                if asks(reason)? {
                    return Ok(true);
                }
            }
        }
    }
    Ok(false)
}

/// `usage.model_usage`: (input tokens, output tokens, model), or `None` without a count.
fn usage<'a>(rules: &Rules, attrs: &Slots<'_, 'a>) -> Read<Option<(u64, u64, Option<&'a str>)>> {
    let count = |slots: &[usize]| -> Read<Option<u64>> {
        for slot in slots {
            match attrs.get(*slot) {
                Some(AnyValue::Int(i)) if *i >= 0 => return Ok(Some(*i as u64)),
                Some(AnyValue::Str(s))
                    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) =>
                {
                    return s.parse::<u64>().map(Some).map_err(|_| Fallback);
                }
                // ``str.isdigit`` of other scripts' digits: left to Python
                Some(AnyValue::Str(s)) if !s.is_ascii() => return Err(Fallback),
                _ => {}
            }
        }
        Ok(None)
    };
    let tokens_in = count(&rules.input_tokens)?;
    let tokens_out = count(&rules.output_tokens)?;
    if tokens_in.is_none() && tokens_out.is_none() {
        return Ok(None);
    }
    let model = rules
        .usage_model
        .iter()
        .find_map(|slot| match attrs.get(*slot) {
            Some(AnyValue::Str(s)) if !rules.placeholders.contains(*s) => Some(*s),
            _ => None,
        });
    Ok(Some((
        tokens_in.unwrap_or(0),
        tokens_out.unwrap_or(0),
        model,
    )))
}

/// `facts._labels`: scalar attributes that are not content, in the span's order.
fn labels<'s, 'a>(
    rules: &Rules,
    attributes: &'s [(&'a str, AnyValue<'a>)],
) -> Vec<(&'a str, &'s AnyValue<'a>)> {
    attributes
        .iter()
        .filter(|(key, value)| {
            !rules.is_content(key)
                && match value {
                    AnyValue::Str(s) => {
                        s.len() <= MAX_LABEL_CHARS || s.chars().count() <= MAX_LABEL_CHARS
                    }
                    AnyValue::Bool(_) | AnyValue::Int(_) | AnyValue::Double(_) => true,
                    _ => false,
                }
        })
        .map(|(key, value)| (*key, value))
        .collect()
}

/// `spans.conversation_id`; `Err` for an id encoded twice (MLflow).
fn conversation(rules: &Rules, attrs: &Slots<'_, '_>) -> Read<Option<String>> {
    for (slot, twice) in &rules.conversations {
        let value = attrs.get(*slot);
        if matches!(value, None | Some(AnyValue::None)) {
            continue;
        }
        if *twice {
            return Err(Fallback);
        }
        if let Some(found) = ident(rules, value) {
            return Ok(Some(found));
        }
    }
    Ok(None)
}

/// The case id `TraceFacts._note_ids` reads: the span's, else (when that is falsy) the
/// resource's; only a non-empty string counts.
fn case_id<'a>(
    rules: &Rules,
    attrs: &Slots<'_, 'a>,
    resource: &[(&'a str, AnyValue<'a>)],
) -> Option<&'a str> {
    let own = attrs.get(rules.case_id);
    let chosen = match own {
        Some(value) if truthy(value) => Some(value),
        _ => last(resource, &rules.case_id_key),
    };
    match chosen {
        Some(AnyValue::Str(s)) if !s.is_empty() => Some(s),
        _ => None,
    }
}

/// Python's truth value of a decoded attribute value.
fn truthy(value: &AnyValue<'_>) -> bool {
    match value {
        AnyValue::None => false,
        AnyValue::Str(s) => !s.is_empty(),
        AnyValue::Bool(b) => *b,
        AnyValue::Int(i) => *i != 0,
        AnyValue::Double(d) => *d != 0.0,
        AnyValue::Bytes(b) => !b.is_empty(),
        AnyValue::Array(items) => !items.is_empty(),
        AnyValue::Kv(pairs) => !pairs.is_empty(),
    }
}
