//! What the facts mode reads of a span the converter needs only the facts of (a head, or a
//! span the facts port covers), held in Rust: `PartSpan`. `Reader.traces` makes the
//! `FactSpan` / `SpanHead` of each at once; `Reader.trace_parts` groups consecutive ones of a
//! trace into a `TracePart`, which `CoreTrace.add` (`coretrace.rs`) records without making
//! them.
//! Only the Python values made at read time (tool arguments, label values) and the objects
//! shared per record (resource dicts, scope names, the origin) are Python objects.

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use super::mode::FactsMode;
use super::objects::{hex, json_value, value_of, JsonKeys, Keys};
use crate::facts::Facts;
use crate::ids::id_bytes;
use crate::values::Args;

/// A tool call a span recorded (`DialectCall`).
pub(super) struct PartCall {
    pub name: Box<str>,
    pub args: PyObject,
    pub call_id: Option<Box<str>>,
    /// An index into `FactsMode::call_sources`.
    pub source: usize,
    pub failure: Option<Box<str>>,
}

/// A call a model asked for (`ModelCall`); its position is its index.
pub(super) struct PartAsked {
    pub name: Box<str>,
    pub call_id: Option<Box<str>>,
    pub args: PyObject,
    pub source: usize,
}

/// (input tokens, output tokens, model) of a model span.
pub(super) type Usage = (u64, u64, Option<Box<str>>);

/// The `SpanFact` of a span, but for the fields its span has (ids, name, times, status).
pub(super) struct PartFact {
    pub role: i64,
    pub error: Option<Box<str>>,
    pub call: Option<Box<PartCall>>,
    pub agent: Option<Box<str>>,
    pub reply: Option<Box<str>>,
    pub model_calls: Vec<PartAsked>,
    pub labels: Option<Py<PyDict>>,
    pub usage: Option<Box<Usage>>,
    /// The scope's name when the span asked for calls (`SpanFact.scope`; else "").
    pub scope: Option<Py<PyString>>,
    pub asked_unlisted: bool,
}

/// A fact span's fact and the notes its trace takes of it.
pub(super) struct Found {
    pub fact: Box<PartFact>,
    pub noted: bool,
    /// The ids it names, if any (few spans do: kept apart from the fact).
    pub notes: Option<Box<Notes>>,
}

/// The conversation and case ids a span names.
pub(super) struct Notes {
    pub conversation: Option<Box<str>>,
    pub case_id: Option<Box<str>>,
}

/// One span read for its facts: a head (`fact` is `None`) or a fact span.
pub(super) struct PartSpan {
    pub span_id: u64,
    /// `0`: a root.
    pub parent: u64,
    pub name: Box<str>,
    pub start_ns: u64,
    pub end_ns: u64,
    pub status_code: i32,
    /// Indices into the record's `Shared::resources` and `scopes`.
    pub resource: u32,
    pub scope: u32,
    pub found: Option<Found>,
}

/// The objects the spans of one record share.
pub(super) struct Shared {
    pub mode: Arc<FactsMode>,
    pub origin: Py<PyString>,
    /// Each resource's attributes, and whether it has any.
    pub resources: Vec<(Py<PyDict>, bool)>,
    pub scopes: Vec<Py<PyString>>,
}

/// A span id as Python holds it: 16 hex digits, `""` for none.
pub(super) fn hex_id(py: Python<'_>, id: u64) -> Bound<'_, PyString> {
    hex(py, id_bytes(&id.to_be_bytes(), id))
}

fn text_or_none<'py>(py: Python<'py>, text: Option<&str>) -> Bound<'py, PyAny> {
    match text {
        None => py.None().into_bound(py),
        Some(text) => PyString::new(py, text).into_any(),
    }
}

/// The `SpanFact` of `fact` (`SPAN_FACT_FIELDS`, by position); `usage` only when `usage`.
#[allow(clippy::too_many_arguments)]
pub(super) fn span_fact<'py>(
    py: Python<'py>,
    mode: &FactsMode,
    ids: (&Bound<'py, PyString>, &Bound<'py, PyString>),
    name: &Bound<'py, PyString>,
    times: (u64, u64, i32),
    fact: &PartFact,
    usage: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let none = || py.None().into_bound(py);
    let call = match &fact.call {
        None => none(),
        Some(call) => {
            let fields = (
                &*call.name,
                call.args.bind(py),
                text_or_none(py, call.call_id.as_deref()),
                mode.call_sources[call.source].bind(py),
                text_or_none(py, call.failure.as_deref()),
            );
            mode.dialect_call.bind(py).call1(fields)?
        }
    };
    let model_calls = if fact.model_calls.is_empty() {
        PyTuple::empty(py).into_any()
    } else {
        let list = PyList::empty(py);
        for (position, asked) in fact.model_calls.iter().enumerate() {
            let fields = (
                &*asked.name,
                text_or_none(py, asked.call_id.as_deref()),
                asked.args.bind(py),
                position,
                mode.call_sources[asked.source].bind(py),
            );
            list.append(mode.model_call.bind(py).call1(fields)?)?;
        }
        list.into_any()
    };
    let labels = match &fact.labels {
        None => none(),
        Some(labels) => labels.bind(py).clone().into_any(),
    };
    let usage = match (&fact.usage, usage) {
        (Some(counts), true) => {
            let (tokens_in, tokens_out, model) = &**counts;
            (*tokens_in, *tokens_out, text_or_none(py, model.as_deref()))
                .into_pyobject(py)?
                .into_any()
        }
        _ => none(),
    };
    let scope = match &fact.scope {
        None => PyString::new(py, "").into_any(),
        Some(scope) => scope.bind(py).clone().into_any(),
    };
    let (start, end, status) = times;
    let fields = PyTuple::new(
        py,
        [
            ids.0.clone().into_any(),
            ids.1.clone().into_any(),
            fact.role.into_pyobject(py)?.into_any(),
            name.clone().into_any(),
            start.into_pyobject(py)?.into_any(),
            end.into_pyobject(py)?.into_any(),
            status.into_pyobject(py)?.into_any(),
            text_or_none(py, fact.error.as_deref()),
            call,
            text_or_none(py, fact.agent.as_deref()),
            text_or_none(py, fact.reply.as_deref()),
            model_calls,
            labels,
            usage,
            none(),
            none(),
            none(),
            scope,
            fact.asked_unlisted.into_pyobject(py)?.to_owned().into_any(),
        ],
    )?;
    mode.span_fact.bind(py).call1(fields)
}

impl PartSpan {
    /// The `FactSpan` (a fact span) or `SpanHead` (a head) `Reader.traces` hands out for it,
    /// with its record's objects: `(resource, scope name, origin)`.
    pub(super) fn object<'py>(
        &self,
        py: Python<'py>,
        classes: (&Bound<'py, PyAny>, Option<&FactsMode>),
        record: (
            &Bound<'py, PyDict>,
            &Bound<'py, PyString>,
            &Bound<'py, PyString>,
        ),
        trace_id: &Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let span_id = hex_id(py, self.span_id);
        let parent = hex_id(py, self.parent);
        let name = PyString::new(py, &self.name);
        let (resource, scope, origin) = record;
        let mut fields = vec![
            trace_id.clone().into_any(),
            span_id.clone().into_any(),
            parent.clone().into_any(),
            name.clone().into_any(),
            self.start_ns.into_pyobject(py)?.into_any(),
            self.end_ns.into_pyobject(py)?.into_any(),
            self.status_code.into_pyobject(py)?.into_any(),
            resource.clone().into_any(),
            scope.clone().into_any(),
            origin.clone().into_any(),
        ];
        let (head, mode) = classes;
        let (Some(found), Some(mode)) = (&self.found, mode) else {
            return head.call1(PyTuple::new(py, fields)?);
        };
        let times = (self.start_ns, self.end_ns, self.status_code);
        let ids = (&span_id, &parent);
        let fact = span_fact(py, mode, ids, &name, times, &found.fact, true)?;
        fields.extend([
            fact,
            found.noted.into_pyobject(py)?.to_owned().into_any(),
            text_or_none(
                py,
                found.notes.as_ref().and_then(|n| n.conversation.as_deref()),
            ),
            text_or_none(py, found.notes.as_ref().and_then(|n| n.case_id.as_deref())),
        ]);
        mode.carrier.bind(py).call1(PyTuple::new(py, fields)?)
    }
}

/// The facts of `found` kept for its `PartSpan`: the Python values made now (arguments,
/// labels), the rest as Rust values.
pub(super) fn found_of<'a, 'py>(
    py: Python<'py>,
    found: &Facts<'a, 'a>,
    scope_name: &Bound<'py, PyString>,
    keys: &mut Keys<'a, 'py>,
    names: &mut JsonKeys<'py>,
) -> PyResult<Found> {
    let boxed = |text: Option<&str>| text.map(Box::<str>::from);
    let call = match &found.call {
        None => None,
        Some(call) => {
            let args = match &call.args {
                Args::None => py.None(),
                Args::Json(json) => json_value(py, json, names)?.unbind(),
                Args::Value(value) => value_of(py, value, keys)?.unbind(),
            };
            Some(Box::new(PartCall {
                name: call.name.as_str().into(),
                args,
                call_id: boxed(call.call_id.as_deref()),
                source: call.source,
                failure: boxed(call.failure.as_deref()),
            }))
        }
    };
    let mut model_calls = Vec::with_capacity(found.model_calls.len());
    for asked in &found.model_calls {
        let args = match &asked.args {
            None => py.None(),
            Some(json) => json_value(py, json, names)?.unbind(),
        };
        model_calls.push(PartAsked {
            name: asked.name.as_str().into(),
            call_id: boxed(asked.call_id.as_deref()),
            args,
            source: asked.source,
        });
    }
    let labels = match &found.labels {
        None => None,
        Some(pairs) => {
            let dict = PyDict::new(py);
            for (key, value) in pairs {
                dict.set_item(keys.get(py, key), value_of(py, value, keys)?)?;
            }
            Some(dict.unbind())
        }
    };
    let usage = found
        .usage
        .map(|(tokens_in, tokens_out, model)| Box::new((tokens_in, tokens_out, boxed(model))));
    let scope = (!model_calls.is_empty()).then(|| scope_name.clone().unbind());
    let notes = (found.conversation.is_some() || found.case_id.is_some()).then(|| {
        Box::new(Notes {
            conversation: boxed(found.conversation.as_deref()),
            case_id: boxed(found.case_id),
        })
    });
    Ok(Found {
        fact: Box::new(PartFact {
            role: found.role,
            error: boxed(found.error.as_deref()),
            call,
            agent: boxed(found.agent.as_deref()),
            reply: boxed(found.reply.as_deref()),
            model_calls,
            labels,
            usage,
            scope,
            asked_unlisted: found.asked_unlisted,
        }),
        noted: found.noted,
        notes,
    })
}

/// A run of consecutive spans of one trace of one record, read for their facts.
#[pyclass(module = "tooltrail_core")]
pub struct TracePart {
    trace_id: Py<PyString>,
    count: usize,
    origin: Py<PyString>,
    content: Option<(Arc<Shared>, Vec<PartSpan>)>,
}

impl TracePart {
    pub(super) fn new(
        py: Python<'_>,
        trace_id: Py<PyString>,
        shared: &Arc<Shared>,
        spans: Vec<PartSpan>,
    ) -> Self {
        Self {
            trace_id,
            count: spans.len(),
            origin: shared.origin.clone_ref(py),
            content: Some((Arc::clone(shared), spans)),
        }
    }

    /// The part's spans, taken: a part is recorded once.
    pub(super) fn take(&mut self) -> PyResult<(Arc<Shared>, Vec<PartSpan>)> {
        self.content
            .take()
            .ok_or_else(|| PyValueError::new_err("this part was already taken"))
    }

    pub(super) fn trace_id_of<'py>(&self, py: Python<'py>) -> &Bound<'py, PyString> {
        self.trace_id.bind(py)
    }
}

#[pymethods]
impl TracePart {
    /// The trace's id (hex, as spans hold it).
    #[getter]
    fn trace_id(&self, py: Python<'_>) -> Py<PyString> {
        self.trace_id.clone_ref(py)
    }

    /// How many spans the part holds.
    #[getter]
    fn count(&self) -> usize {
        self.count
    }

    /// The origin of the record the part was read from.
    #[getter]
    fn origin(&self, py: Python<'_>) -> Py<PyString> {
        self.origin.clone_ref(py)
    }

    /// The part's spans as the `FactSpan` / `SpanHead` objects `Reader.traces` makes (for a
    /// trace Python already collects as a `TraceFacts`). Takes the part.
    fn fact_spans<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let (shared, spans) = self.take()?;
        let out = PyList::empty(py);
        let trace_id = self.trace_id.bind(py);
        let origin = shared.origin.bind(py);
        for span in &spans {
            let resource = shared.resources[span.resource as usize].0.bind(py);
            let scope = shared.scopes[span.scope as usize].bind(py);
            let record = (resource, scope, origin);
            let classes = (shared.mode.head.bind(py), Some(&*shared.mode));
            out.append(span.object(py, classes, record, trace_id)?)?;
        }
        Ok(out)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "TracePart(trace_id={:?}, count={}, taken={})",
            self.trace_id.bind(py).to_string(),
            self.count,
            self.content.is_none()
        )
    }
}
