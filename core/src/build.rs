//! The trace builder's port (`convert/build.py`, `convert/calls.py`): the facts of one trace, or
//! of the traces of one conversation, into the parts of one `EvalTrace`.
//!
//! This layer knows nothing of Python: values it only carries (tool arguments, results, label
//! values) are opaque handles (`Val`), and the few rules that compare such values (`==`,
//! positional arguments that fit named ones, numbers a JavaScript runtime rounded) are asked
//! of the caller's `ValueRules`. The bindings (`py/builder.rs`, `py/loader.rs`,
//! `py/maker.rs`) load a Python `TraceFacts` into these structs and make the Python
//! `EvalTrace` of a `Built`. The Python builder is the reference: every step here is
//! written after its function there, under the same name, and `tests/convert/
//! test_core_builder.py` holds the two equal. Anything a step cannot do exactly is a
//! `Decline`: the caller then builds the trace with the Python builder.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap, HashSet};

/// A value only the caller can read (an index into its own table).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Val(pub u32);

/// Why a trace is left to the Python builder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decline {
    /// A field of another type or shape than the builder's (a hand-made `TraceFacts`).
    Shape,
    /// A comparison of values that raised (absurdly deep arguments).
    Value,
    /// No trace at all.
    Empty,
}

/// The rules over opaque values (comparisons, and the final-answer rules that read a call's
/// arguments), answered by the caller (`convert/calls.py` and `dialects/final.py` through
/// Python).
pub trait ValueRules {
    /// `a == b`.
    fn same(&mut self, a: Val, b: Val) -> Result<bool, Decline>;
    /// `calls.fits(recorded, asked)`.
    fn fits(&mut self, recorded: Val, asked: Val) -> Result<bool, Decline>;
    /// `calls.lost_precision(recorded, asked)`.
    fn lost_precision(&mut self, recorded: Val, asked: Val) -> Result<bool, Decline>;
    /// `final.is_final_answer(scope, name)`.
    fn is_final_answer(&mut self, scope: &str, name: &str) -> Result<bool, Decline>;
    /// `final.final_text(args)`.
    fn final_text(&mut self, args: Option<Val>) -> Result<Option<String>, Decline>;
}

pub const ROLE_TOOL: i64 = 1;
pub const ROLE_AGENT: i64 = 2;
pub const ROLE_MODEL: i64 = 3;
pub const ROLE_EXCLUDED: i64 = 4;
pub const ROLE_WORKFLOW: i64 = 5;
pub const STATUS_OK: i64 = 1;
pub const STATUS_ERROR: i64 = 2;
/// `Trace::parents`: no parent (`""`), or a span never seen.
pub const ROOT: u32 = u32::MAX - 1;
pub const ABSENT: u32 = u32::MAX;

impl Trace {
    /// The fact of span number `id`, if kept.
    fn fact_at(&self, id: u32) -> Option<usize> {
        match self.index.get(id as usize) {
            Some(&at) if at != ABSENT => Some(at as usize),
            _ => None,
        }
    }
}

/// `calls.MAX_HOPS`.
const MAX_HOPS: usize = 10_000;
/// `calls._SHORT`.
const SHORT: usize = 32;

/// A tool call as a span recorded it (`DialectCall`).
#[derive(Debug)]
pub struct Call {
    pub name: String,
    pub args: Option<Val>,
    pub call_id: Option<String>,
    pub source: String,
    /// Whether `failure` is set (a non-empty text).
    pub failure: bool,
    pub positional: bool,
}

/// A call a model asked for (`ModelCall`).
#[derive(Debug)]
pub struct Asked {
    pub name: String,
    pub call_id: Option<String>,
    pub args: Option<Val>,
    pub position: i64,
    pub source: String,
}

/// What conversion keeps of a span (`SpanFact`). `Default`: no call, reply, usage or the like,
/// which the loader fills in by role.
#[derive(Debug, Default)]
pub struct Fact {
    pub span_id: String,
    pub parent_id: String,
    /// The numbers of `span_id` and `parent_id` in the trace's ids (`ROOT` for no parent).
    pub id: u32,
    pub parent: u32,
    /// The caller's values of `span_id` and (unless empty) `parent_id`, carried to the rows.
    pub span_val: Val,
    pub parent_val: Option<Val>,
    pub role: i64,
    /// The span's name (only carried: a row's and the root's).
    pub name: Val,
    pub start_ns: u64,
    pub end_ns: u64,
    pub status_code: i64,
    pub error: Option<Val>,
    pub call: Option<Call>,
    pub agent: Option<String>,
    pub reply: Option<String>,
    pub model_calls: Vec<Asked>,
    pub labels: Vec<(String, Val)>,
    pub usage: Option<ModelUsage>,
    pub result: Option<Val>,
    pub input: Option<String>,
    pub final_: Option<String>,
    pub scope: String,
    pub asked_unlisted: bool,
}

/// The facts of one trace (`TraceFacts`); `facts` in the order of its dict.
#[derive(Debug, Default)]
pub struct Trace {
    pub trace_id: String,
    /// By id number (every span id and parent id of the trace, numbered when loaded): the
    /// parent's number, `ROOT` (a root), or `ABSENT` (a span never seen, only named).
    pub parents: Vec<u32>,
    /// How many spans were seen (`TraceFacts.span_count`).
    pub span_count: usize,
    pub facts: Vec<Fact>,
    /// By id number: the index in `facts`, or `ABSENT`.
    pub index: Vec<u32>,
    /// The resource's attributes of a scalar value (str, bool, int, float), in order.
    pub resource: Vec<(String, Val)>,
    /// `resource["service.name"]` when it is a str.
    pub service_name: Option<String>,
    pub start_ns: u64,
    pub end_ns: u64,
    pub error_spans: Vec<(u64, String)>,
    pub conversation_id: Option<String>,
    pub case_id: Option<String>,
    pub dropped: bool,
    pub read_usage: bool,
    pub read_content: bool,
    pub tool_responses: HashMap<String, Val>,
}

/// One converted call: `ToolCall`'s fields in order, then its span's name (`CallRow`).
#[derive(Debug)]
pub struct Row {
    pub name: String,
    pub args: Option<Val>,
    pub call_id: Option<String>,
    pub span_id: Val,
    pub parent_span_id: Option<Val>,
    pub start_ns: u64,
    pub end_ns: u64,
    pub status: &'static str,
    pub error: Option<Val>,
    pub turn: usize,
    pub agent: Option<String>,
    pub source: String,
    pub result: Option<Val>,
    pub span_name: Val,
    /// (trace index, fact index) of the span that carries the call.
    pub at: (usize, usize),
}

/// One turn (`Turn`).
#[derive(Debug)]
pub struct TurnOut {
    pub number: usize,
    pub input: Option<String>,
    pub reply: Option<String>,
    pub span_id: Option<String>,
}

/// One agent span (`AgentSpan`): span ids as the caller's values.
#[derive(Debug)]
pub struct AgentOut {
    pub span_id: Val,
    pub name: Option<String>,
    /// The nearest agent span above it.
    pub parent_span_id: Option<Val>,
    /// The outermost tool span between it and `parent_span_id`.
    pub tool_span_id: Option<Val>,
    pub start_ns: u64,
    pub end_ns: u64,
    pub turn: usize,
}

/// `metadata["token_usage"]`.
#[derive(Debug)]
pub struct Tokens {
    pub input: u128,
    pub output: u128,
    /// model -> (input, output), sorted by model.
    pub by_model: Vec<(String, u128, u128)>,
}

/// (input tokens, output tokens, model) of a model span (`dialects.usage.ModelUsage`).
pub type ModelUsage = (u64, u64, Option<String>);

/// What `_note_model_usage` and `_turn_latencies` add when a trace reads usage.
#[derive(Debug)]
pub struct Usage {
    pub turn_latency_ms: Vec<f64>,
    pub llm_calls: u64,
    pub tokens: Option<Tokens>,
}

/// `EvalTrace.metadata`, each key in the order the Python builder sets it.
#[derive(Debug)]
pub struct Meta {
    pub turn_count: usize,
    pub service_name: Option<String>,
    /// (root span name, root span id).
    pub root: Option<(Val, String)>,
    pub agent_name: Option<String>,
    pub trace_ids: Vec<String>,
    pub conversation_id: Option<String>,
    pub case_id: Option<String>,
    pub attributes: Vec<(String, Val)>,
    pub total_latency_ms: Option<f64>,
    pub error_span_ids: Vec<String>,
    pub agent_span_ids: Vec<String>,
    pub span_count: usize,
    pub usage: Option<Usage>,
}

/// The parts of one `EvalTrace`.
#[derive(Debug)]
pub struct Built {
    pub trace_id: String,
    pub rows: Vec<Row>,
    pub meta: Meta,
    pub output: Option<String>,
    pub partial: bool,
    pub content_missing: Option<String>,
    pub turns: Vec<TurnOut>,
    pub agents: Vec<AgentOut>,
}

/// A fact of a conversation: (trace index, fact index).
type At = (usize, usize);
/// An agent span of a trace being built (`build._AgentRow`): (trace index, its fact, the
/// nearest agent fact above it, its turn's key).
type AgentRow = (usize, usize, Option<usize>, TurnKey);
/// (start, trace index, span id): a turn, as `build._TurnKey`.
type TurnKey = (u64, usize, String);

/// Python's truth of an optional text.
fn truthy(text: &Option<String>) -> bool {
    text.as_deref().is_some_and(|t| !t.is_empty())
}

/// `a or b` of optional texts.
fn or(a: Option<String>, b: impl FnOnce() -> Option<String>) -> Option<String> {
    if truthy(&a) {
        a
    } else {
        b()
    }
}

/// The kept spans of a trace by role (`calls.Kinds`), as indices into `Trace::facts`.
#[derive(Debug, Default)]
struct Kinds {
    tools: Vec<usize>,
    agents: Vec<usize>,
    models: Vec<usize>,
    excluded: Vec<usize>,
    parentless: Vec<usize>,
    asking: Vec<usize>,
    workflows: Vec<usize>,
    finals: Vec<usize>,
    maybe_wrapped: HashSet<usize>,
}

/// `calls.kinds`.
fn kinds(trace: &Trace) -> Kinds {
    let mut kept = Kinds::default();
    for (at, fact) in trace.facts.iter().enumerate() {
        match fact.role {
            ROLE_TOOL if fact.call.is_some() => kept.tools.push(at),
            ROLE_MODEL => {
                kept.models.push(at);
                if !fact.model_calls.is_empty() {
                    kept.asking.push(at);
                }
                if fact.parent != ROOT {
                    let parent = trace.fact_at(fact.parent);
                    if parent.is_none_or(|p| trace.facts[p].role == ROLE_MODEL) {
                        kept.maybe_wrapped.insert(at);
                    }
                }
            }
            ROLE_AGENT => kept.agents.push(at),
            ROLE_EXCLUDED if fact.call.is_some() => {
                kept.excluded.push(at);
                if truthy(&fact.final_) {
                    kept.finals.push(at);
                }
            }
            ROLE_WORKFLOW => kept.workflows.push(at),
            _ => {}
        }
        if fact.parent_id.is_empty() {
            kept.parentless.push(at);
        }
    }
    kept
}

/// `calls.lineage`: the ids above `start` in `links` (by id number: the parent's, `ROOT` or
/// `ABSENT`), nearest first.
fn lineage(links: &[u32], start: u32) -> Vec<u32> {
    let next = |id: u32| match links.get(id as usize) {
        Some(&parent) if parent != ROOT && parent != ABSENT => Some(parent),
        _ => None,
    };
    let mut chain: Vec<u32> = Vec::new();
    let mut current = next(start);
    while let Some(id) = current {
        if id == start || chain.contains(&id) {
            break;
        }
        chain.push(id);
        if chain.len() == SHORT {
            let mut passed: HashSet<u32> = chain.iter().copied().collect();
            passed.insert(start);
            let mut current = next(chain[SHORT - 1]);
            while let Some(id) = current {
                if passed.contains(&id) || chain.len() >= MAX_HOPS {
                    break;
                }
                chain.push(id);
                passed.insert(id);
                current = next(id);
            }
            return chain;
        }
        current = next(id);
    }
    chain
}

/// `calls.enclosing_models`: the id numbers of the model spans that wrap span `id`.
fn enclosing_models(trace: &Trace, id: u32) -> Vec<u32> {
    let parent = trace.parents.get(id as usize).copied().unwrap_or(ABSENT);
    if let Some(parent) = trace.fact_at(parent) {
        if trace.facts[parent].role != ROLE_MODEL {
            return Vec::new();
        }
    }
    let mut found = Vec::new();
    for current in lineage(&trace.parents, id) {
        if let Some(above) = trace.fact_at(current) {
            if trace.facts[above].role != ROLE_MODEL {
                break;
            }
            found.push(current);
        }
    }
    found
}

/// `calls.placement`: (nearest agent above, top-level agent or workflow above, depth).
fn placement(trace: &Trace, id: u32) -> (Option<usize>, Option<usize>, usize) {
    let (mut nearest, mut top) = (None, None);
    let chain = lineage(&trace.parents, id);
    for &current in &chain {
        if let Some(above) = trace.fact_at(current) {
            match trace.facts[above].role {
                ROLE_AGENT => {
                    if nearest.is_none() {
                        nearest = Some(above);
                    }
                    top = Some(above);
                }
                ROLE_WORKFLOW => top = Some(above),
                _ => {}
            }
        }
    }
    (nearest, top, chain.len())
}

/// One call of a trace (`calls.CallRecord`).
#[derive(Debug)]
struct Record {
    trace: usize,
    fact: usize,
    name: String,
    args: Option<Val>,
    call_id: Option<String>,
    source: String,
    status: &'static str,
    error: Option<Val>,
    agent: Option<String>,
    start_ns: u64,
    end_ns: u64,
    depth: usize,
    turn_root: Option<At>,
    positional: bool,
    /// (model start, model end, model fact, position).
    emitted: Option<(u64, u64, usize, i64)>,
    group_start: Option<u64>,
    turn: Option<TurnKey>,
    result: Option<Val>,
    within: Option<usize>,
}

/// `calls._record`.
fn record(trace: &Trace, index: usize, at: usize) -> Record {
    let fact = &trace.facts[at];
    let (mut within, mut nearest, mut top) = (None, None, None);
    let mut searching = true;
    let chain = lineage(&trace.parents, fact.id);
    for &current in &chain {
        if let Some(above) = trace.fact_at(current) {
            let role = trace.facts[above].role;
            if role == ROLE_AGENT {
                if nearest.is_none() {
                    nearest = Some(above);
                }
                top = Some(above);
                searching = false;
            } else if role == ROLE_WORKFLOW {
                top = Some(above);
                searching = false;
            } else if searching && (role == ROLE_TOOL || role == ROLE_MODEL) {
                within = (role == ROLE_TOOL).then_some(above);
                searching = false;
            }
        }
    }
    let call = fact.call.as_ref().expect("a tool span with a call");
    let status = if call.failure || fact.status_code == STATUS_ERROR {
        "error"
    } else if fact.status_code == STATUS_OK {
        "ok"
    } else {
        "unset"
    };
    // `calls._record`: the nearest agent span's name, else the tool span's own.
    let agent = or(nearest.and_then(|n| trace.facts[n].agent.clone()), || {
        fact.agent.clone()
    });
    Record {
        trace: index,
        fact: at,
        name: call.name.clone(),
        args: call.args,
        call_id: call.call_id.clone(),
        source: call.source.clone(),
        status,
        error: fact.error,
        agent,
        start_ns: fact.start_ns,
        end_ns: fact.end_ns,
        depth: chain.len(),
        turn_root: top.map(|t| (index, t)),
        positional: call.positional,
        emitted: None,
        group_start: None,
        turn: None,
        result: fact.result,
        within,
    }
}

/// `calls.tool_calls`.
fn tool_calls(
    trace: &mut Trace,
    index: usize,
    kept: &mut Kinds,
    rules: &mut dyn ValueRules,
) -> Result<Vec<Record>, Decline> {
    let mut records = Vec::with_capacity(kept.tools.len());
    let mut into: Vec<u32> = Vec::new(); // by id number: the outer span of the same call
    let mut nested = false;
    for &at in &kept.tools {
        let made = record(trace, index, at);
        if let Some(outer) = made.within {
            let fact = &trace.facts[at];
            let outer = &trace.facts[outer];
            if let (Some(outer_call), Some(call)) = (&outer.call, &fact.call) {
                let same_id = call.call_id.is_some() && call.call_id == outer_call.call_id;
                if same_id || outer_call.name == call.name {
                    if into.is_empty() {
                        into = vec![ABSENT; trace.parents.len()];
                    }
                    into[fact.id as usize] = outer.id;
                    nested = true;
                }
            }
        }
        records.push(made);
    }
    if nested {
        records = collapse(trace, records, &into);
    }
    join_model_calls(trace, index, &mut records, kept, rules)?;
    Ok(records)
}

/// `calls._collapse`.
fn collapse(trace: &Trace, records: Vec<Record>, into: &[u32]) -> Vec<Record> {
    let by_span: HashMap<u32, usize> = records
        .iter()
        .enumerate()
        .map(|(i, r)| (trace.facts[r.fact].id, i))
        .collect();
    let facts: Vec<usize> = records.iter().map(|r| r.fact).collect();
    let mut owner_of: HashMap<u32, usize> = HashMap::new();
    let mut records: Vec<Option<Record>> = records.into_iter().map(Some).collect();
    // the owners' records, in the order first met
    let mut slots: Vec<Record> = Vec::new();
    for &inner_at in &facts {
        let inner = &trace.facts[inner_at];
        let outers = lineage(into, inner.id);
        let owner_id = outers.last().copied().unwrap_or(inner.id);
        let slot = match owner_of.get(&owner_id) {
            Some(&slot) => slot,
            None => {
                let taken = records[by_span[&owner_id]]
                    .take()
                    .expect("an owner's record");
                slots.push(taken);
                owner_of.insert(owner_id, slots.len() - 1);
                slots.len() - 1
            }
        };
        let owner = &mut slots[slot];
        if owner.fact == inner_at {
            continue;
        }
        let call = inner.call.as_ref().expect("a tool span with a call");
        if owner.args.is_none() && call.args.is_some() {
            owner.args = call.args;
            owner.source = call.source.clone();
            owner.positional = call.positional;
        }
        if owner.call_id.is_none() {
            owner.call_id = call.call_id.clone();
        }
        if owner.result.is_none() {
            owner.result = inner.result;
        }
        if owner.status == "unset" && inner.error.is_some() {
            owner.status = "error";
            owner.error = inner.error;
        }
    }
    slots
}

/// `(start_ns, span_id)` order of facts.
fn span_order(trace: &Trace, a: usize, b: usize) -> Ordering {
    let (x, y) = (&trace.facts[a], &trace.facts[b]);
    (x.start_ns, &x.span_id).cmp(&(y.start_ns, &y.span_id))
}

/// `calls._join_model_calls`.
fn join_model_calls(
    trace: &mut Trace,
    index: usize,
    records: &mut Vec<Record>,
    kept: &mut Kinds,
    rules: &mut dyn ValueRules,
) -> Result<(), Decline> {
    if kept.asking.is_empty() {
        return Ok(());
    }
    let mut models = kept.asking.clone();
    if models.len() > 1 {
        models.sort_by(|&a, &b| span_order(trace, a, b));
        if !kept.maybe_wrapped.is_empty() {
            models = without_wrappers(trace, models, &kept.maybe_wrapped);
        }
    }
    // a request is (model fact, index in its model_calls)
    let mut by_id: HashMap<&str, (usize, usize)> = HashMap::new();
    let mut asked_count = 0usize;
    let mut id_less = false;
    for &model in &models {
        for (i, asked) in trace.facts[model].model_calls.iter().enumerate() {
            asked_count += 1;
            match &asked.call_id {
                None => id_less = true,
                Some(id) => {
                    by_id.entry(id.as_str()).or_insert((model, i));
                }
            }
        }
    }
    let mut used: HashSet<(usize, usize)> = HashSet::new();
    for &at in &kept.excluded {
        let fact = &trace.facts[at];
        let call = fact.call.as_ref().expect("an excluded span with a call");
        consume(trace, call, fact.start_ns, &models, &by_id, &mut used);
    }
    records.sort_by(|a, b| {
        (a.start_ns, a.depth, &trace.facts[a.fact].span_id).cmp(&(
            b.start_ns,
            b.depth,
            &trace.facts[b.fact].span_id,
        ))
    });
    let mut unmatched: Vec<usize> = Vec::new();
    for (r, made) in records.iter_mut().enumerate() {
        let Some(call_id) = &made.call_id else {
            unmatched.push(r);
            continue;
        };
        match by_id.get(call_id.as_str()) {
            Some(&found) if !used.contains(&found) => {
                used.insert(found);
                enrich(trace, made, found, rules)?;
            }
            _ if id_less => unmatched.push(r),
            _ => {}
        }
    }
    if !unmatched.is_empty() {
        match_by_name(trace, &models, records, &unmatched, &mut used, rules)?;
    }
    if used.len() < asked_count {
        for &model in &models {
            for i in 0..trace.facts[model].model_calls.len() {
                if used.contains(&(model, i)) {
                    continue;
                }
                let fact = &trace.facts[model];
                let asked = &fact.model_calls[i];
                if rules.is_final_answer(&fact.scope, &asked.name)? {
                    if fact.final_.is_none() {
                        kept.finals.push(model);
                    }
                    let text = rules.final_text(asked.args)?;
                    let fact = &mut trace.facts[model];
                    let old = fact.final_.take();
                    fact.final_ = Some(or(text, || old).unwrap_or_default());
                    continue;
                }
                records.push(model_only(trace, index, model, i));
            }
        }
    }
    if asked_count > models.len() {
        set_group_starts(records);
    }
    Ok(())
}

/// `calls._match_by_name`.
fn match_by_name(
    trace: &Trace,
    models: &[usize],
    records: &mut [Record],
    unmatched: &[usize],
    used: &mut HashSet<(usize, usize)>,
    rules: &mut dyn ValueRules,
) -> Result<(), Decline> {
    let mut queues: HashMap<&str, Vec<(usize, usize)>> = HashMap::new();
    for &model in models {
        for (i, asked) in trace.facts[model].model_calls.iter().enumerate() {
            if !used.contains(&(model, i)) {
                queues
                    .entry(asked.name.as_str())
                    .or_default()
                    .push((model, i));
            }
        }
    }
    for &r in unmatched {
        let made = &mut records[r];
        let Some(queue) = queues.get_mut(made.name.as_str()) else {
            continue;
        };
        let mut index: Option<usize> = None;
        for (i, &(model, a)) in queue.iter().enumerate() {
            let fact = &trace.facts[model];
            if fact.start_ns > made.start_ns {
                break;
            }
            let asked = &fact.model_calls[a];
            if made.call_id.is_some() && asked.call_id.is_some() {
                continue;
            }
            if index.is_none() {
                index = Some(i);
            }
            let same = match (asked.args, made.args) {
                (None, None) => true,
                (Some(x), Some(y)) => rules.same(x, y)?,
                _ => false,
            };
            if same {
                index = Some(i);
                break;
            }
        }
        if let Some(i) = index {
            let found = queue.remove(i);
            used.insert(found);
            enrich(trace, made, found, rules)?;
        }
    }
    Ok(())
}

/// `calls._without_wrappers`.
fn without_wrappers(
    trace: &Trace,
    models: Vec<usize>,
    maybe_wrapped: &HashSet<usize>,
) -> Vec<usize> {
    let asking: HashSet<u32> = models.iter().map(|&m| trace.facts[m].id).collect();
    let mut wrappers: HashSet<u32> = HashSet::new();
    for &model in &models {
        if !maybe_wrapped.contains(&model) {
            continue;
        }
        for above in enclosing_models(trace, trace.facts[model].id) {
            if asking.contains(&above) {
                wrappers.insert(above);
            }
        }
    }
    if wrappers.is_empty() {
        return models;
    }
    models
        .into_iter()
        .filter(|&m| !wrappers.contains(&trace.facts[m].id))
        .collect()
}

/// `calls._set_group_starts`.
fn set_group_starts(records: &mut [Record]) {
    let mut groups: HashMap<usize, u64> = HashMap::new();
    for made in records.iter() {
        if let Some((_, _, model, _)) = made.emitted {
            let known = groups.entry(model).or_insert(made.start_ns);
            if made.start_ns < *known {
                *known = made.start_ns;
            }
        }
    }
    for made in records.iter_mut() {
        if let Some((_, _, model, _)) = made.emitted {
            made.group_start = Some(groups[&model]);
        }
    }
}

/// `calls._consume`.
fn consume(
    trace: &Trace,
    call: &Call,
    start_ns: u64,
    models: &[usize],
    by_id: &HashMap<&str, (usize, usize)>,
    used: &mut HashSet<(usize, usize)>,
) {
    if let Some(call_id) = &call.call_id {
        if let Some(&found) = by_id.get(call_id.as_str()) {
            used.insert(found);
        }
        return;
    }
    for &model in models {
        let fact = &trace.facts[model];
        if fact.start_ns > start_ns {
            return;
        }
        for (i, asked) in fact.model_calls.iter().enumerate() {
            if asked.name == call.name && !used.contains(&(model, i)) {
                used.insert((model, i));
                return;
            }
        }
    }
}

/// `calls._enrich`.
fn enrich(
    trace: &Trace,
    made: &mut Record,
    (model, i): (usize, usize),
    rules: &mut dyn ValueRules,
) -> Result<(), Decline> {
    let fact = &trace.facts[model];
    let asked = &fact.model_calls[i];
    made.emitted = Some((fact.start_ns, fact.end_ns, model, asked.position));
    if made.call_id.is_none() {
        made.call_id = asked.call_id.clone();
    }
    let Some(asked_args) = asked.args else {
        return Ok(());
    };
    let take = match made.args {
        None => true,
        Some(args) => made.positional && rules.fits(args, asked_args)?,
    };
    if take {
        made.args = Some(asked_args);
        made.positional = false;
        made.source = taken_from(&made.source, &asked.source);
    } else if let Some(args) = made.args {
        if rules.lost_precision(args, asked_args)? {
            made.args = Some(asked_args);
            made.source = taken_from(&made.source, &asked.source);
        }
    }
    Ok(())
}

/// `calls._taken_from`.
fn taken_from(source: &str, asked_source: &str) -> String {
    let head = source.split_once(':').map_or(source, |(head, _)| head);
    let tail = asked_source.split_once(':').map_or("", |(_, tail)| tail);
    format!("{head}:{tail}")
}

/// `calls._model_only`.
fn model_only(trace: &Trace, index: usize, model: usize, i: usize) -> Record {
    let fact = &trace.facts[model];
    let asked = &fact.model_calls[i];
    let (nearest, top, depth) = placement(trace, fact.id);
    Record {
        trace: index,
        fact: model,
        name: asked.name.clone(),
        args: asked.args,
        call_id: asked.call_id.clone(),
        source: asked.source.clone(),
        status: "unset",
        error: None,
        agent: nearest.and_then(|n| trace.facts[n].agent.clone()),
        start_ns: if fact.end_ns != 0 {
            fact.end_ns
        } else {
            fact.start_ns
        },
        end_ns: fact.end_ns,
        depth,
        turn_root: top.map(|t| (index, t)),
        positional: false,
        emitted: Some((fact.start_ns, fact.end_ns, model, asked.position)),
        group_start: None,
        turn: None,
        result: None,
        within: None,
    }
}

/// `calls.order_key`, compared.
fn order(traces: &[Trace], a: &Record, b: &Record) -> Ordering {
    let key = |r: &Record| {
        let (model_start, model_end, model_id, position) = match r.emitted {
            Some((start, end, model, position)) => (
                start,
                end,
                traces[r.trace].facts[model].span_id.as_str(),
                position,
            ),
            None => (r.start_ns, 0, "", 0),
        };
        (
            r.group_start.unwrap_or(r.start_ns),
            model_start,
            model_end,
            model_id,
            position,
            r.start_ns,
            r.depth,
            r.end_ns,
        )
    };
    key(a).cmp(&key(b)).then_with(|| {
        let x = &traces[a.trace].facts[a.fact].span_id;
        let y = &traces[b.trace].facts[b.fact].span_id;
        x.cmp(y)
    })
}

/// The turns of a conversation being built (`build_eval_trace`'s shared state).
#[derive(Default)]
struct Turns {
    turns: BTreeMap<TurnKey, Option<At>>,
    /// turn root span id -> its top-level agents.
    members: HashMap<String, Vec<At>>,
    /// turn roots whose parent never arrived -> the turn they are part of.
    alias: HashMap<String, At>,
}

/// `build._turn_roots`; `placed` gets each agent's (fact, nearest agent above, top above).
fn turn_roots(
    traces: &[Trace],
    index: usize,
    kept: &Kinds,
    state: &mut Turns,
    placed: &mut Vec<(usize, Option<usize>, Option<usize>)>,
) -> Vec<usize> {
    let trace = &traces[index];
    let mut tops: Vec<usize> = Vec::new();
    for &at in &kept.workflows {
        if placement(trace, trace.facts[at].id).1.is_none() {
            tops.push(at);
        }
    }
    for &at in &kept.agents {
        let (nearest, top, _) = placement(trace, trace.facts[at].id);
        placed.push((at, nearest, top));
        match top {
            None => {
                tops.push(at);
                let id = trace.facts[at].span_id.clone();
                state.members.entry(id).or_default().push((index, at));
            }
            Some(top) if nearest.is_none() => {
                let id = trace.facts[top].span_id.clone();
                state.members.entry(id).or_default().push((index, at));
            }
            Some(_) => {}
        }
    }
    if tops.len() > 1 {
        tops.sort_by(|&a, &b| span_order(trace, a, b));
        for t in 1..tops.len() {
            let top = &trace.facts[tops[t]];
            if top.parent == ROOT || rooted(trace, top.parent) {
                continue;
            }
            for &other_at in &tops {
                let other = &trace.facts[other_at];
                if other_at == tops[t]
                    || state.alias.contains_key(&other.span_id)
                    || other.start_ns > top.start_ns
                {
                    continue;
                }
                if other.end_ns >= top.end_ns {
                    state.alias.insert(top.span_id.clone(), (index, other_at));
                    let moved = state.members.remove(&top.span_id).unwrap_or_default();
                    state
                        .members
                        .entry(other.span_id.clone())
                        .or_default()
                        .extend(moved);
                    break;
                }
            }
        }
        if !state.alias.is_empty() {
            tops.retain(|&t| !state.alias.contains_key(&trace.facts[t].span_id));
        }
    }
    tops
}

/// `build._rooted`.
fn rooted(trace: &Trace, id: u32) -> bool {
    let chain = lineage(&trace.parents, id);
    let last = chain.last().copied().unwrap_or(id);
    trace.parents.get(last as usize) == Some(&ROOT)
}

/// `build._turn_at`.
fn turn_at(trace: &Trace, start_ns: u64, tops: &[usize], trace_turn: &TurnKey) -> TurnKey {
    let Some(&first) = tops.first() else {
        return trace_turn.clone();
    };
    let mut top = first;
    for &candidate in tops {
        if trace.facts[candidate].start_ns <= start_ns {
            top = candidate;
        }
    }
    let fact = &trace.facts[top];
    (fact.start_ns, trace_turn.1, fact.span_id.clone())
}

/// `build._root`.
fn root(trace: &Trace, kept: &Kinds) -> Option<usize> {
    let key = |at: usize| (trace.facts[at].start_ns, &trace.facts[at].span_id);
    if let Some(&first) = kept.parentless.first() {
        let mut best = first;
        for &at in &kept.parentless {
            if key(at) < key(best) {
                best = at;
            }
        }
        return Some(best);
    }
    let mut earliest: Option<usize> = None;
    for (at, fact) in trace.facts.iter().enumerate() {
        let listed = trace.parents.get(fact.parent as usize);
        if listed.is_some_and(|&p| p != ABSENT) {
            continue; // (`ROOT` is no id: a fact without a parent is in `parentless`)
        }
        if earliest.is_none_or(|e| key(at) < key(e)) {
            earliest = Some(at);
        }
    }
    earliest
}

/// `build.build_eval_trace`: `traces` in any order.
pub fn build(mut traces: Vec<Trace>, rules: &mut dyn ValueRules) -> Result<Built, Decline> {
    if traces.is_empty() {
        return Err(Decline::Empty);
    }
    if traces.len() > 1 {
        traces.sort_by(|a, b| (a.start_ns, &a.trace_id).cmp(&(b.start_ns, &b.trace_id)));
    }
    let mut kept: Vec<Kinds> = traces.iter().map(kinds).collect();
    let mut state = Turns::default();
    let mut records: Vec<Record> = Vec::new();
    let mut all_tops: Vec<Vec<usize>> = Vec::with_capacity(traces.len());
    let mut agent_rows: Vec<AgentRow> = Vec::new();
    let mut placed = Vec::new();
    for index in 0..traces.len() {
        placed.clear();
        let tops = turn_roots(&traces, index, &kept[index], &mut state, &mut placed);
        let trace_turn: TurnKey = (traces[index].start_ns, index, String::new());
        let mut turn_of_top: HashMap<String, TurnKey> = HashMap::new();
        for &top in &tops {
            let fact = &traces[index].facts[top];
            let key: TurnKey = (fact.start_ns, index, fact.span_id.clone());
            turn_of_top.insert(fact.span_id.clone(), key.clone());
            state.turns.insert(key, Some((index, top)));
        }
        if tops.is_empty() {
            state.turns.insert(trace_turn.clone(), None);
        }
        for &(at, nearest, top) in &placed {
            // each agent's turn, as a call's below
            let trace = &traces[index];
            let mut root: At = (index, top.unwrap_or(at));
            if !state.alias.is_empty() {
                if let Some(&other) = state.alias.get(&traces[root.0].facts[root.1].span_id) {
                    root = other;
                }
            }
            let key = match turn_of_top.get(&traces[root.0].facts[root.1].span_id) {
                Some(key) => key.clone(),
                None => turn_at(trace, trace.facts[at].start_ns, &tops, &trace_turn),
            };
            agent_rows.push((index, at, nearest, key));
        }
        let made = tool_calls(&mut traces[index], index, &mut kept[index], rules)?;
        let trace = &traces[index];
        for mut made in made {
            if made.result.is_none() {
                if let Some(call_id) = &made.call_id {
                    if let Some(&value) = trace.tool_responses.get(call_id) {
                        made.result = Some(value);
                    }
                }
            }
            let mut root = made.turn_root;
            if !state.alias.is_empty() {
                if let Some((t, f)) = root {
                    let id = &traces[t].facts[f].span_id;
                    if let Some(&other) = state.alias.get(id) {
                        root = Some(other);
                        made.turn_root = root;
                    }
                }
            }
            let turn =
                root.and_then(|(t, f)| turn_of_top.get(&traces[t].facts[f].span_id).cloned());
            made.turn =
                Some(turn.unwrap_or_else(|| turn_at(trace, made.start_ns, &tops, &trace_turn)));
            records.push(made);
        }
        all_tops.push(tops);
    }
    let turn_keys: Vec<TurnKey> = state.turns.keys().cloned().collect();
    let numbers: HashMap<&TurnKey, usize> = turn_keys
        .iter()
        .enumerate()
        .map(|(i, key)| (key, i + 1))
        .collect();
    if traces.len() == 1 {
        records.sort_by(|a, b| order(&traces, a, b));
    } else {
        records.sort_by(|a, b| {
            let (x, y) = (
                a.turn.as_ref().map_or(0, |t| t.1),
                b.turn.as_ref().map_or(0, |t| t.1),
            );
            x.cmp(&y).then_with(|| order(&traces, a, b))
        });
    }
    let rows: Vec<Row> = records
        .into_iter()
        .map(|made| {
            let fact = &traces[made.trace].facts[made.fact];
            let turn = made.turn.as_ref().map_or(1, |key| numbers[key]);
            Row {
                name: made.name,
                args: made.args,
                call_id: made.call_id,
                span_id: fact.span_val,
                parent_span_id: fact.parent_val,
                start_ns: made.start_ns,
                end_ns: made.end_ns,
                status: made.status,
                error: made.error,
                turn,
                agent: made.agent,
                source: made.source,
                result: made.result,
                span_name: fact.name,
                at: (made.trace, made.fact),
            }
        })
        .collect();
    let mut conversation: Option<String> = None;
    let (mut partial, mut read_content) = (false, false);
    for trace in &traces {
        if conversation.is_none() && truthy(&trace.conversation_id) {
            conversation = trace.conversation_id.clone();
        }
        partial = partial || trace.dropped;
        read_content = read_content || trace.read_content;
    }
    let trace_id = if traces.len() == 1 {
        traces[0].trace_id.clone()
    } else {
        conversation
            .clone()
            .unwrap_or_else(|| traces[0].trace_id.clone())
    };
    let first_root = root(&traces[0], &kept[0]);
    let parts = Parts {
        traces: &traces,
        kept: &kept,
        state: &state,
        turn_keys: &turn_keys,
    };
    let output = parts.reply(first_root);
    let meta = parts.metadata(&rows, conversation, first_root);
    let content_missing = content_missing(&rows, &traces, &kept);
    let turns = if read_content {
        parts.turns(output.clone())
    } else {
        Vec::new()
    };
    let agents = agent_spans(&traces, agent_rows, &numbers);
    Ok(Built {
        trace_id,
        rows,
        meta,
        output,
        partial,
        content_missing,
        turns,
        agents,
    })
}

/// `build._agent_spans`: in start order (ties by span id), each with the outermost tool span
/// between it and the agent above it.
fn agent_spans(
    traces: &[Trace],
    mut rows: Vec<AgentRow>,
    numbers: &HashMap<&TurnKey, usize>,
) -> Vec<AgentOut> {
    if rows.len() > 1 {
        rows.sort_by(|a, b| {
            let (x, y) = (&traces[a.0].facts[a.1], &traces[b.0].facts[b.1]);
            (x.start_ns, &x.span_id).cmp(&(y.start_ns, &y.span_id))
        });
    }
    rows.into_iter()
        .map(|(index, at, nearest, key)| {
            let trace = &traces[index];
            let fact = &trace.facts[at];
            let mut tool = None;
            if let Some(nearest) = nearest {
                let stop = trace.facts[nearest].id;
                for current in lineage(&trace.parents, fact.id) {
                    if current == stop {
                        break;
                    }
                    if let Some(above) = trace.fact_at(current) {
                        if trace.facts[above].role == ROLE_TOOL {
                            tool = Some(trace.facts[above].span_val);
                        }
                    }
                }
            }
            AgentOut {
                span_id: fact.span_val,
                name: fact.agent.clone(),
                parent_span_id: nearest.map(|n| trace.facts[n].span_val),
                tool_span_id: tool,
                start_ns: fact.start_ns,
                end_ns: fact.end_ns,
                turn: numbers[&key],
            }
        })
        .collect()
}

/// `build._content_missing`.
fn content_missing(rows: &[Row], traces: &[Trace], kept: &[Kinds]) -> Option<String> {
    let uncaptured = rows.iter().filter(|row| row.args.is_none()).count();
    if uncaptured > 0 {
        return Some(format!(
            "{uncaptured} of {} tool calls have no recorded arguments",
            rows.len()
        ));
    }
    if rows.is_empty() {
        for (trace, trace_kinds) in traces.iter().zip(kept) {
            if trace_kinds
                .models
                .iter()
                .any(|&m| trace.facts[m].asked_unlisted)
            {
                return Some(
                    "a model response asked for tools (its finish reason), but no tool call is \
                     recorded"
                        .to_string(),
                );
            }
        }
    }
    None
}

/// What the reply, the turns and the metadata read of a built conversation.
struct Parts<'a> {
    traces: &'a [Trace],
    kept: &'a [Kinds],
    state: &'a Turns,
    turn_keys: &'a [TurnKey],
}

impl Parts<'_> {
    fn fact(&self, (t, f): At) -> &Fact {
        &self.traces[t].facts[f]
    }

    fn members(&self, top: At) -> &[At] {
        self.state
            .members
            .get(&self.fact(top).span_id)
            .map_or(&[], Vec::as_slice)
    }

    fn span_order(&self, a: At, b: At) -> Ordering {
        let (x, y) = (self.fact(a), self.fact(b));
        (x.start_ns, &x.span_id).cmp(&(y.start_ns, &y.span_id))
    }

    /// `build._reply`.
    fn reply(&self, first_root: Option<usize>) -> Option<String> {
        let last_key = self.turn_keys.last();
        let last_turn = last_key.and_then(|key| self.state.turns[key]);
        if let Some(last) = last_turn {
            let fact = self.fact(last);
            if truthy(&fact.reply) {
                return fact.reply.clone();
            }
            let mut best: Option<At> = None;
            for &agent in self.members(last) {
                let a = self.fact(agent);
                if truthy(&a.reply) && best.is_none_or(|b| a.end_ns > self.fact(b).end_ns) {
                    best = Some(agent);
                }
            }
            if let Some(best) = best {
                return self.fact(best).reply.clone();
            }
        }
        let last_trace = self.traces.len() - 1;
        let root_at = if self.traces.len() == 1 {
            first_root.map(|r| (0, r))
        } else {
            root(&self.traces[last_trace], &self.kept[last_trace]).map(|r| (last_trace, r))
        };
        if let Some(at) = root_at {
            let fact = self.fact(at);
            if truthy(&fact.reply) && fact.role != ROLE_MODEL {
                return fact.reply.clone();
            }
        }
        let (turn_start, turn_trace) = last_key.map_or((0, 0), |key| (key.0, key.1));
        if let Some(text) = self.final_answer(turn_trace, turn_start, None) {
            return Some(text);
        }
        let mut best: Option<usize> = None;
        let trace = &self.traces[turn_trace];
        for &m in &self.kept[turn_trace].models {
            let fact = &trace.facts[m];
            if truthy(&fact.reply) && fact.model_calls.is_empty() && fact.start_ns >= turn_start {
                let better = best.is_none_or(|b| {
                    let b = &trace.facts[b];
                    (fact.end_ns, fact.start_ns) > (b.end_ns, b.start_ns)
                });
                if better {
                    best = Some(m);
                }
            }
        }
        best.and_then(|b| trace.facts[b].reply.clone())
    }

    /// `build._final_answer`.
    fn final_answer(&self, index: usize, start: u64, end: Option<u64>) -> Option<String> {
        let trace = &self.traces[index];
        let mut best: Option<usize> = None;
        for &at in &self.kept[index].finals {
            let fact = &trace.facts[at];
            if fact.start_ns >= start && end.is_none_or(|end| fact.start_ns < end) {
                let better = best.is_none_or(|b| {
                    let b = &trace.facts[b];
                    (fact.end_ns, fact.start_ns) > (b.end_ns, b.start_ns)
                });
                if better {
                    best = Some(at);
                }
            }
        }
        best.and_then(|b| trace.facts[b].final_.clone())
    }

    /// `build._turns`.
    fn turns(&self, output: Option<String>) -> Vec<TurnOut> {
        let mut result = Vec::with_capacity(self.turn_keys.len());
        for (i, key) in self.turn_keys.iter().enumerate() {
            let number = i + 1;
            let top = self.state.turns[key];
            let (start, index) = (key.0, key.1);
            let end = self.turn_keys[number..]
                .iter()
                .find(|k| k.1 == index)
                .map(|k| k.0);
            let trace = &self.traces[index];
            let mut models: Vec<usize> = self.kept[index]
                .models
                .iter()
                .copied()
                .filter(|&m| {
                    let s = trace.facts[m].start_ns;
                    s >= start && end.is_none_or(|end| s < end)
                })
                .collect();
            models.sort_by(|&a, &b| span_order(trace, a, b));
            let mut agents: Vec<At> = top.map_or_else(Vec::new, |t| self.members(t).to_vec());
            agents.sort_by(|&a, &b| self.span_order(a, b));
            let mut said = top.and_then(|t| self.fact(t).input.clone());
            if top.is_none() {
                // a trace with no agent or workflow span: what its root was given
                let mut roots = self.kept[index].parentless.clone();
                roots.sort_by(|&a, &b| span_order(trace, a, b));
                for &root in &roots {
                    said = or(said, || trace.facts[root].input.clone());
                }
            }
            for &agent in &agents {
                said = or(said, || self.fact(agent).input.clone());
            }
            for &m in &models {
                said = or(said, || trace.facts[m].input.clone());
            }
            let reply = if number == self.turn_keys.len() {
                output.clone()
            } else {
                let mut reply = top.and_then(|t| self.fact(t).reply.clone());
                let mut by_end = agents.clone();
                by_end.sort_by_key(|&a| std::cmp::Reverse(self.fact(a).end_ns));
                for &agent in &by_end {
                    reply = or(reply, || self.fact(agent).reply.clone());
                }
                if reply.is_none() {
                    reply = self.final_answer(index, start, end);
                }
                for &m in models.iter().rev() {
                    let fact = &trace.facts[m];
                    if reply.is_none() && truthy(&fact.reply) && fact.model_calls.is_empty() {
                        reply = fact.reply.clone();
                    }
                }
                reply
            };
            result.push(TurnOut {
                number,
                input: said,
                reply,
                span_id: top.map(|t| self.fact(t).span_id.clone()),
            });
        }
        result
    }

    /// `build._metadata`.
    fn metadata(&self, rows: &[Row], conversation: Option<String>, root_at: Option<usize>) -> Meta {
        let first = &self.traces[0];
        let mut attributes = Labels::default();
        for (key, value) in &first.resource {
            attributes.set(key, *value);
        }
        let root = root_at.map(|r| &first.facts[r]);
        if let Some(root) = root {
            for (key, value) in &root.labels {
                attributes.set(key, *value);
            }
        }
        let mut agents: Vec<At> = Vec::new();
        for (t, trace_kinds) in self.kept.iter().enumerate() {
            agents.extend(trace_kinds.agents.iter().map(|&a| (t, a)));
        }
        agents.sort_by(|&a, &b| self.span_order(a, b));
        for &agent in &agents {
            for (key, value) in &self.fact(agent).labels {
                attributes.set(key, *value);
            }
        }
        let mut first_top: Option<At> = None;
        for key in self.turn_keys {
            first_top = self.state.turns[key];
            if first_top.is_some() {
                break;
            }
        }
        if let Some(top) = first_top {
            if self.fact(top).role != ROLE_AGENT {
                let mut best: Option<At> = None;
                for &m in self.members(top) {
                    if best.is_none_or(|b| self.span_order(m, b) == Ordering::Less) {
                        best = Some(m);
                    }
                }
                first_top = best;
            }
        }
        let mut agent_name = first_top.and_then(|t| {
            let agent = &self.fact(t).agent;
            truthy(agent).then(|| agent.clone()).flatten()
        });
        if agent_name.is_none() {
            agent_name = rows
                .iter()
                .find(|row| truthy(&row.agent))
                .and_then(|row| row.agent.clone());
        }
        let mut trace_ids = Vec::with_capacity(self.traces.len());
        let mut case_id: Option<String> = None;
        let (mut start, mut end) = (0u64, 0u64);
        let mut errors = Labels::<u64>::default();
        let mut span_count = 0usize;
        let mut read_usage = false;
        for trace in self.traces {
            trace_ids.push(trace.trace_id.clone());
            if case_id.is_none() && truthy(&trace.case_id) {
                case_id = trace.case_id.clone();
            }
            if trace.start_ns != 0 && (start == 0 || trace.start_ns < start) {
                start = trace.start_ns;
            }
            if trace.end_ns > end {
                end = trace.end_ns;
            }
            for (error_start, span_id) in &trace.error_spans {
                errors.set(span_id, *error_start);
            }
            span_count += trace.span_count;
            read_usage = read_usage || trace.read_usage;
        }
        let total_latency_ms =
            (start != 0 && end != 0).then(|| end.saturating_sub(start) as f64 / 1e6);
        for row in rows {
            let span_id = &self.fact(row.at).span_id;
            if row.status == "error" && !span_id.is_empty() && !errors.has(span_id) {
                errors.set(span_id, row.start_ns);
            }
        }
        let mut error_span_ids = errors.pairs;
        if error_span_ids.len() > 1 {
            error_span_ids.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
        }
        let usage = read_usage.then(|| Usage {
            turn_latency_ms: self.turn_latencies(),
            ..self.model_usage()
        });
        Meta {
            turn_count: self.state.turns.len().max(1),
            service_name: first.service_name.clone(),
            root: root.map(|r| (r.name, r.span_id.clone())),
            agent_name,
            trace_ids,
            conversation_id: conversation,
            case_id,
            attributes: attributes.pairs,
            total_latency_ms,
            error_span_ids: error_span_ids.into_iter().map(|(id, _)| id).collect(),
            agent_span_ids: agents
                .iter()
                .map(|&a| self.fact(a).span_id.clone())
                .collect(),
            span_count,
            usage,
        }
    }

    /// `build._turn_latencies`.
    fn turn_latencies(&self) -> Vec<f64> {
        self.turn_keys
            .iter()
            .map(|key| {
                let (start, end) = match self.state.turns[key] {
                    Some(top) => (self.fact(top).start_ns, self.fact(top).end_ns),
                    None => (self.traces[key.1].start_ns, self.traces[key.1].end_ns),
                };
                if start != 0 && end != 0 {
                    end.saturating_sub(start) as f64 / 1e6
                } else {
                    0.0
                }
            })
            .collect()
    }

    /// `build._note_model_usage` (`turn_latency_ms` left empty).
    fn model_usage(&self) -> Usage {
        let mut calls = 0u64;
        // outermost model span id -> (depth, start, usage)
        let mut counted: HashMap<&str, (usize, u64, &ModelUsage)> = HashMap::new();
        for (trace, trace_kinds) in self.traces.iter().zip(self.kept) {
            for &m in &trace_kinds.models {
                let fact = &trace.facts[m];
                let (depth, outer) = if trace_kinds.maybe_wrapped.contains(&m) {
                    let wrapping: Vec<&str> = enclosing_models(trace, fact.id)
                        .into_iter()
                        .filter_map(|id| {
                            trace.fact_at(id).map(|at| trace.facts[at].span_id.as_str())
                        })
                        .collect();
                    (
                        wrapping.len(),
                        wrapping.last().copied().unwrap_or(fact.span_id.as_str()),
                    )
                } else {
                    (0, fact.span_id.as_str())
                };
                if depth == 0 {
                    calls += 1;
                }
                if let Some(usage) = &fact.usage {
                    let better = counted
                        .get(outer)
                        .is_none_or(|best| (depth, fact.start_ns) < (best.0, best.1));
                    if better {
                        counted.insert(outer, (depth, fact.start_ns, usage));
                    }
                }
            }
        }
        let tokens = (!counted.is_empty()).then(|| {
            let (mut total_in, mut total_out) = (0u128, 0u128);
            let mut by_model: BTreeMap<&str, (u128, u128)> = BTreeMap::new();
            for (_, _, (tokens_in, tokens_out, model)) in counted.values() {
                total_in += u128::from(*tokens_in);
                total_out += u128::from(*tokens_out);
                let entry = by_model.entry(model.as_deref().unwrap_or("")).or_default();
                entry.0 += u128::from(*tokens_in);
                entry.1 += u128::from(*tokens_out);
            }
            Tokens {
                input: total_in,
                output: total_out,
                by_model: by_model
                    .into_iter()
                    .map(|(model, (i, o))| (model.to_string(), i, o))
                    .collect(),
            }
        });
        Usage {
            turn_latency_ms: Vec::new(),
            llm_calls: calls,
            tokens,
        }
    }
}

/// An insertion-ordered dict of text keys (a key set again keeps its place, takes the value).
struct Labels<V> {
    pairs: Vec<(String, V)>,
    at: HashMap<String, usize>,
}

impl<V> Default for Labels<V> {
    fn default() -> Self {
        Self {
            pairs: Vec::new(),
            at: HashMap::new(),
        }
    }
}

/// Past this many keys `Labels` finds a key by a map, not by a scan.
const SCANNED: usize = 16;

impl<V> Labels<V> {
    fn find(&self, key: &str) -> Option<usize> {
        if self.pairs.len() <= SCANNED {
            self.pairs.iter().position(|(k, _)| k == key)
        } else {
            self.at.get(key).copied()
        }
    }

    fn set(&mut self, key: &str, value: V) {
        match self.find(key) {
            Some(i) => self.pairs[i].1 = value,
            None => {
                self.pairs.push((key.to_string(), value));
                if self.pairs.len() == SCANNED + 1 {
                    for (i, (k, _)) in self.pairs.iter().enumerate() {
                        self.at.insert(k.clone(), i);
                    }
                } else if self.pairs.len() > SCANNED {
                    self.at.insert(key.to_string(), self.pairs.len() - 1);
                }
            }
        }
    }

    fn has(&self, key: &str) -> bool {
        self.find(key).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No value to compare: the build of facts without arguments needs none.
    struct NoValues;

    impl ValueRules for NoValues {
        fn same(&mut self, _: Val, _: Val) -> Result<bool, Decline> {
            Err(Decline::Value)
        }
        fn fits(&mut self, _: Val, _: Val) -> Result<bool, Decline> {
            Err(Decline::Value)
        }
        fn lost_precision(&mut self, _: Val, _: Val) -> Result<bool, Decline> {
            Err(Decline::Value)
        }
        fn is_final_answer(&mut self, _: &str, _: &str) -> Result<bool, Decline> {
            Ok(false)
        }
        fn final_text(&mut self, _: Option<Val>) -> Result<Option<String>, Decline> {
            Ok(None)
        }
    }

    fn fact(span_id: &str, id: u32, parent: u32, role: i64, start_ns: u64) -> Fact {
        Fact {
            span_id: span_id.to_string(),
            parent_id: String::new(),
            id,
            parent,
            span_val: Val(id),
            parent_val: None,
            role,
            name: Val(100 + id),
            start_ns,
            end_ns: start_ns + 10,
            ..Default::default()
        }
    }

    #[test]
    fn lineage_stops_at_a_root_a_span_never_seen_and_a_cycle() {
        // 0 <- 1 <- 2, 3 -> 4 -> 3 (a cycle), 5 -> 6 (never seen)
        let links = [ROOT, 0, 1, 4, 3, 6, ABSENT];
        assert_eq!(lineage(&links, 2), vec![1, 0]);
        assert_eq!(lineage(&links, 3), vec![4]);
        assert_eq!(lineage(&links, 5), vec![6]);
        assert!(lineage(&links, 0).is_empty());
    }

    #[test]
    fn a_tool_call_under_an_agent_is_its_turn_and_names_the_agent() {
        let mut agent = fact("a1", 0, ROOT, ROLE_AGENT, 1);
        agent.agent = Some("shop".to_string());
        let mut tool = fact("t1", 1, 0, ROLE_TOOL, 2);
        tool.parent_id = "a1".to_string();
        tool.parent_val = Some(Val(0));
        tool.status_code = STATUS_OK;
        tool.call = Some(Call {
            name: "lookup".to_string(),
            args: None,
            call_id: Some("c1".to_string()),
            source: "genai:x".to_string(),
            failure: false,
            positional: false,
        });
        let trace = Trace {
            trace_id: "t".to_string(),
            parents: vec![ROOT, 0],
            span_count: 2,
            facts: vec![agent, tool],
            index: vec![0, 1],
            start_ns: 1,
            end_ns: 12,
            ..Trace::default()
        };
        let built = build(vec![trace], &mut NoValues).expect("built");
        assert_eq!(built.rows.len(), 1);
        let row = &built.rows[0];
        assert_eq!(
            (row.name.as_str(), row.turn, row.status),
            ("lookup", 1, "ok")
        );
        assert_eq!(row.agent.as_deref(), Some("shop"));
        assert_eq!(built.meta.agent_name.as_deref(), Some("shop"));
        assert_eq!(built.meta.agent_span_ids, vec!["a1".to_string()]);
        assert_eq!(
            built.content_missing.as_deref(),
            Some("1 of 1 tool calls have no recorded arguments")
        );
        assert_eq!(build(Vec::new(), &mut NoValues).err(), Some(Decline::Empty));
    }

    #[test]
    fn an_agent_run_as_a_tool_names_the_agent_and_the_tool_above_it() {
        // agent "lead" (0) > tool "ask" (1) > workflow (2) > agent "helper" (3)
        let mut lead = fact("a0", 0, ROOT, ROLE_AGENT, 1);
        lead.agent = Some("lead".to_string());
        let mut tool = fact("t1", 1, 0, ROLE_TOOL, 2);
        tool.call = Some(Call {
            name: "ask".to_string(),
            args: None,
            call_id: None,
            source: "genai:x".to_string(),
            failure: false,
            positional: false,
        });
        let flow = fact("w2", 2, 1, ROLE_WORKFLOW, 3);
        let mut helper = fact("a3", 3, 2, ROLE_AGENT, 4);
        helper.agent = Some("helper".to_string());
        let trace = Trace {
            trace_id: "t".to_string(),
            parents: vec![ROOT, 0, 1, 2],
            span_count: 4,
            facts: vec![lead, tool, flow, helper],
            index: vec![0, 1, 2, 3],
            start_ns: 1,
            end_ns: 14,
            ..Trace::default()
        };
        let built = build(vec![trace], &mut NoValues).expect("built");
        let shown: Vec<_> = built
            .agents
            .iter()
            .map(|a| (a.name.as_deref(), a.parent_span_id, a.tool_span_id, a.turn))
            .collect();
        assert_eq!(
            shown,
            vec![
                (Some("lead"), None, None, 1),
                (Some("helper"), Some(Val(0)), Some(Val(1)), 1),
            ]
        );
    }
}
