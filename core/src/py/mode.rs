//! The facts mode of a `Reader`: the dialect rules (`rules.json`, parsed once) and the
//! Python classes its spans' facts are made with, shared by the reader, the `TracePart`s it
//! reads and the `CoreTrace`s that collect them.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyString;

use super::classes::check_fields;
use crate::rules::Rules;

/// The rules and the Python classes of the facts mode.
pub(super) struct FactsMode {
    pub(super) rules: Rules,
    pub(super) head: PyObject,
    pub(super) carrier: PyObject,
    pub(super) span_fact: PyObject,
    pub(super) dialect_call: PyObject,
    pub(super) model_call: PyObject,
    /// The `source` texts of the calls the port reads (`Rules::sources`), made once.
    pub(super) call_sources: Vec<Py<PyString>>,
}

/// The fields, in order, the core builds each class with (`classes.rs`).
const CARRIER_FIELDS: &[&str] = &[
    "trace_id",
    "span_id",
    "parent_span_id",
    "name",
    "start_ns",
    "end_ns",
    "status_code",
    "resource",
    "scope_name",
    "origin",
    "fact",
    "noted",
    "conversation",
    "case_id",
];
const SPAN_FACT_FIELDS: &[&str] = &[
    "span_id",
    "parent_id",
    "role",
    "name",
    "start_ns",
    "end_ns",
    "status_code",
    "error",
    "call",
    "agent",
    "reply",
    "model_calls",
    "labels",
    "usage",
    "result",
    "input",
    "final",
    "scope",
    "asked_unlisted",
];
const DIALECT_CALL_FIELDS: &[&str] = &["name", "args", "call_id", "source", "failure"];
const MODEL_CALL_FIELDS: &[&str] = &["name", "call_id", "args", "position", "source"];

/// `Reader`'s `facts` argument: `(rules_json_text, carrier, SpanFact, DialectCall,
/// ModelCall)`.
pub(super) type FactsTerms = (String, PyObject, PyObject, PyObject, PyObject);

impl FactsMode {
    /// The mode of `terms`, its spans' heads made with `head`: a `ValueError` for a class
    /// whose fields are not the core's, or rules the core cannot read.
    pub(super) fn new(py: Python<'_>, head: &PyObject, terms: FactsTerms) -> PyResult<Self> {
        let (text, carrier, span_fact, dialect_call, model_call) = terms;
        check_fields(carrier.bind(py), CARRIER_FIELDS)?;
        check_fields(span_fact.bind(py), SPAN_FACT_FIELDS)?;
        check_fields(dialect_call.bind(py), DIALECT_CALL_FIELDS)?;
        check_fields(model_call.bind(py), MODEL_CALL_FIELDS)?;
        let rules = Rules::parse(&text).map_err(|e| PyValueError::new_err(e.0))?;
        let call_sources = (rules.sources.iter())
            .map(|s| PyString::intern(py, s).unbind())
            .collect();
        Ok(FactsMode {
            rules,
            head: head.clone_ref(py),
            call_sources,
            carrier,
            span_fact,
            dialect_call,
            model_call,
        })
    }
}
