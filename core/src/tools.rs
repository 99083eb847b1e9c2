//! The tool readers of other conventions than GenAI (`dialects/tools.py`), in their common
//! case: OpenInference `TOOL` spans (`read_openinference`), Vercel `ai.toolCall` spans
//! (`read_vercel`), Traceloop `@tool` spans (`read_traceloop`), Pydantic AI v2 `running tool`
//! spans (`read_pydantic_v2`), MLflow `TOOL` spans (`read_mlflow`) and LangSmith `tool` spans
//! (`read_langsmith`). Every attribute key comes from rules.json (`Rules::openinference`,
//! `vercel`, `traceloop`, `pydantic_v2`, `mlflow`, `langsmith`); the envelope members below
//! are those of `dialects/values.py`.
//!
//! What the port does not read exactly is `Fallback`, and the span goes to Python whole: Python
//! reprs, LangChain envelopes, call envelopes with positional values
//! (`{"args": [1], "kwargs": {...}}`), structured call or single-input envelopes, empty or
//! byte values, JSON text the two Python parsers might read differently, built-in
//! final-answer tools.

use crate::jsontext::{self, Json};
use crate::rules::{Rules, Slots};
use crate::traces::{AnyValue, Span};
use crate::values::{ident, literal_args, text_args, Args};
use crate::wire::{Fallback, Read};

/// A tool call a span recorded (`tools.DialectCall`): what every tool reader gives, GenAI's
/// (`facts.rs`) and the other conventions' here.
#[derive(Debug)]
pub struct Call<'s, 'a> {
    pub name: String,
    pub args: Args<'s, 'a>,
    pub call_id: Option<String>,
    /// Its `source`: an index into `Rules::sources`.
    pub source: usize,
    /// A failure the span records besides its status (`DialectCall.failure`: Strands').
    pub failure: Option<String>,
}

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
        "traceloop" => traceloop(rules, span, attrs)?,
        "pydantic_v2" => pydantic_v2(rules, attrs)?,
        "mlflow" => mlflow(rules, span, attrs)?,
        "langsmith" => langsmith(rules, span, attrs)?,
        _ => return Err(Fallback),
    };
    match found {
        // `roles.classify` asks the scope whether the name is its final answer: left to Python
        Some(call) if rules.final_names.contains(&call.name) => Err(Fallback),
        found => Ok(found),
    }
}

/// Whether `value` may be a result marked failed by `member` (`true` at its top level): JSON
/// text of an object that names it and parses to `true` there, or that the core does not
/// parse exactly, or a structured value with it as a key. Such a span is the Python readers'
/// (`tools._mcp_tool_error`, `tools._traceloop_failure`); any other value marks no failure,
/// as those readers find (text not starting with `{` is no object to them).
pub(crate) fn may_mark_failure(value: Option<&AnyValue<'_>>, member: &str) -> bool {
    match value {
        Some(AnyValue::Str(text)) if text.starts_with('{') && text.contains(member) => {
            match jsontext::parse(text) {
                Ok(json) => json.get(member) == Some(&Json::Bool(true)),
                Err(_) => true,
            }
        }
        Some(AnyValue::Kv(pairs)) => pairs.iter().any(|(key, _)| *key == member),
        _ => false,
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
    let name = rules.text(attrs.get(oi.name)).or_else(|| {
        let bare = span
            .name
            .strip_suffix(oi.name_suffix.as_str())
            .unwrap_or(span.name);
        (!rules.placeholders.contains(bare)).then_some(bare)
    });
    let Some(name) = name else {
        return Ok(None);
    };
    let call_id = oi
        .call_ids
        .iter()
        .find_map(|slot| ident(rules, attrs.get(*slot)));
    let (args, source) = match attrs.get(oi.args) {
        None => (Args::None, oi.name_source),
        Some(value) => (structured_args(rules, value, Unwrap::Call)?, oi.args_source),
    };
    if matches!(args, Args::None) && attrs.has(oi.args_hidden) {
        return Err(Fallback); // arguments beside a hidden input: `tools.read_openinference`
    }
    Ok(Some(Call {
        name: name.to_owned(),
        args,
        call_id,
        source,
        failure: None,
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
            structured_args(rules, attrs.get(*slot).ok_or(Fallback)?, Unwrap::None)?,
            *source,
        ),
    };
    Ok(Some(Call {
        name: name.to_owned(),
        args,
        call_id,
        source,
        failure: None,
    }))
}

/// `tools.read_traceloop`: the name from its keys, else the span name before its suffix;
/// OpenLLMetry's LangChain arguments, else the `@tool` input.
fn traceloop<'s, 'a>(
    rules: &Rules,
    span: &Span<'a>,
    attrs: &Slots<'s, 'a>,
) -> Read<Option<Call<'s, 'a>>> {
    let t = &rules.traceloop;
    let mut name = t.names.iter().find_map(|slot| rules.text(attrs.get(*slot)));
    if name.is_none() {
        name = (span.name.strip_suffix(t.name_suffix.as_str()))
            .filter(|n| !rules.placeholders.contains(*n));
    }
    let Some(name) = name else {
        return Ok(None);
    };
    let (args, source) = if attrs.has(t.args) {
        let value = attrs.get(t.args).ok_or(Fallback)?;
        (
            structured_args(rules, value, Unwrap::LangChain)?,
            t.args_source,
        )
    } else {
        let args = match attrs.get(t.input) {
            None => Args::None,
            Some(value) => structured_args(rules, value, Unwrap::LangChainThenCall)?,
        };
        (args, t.input_source)
    };
    if may_mark_failure(attrs.get(t.failure), TRACELOOP_FAILED) {
        return Err(Fallback); // OpenLLMetry's MCP client output, maybe a failure
    }
    Ok(Some(Call {
        name: name.to_owned(),
        args,
        call_id: ident(rules, attrs.get(t.call_id)),
        source,
        failure: None,
    }))
}

/// The member of OpenLLMetry's MCP client output that marks a failed call (the shape of the
/// value, `tools._traceloop_failure`'s).
const TRACELOOP_FAILED: &str = "is_error";

/// `tools.read_pydantic_v2`: the name and id from their keys, arguments JSON text or a
/// structured value.
fn pydantic_v2<'s, 'a>(rules: &Rules, attrs: &Slots<'s, 'a>) -> Read<Option<Call<'s, 'a>>> {
    let t = &rules.pydantic_v2;
    let Some(name) = t.name.and_then(|slot| rules.text(attrs.get(slot))) else {
        return Ok(None);
    };
    let args = match attrs.get(t.args) {
        None => Args::None,
        Some(value) => structured_args(rules, value, Unwrap::None)?,
    };
    Ok(Some(Call {
        name: name.to_owned(),
        args,
        call_id: t.call_id.and_then(|slot| ident(rules, attrs.get(slot))),
        source: t.args_source,
        failure: None,
    }))
}

/// `tools.read_mlflow`: the span name is the tool, `mlflow.spanInputs` the arguments, JSON
/// text of an object, or JSON text of a string holding it (`values.double_json`).
fn mlflow<'s, 'a>(
    rules: &Rules,
    span: &Span<'a>,
    attrs: &Slots<'s, 'a>,
) -> Read<Option<Call<'s, 'a>>> {
    let t = &rules.mlflow;
    if rules.placeholders.contains(span.name) {
        return Ok(None);
    }
    let args = match attrs.get(t.args) {
        Some(AnyValue::Str(text)) => match text.as_bytes().first() {
            Some(b'{') => text_args(rules, text)?.map_or(Args::None, Args::Json),
            Some(b'"') => match jsontext::parse(text)? {
                Json::Str(inner) if inner.starts_with('{') => {
                    text_args(rules, &inner)?.map_or(Args::None, Args::Json)
                }
                _ => Args::None,
            },
            _ => Args::None, // a list, a number, other text: no object
        },
        Some(value @ AnyValue::Kv(_)) => Args::Value(value),
        _ => Args::None, // absent, empty, bytes, a list: `double_json` gives no dict
    };
    Ok(Some(Call {
        name: span.name.to_owned(),
        args,
        call_id: None,
        source: t.args_source,
        failure: None,
    }))
}

/// `tools.read_langsmith`: the span name is the tool, `gen_ai.prompt` the run's inputs
/// (`args_from(..., literal=True)`), a single `input` holding the arguments as text
/// unwrapped (`values.unwrap_single_input`). Python reprs are declined.
fn langsmith<'s, 'a>(
    rules: &Rules,
    span: &Span<'a>,
    attrs: &Slots<'s, 'a>,
) -> Read<Option<Call<'s, 'a>>> {
    let t = &rules.langsmith;
    if rules.placeholders.contains(span.name) {
        return Ok(None);
    }
    let args = match attrs.get(t.args) {
        None | Some(AnyValue::None) => Args::None,
        Some(AnyValue::Str(text)) => match literal_args(rules, text)? {
            Some(json) => Args::Json(single_input(rules, json)?),
            None => Args::None,
        },
        Some(value @ AnyValue::Kv(pairs)) => {
            let single = !pairs.is_empty() && pairs.iter().all(|(k, _)| *k == SINGLE_INPUT);
            if single && matches!(pairs.last(), Some((_, AnyValue::Str(_)))) {
                return Err(Fallback); // its text read as arguments: the Python readers'
            }
            Args::Value(value)
        }
        Some(AnyValue::Bytes(_)) => return Err(Fallback),
        Some(_) => Args::None,
    };
    Ok(Some(Call {
        name: span.name.to_owned(),
        args,
        call_id: None,
        source: t.args_source,
        failure: None,
    }))
}

/// `values.unwrap_single_input`: an object whose one member is `input` holding text: the
/// arguments that text holds, when it holds an object; any other object as it is.
fn single_input(rules: &Rules, args: Json) -> Read<Json> {
    let Json::Object(members) = &args else {
        return Ok(args);
    };
    let single = !members.is_empty() && members.iter().all(|(k, _)| k == SINGLE_INPUT);
    let Some(Json::Str(inner)) = args.get(SINGLE_INPUT).filter(|_| single) else {
        return Ok(args);
    };
    Ok(literal_args(rules, inner)?.unwrap_or(args))
}

/// The envelopes `dialects/tools.py` unwraps around a reader's arguments, in this order.
#[derive(Clone, Copy)]
enum Unwrap {
    None,
    /// `values.unwrap_call_envelope` (OpenInference).
    Call,
    /// `values.unwrap_langchain_envelope` (OpenLLMetry's LangChain arguments).
    LangChain,
    /// Both, LangChain's first (a Traceloop `@tool` input).
    LangChainThenCall,
}

/// `values.args_from` of a value (with `literal=True` where it matters: text that is no JSON
/// object is declined, as it might be a repr), then the envelopes of `unwrap`: a LangChain
/// envelope, and a call envelope with positional values, are declined.
fn structured_args<'s, 'a>(
    rules: &Rules,
    value: &'s AnyValue<'a>,
    unwrap: Unwrap,
) -> Read<Args<'s, 'a>> {
    let (langchain, call) = match unwrap {
        Unwrap::None => (false, false),
        Unwrap::Call => (false, true),
        Unwrap::LangChain => (true, false),
        Unwrap::LangChainThenCall => (true, true),
    };
    let args = match value {
        // an empty value, bytes: rare, and read by other helpers in Python
        AnyValue::None | AnyValue::Bytes(_) => return Err(Fallback),
        AnyValue::Str(text) => match text_args(rules, text)? {
            Some(json) => {
                let has = |key: &str| json.get(key).is_some();
                if langchain && has(LANGCHAIN_KEYS[0]) && has(LANGCHAIN_KEYS[1]) {
                    return Err(Fallback);
                }
                Args::Json(if call { call_envelope(json)? } else { json })
            }
            None => Args::None,
        },
        AnyValue::Kv(pairs) => {
            let has = |key: &str| pairs.iter().any(|(k, _)| *k == key);
            if (langchain && has(LANGCHAIN_KEYS[0]) && has(LANGCHAIN_KEYS[1]))
                || (call && has(KWARGS))
            {
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

/// `values.unwrap_call_envelope` of an object: `{"args": [], "kwargs": {...}}` is the keyword
/// arguments; with positional values it is declined (`DialectCall.positional`); any other
/// object stays as it is.
fn call_envelope(json: Json) -> Read<Json> {
    let Json::Object(members) = &json else {
        return Ok(json);
    };
    let keys_fit = members.iter().all(|(k, _)| CALL_KEYS.contains(&k.as_str()));
    if !keys_fit {
        return Ok(json);
    }
    let empty = match (json.get(KWARGS), json.get(CALL_KEYS[0])) {
        (Some(Json::Object(_)), None) => true,
        (Some(Json::Object(_)), Some(Json::Array(positional))) => positional.is_empty(),
        _ => return Ok(json), // not an envelope (no kwargs object, or args no list)
    };
    if !empty {
        return Err(Fallback); // positional values: the Python readers'
    }
    let Json::Object(members) = json else {
        unreachable!("matched as an object above");
    };
    let kwargs = members.into_iter().rev().find(|(k, _)| k == KWARGS);
    Ok(kwargs.map_or(Json::Null, |(_, v)| v))
}

/// The members of a recorded Python call (`values._CALL_ENVELOPE_KEYS`): positional values,
/// keyword arguments, and OpenLLMetry's flag.
const CALL_KEYS: [&str; 3] = ["args", KWARGS, "sanitize_inputs_outputs"];
const KWARGS: &str = "kwargs";
/// The one member of a LangChain run's inputs holding the arguments as text
/// (`values.unwrap_single_input`).
const SINGLE_INPUT: &str = "input";
/// The members that make an object OpenLLMetry's LangChain envelope.
const LANGCHAIN_KEYS: [&str; 2] = ["input_str", "inputs"];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsontext::parse;

    fn marked(text: &str) -> bool {
        may_mark_failure(Some(&AnyValue::Str(text)), "isError")
    }

    #[test]
    fn a_result_is_handed_on_only_when_its_top_may_mark_it_failed() {
        assert!(marked(r#"{"content": [], "isError": true}"#));
        assert!(marked(r#"{"isError": NaN}"#)); // not parsed exactly: the Python readers'
        assert!(!marked(r#"{"content": [], "isError": false}"#));
        assert!(!marked(r#"{"content": [{"text": "isError"}]}"#));
        assert!(!marked(r#" {"isError": true}"#)); // no object to `values.json_value`
        assert!(!marked("isError: true"));
        let pairs = vec![("isError", AnyValue::Bool(false))];
        assert!(may_mark_failure(Some(&AnyValue::Kv(pairs)), "isError"));
        assert!(!may_mark_failure(None, "isError"));
    }

    fn unwrapped(text: &str) -> Read<Json> {
        call_envelope(parse(text).expect("JSON"))
    }

    #[test]
    fn a_call_envelope_without_positional_values_is_its_keyword_arguments() {
        let kwargs = parse(r#"{"a": 1, "a": 2}"#).unwrap();
        assert_eq!(
            unwrapped(r#"{"args": [], "kwargs": {"a": 1, "a": 2}}"#),
            Ok(kwargs)
        );
        let last = parse(r#"{"b": 2}"#).unwrap();
        assert_eq!(
            unwrapped(r#"{"kwargs": {"a": 1}, "kwargs": {"b": 2}}"#),
            Ok(last)
        );
        assert_eq!(unwrapped(r#"{"args": [1], "kwargs": {}}"#), Err(Fallback));
    }

    #[test]
    fn other_objects_stay_as_they_are() {
        for text in [
            r#"{"kwargs": {"a": 1}, "other": 1}"#,
            r#"{"kwargs": [1], "args": []}"#,
            r#"{"kwargs": {"a": 1}, "args": "x"}"#,
            r#"{"args": [1]}"#,
            "{}",
        ] {
            assert_eq!(unwrapped(text), parse(text), "{text}");
        }
    }
}
