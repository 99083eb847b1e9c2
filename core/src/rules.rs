//! The dialect rules the core reads: `src/tooltrail/dialects/rules.json`, the one statement of
//! which attribute carries what, handed over by the Python side as text when it makes a
//! `Reader` (`otlp/read/core.py`). The Python side checks the file's schema at import
//! (`dialects/rules.py`); here a rule the core needs and cannot find is an error.
//!
//! Every attribute key the facts reader looks up gets a slot: a span's attributes are then
//! indexed once (one hash per attribute, `Slots::of`), and each rule is an array lookup.

use std::collections::HashMap;

use serde_json::Value;

use crate::keys::{KeyMap, KeySet};
use crate::traces::AnyValue;

/// What a span name, name prefix or marker value says a span is (`roles` of rules.json).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Meaning {
    /// A tool span, read by the named reader (`tool:genai` ...).
    Tool(String),
    Agent,
    Model,
    Workflow,
}

/// The roles of `dialects/roles.py` (`ROLE_*`), as the converter stores them.
pub const ROLE_OTHER: i64 = 0;
pub const ROLE_TOOL: i64 = 1;
pub const ROLE_AGENT: i64 = 2;
pub const ROLE_MODEL: i64 = 3;
pub const ROLE_WORKFLOW: i64 = 5;

/// A key the facts reader looks up: its slot in `Slots`.
pub type Slot = usize;

/// The rules, bound once per `Reader`.
#[derive(Debug)]
pub struct Rules {
    /// key -> slot, for every key below.
    slots: KeyMap<String, Slot>,
    pub by_span_name: KeyMap<String, Meaning>,
    pub name_prefix: (String, Meaning),
    /// `roles.by_marker`, in order: the first row whose value is known decides.
    pub markers: Vec<(Slot, KeyMap<String, Meaning>)>,
    pub placeholders: KeySet<String>,
    /// Names of the built-in final-answer tools of every scope (`final_tools`).
    pub final_names: KeySet<String>,
    pub genai: GenAiTool,
    pub openinference: OpenInferenceTool,
    pub vercel: VercelTool,
    pub traceloop: TraceloopTool,
    pub pydantic_v2: PlainTool,
    pub mlflow: PlainTool,
    pub langsmith: PlainTool,
    /// The `source` texts of the calls the port reads; a `Call` holds an index.
    pub sources: Vec<String>,
    pub agent_name: Vec<Slot>,
    /// `agents.handoffs` `source` and `target`: a tool span with either is declined (the
    /// Python reader keeps them, `SpanFact.handoff`).
    pub handoff: Vec<Slot>,
    /// `agents.invoked_name`: (Traceloop kind key, its agent values, name key).
    pub invoked_traceloop: (Slot, Vec<String>, Slot),
    pub invoke_prefix: String,
    /// `agents.invoked_name.span_name`: (kind keys, values naming an agent by span name).
    pub invoked_span_name: (Vec<Slot>, Vec<String>),
    /// `agents.reply`, in order: the first key present decides an agent span's reply.
    pub agent_reply: Vec<ReplyRow>,
    /// `agents.reply_wrappers`: the keys a framework wraps its final answer under, in order.
    pub reply_wrappers: Vec<String>,
    /// Keys whose presence sends a model span's output to the Python path: the rows of
    /// `models` the port does not read (ADK's response, and any row added later).
    pub reply_elsewhere: Vec<Slot>,
    /// The prefixes of `messages.response`'s flattened rows: a model span with a key of one
    /// is the Python readers'.
    pub reply_elsewhere_prefixes: Vec<String>,
    pub genai_output: Slot,
    /// The `source` of the calls GenAI output messages list (index into `sources`).
    pub genai_output_source: usize,
    pub vercel_calls: VercelCalls,
    /// `models.vercel_reply`, `models.openinference_reply`: a model's text under one key.
    pub vercel_reply: Slot,
    pub openinference_reply: Slot,
    /// `models.openinference_marker`: (key, the value of an OpenInference model span).
    pub openinference_llm: (Slot, String),
    /// `models.openinference_calls`: the calls flattened into keys.
    pub openinference_calls: FlatCalls,
    /// `models.adk_response`: (key, source): Google ADK's record of a model's response.
    pub adk_response: (Slot, usize),
    pub details_event: String,
    /// `events.details_output`: the output messages key of an inference details event.
    pub details_output: String,
    pub choice_event: String,
    pub exception_event: String,
    pub exception_text: (String, String),
    pub finish_reasons: Vec<Slot>,
    pub tool_finish: KeySet<String>,
    /// `conversations.ids`: (slot, JSON-encoded twice).
    pub conversations: Vec<(Slot, bool)>,
    pub case_id: Slot,
    pub case_id_key: String,
    pub input_tokens: Vec<Slot>,
    pub output_tokens: Vec<Slot>,
    pub usage_model: Vec<Slot>,
    pub content_keys: KeySet<String>,
    pub content_prefixes: Vec<String>,
}

/// `tools.genai` of rules.json: what `dialects/tools.py read_genai` reads in the common case.
#[derive(Debug)]
pub struct GenAiTool {
    pub name: Slot,
    /// The source of a call without arguments (index into `Rules::sources`).
    pub name_source: usize,
    pub name_after_prefix: Vec<String>,
    pub not_a_tool_name: String,
    pub not_a_tool_span: String,
    pub call_id: Slot,
    pub args: Slot,
    pub args_source: usize,
    /// Keys that make `read_genai` do more than the port does (output functions, deferred
    /// calls, failures hidden in results, LangChain envelopes): such spans are declined.
    pub declined: Vec<Slot>,
    /// Pydantic AI's output functions: (key, prefix of its text), not calls (declined).
    pub output_function: (Slot, String),
    pub adk_failure: AdkFailure,
    /// `failure.mcp_result`: an MCP span's result marked as a failed tool.
    pub mcp_failure: McpFailure,
    /// `failure.error_type`: set on a failed call only; its text is the failure when nothing
    /// else gives one.
    pub error_type: Slot,
    /// `failure.status`: (key, the value of a failed call: Strands').
    pub status: (Slot, String),
    /// `args_elsewhere.adk`: (key, its not-captured pair, source): ADK's legacy arguments.
    pub adk_args: (Slot, Slot, usize),
    /// `args_elsewhere.pydantic_v2`: (key, source): Pydantic AI v2's names.
    pub pydantic_args: (Slot, usize),
    /// The other keyed `args_elsewhere` rows (Traceloop's input in its envelopes, and any
    /// row added later): a span with one of them and no arguments is declined.
    pub elsewhere: Vec<Slot>,
    /// `args_elsewhere.strands_message`: arguments in a tool message event.
    pub strands_message: EventArgs,
    /// `args_elsewhere.strands_details`: arguments in the input messages of an inference
    /// details event (the part calling the tool by name).
    pub strands_details: EventArgs,
    /// The events of the other `args_elsewhere` rows (added later): declined.
    pub other_events: Vec<String>,
}

/// A row of `tools.genai.args_elsewhere` read from span events (Strands).
#[derive(Debug, Default)]
pub struct EventArgs {
    pub event: String,
    pub key: String,
    pub source: usize,
}

/// `tools.openinference` of rules.json: what `tools.read_openinference` reads.
#[derive(Debug, Default)]
pub struct OpenInferenceTool {
    pub name: Slot,
    /// The source of a call without arguments (index into `Rules::sources`).
    pub name_source: usize,
    /// Call id keys, in order.
    pub call_ids: Vec<Slot>,
    pub args: Slot,
    pub args_source: usize,
    /// `tools.openinference.args_hidden`: arguments some instrumentations record beside a
    /// hidden input; a span with it and no arguments of its own is declined (Python reads it).
    pub args_hidden: Slot,
    /// `tools.openinference.name_before_suffix`: taken off a span name read as the tool name.
    pub name_suffix: String,
}

/// `tools.vercel` of rules.json: what `tools.read_vercel` reads.
#[derive(Debug, Default)]
pub struct VercelTool {
    pub name: Slot,
    pub name_source: usize,
    pub call_id: Slot,
    /// Argument keys, in order, with their sources.
    pub args: Vec<(Slot, usize)>,
}

/// `tools.traceloop` of rules.json: what `tools.read_traceloop` reads.
#[derive(Debug, Default)]
pub struct TraceloopTool {
    /// Name keys, in order; the first row's source is that of a call without arguments.
    pub names: Vec<Slot>,
    pub name_source: usize,
    /// A span name ending so names the tool before it.
    pub name_suffix: String,
    pub call_id: Slot,
    /// OpenLLMetry's LangChain arguments (in a LangChain envelope): the first `args` row.
    pub args: Slot,
    pub args_source: usize,
    /// The `@tool` input (in a call envelope): `tools.genai.args_elsewhere.traceloop`, the
    /// row `tools._traceloop_args` reads.
    pub input: Slot,
    pub input_source: usize,
    /// `tools.traceloop.failure`: the output OpenLLMetry's MCP client marks a failed call in
    /// (`tools._traceloop_failure`); a span whose output names the marker is declined.
    pub failure: Slot,
}

/// `tools.pydantic_v2`, `tools.mlflow`, `tools.langsmith` of rules.json: a name, maybe a
/// call id, and one argument key with its source.
#[derive(Debug, Default)]
pub struct PlainTool {
    /// `None`: the span name names the tool (`"name": {"from": "span_name"}`).
    pub name: Option<Slot>,
    pub call_id: Option<Slot>,
    pub args: Slot,
    pub args_source: usize,
}

/// A row of `agents.reply`.
#[derive(Debug)]
pub struct ReplyRow {
    pub slot: Slot,
    /// An encoding the port does not read (`json_twice`: MLflow's; any but `reply`): the
    /// span is declined when the key is there.
    pub declined: bool,
    /// `"answers": "present"`: the key decides even when its value is empty.
    pub decides: bool,
}

/// `models.vercel_calls`: the calls a Vercel model span lists, and the members of each.
#[derive(Debug, Default)]
pub struct VercelCalls {
    pub slot: Slot,
    pub source: usize,
    pub name: String,
    pub call_id: String,
    /// Argument members, in order: the first one present decides.
    pub args: Vec<String>,
}

/// `models.openinference_calls`: calls flattened into keys
/// `{prefix}{i}{infix}{j}.{field}`, and the fields of each.
#[derive(Debug, Default)]
pub struct FlatCalls {
    pub prefix: String,
    pub infix: String,
    pub name: String,
    pub args: String,
    pub call_id: String,
    pub source: usize,
}

/// `tools.genai.failure`'s ADK rows: the retry plugin hides a failure in the result, marked.
#[derive(Debug)]
pub struct AdkFailure {
    pub event: Slot,
    /// `gen_ai.tool.call.result`, read first, then ADK's own result key.
    pub result: Slot,
    pub adk_result: Slot,
    pub marker: String,
}

/// `tools.genai.failure.mcp_result`: on a span with the `when` key (an MCP span), the result
/// key's `CallToolResult` marked `isError`; the port declines a span whose result (or ADK's)
/// names the marker, and `tools._genai_failure` reads it.
#[derive(Debug)]
pub struct McpFailure {
    pub when: Slot,
    pub result: Slot,
    pub marker: String,
}

/// A rules.json that lacks what the core reads.
#[derive(Debug)]
pub struct RulesError(pub String);

type Got<T> = Result<T, RulesError>;

fn at<'v>(node: &'v Value, path: &[&str]) -> Got<&'v Value> {
    let mut node = node;
    for name in path {
        node = node
            .get(name)
            .ok_or_else(|| RulesError(format!("rules.json: no {}", path.join("."))))?;
    }
    Ok(node)
}

fn string(node: &Value, path: &[&str]) -> Got<String> {
    at(node, path)?
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| RulesError(format!("rules.json: {} is not text", path.join("."))))
}

fn strings(node: &Value, path: &[&str]) -> Got<Vec<String>> {
    let list = at(node, path)?
        .as_array()
        .ok_or_else(|| RulesError(format!("rules.json: {} is not a list", path.join("."))))?;
    list.iter()
        .map(|v| {
            v.as_str().map(str::to_owned).ok_or_else(|| {
                RulesError(format!("rules.json: {} holds a non-text", path.join(".")))
            })
        })
        .collect()
}

fn meaning(role: &str) -> Got<Meaning> {
    Ok(match role {
        "agent" => Meaning::Agent,
        "model" => Meaning::Model,
        "workflow" => Meaning::Workflow,
        _ => match role.strip_prefix("tool:") {
            Some(reader) => Meaning::Tool(reader.to_owned()),
            None => return Err(RulesError(format!("rules.json: unknown role {role:?}"))),
        },
    })
}

fn table(node: &Value) -> Got<KeyMap<String, Meaning>> {
    let object = node
        .as_object()
        .ok_or_else(|| RulesError("rules.json: a role table is not an object".into()))?;
    object
        .iter()
        .map(|(name, role)| {
            let role = role
                .as_str()
                .ok_or_else(|| RulesError(format!("rules.json: role of {name:?} is not text")))?;
            Ok((name.clone(), meaning(role)?))
        })
        .collect()
}

impl Rules {
    /// The rules of rules.json's text.
    pub fn parse(text: &str) -> Got<Rules> {
        let root: Value = serde_json::from_str(text)
            .map_err(|e| RulesError(format!("rules.json is not JSON: {e}")))?;
        let mut rules = Rules::empty();
        let r = &mut rules;
        r.by_span_name = table(at(&root, &["roles", "by_span_name"])?)?;
        let prefixes = table(at(&root, &["roles", "by_name_prefix"])?)?;
        if prefixes.len() != 1 {
            return Err(RulesError(
                "rules.json: roles.by_name_prefix: one prefix".into(),
            ));
        }
        r.name_prefix = prefixes.into_iter().next().expect("one entry");
        let markers = at(&root, &["roles", "by_marker"])?
            .as_array()
            .ok_or_else(|| RulesError("rules.json: roles.by_marker is not a list".into()))?;
        for row in markers {
            let slot = r.slot_of(&string(row, &["key"])?);
            let values = table(at(row, &["values"])?)?;
            r.markers.push((slot, values));
        }
        r.placeholders = strings(&root, &["values", "placeholders"])?
            .into_iter()
            .collect();
        let finals = at(&root, &["final_tools"])?
            .as_object()
            .ok_or_else(|| RulesError("rules.json: final_tools is not an object".into()))?;
        for tools in finals.values() {
            r.final_names.extend(strings(tools, &["names"])?);
        }
        r.genai = r.genai_tool(&root)?;
        r.openinference = r.openinference_tool(&root)?;
        r.vercel = r.vercel_tool(&root)?;
        r.traceloop = r.traceloop_tool(&root)?;
        r.pydantic_v2 = r.plain_tool(&root, "pydantic_v2")?;
        r.mlflow = r.plain_tool(&root, "mlflow")?;
        r.langsmith = r.plain_tool(&root, "langsmith")?;
        r.agent_name = r.keys(&root, &["agents", "name"])?;
        for end in ["source", "target"] {
            let key = string(&root, &["agents", "handoffs", end, "key"])?;
            let slot = r.slot_of(&key);
            r.handoff.push(slot);
        }
        let traceloop = at(&root, &["agents", "invoked_name", "traceloop"])?;
        r.invoked_traceloop = (
            r.slot_of(&string(traceloop, &["when"])?),
            strings(traceloop, &["values"])?,
            r.slot_of(&string(traceloop, &["key"])?),
        );
        r.invoke_prefix = string(&root, &["agents", "invoked_name", "genai", "prefix"])?;
        let by_name = at(&root, &["agents", "invoked_name", "span_name"])?;
        let kinds = strings(by_name, &["when"])?;
        r.invoked_span_name = (
            kinds.iter().map(|k| r.slot_of(k)).collect(),
            strings(by_name, &["values"])?,
        );
        for row in at(&root, &["agents", "reply"])?
            .as_array()
            .ok_or_else(|| RulesError("rules.json: agents.reply is not a list".into()))?
        {
            let slot = r.slot_of(&string(row, &["key"])?);
            r.agent_reply.push(ReplyRow {
                slot,
                declined: string(row, &["encoding"])? != "reply",
                decides: row.get("answers").and_then(Value::as_str) == Some("present"),
            });
        }
        r.reply_wrappers = strings(&root, &["agents", "reply_wrappers"])?;
        let m = at(&root, &["models"])?;
        r.genai_output = r.slot_of(&string(m, &["genai_output", "key"])?);
        r.genai_output_source = r.source_of(string(m, &["genai_output", "source"])?);
        r.vercel_calls = r.vercel_calls(m)?;
        r.vercel_reply = r.slot_of(&string(m, &["vercel_reply", "key"])?);
        r.openinference_reply = r.slot_of(&string(m, &["openinference_reply", "key"])?);
        r.openinference_llm = (
            r.slot_of(&string(m, &["openinference_marker", "key"])?),
            string(m, &["openinference_marker", "value"])?,
        );
        let flat = at(m, &["openinference_calls"])?;
        r.openinference_calls = FlatCalls {
            prefix: string(flat, &["prefix"])?,
            infix: string(flat, &["infix"])?,
            name: string(flat, &["fields", "name"])?,
            args: string(flat, &["fields", "args"])?,
            call_id: string(flat, &["fields", "call_id"])?,
            source: r.source_of(string(flat, &["source"])?),
        };
        r.adk_response = (
            r.slot_of(&string(m, &["adk_response", "key"])?),
            r.source_of(string(m, &["adk_response", "source"])?),
        );
        // every other row of `models` (any row added later): a model span with one of
        // those keys is the Python readers'
        let read = [
            "genai_output",
            "vercel_calls",
            "vercel_reply",
            "openinference_reply",
            "openinference_marker",
            "adk_response",
        ];
        let models = m
            .as_object()
            .ok_or_else(|| RulesError("rules.json: models is not an object".into()))?;
        for (name, row) in models {
            if let (false, Some(key)) = (read.contains(&name.as_str()), row.get("key")) {
                let key = key
                    .as_str()
                    .ok_or_else(|| RulesError(format!("models.{name}.key")))?;
                let slot = r.slot_of(key);
                r.reply_elsewhere.push(slot);
            }
        }
        // the response records of `messages.response` (read by `dialects.messages`, the
        // Python readers' alone): a model span with one of those keys is the Python readers'
        let responses = at(&root, &["messages", "response"])?
            .as_array()
            .ok_or_else(|| RulesError("rules.json: messages.response is not a list".into()))?;
        for row in responses {
            if let Some(key) = row.get("key").and_then(Value::as_str) {
                let slot = r.slot_of(key);
                r.reply_elsewhere.push(slot);
            } else if let Some(prefix) = row.get("prefix").and_then(Value::as_str) {
                r.reply_elsewhere_prefixes.push(prefix.to_owned());
            }
        }
        r.details_event = string(&root, &["events", "details"])?;
        r.details_output = string(&root, &["events", "details_output", "key"])?;
        r.choice_event = string(&root, &["events", "choice"])?;
        r.exception_event = string(&root, &["events", "exception_event"])?;
        let texts = at(&root, &["events", "exception_text"])?
            .as_array()
            .filter(|rows| rows.len() == 2)
            .ok_or_else(|| RulesError("rules.json: events.exception_text: two rows".into()))?;
        r.exception_text = (string(&texts[0], &["key"])?, string(&texts[1], &["key"])?);
        r.finish_reasons = r.keys(&root, &["models", "finish_reasons"])?;
        r.tool_finish = strings(&root, &["models", "asked_for_tools"])?
            .into_iter()
            .collect();
        let ids = at(&root, &["conversations", "ids"])?
            .as_array()
            .ok_or_else(|| RulesError("rules.json: conversations.ids is not a list".into()))?;
        for row in ids {
            let slot = r.slot_of(&string(row, &["key"])?);
            r.conversations
                .push((slot, string(row, &["encoding"])? == "json_twice"));
        }
        r.case_id_key = string(&root, &["conversations", "case_id", "key"])?;
        r.case_id = r.slot_of(&r.case_id_key.clone());
        r.input_tokens = r.keys(&root, &["usage", "input_tokens"])?;
        r.output_tokens = r.keys(&root, &["usage", "output_tokens"])?;
        r.usage_model = r.keys(&root, &["usage", "model"])?;
        r.content_keys = strings(&root, &["content", "not_labels", "keys"])?
            .into_iter()
            .collect();
        r.content_prefixes = strings(&root, &["content", "not_labels", "prefixes"])?;
        Ok(rules)
    }

    fn empty() -> Rules {
        Rules {
            slots: KeyMap::default(),
            by_span_name: KeyMap::default(),
            name_prefix: (String::new(), Meaning::Agent),
            markers: Vec::new(),
            placeholders: KeySet::default(),
            final_names: KeySet::default(),
            genai: GenAiTool {
                name: 0,
                name_source: 0,
                name_after_prefix: Vec::new(),
                not_a_tool_name: String::new(),
                not_a_tool_span: String::new(),
                call_id: 0,
                args: 0,
                args_source: 0,
                declined: Vec::new(),
                output_function: (0, String::new()),
                adk_failure: AdkFailure {
                    event: 0,
                    result: 0,
                    adk_result: 0,
                    marker: String::new(),
                },
                mcp_failure: McpFailure {
                    when: 0,
                    result: 0,
                    marker: String::new(),
                },
                error_type: 0,
                status: (0, String::new()),
                adk_args: (0, 0, 0),
                pydantic_args: (0, 0),
                elsewhere: Vec::new(),
                strands_message: EventArgs::default(),
                strands_details: EventArgs::default(),
                other_events: Vec::new(),
            },
            openinference: OpenInferenceTool::default(),
            vercel: VercelTool::default(),
            traceloop: TraceloopTool::default(),
            pydantic_v2: PlainTool::default(),
            mlflow: PlainTool::default(),
            langsmith: PlainTool::default(),
            sources: Vec::new(),
            agent_name: Vec::new(),
            handoff: Vec::new(),
            invoked_traceloop: (0, Vec::new(), 0),
            invoke_prefix: String::new(),
            invoked_span_name: (Vec::new(), Vec::new()),
            agent_reply: Vec::new(),
            reply_wrappers: Vec::new(),
            reply_elsewhere: Vec::new(),
            reply_elsewhere_prefixes: Vec::new(),
            genai_output: 0,
            genai_output_source: 0,
            vercel_calls: VercelCalls::default(),
            vercel_reply: 0,
            openinference_reply: 0,
            openinference_llm: (0, String::new()),
            openinference_calls: FlatCalls::default(),
            adk_response: (0, 0),
            details_event: String::new(),
            details_output: String::new(),
            choice_event: String::new(),
            exception_event: String::new(),
            exception_text: (String::new(), String::new()),
            finish_reasons: Vec::new(),
            tool_finish: KeySet::default(),
            conversations: Vec::new(),
            case_id: 0,
            case_id_key: String::new(),
            input_tokens: Vec::new(),
            output_tokens: Vec::new(),
            usage_model: Vec::new(),
            content_keys: KeySet::default(),
            content_prefixes: Vec::new(),
        }
    }

    fn genai_tool(&mut self, root: &Value) -> Got<GenAiTool> {
        let g = at(root, &["tools", "genai"])?;
        let mut declined = vec![self.slot_of(&string(g, &["deferred", "key"])?)];
        // every failure row (and any added later) but the ADK retry plugin's, Strands'
        // status, MCP's result and `error.type`, which the port reads, and `result`, read
        // only when another one is there
        let failures = at(g, &["failure"])?
            .as_object()
            .ok_or_else(|| RulesError("rules.json: tools.genai.failure".into()))?;
        for (name, row) in failures {
            if !matches!(
                name.as_str(),
                "result" | "adk_event" | "adk_result" | "status" | "mcp_result" | "error_type"
            ) {
                declined.push(self.slot_of(&string(row, &["key"])?));
            }
        }
        let status = (
            self.slot_of(&string(g, &["failure", "status", "key"])?),
            string(g, &["failure", "status", "value"])?,
        );
        // arguments elsewhere: the rows read from events are ported, the others declined
        let mut elsewhere = Vec::new();
        let mut events = HashMap::new();
        let rows = at(g, &["args_elsewhere"])?
            .as_object()
            .ok_or_else(|| RulesError("rules.json: tools.genai.args_elsewhere".into()))?;
        for (name, row) in rows {
            match row.get("event") {
                None if matches!(name.as_str(), "adk" | "pydantic_v2") => {}
                None => elsewhere.push(self.slot_of(&string(row, &["key"])?)),
                Some(_) => {
                    let read = EventArgs {
                        event: string(row, &["event"])?,
                        key: string(row, &["key"])?,
                        source: self.source_of(string(row, &["source"])?),
                    };
                    events.insert(name.as_str(), read);
                }
            }
        }
        let mut event_row = |name: &str| {
            events
                .remove(name)
                .ok_or_else(|| RulesError(format!("rules.json: tools.genai.args_elsewhere.{name}")))
        };
        let strands_message = event_row("strands_message")?;
        let strands_details = event_row("strands_details")?;
        // any other event row (added later): a span whose arguments may be in it is declined
        let other_events = events.into_values().map(|row| row.event).collect();
        let adk_failure = AdkFailure {
            event: self.slot_of(&string(g, &["failure", "adk_event", "key"])?),
            result: self.slot_of(&string(g, &["failure", "result", "key"])?),
            adk_result: self.slot_of(&string(g, &["failure", "adk_result", "key"])?),
            marker: string(g, &["failure", "adk_result", "marker"])?,
        };
        let mcp_failure = McpFailure {
            when: self.slot_of(&string(g, &["failure", "mcp_result", "when"])?),
            result: self.slot_of(&string(g, &["failure", "mcp_result", "key"])?),
            marker: string(g, &["failure", "mcp_result", "marker"])?,
        };
        let output_function = (
            self.slot_of(&string(g, &["output_function", "key"])?),
            string(g, &["output_function", "prefix"])?,
        );
        // OpenLLMetry's LangChain tool spans: their arguments sit in an envelope
        for row in at(root, &["roles", "by_marker"])?
            .as_array()
            .into_iter()
            .flatten()
        {
            let values = table(at(row, &["values"])?)?;
            if values
                .values()
                .any(|m| *m == Meaning::Tool("traceloop".into()))
            {
                declined.push(self.slot_of(&string(row, &["key"])?));
            }
        }
        Ok(GenAiTool {
            name: self.slot_of(&string(g, &["name", "key"])?),
            name_source: self.source_of(string(g, &["name", "source"])?),
            name_after_prefix: strings(g, &["name_after_prefix"])?,
            not_a_tool_name: string(g, &["not_a_tool_name"])?,
            not_a_tool_span: string(g, &["not_a_tool_span"])?,
            call_id: self.slot_of(&string(g, &["call_id", "key"])?),
            args: self.slot_of(&string(g, &["args", "key"])?),
            args_source: self.source_of(string(g, &["args", "source"])?),
            declined,
            output_function,
            adk_failure,
            mcp_failure,
            error_type: self.slot_of(&string(g, &["failure", "error_type", "key"])?),
            status,
            adk_args: (
                self.slot_of(&string(g, &["args_elsewhere", "adk", "key"])?),
                self.slot_of(&string(g, &["args_elsewhere", "adk", "not_captured_pair"])?),
                self.source_of(string(g, &["args_elsewhere", "adk", "source"])?),
            ),
            pydantic_args: (
                self.slot_of(&string(g, &["args_elsewhere", "pydantic_v2", "key"])?),
                self.source_of(string(g, &["args_elsewhere", "pydantic_v2", "source"])?),
            ),
            elsewhere,
            strands_message,
            strands_details,
            other_events,
        })
    }

    fn openinference_tool(&mut self, root: &Value) -> Got<OpenInferenceTool> {
        let t = at(root, &["tools", "openinference"])?;
        Ok(OpenInferenceTool {
            name: self.slot_of(&string(t, &["name", "key"])?),
            name_source: self.source_of(string(t, &["name", "source"])?),
            call_ids: self.keys(t, &["call_id"])?,
            args: self.slot_of(&string(t, &["args", "key"])?),
            args_source: self.source_of(string(t, &["args", "source"])?),
            args_hidden: self.slot_of(&string(t, &["args_hidden", "key"])?),
            name_suffix: string(t, &["name_before_suffix"])?,
        })
    }

    fn vercel_tool(&mut self, root: &Value) -> Got<VercelTool> {
        let t = at(root, &["tools", "vercel"])?;
        let rows = at(t, &["args"])?
            .as_array()
            .ok_or_else(|| RulesError("rules.json: tools.vercel.args is not a list".into()))?;
        let mut args = Vec::new();
        for row in rows {
            let slot = self.slot_of(&string(row, &["key"])?);
            args.push((slot, self.source_of(string(row, &["source"])?)));
        }
        Ok(VercelTool {
            name: self.slot_of(&string(t, &["name", "key"])?),
            name_source: self.source_of(string(t, &["name", "source"])?),
            call_id: self.slot_of(&string(t, &["call_id", "key"])?),
            args,
        })
    }

    fn traceloop_tool(&mut self, root: &Value) -> Got<TraceloopTool> {
        let t = at(root, &["tools", "traceloop"])?;
        let first = |path: &[&str]| -> Got<Value> {
            at(t, path)?
                .as_array()
                .and_then(|rows| rows.first())
                .cloned()
                .ok_or_else(|| RulesError(format!("rules.json: tools.traceloop.{}", path[0])))
        };
        let (name, args) = (first(&["name"])?, first(&["args"])?);
        let input = at(root, &["tools", "genai", "args_elsewhere", "traceloop"])?;
        Ok(TraceloopTool {
            names: self.keys(t, &["name"])?,
            name_source: self.source_of(string(&name, &["source"])?),
            name_suffix: string(t, &["name_before_suffix"])?,
            call_id: self.slot_of(&string(t, &["call_id", "key"])?),
            args: self.slot_of(&string(&args, &["key"])?),
            args_source: self.source_of(string(&args, &["source"])?),
            input: self.slot_of(&string(input, &["key"])?),
            input_source: self.source_of(string(input, &["source"])?),
            failure: self.slot_of(&string(t, &["failure", "key"])?),
        })
    }

    /// `tools.{reader}` of a reader with one argument key: Pydantic AI v2 (name and call id
    /// from keys), MLflow and LangSmith (the span name is the tool).
    fn plain_tool(&mut self, root: &Value, reader: &str) -> Got<PlainTool> {
        let t = at(root, &["tools", reader])?;
        let name = match at(t, &["name"])?.get("from").and_then(Value::as_str) {
            Some("span_name") => None,
            Some(other) => {
                return Err(RulesError(format!(
                    "rules.json: tools.{reader}.name from {other:?}"
                )))
            }
            None => Some(self.slot_of(&string(t, &["name", "key"])?)),
        };
        let call_id = match t.get("call_id") {
            Some(row) => Some(self.slot_of(&string(row, &["key"])?)),
            None => None,
        };
        Ok(PlainTool {
            name,
            call_id,
            args: self.slot_of(&string(t, &["args", "key"])?),
            args_source: self.source_of(string(t, &["args", "source"])?),
        })
    }

    fn vercel_calls(&mut self, models: &Value) -> Got<VercelCalls> {
        let row = at(models, &["vercel_calls"])?;
        Ok(VercelCalls {
            slot: self.slot_of(&string(row, &["key"])?),
            source: self.source_of(string(row, &["source"])?),
            name: string(row, &["fields", "name"])?,
            call_id: string(row, &["fields", "call_id"])?,
            args: strings(row, &["fields", "args"])?,
        })
    }

    /// The index of a call's `source` text in `sources`.
    fn source_of(&mut self, text: String) -> usize {
        if let Some(at) = self.sources.iter().position(|s| *s == text) {
            return at;
        }
        self.sources.push(text);
        self.sources.len() - 1
    }

    /// The slots of the keys of the ordered rows at `path`.
    fn keys(&mut self, root: &Value, path: &[&str]) -> Got<Vec<Slot>> {
        let rows = at(root, path)?
            .as_array()
            .ok_or_else(|| RulesError(format!("rules.json: {} is not a list", path.join("."))))?;
        rows.iter()
            .map(|row| Ok(self.slot_of(&string(row, &["key"])?)))
            .collect()
    }

    fn slot_of(&mut self, key: &str) -> Slot {
        let next = self.slots.len();
        *self.slots.entry(key.to_owned()).or_insert(next)
    }

    /// How many slots a span's index has.
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    pub fn slot(&self, key: &str) -> Option<Slot> {
        self.slots.get(key).copied()
    }

    /// A string that is not a placeholder (`values.text`).
    pub fn text<'v>(&self, value: Option<&'v AnyValue<'v>>) -> Option<&'v str> {
        match value {
            Some(AnyValue::Str(s)) if !self.placeholders.contains(*s) => Some(s),
            _ => None,
        }
    }

    /// Whether `key` holds content rather than a label (`spans.is_content_attribute`).
    pub fn is_content(&self, key: &str) -> bool {
        self.content_keys.contains(key)
            || self
                .content_prefixes
                .iter()
                .any(|p| key.starts_with(p.as_str()))
    }
}

/// A span's attributes by slot: the last value of each key the rules name (a Python dict
/// keeps the last value of a repeated key).
pub struct Slots<'s, 'a> {
    found: Vec<Option<&'s AnyValue<'a>>>,
}

impl<'s, 'a> Slots<'s, 'a> {
    pub fn of(rules: &Rules, attributes: &'s [(&'a str, AnyValue<'a>)]) -> Self {
        let mut found = vec![None; rules.slot_count()];
        for (key, value) in attributes {
            if let Some(slot) = rules.slots.get(*key) {
                found[*slot] = Some(value);
            }
        }
        Slots { found }
    }

    /// The value at `slot`: `None` when the key is absent (an empty AnyValue is `Some(None)`).
    pub fn get(&self, slot: Slot) -> Option<&'s AnyValue<'a>> {
        self.found[slot]
    }

    pub fn has(&self, slot: Slot) -> bool {
        self.found[slot].is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: &str = include_str!("../../src/tooltrail/dialects/rules.json");

    #[test]
    fn reads_the_rules_of_the_package() {
        let rules = Rules::parse(RULES).expect("rules.json reads");
        assert_eq!(rules.by_span_name.get("agent run"), Some(&Meaning::Agent));
        let (first, table) = &rules.markers[0];
        assert_eq!(rules.slot("gen_ai.operation.name"), Some(*first));
        assert_eq!(
            table.get("execute_tool"),
            Some(&Meaning::Tool("genai".into()))
        );
        assert!(rules.final_names.contains("final_result"));
        assert!(rules.is_content("gen_ai.input.messages") && !rules.is_content("user"));
        let source = |at: usize| rules.sources[at].as_str();
        assert_eq!(
            source(rules.genai.args_source),
            "genai:gen_ai.tool.call.arguments"
        );
        let oi = &rules.openinference;
        assert_eq!(rules.slot("input.value"), Some(oi.args));
        assert_eq!(source(oi.args_source), "openinference:input.value");
        assert_eq!(oi.call_ids.len(), 2);
        let sources: Vec<_> = rules.vercel.args.iter().map(|(_, s)| source(*s)).collect();
        assert_eq!(
            sources,
            ["vercel:ai.toolCall.args", "vercel:ai.toolCall.input"]
        );
        let t = &rules.traceloop;
        assert_eq!(rules.slot("traceloop.entity.input"), Some(t.input));
        assert_eq!(source(t.input_source), "traceloop:traceloop.entity.input");
        assert_eq!(
            (source(t.name_source), t.name_suffix.as_str()),
            ("traceloop:name", ".tool")
        );
        let v = &rules.vercel_calls;
        assert_eq!(source(v.source), "model:ai.response.toolCalls");
        assert_eq!((v.name.as_str(), v.args.len()), ("toolName", 2));
        assert_eq!(
            source(rules.genai_output_source),
            "model:gen_ai.output.messages"
        );
        assert!(rules.mlflow.name.is_none() && rules.langsmith.call_id.is_none());
        assert!(rules.pydantic_v2.name.is_some() && rules.pydantic_v2.call_id.is_some());
        assert_eq!(source(rules.mlflow.args_source), "mlflow:mlflow.spanInputs");
        let first = &rules.agent_reply[0];
        assert_eq!(rules.slot("final_result"), Some(first.slot));
        assert!(!first.declined && !first.decides);
        assert!(rules
            .agent_reply
            .iter()
            .any(|row| row.declined && row.decides));
        // every row of `models` is read; the response records of `messages` are Python's
        let elsewhere = ["llm.openai.choices", "output.value", "gen_ai.tool.args"]
            .map(|k| rules.slot(k).unwrap());
        assert_eq!(rules.reply_elsewhere, elsewhere);
        assert_eq!(rules.reply_elsewhere_prefixes, ["gen_ai.completion."]);
        let oi = &rules.openinference;
        assert_eq!(rules.slot("tool.parameters"), Some(oi.args_hidden));
        assert_eq!(oi.name_suffix, ".__call__");
        let adk = rules.slot("gcp.vertex.agent.llm_response");
        assert_eq!(Some(rules.adk_response.0), adk);
        assert_eq!(
            source(rules.adk_response.1),
            "model:gcp.vertex.agent.llm_response"
        );
        let flat = &rules.openinference_calls;
        assert_eq!(source(flat.source), "model:llm.output_messages");
        assert_eq!(flat.name, "tool_call.function.name");
        let (g, sources) = (&rules.genai, &rules.sources);
        assert_eq!(
            sources[g.strands_message.source],
            "strands:gen_ai.tool.message"
        );
        assert_eq!(g.strands_details.key, "gen_ai.input.messages");
        assert_eq!(rules.slot("tool_arguments"), Some(g.pydantic_args.0));
        assert_eq!(
            rules.slot("gcp.vertex.agent.tool_response"),
            Some(g.adk_args.1)
        );
        // Traceloop's input in its envelopes: the only keyed row declined
        assert_eq!(g.elsewhere, vec![t.input]);
        assert_eq!(rules.slot("gen_ai.tool.status"), Some(g.status.0));
        // MCP's result marked `isError` is read (declined when marked); `error.type` read
        let mcp = &g.mcp_failure;
        assert_eq!(rules.slot("mcp.method.name"), Some(mcp.when));
        assert_eq!(
            (Some(mcp.result), mcp.marker.as_str()),
            (rules.slot("gen_ai.tool.call.result"), "isError")
        );
        assert_eq!(rules.slot("error.type"), Some(g.error_type));
        assert!(!g.declined.contains(&g.error_type));
        assert!(!g.declined.contains(&mcp.result));
        assert_eq!(rules.slot("traceloop.entity.output"), Some(t.failure));
    }

    #[test]
    fn refuses_rules_that_lack_what_it_reads() {
        assert!(Rules::parse("{}").is_err());
        assert!(Rules::parse("not json").is_err());
        let unknown_role = RULES.replacen("\"agent run\": \"agent\"", "\"agent run\": \"boss\"", 1);
        assert!(Rules::parse(&unknown_role).is_err());
    }

    #[test]
    fn keeps_the_events_of_argument_rows_it_does_not_read() {
        let row = r#""later": {"event": "gen_ai.later", "key": "args", "encoding": "json",
                     "source": "later:args"},
        "strands_message": {"#;
        let more = RULES.replacen(r#""strands_message": {"#, row, 1);
        assert_ne!(more, RULES);
        let rules = Rules::parse(&more).expect("rules.json with a row added reads");
        assert_eq!(rules.genai.other_events, ["gen_ai.later"]);
        let rules = Rules::parse(RULES).expect("rules.json reads");
        assert!(rules.genai.other_events.is_empty());
    }
}
