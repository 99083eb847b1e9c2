//! The maker: the `EvalTrace` of what the port built (`build::Built`), made with the classes
//! of `tooltrail.model` that `convert/build.py` hands over once, the values the port only
//! carried read back from their table (`handles.rs`).

use std::collections::HashMap;
use std::sync::{Mutex, TryLockError};

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use super::classes::check_fields;
use crate::build::{self, Built, Val};

const EVAL_TRACE_FIELDS: &[&str] = &[
    "trace_id",
    "spans",
    "metadata",
    "output",
    "tool_calls",
    "evaluations",
    "partial",
    "turns",
    "content_missing",
    "agent_spans",
];
const TOOL_CALL_FIELDS: &[&str] = &[
    "name",
    "args",
    "call_id",
    "span_id",
    "parent_span_id",
    "start_ns",
    "end_ns",
    "status",
    "error",
    "turn",
    "agent",
    "source",
    "result",
];
const TURN_FIELDS: &[&str] = &["number", "input", "reply", "span_id"];
const AGENT_SPAN_FIELDS: &[&str] = &[
    "span_id",
    "name",
    "parent_span_id",
    "tool_span_id",
    "start_ns",
    "end_ns",
    "turn",
];

/// `(EvalTrace, ToolCall, Turn, deferred_spans, AgentSpan)` of `tooltrail.model`.
pub(super) struct ModelClasses {
    eval_trace: PyObject,
    tool_call: PyObject,
    turn: PyObject,
    deferred_spans: PyObject,
    agent_span: PyObject,
    /// The interned copies of the strings its traces share.
    shared: SharedTexts,
}

impl ModelClasses {
    /// The classes, their fields checked (`classes.rs`).
    pub(super) fn new(
        py: Python<'_>,
        classes: (PyObject, PyObject, PyObject, PyObject, PyObject),
    ) -> PyResult<Self> {
        let (eval_trace, tool_call, turn, deferred_spans, agent_span) = classes;
        check_fields(eval_trace.bind(py), EVAL_TRACE_FIELDS)?;
        check_fields(tool_call.bind(py), TOOL_CALL_FIELDS)?;
        check_fields(turn.bind(py), TURN_FIELDS)?;
        check_fields(agent_span.bind(py), AGENT_SPAN_FIELDS)?;
        Ok(Self {
            eval_trace,
            tool_call,
            turn,
            deferred_spans,
            agent_span,
            shared: SharedTexts::default(),
        })
    }
}

fn py_opt<'py>(py: Python<'py>, text: Option<&str>) -> Bound<'py, PyAny> {
    match text {
        Some(text) => PyString::new(py, text).into_any(),
        None => py.None().into_bound(py),
    }
}

fn py_val<'py>(
    py: Python<'py>,
    value: Option<Val>,
    values: &[Bound<'py, PyAny>],
) -> Bound<'py, PyAny> {
    match value {
        Some(v) => values[v.0 as usize].clone(),
        None => py.None().into_bound(py),
    }
}

fn str_list<'py>(py: Python<'py>, items: &[String]) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, items.iter().map(|item| PyString::new(py, item)))
}

/// The strings of few distinct values (a tool's name, a call's source, an agent's name, an
/// attribute's key), each one shared object: Python's interned copy. The Python builder hands
/// on the objects it was given, which its traces share; new strings per call held traces at
/// about 1 KB more per trace than the Python builder's (`bench_core_memory.py`).
///
/// Interning costs a new string and a look-up in Python's table of interned strings each
/// time (14 a trace of `bench_eval.py`'s dump: 13% of `Builder.build_core`'s instructions,
/// callgrind), so the interned copies are also kept here, by text. The keys come from input
/// (tool names), so the map keeps std's keyed hasher; at most `MAX_SHARED` are kept, and a
/// full map is emptied (its strings are then interned again, each once).
#[derive(Default)]
pub(super) struct SharedTexts {
    made: Mutex<HashMap<String, Py<PyString>>>,
}

/// Strings `SharedTexts` keeps at most.
const MAX_SHARED: usize = 4096;

impl SharedTexts {
    fn get<'py>(&self, py: Python<'py>, text: &str) -> Bound<'py, PyString> {
        // The GIL is held, so the lock is free unless this thread holds it already (Python
        // code run by the collector while a string is made here, building a trace in turn):
        // then the string is interned without the map, never waited for. A poisoned lock (a
        // panic while held) only means the map is taken as it is.
        let mut made = match self.made.try_lock() {
            Ok(made) => made,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return PyString::intern(py, text),
        };
        if let Some(known) = made.get(text) {
            return known.bind(py).clone();
        }
        let string = PyString::intern(py, text);
        if made.len() >= MAX_SHARED {
            made.clear();
        }
        made.insert(text.to_owned(), string.clone().unbind());
        string
    }

    fn get_opt<'py>(&self, py: Python<'py>, text: Option<&str>) -> Bound<'py, PyAny> {
        match text {
            Some(text) => self.get(py, text).into_any(),
            None => py.None().into_bound(py),
        }
    }
}

impl ModelClasses {
    /// The `EvalTrace` of `built`, its carried values read from `values`.
    pub(super) fn make<'py>(
        &self,
        py: Python<'py>,
        built: Built,
        values: &[Bound<'py, PyAny>],
    ) -> PyResult<Bound<'py, PyAny>> {
        let rows = PyList::empty(py);
        let calls = PyList::empty(py);
        for row in &built.rows {
            let status = match row.status {
                "ok" => intern!(py, "ok"),
                "error" => intern!(py, "error"),
                _ => intern!(py, "unset"),
            };
            let fields = [
                self.shared.get(py, &row.name).into_any(),
                py_val(py, row.args, values),
                py_opt(py, row.call_id.as_deref()),
                values[row.span_id.0 as usize].clone(),
                py_val(py, row.parent_span_id, values),
                row.start_ns.into_pyobject(py)?.into_any(),
                row.end_ns.into_pyobject(py)?.into_any(),
                status.clone().into_any(),
                py_val(py, row.error, values),
                row.turn.into_pyobject(py)?.into_any(),
                self.shared.get_opt(py, row.agent.as_deref()),
                self.shared.get(py, &row.source).into_any(),
                py_val(py, row.result, values),
                values[row.span_name.0 as usize].clone(),
            ];
            let call = PyTuple::new(py, &fields[..13])?;
            calls.append(self.tool_call.bind(py).call1(call)?)?;
            rows.append(PyTuple::new(py, fields)?)?;
        }
        let spans = self.deferred_spans.bind(py).call1((rows,))?;
        let trace_id = PyString::new(py, &built.trace_id);
        let metadata = metadata(py, &built.meta, values, &trace_id, &self.shared)?;
        let turns = PyList::empty(py);
        for turn in &built.turns {
            let fields = (
                turn.number,
                py_opt(py, turn.input.as_deref()),
                py_opt(py, turn.reply.as_deref()),
                py_opt(py, turn.span_id.as_deref()),
            );
            turns.append(self.turn.bind(py).call1(fields)?)?;
        }
        let agents = PyList::empty(py);
        for agent in &built.agents {
            let fields = (
                values[agent.span_id.0 as usize].clone(),
                self.shared.get_opt(py, agent.name.as_deref()),
                py_val(py, agent.parent_span_id, values),
                py_val(py, agent.tool_span_id, values),
                agent.start_ns,
                agent.end_ns,
                agent.turn,
            );
            agents.append(self.agent_span.bind(py).call1(fields)?)?;
        }
        let fields = (
            trace_id,
            spans,
            metadata,
            py_opt(py, built.output.as_deref()),
            calls,
            PyList::empty(py),
            built.partial,
            turns,
            py_opt(py, built.content_missing.as_deref()),
            agents,
        );
        self.eval_trace.bind(py).call1(fields)
    }
}

/// `EvalTrace.metadata`, keys in the Python builder's order (`build._metadata`).
fn metadata<'py>(
    py: Python<'py>,
    meta: &build::Meta,
    values: &[Bound<'py, PyAny>],
    trace_id: &Bound<'py, PyString>,
    shared: &SharedTexts,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item(intern!(py, "turn_count"), meta.turn_count)?;
    if let Some(service) = &meta.service_name {
        dict.set_item(intern!(py, "service.name"), shared.get(py, service))?;
    }
    if let Some((name, span_id)) = &meta.root {
        dict.set_item(intern!(py, "root_span_name"), &values[name.0 as usize])?;
        dict.set_item(intern!(py, "root_span_id"), span_id)?;
    }
    if let Some(agent) = &meta.agent_name {
        dict.set_item(intern!(py, "agent_name"), shared.get(py, agent))?;
    }
    let trace_ids = PyList::new(
        py,
        meta.trace_ids.iter().map(|id| match trace_id.to_str() {
            Ok(same) if same == id => trace_id.clone(), // one trace: the object `trace_id` holds
            _ => PyString::new(py, id),
        }),
    )?;
    dict.set_item(intern!(py, "trace_ids"), trace_ids)?;
    if let Some(conversation) = &meta.conversation_id {
        dict.set_item(intern!(py, "conversation_id"), conversation)?;
    }
    if let Some(case) = &meta.case_id {
        dict.set_item(intern!(py, "case_id"), case)?;
    }
    let attributes = PyDict::new(py);
    for (key, value) in &meta.attributes {
        attributes.set_item(shared.get(py, key), &values[value.0 as usize])?;
    }
    dict.set_item(intern!(py, "attributes"), attributes)?;
    if let Some(latency) = meta.total_latency_ms {
        dict.set_item(intern!(py, "total_latency_ms"), latency)?;
    }
    dict.set_item(
        intern!(py, "error_span_ids"),
        str_list(py, &meta.error_span_ids)?,
    )?;
    dict.set_item(
        intern!(py, "agent_span_ids"),
        str_list(py, &meta.agent_span_ids)?,
    )?;
    dict.set_item(intern!(py, "span_count"), meta.span_count)?;
    if let Some(usage) = &meta.usage {
        dict.set_item(
            intern!(py, "turn_latency_ms"),
            PyList::new(py, &usage.turn_latency_ms)?,
        )?;
        dict.set_item(intern!(py, "llm_calls"), usage.llm_calls)?;
        if let Some(tokens) = &usage.tokens {
            let by_model = PyDict::new(py);
            for (model, tokens_in, tokens_out) in &tokens.by_model {
                let entry = PyDict::new(py);
                entry.set_item(intern!(py, "input_tokens"), tokens_in)?;
                entry.set_item(intern!(py, "output_tokens"), tokens_out)?;
                by_model.set_item(shared.get(py, model), entry)?;
            }
            let token_usage = PyDict::new(py);
            token_usage.set_item(intern!(py, "input_tokens"), tokens.input)?;
            token_usage.set_item(intern!(py, "output_tokens"), tokens.output)?;
            token_usage.set_item(intern!(py, "by_model"), by_model)?;
            dict.set_item(intern!(py, "token_usage"), token_usage)?;
        }
    }
    Ok(dict)
}
