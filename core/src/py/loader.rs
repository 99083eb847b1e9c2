//! The loader: a Python `TraceFacts` read into the builder's port (`build::Trace`),
//! attribute by attribute, as the Python builder reads it; values the port only carries kept
//! as handles (`handles.rs`). A field of another shape, a text Rust cannot hold, one
//! `ModelCall` object listed twice: `Decline::Shape`, and the Python builder builds.

use std::collections::{HashMap, HashSet};

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::handles::{
    attr, borrowed, count, keep, keep_any, opt_text, pairs, resource_into, small, text, truth,
};
use crate::build::{
    Asked, Call, Decline, Fact, Trace, ABSENT, ROLE_AGENT, ROLE_EXCLUDED, ROLE_MODEL, ROLE_TOOL,
    ROLE_WORKFLOW, ROOT,
};

/// A trace's span ids numbered (`build::Trace::parents`, `index`) as they are met.
struct Numbers {
    numbers: HashMap<String, u32>,
    parents: Vec<u32>,
    index: Vec<u32>,
}

impl Numbers {
    fn with_capacity(spans: usize) -> Self {
        Self {
            numbers: HashMap::with_capacity(spans + 4),
            parents: Vec::with_capacity(spans + 4),
            index: Vec::with_capacity(spans + 4),
        }
    }

    /// The number of `id` (a new one: a span not seen, no fact yet); `""` is no span's id.
    fn number(&mut self, id: &str) -> Result<u32, Decline> {
        if let Some(&number) = self.numbers.get(id) {
            return Ok(number);
        }
        if id.is_empty() || self.parents.len() >= ROOT as usize {
            return Err(Decline::Shape);
        }
        let number = self.parents.len() as u32;
        self.numbers.insert(id.to_owned(), number);
        self.parents.push(ABSENT);
        self.index.push(ABSENT);
        Ok(number)
    }
}

pub(super) fn load<'py>(
    py: Python<'py>,
    traces: &Bound<'py, PyAny>,
    values: &mut Vec<Bound<'py, PyAny>>,
) -> Result<Vec<Trace>, Decline> {
    let mut loaded = Vec::new();
    let mut asked_seen: HashSet<usize> = HashSet::new();
    for trace in traces.try_iter().map_err(|_| Decline::Shape)? {
        let trace = trace.map_err(|_| Decline::Shape)?;
        loaded.push(load_trace(py, &trace, values, &mut asked_seen)?);
    }
    Ok(loaded)
}

fn load_trace<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    values: &mut Vec<Bound<'py, PyAny>>,
    asked_seen: &mut HashSet<usize>,
) -> Result<Trace, Decline> {
    let mut trace = Trace {
        trace_id: text(&attr(obj, intern!(py, "trace_id"))?)?,
        ..Trace::default()
    };
    let parents = attr(obj, intern!(py, "parents"))?;
    let parents = parents.downcast::<PyDict>().map_err(|_| Decline::Shape)?;
    let mut ids = Numbers::with_capacity(parents.len());
    for (span_id, parent_id) in parents.iter() {
        let child = ids.number(borrowed(&span_id)?)?;
        let parent = borrowed(&parent_id)?;
        let parent = if parent.is_empty() {
            ROOT
        } else {
            ids.number(parent)?
        };
        ids.parents[child as usize] = parent;
    }
    trace.span_count = parents.len();
    let facts = attr(obj, intern!(py, "facts"))?;
    let facts = facts.downcast::<PyDict>().map_err(|_| Decline::Shape)?;
    trace.facts.reserve(facts.len());
    values.reserve(facts.len() * 6); // a fact's id, parent, name, arguments and more
    for (key, fact) in facts.iter() {
        let fact = load_fact(py, &fact, &mut ids, values, asked_seen)?;
        if borrowed(&key)? != fact.span_id || ids.index[fact.id as usize] != ABSENT {
            return Err(Decline::Shape);
        }
        ids.index[fact.id as usize] = trace.facts.len() as u32;
        trace.facts.push(fact);
    }
    trace.parents = ids.parents;
    trace.index = ids.index;
    let resource = attr(obj, intern!(py, "resource"))?;
    let resource = resource.downcast::<PyDict>().map_err(|_| Decline::Shape)?;
    resource_into(&mut trace, resource, values)?;
    trace.start_ns = count(&attr(obj, intern!(py, "start_ns"))?)?;
    trace.end_ns = count(&attr(obj, intern!(py, "end_ns"))?)?;
    let errors = attr(obj, intern!(py, "error_spans"))?;
    let errors = errors.downcast::<PyList>().map_err(|_| Decline::Shape)?;
    for error in errors.iter() {
        let (start, span_id): (Bound<'py, PyAny>, Bound<'py, PyAny>) =
            error.extract().map_err(|_| Decline::Shape)?;
        trace.error_spans.push((count(&start)?, text(&span_id)?));
    }
    trace.conversation_id = opt_text(&attr(obj, intern!(py, "conversation_id"))?)?;
    trace.case_id = opt_text(&attr(obj, intern!(py, "case_id"))?)?;
    trace.dropped = small(&attr(obj, intern!(py, "dropped"))?)? > 0;
    trace.read_usage = truth(&attr(obj, intern!(py, "read_usage"))?)?;
    trace.read_content = truth(&attr(obj, intern!(py, "read_content"))?)?;
    let responses = attr(obj, intern!(py, "tool_responses"))?;
    if !responses.is_none() {
        for (call_id, value) in pairs(&responses, values)? {
            trace.tool_responses.insert(call_id, value);
        }
    }
    Ok(trace)
}

/// The fields of one `SpanFact` that the build reads for its role (`build.rs` reads no
/// other: a tool's status, error, agent and result; a model's requests, usage, final answer,
/// scope; the input and the reply of agents, workflows, models and of a span that may be a
/// trace's root (no parent, or one that never arrived), labels of agents and those).
fn load_fact<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    ids: &mut Numbers,
    values: &mut Vec<Bound<'py, PyAny>>,
    asked_seen: &mut HashSet<usize>,
) -> Result<Fact, Decline> {
    let role = small(&attr(obj, intern!(py, "role"))?)?;
    let span = attr(obj, intern!(py, "span_id"))?;
    let parent = attr(obj, intern!(py, "parent_id"))?;
    let span_id = text(&span)?;
    let parent_id = text(&parent)?;
    let id = ids.number(&span_id)?;
    let parent_number = if parent_id.is_empty() {
        ROOT
    } else {
        ids.number(&parent_id)?
    };
    let span_val = keep_any(span, values);
    let parent_val = if parent_id.is_empty() {
        None
    } else {
        Some(keep_any(parent, values))
    };
    let mut fact = Fact {
        span_id,
        parent_id,
        id,
        parent: parent_number,
        span_val,
        parent_val,
        role,
        name: keep_any(attr(obj, intern!(py, "name"))?, values),
        start_ns: count(&attr(obj, intern!(py, "start_ns"))?)?,
        end_ns: count(&attr(obj, intern!(py, "end_ns"))?)?,
        ..Default::default()
    };
    let may_be_root = parent_number == ROOT || ids.parents[parent_number as usize] == ABSENT;
    if may_be_root || role == ROLE_AGENT || role == ROLE_WORKFLOW || role == ROLE_MODEL {
        fact.reply = opt_text(&attr(obj, intern!(py, "reply"))?)?;
    }
    if may_be_root || role == ROLE_AGENT {
        fact.labels = pairs(&attr(obj, intern!(py, "labels"))?, values)?;
    }
    if role == ROLE_TOOL || role == ROLE_EXCLUDED {
        let call = attr(obj, intern!(py, "call"))?;
        if !call.is_none() {
            fact.call = Some(Call {
                name: text(&attr(&call, intern!(py, "name"))?)?,
                args: keep(attr(&call, intern!(py, "args"))?, values),
                call_id: opt_text(&attr(&call, intern!(py, "call_id"))?)?,
                source: text(&attr(&call, intern!(py, "source"))?)?,
                failure: truth(&attr(&call, intern!(py, "failure"))?)?,
                positional: truth(&attr(&call, intern!(py, "positional"))?)?,
            });
        }
    }
    if role == ROLE_TOOL {
        fact.status_code = small(&attr(obj, intern!(py, "status_code"))?)?;
        fact.error = keep(attr(obj, intern!(py, "error"))?, values);
        fact.result = keep(attr(obj, intern!(py, "result"))?, values);
    }
    if role == ROLE_TOOL || role == ROLE_AGENT {
        fact.agent = opt_text(&attr(obj, intern!(py, "agent"))?)?;
    }
    if role == ROLE_EXCLUDED || role == ROLE_MODEL {
        fact.final_ = opt_text(&attr(obj, intern!(py, "final"))?)?;
    }
    if may_be_root || role == ROLE_AGENT || role == ROLE_WORKFLOW || role == ROLE_MODEL {
        fact.input = opt_text(&attr(obj, intern!(py, "input"))?)?;
    }
    if role == ROLE_MODEL {
        let listed = attr(obj, intern!(py, "model_calls"))?;
        for asked in listed.try_iter().map_err(|_| Decline::Shape)? {
            let asked = asked.map_err(|_| Decline::Shape)?;
            if !asked_seen.insert(asked.as_ptr() as usize) {
                return Err(Decline::Shape); // one request object twice: told apart by `id`
            }
            fact.model_calls.push(Asked {
                name: text(&attr(&asked, intern!(py, "name"))?)?,
                call_id: opt_text(&attr(&asked, intern!(py, "call_id"))?)?,
                args: keep(attr(&asked, intern!(py, "args"))?, values),
                position: small(&attr(&asked, intern!(py, "position"))?)?,
                source: text(&attr(&asked, intern!(py, "source"))?)?,
            });
        }
        let usage = attr(obj, intern!(py, "usage"))?;
        if !usage.is_none() {
            let (tokens_in, tokens_out, model): Usage<'py> =
                usage.extract().map_err(|_| Decline::Shape)?;
            fact.usage = Some((count(&tokens_in)?, count(&tokens_out)?, opt_text(&model)?));
        }
        fact.scope = text(&attr(obj, intern!(py, "scope"))?)?;
        fact.asked_unlisted = truth(&attr(obj, intern!(py, "asked_unlisted"))?)?;
    }
    Ok(fact)
}

/// A model span's `usage` as Python holds it.
type Usage<'py> = (Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>);
