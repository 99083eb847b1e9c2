//! `CoreTrace`: one trace collected in Rust from `TracePart`s (`collect.rs` does the
//! bookkeeping of `TraceFacts.add`), exported as the keyword arguments of the equal
//! `TraceFacts`, or read straight into the builder's `build::Trace` (`Builder.build_core`).

use std::collections::HashMap;
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use super::handles::{keep, keep_any, pairs, resource_into};
use super::mode::FactsMode;
use super::parts::{hex_id, span_fact, PartFact, TracePart};
use crate::build::{Asked, Call, Decline, Fact, Trace, Val, ABSENT, ROOT};
use crate::collect::{Arrival, Book};
use crate::ids::id_hex;

/// A fact span recorded: what its `SpanFact` is made of.
struct Kept {
    span_id: u64,
    parent: u64,
    name: Box<str>,
    start_ns: u64,
    end_ns: u64,
    status_code: i32,
    fact: Box<PartFact>,
}

/// The spans of one trace, recorded from `TracePart`s as `TraceFacts.add` records the same
/// spans one by one.
#[pyclass(module = "tooltrail_core")]
pub(super) struct CoreTrace {
    trace_id: Py<PyString>,
    /// `trace_id`'s text, to check each part against.
    trace_text: String,
    read_usage: bool,
    book: Book<Kept, Py<PyDict>>,
    /// The classes the facts are made with (the first part's reader's).
    mode: Option<Arc<FactsMode>>,
}

#[pymethods]
impl CoreTrace {
    #[new]
    fn new(trace_id: Bound<'_, PyString>, max_spans: i64, read_usage: bool) -> PyResult<Self> {
        Ok(Self {
            trace_text: trace_id.to_str()?.to_owned(),
            trace_id: trace_id.unbind(),
            read_usage,
            book: Book::new(max_spans),
            mode: None,
        })
    }

    /// Record the spans of `part` (a part of this trace; it is taken).
    fn add(&mut self, py: Python<'_>, part: &Bound<'_, TracePart>) -> PyResult<()> {
        let mut part = part.borrow_mut();
        let theirs = part.trace_id_of(py).to_str()?;
        if theirs != self.trace_text {
            return Err(PyValueError::new_err(format!(
                "a part of trace {theirs} added to trace {}",
                self.trace_text
            )));
        }
        let (shared, spans) = part.take()?;
        if self.mode.is_none() {
            self.mode = Some(Arc::clone(&shared.mode));
        }
        for span in spans {
            let (resource, resource_set) = &shared.resources[span.resource as usize];
            let noted = (span.found.as_ref())
                .filter(|found| found.noted)
                .map(|found| match &found.notes {
                    Some(notes) => (notes.conversation.as_deref(), notes.case_id.as_deref()),
                    None => (None, None),
                });
            let arrival = Arrival {
                span_id: span.span_id,
                parent: span.parent,
                start_ns: span.start_ns,
                end_ns: span.end_ns,
                status_code: span.status_code,
                resource_set: *resource_set,
                noted,
            };
            if !self.book.admit(&arrival, || resource.clone_ref(py)) {
                continue;
            }
            let Some(found) = span.found else {
                continue;
            };
            let mut fact = found.fact; // (its notes are the trace's now)
            if !self.read_usage {
                fact.usage = None;
            }
            self.book.facts.push(Kept {
                span_id: span.span_id,
                parent: span.parent,
                name: span.name,
                start_ns: span.start_ns,
                end_ns: span.end_ns,
                status_code: span.status_code,
                fact,
            });
        }
        Ok(())
    }

    #[getter]
    fn trace_id(&self, py: Python<'_>) -> Py<PyString> {
        self.trace_id.clone_ref(py)
    }

    #[getter]
    fn max_spans(&self) -> i64 {
        self.book.max_spans
    }

    #[getter]
    fn span_count(&self) -> usize {
        self.book.span_count()
    }

    #[getter]
    fn dropped(&self) -> u64 {
        self.book.dropped
    }

    #[getter]
    fn conversation_id(&self) -> Option<&str> {
        self.book.conversation.as_ref().map(|(_, _, id)| &**id)
    }

    #[getter]
    fn case_id(&self) -> Option<&str> {
        self.book.case_id.as_deref()
    }

    /// Always `None`: log records are Python's (a `TraceFacts` field asked of any trace).
    #[getter]
    fn log_events(&self, py: Python<'_>) -> PyObject {
        py.None()
    }

    #[getter]
    fn read_usage(&self) -> bool {
        self.read_usage
    }

    /// Always False: content is read by the Python readers, not in parts.
    #[getter]
    fn read_content(&self) -> bool {
        false
    }

    /// The keyword arguments of the equal `TraceFacts` (the trace stays as it is).
    fn export<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let book = &self.book;
        let out = PyDict::new(py);
        out.set_item("trace_id", self.trace_id.bind(py))?;
        out.set_item("max_spans", book.max_spans)?;
        let parents = PyDict::new(py);
        for &(span_id, parent) in &book.parents {
            parents.set_item(hex_id(py, span_id), hex_id(py, parent))?;
        }
        out.set_item("parents", parents)?;
        let facts = PyDict::new(py);
        if let Some(mode) = &self.mode {
            for kept in &book.facts {
                let span_id = hex_id(py, kept.span_id);
                let ids = (&span_id, &hex_id(py, kept.parent));
                let name = PyString::new(py, &kept.name);
                let times = (kept.start_ns, kept.end_ns, kept.status_code);
                let fact = &kept.fact;
                let made = span_fact(py, mode, ids, &name, times, fact, true)?;
                facts.set_item(&span_id, made)?;
            }
        }
        out.set_item("facts", facts)?;
        match &book.resource {
            Some(resource) => out.set_item("resource", resource.bind(py))?,
            None => out.set_item("resource", PyDict::new(py))?,
        }
        out.set_item("start_ns", book.start_ns)?;
        out.set_item("end_ns", book.end_ns)?;
        let errors = PyList::empty(py);
        for &(start, span_id) in &book.error_spans {
            errors.append((start, hex_id(py, span_id)))?;
        }
        out.set_item("error_spans", errors)?;
        match &book.conversation {
            Some((start, not_root, id)) => {
                let key = (*start, *not_root, &**id).into_pyobject(py)?;
                out.set_item("conversation", key)?;
            }
            None => out.set_item("conversation", py.None())?,
        }
        out.set_item("case_id", book.case_id.as_deref())?;
        out.set_item("dropped", book.dropped)?;
        out.set_item("read_usage", self.read_usage)?;
        Ok(out)
    }

    fn __repr__(&self) -> String {
        format!(
            "CoreTrace(trace_id={:?}, span_count={}, dropped={})",
            self.trace_text,
            self.book.span_count(),
            self.book.dropped
        )
    }
}

/// Span id numbers as the loader (`loader.rs`) gives them (`build::Trace::parents`, `index`): in
/// the order the ids are met, parents after their child.
struct Numbers {
    numbers: HashMap<u64, u32>,
    parents: Vec<u32>,
}

impl Numbers {
    fn number(&mut self, id: u64) -> Result<u32, Decline> {
        if let Some(&number) = self.numbers.get(&id) {
            return Ok(number);
        }
        if id == 0 || self.parents.len() >= ROOT as usize {
            return Err(Decline::Shape);
        }
        let number = self.parents.len() as u32;
        self.numbers.insert(id, number);
        self.parents.push(ABSENT);
        Ok(number)
    }
}

/// The builder's `Trace` of `core`, as the loader reads the `TraceFacts` `core` exports,
/// values pushed to `values`.
pub(super) fn trace_of<'py>(
    py: Python<'py>,
    core: &CoreTrace,
    values: &mut Vec<Bound<'py, PyAny>>,
) -> Result<Trace, Decline> {
    let book = &core.book;
    let mut trace = Trace {
        trace_id: core.trace_text.clone(),
        span_count: book.span_count(),
        ..Trace::default()
    };
    let mut ids = Numbers {
        numbers: HashMap::with_capacity(book.parents.len() + 4),
        parents: Vec::with_capacity(book.parents.len() + 4),
    };
    for &(span_id, parent) in &book.parents {
        let child = ids.number(span_id)?;
        let parent = if parent == 0 {
            ROOT
        } else {
            ids.number(parent)?
        };
        ids.parents[child as usize] = parent;
    }
    let mut index = vec![ABSENT; ids.parents.len()];
    trace.facts.reserve(book.facts.len());
    let sources = core.mode.as_ref().map(|mode| &mode.rules.sources);
    let mut made = vec![None; ids.parents.len()];
    let sources = match (sources, book.facts.is_empty()) {
        (Some(sources), _) => sources.as_slice(),
        (None, true) => &[],
        (None, false) => return Err(Decline::Shape),
    };
    for kept in &book.facts {
        let fact = fact_of(py, kept, (&ids, &mut made), sources, values)?;
        index[fact.id as usize] = trace.facts.len() as u32;
        trace.facts.push(fact);
    }
    trace.parents = ids.parents;
    trace.index = index;
    if let Some(resource) = &book.resource {
        resource_into(&mut trace, resource.bind(py), values)?;
    }
    trace.start_ns = book.start_ns;
    trace.end_ns = book.end_ns;
    trace.error_spans = (book.error_spans.iter())
        .map(|&(start, span_id)| (start, id_hex(span_id)))
        .collect();
    trace.conversation_id = book.conversation.as_ref().map(|(_, _, id)| id.to_string());
    trace.case_id = book.case_id.as_deref().map(str::to_owned);
    trace.dropped = book.dropped > 0;
    trace.read_usage = core.read_usage;
    Ok(trace)
}

/// The value of the id numbered `number`, made once per trace (the rows share it).
fn id_val<'py>(
    py: Python<'py>,
    (id, number): (u64, u32),
    made: &mut [Option<Val>],
    values: &mut Vec<Bound<'py, PyAny>>,
) -> Val {
    *made[number as usize].get_or_insert_with(|| keep_any(hex_id(py, id).into_any(), values))
}

/// One kept span's `Fact`; `made`: the values of the trace's ids made so far, by number.
fn fact_of<'py>(
    py: Python<'py>,
    kept: &Kept,
    (ids, made): (&Numbers, &mut [Option<Val>]),
    sources: &[String],
    values: &mut Vec<Bound<'py, PyAny>>,
) -> Result<Fact, Decline> {
    let fact = &kept.fact;
    let role = fact.role;
    let id = ids.numbers[&kept.span_id];
    let parent = if kept.parent == 0 {
        ROOT
    } else {
        ids.numbers[&kept.parent]
    };
    let span_val = id_val(py, (kept.span_id, id), made, values);
    let parent_val = (kept.parent != 0).then(|| id_val(py, (kept.parent, parent), made, values));
    let mut out = Fact {
        span_id: id_hex(kept.span_id),
        parent_id: id_hex(kept.parent),
        id,
        parent,
        span_val,
        parent_val,
        role,
        name: keep_any(PyString::new(py, &kept.name).into_any(), values),
        start_ns: kept.start_ns,
        end_ns: kept.end_ns,
        ..Default::default()
    };
    // Every field the span has: the port fills only those of its role (as `TraceFacts.add`
    // does), so there is no need to pick them by role as the loader does to save reads.
    let text = |t: &Option<Box<str>>| t.as_deref().map(str::to_owned);
    out.reply = text(&fact.reply);
    if let Some(labels) = &fact.labels {
        out.labels = pairs(labels.bind(py).as_any(), values)?;
    }
    if let Some(call) = &fact.call {
        out.call = Some(Call {
            name: call.name.to_string(),
            args: keep(call.args.bind(py).clone(), values),
            call_id: text(&call.call_id),
            source: sources.get(call.source).ok_or(Decline::Shape)?.clone(),
            failure: call.failure.as_deref().is_some_and(|f| !f.is_empty()),
            positional: false, // the port reads no positional arguments
        });
    }
    out.status_code = i64::from(kept.status_code);
    out.error = (fact.error.as_deref()).map(|e| keep_any(PyString::new(py, e).into_any(), values));
    out.agent = text(&fact.agent);
    for (position, asked) in fact.model_calls.iter().enumerate() {
        out.model_calls.push(Asked {
            name: asked.name.to_string(),
            call_id: text(&asked.call_id),
            args: keep(asked.args.bind(py).clone(), values),
            position: position as i64,
            source: sources.get(asked.source).ok_or(Decline::Shape)?.clone(),
        });
    }
    out.usage = (fact.usage.as_deref())
        .map(|(tokens_in, tokens_out, model)| (*tokens_in, *tokens_out, text(model)));
    out.scope = match &fact.scope {
        Some(scope) => scope
            .bind(py)
            .to_str()
            .map_err(|_| Decline::Shape)?
            .to_owned(),
        None => String::new(),
    };
    out.asked_unlisted = fact.asked_unlisted;
    Ok(out)
}
