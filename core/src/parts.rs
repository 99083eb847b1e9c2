//! What the facts mode reads of a span the converter needs only the facts of (a head, or a
//! span the facts port covers), held in Rust: `PartSpan`. `Reader.traces` makes the
//! `FactSpan` / `SpanHead` of each at once; `Reader.trace_parts` groups consecutive ones of a
//! trace into a `TracePart`, which `CoreTrace.add` (`corepy.rs`) records without making them.
//! Only the Python values made at read time (tool arguments, label values) and the objects
//! shared per record (resource dicts, scope names, the origin) are Python objects.

use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::FactsMode;

/// A tool call a span recorded (`DialectCall`).
pub(crate) struct PartCall {
    pub name: Box<str>,
    pub args: PyObject,
    pub call_id: Option<Box<str>>,
    /// An index into `FactsMode::call_sources`.
    pub source: usize,
    pub failure: Option<Box<str>>,
}

/// A call a model asked for (`ModelCall`); its position is its index.
pub(crate) struct PartAsked {
    pub name: Box<str>,
    pub call_id: Option<Box<str>>,
    pub args: PyObject,
    pub source: usize,
}

/// (input tokens, output tokens, model) of a model span.
pub(crate) type Usage = (u64, u64, Option<Box<str>>);

/// The `SpanFact` of a span, but for the fields its span has (ids, name, times, status).
pub(crate) struct PartFact {
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
pub(crate) struct Found {
    pub fact: Box<PartFact>,
    pub noted: bool,
    /// The ids it names, if any (few spans do: kept apart from the fact).
    pub notes: Option<Box<Notes>>,
}

/// The conversation and case ids a span names.
pub(crate) struct Notes {
    pub conversation: Option<Box<str>>,
    pub case_id: Option<Box<str>>,
}

/// One span read for its facts: a head (`fact` is `None`) or a fact span.
pub(crate) struct PartSpan {
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
pub(crate) struct Shared {
    pub mode: Arc<FactsMode>,
    pub origin: Py<PyString>,
    /// Each resource's attributes, and whether it has any.
    pub resources: Vec<(Py<PyDict>, bool)>,
    pub scopes: Vec<Py<PyString>>,
}

/// A span id as Python holds it: 16 hex digits, `""` for none.
pub(crate) fn hex_id(py: Python<'_>, id: u64) -> Bound<'_, PyString> {
    crate::hex(py, id_bytes(&id.to_be_bytes(), id))
}

/// A span id as text (`hex_id` in Rust): 16 hex digits, `""` for none.
pub(crate) fn id_hex(id: u64) -> String {
    let mut buf = [0u8; 32];
    crate::hex_text(id_bytes(&id.to_be_bytes(), id), &mut buf).to_owned()
}

/// The bytes of id number `id` (`bytes`, its big-endian form), none for `0` (no id).
fn id_bytes(bytes: &[u8; 8], id: u64) -> &[u8] {
    if id == 0 {
        &[]
    } else {
        bytes
    }
}

/// An id's 8 bytes as a `u64` (big-endian, so its hex is the bytes' hex); `0`: none.
pub(crate) fn id_number(bytes: &[u8]) -> u64 {
    let mut buf = [0u8; 8];
    let n = bytes.len().min(8);
    buf[..n].copy_from_slice(&bytes[..n]);
    u64::from_be_bytes(buf)
}

fn text_or_none<'py>(py: Python<'py>, text: Option<&str>) -> Bound<'py, PyAny> {
    match text {
        None => py.None().into_bound(py),
        Some(text) => PyString::new(py, text).into_any(),
    }
}

/// The `SpanFact` of `fact` (`SPAN_FACT_FIELDS`, by position); `usage` only when `usage`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn span_fact<'py>(
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
    pub(crate) fn object<'py>(
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

/// A run of consecutive spans of one trace of one record, read for their facts.
#[pyclass(module = "tooltrail_core")]
pub struct TracePart {
    trace_id: Py<PyString>,
    count: usize,
    origin: Py<PyString>,
    content: Option<(Arc<Shared>, Vec<PartSpan>)>,
}

impl TracePart {
    pub(crate) fn new(
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
    pub(crate) fn take(&mut self) -> PyResult<(Arc<Shared>, Vec<PartSpan>)> {
        self.content
            .take()
            .ok_or_else(|| PyValueError::new_err("this part was already taken"))
    }

    pub(crate) fn trace_id_of<'py>(&self, py: Python<'py>) -> &Bound<'py, PyString> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_read_as_their_bytes_hex() {
        let bytes = [0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd];
        let id = id_number(&bytes);
        assert_eq!(id_hex(id), "0af7651916cd43dd");
        assert_eq!(id_hex(0), "");
        assert_eq!(id_number(&[]), 0);
    }
}
