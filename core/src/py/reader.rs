//! `Reader`: the records of one set of classes, interest and limits (protobuf traces
//! messages, OTLP/JSON lines) into the objects the converter reads: `Span`s, `SpanHead`s,
//! and in the facts mode `FactSpan`s or `TracePart`s. A record the engine declines
//! (`traces.rs`, `json.rs`: anything the Python path would report, or read otherwise) is
//! `None`, for the Python decoder to read.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use super::mode::{FactsMode, FactsTerms};
use super::objects::{dict, hex, JsonKeys, Keys};
use super::parts::{found_of, PartSpan, Shared, TracePart};
use crate::facts::{self, Outcome};
use crate::ids::id_number;
use crate::json;
use crate::keys::KeySet;
use crate::traces::{self, Limits, Resource};

/// Which spans the converter needs in full (`otlp.decode.span.Interest`, passed in as data).
struct Interest {
    names: KeySet<String>,
    prefixes: Vec<String>,
    keys: KeySet<String>,
}

/// Reads records for one set of classes, interest and limits.
#[pyclass(frozen, module = "tooltrail_core")]
pub(super) struct Reader {
    span: PyObject,
    head: PyObject,
    event: PyObject,
    interest: Option<Interest>,
    limits: Limits,
    /// The facts mode: spans of interest come as their converter facts where the port
    /// covers them (`facts.rs`).
    facts: Option<Arc<FactsMode>>,
    /// Spans handed out as facts, as whole `Span`s (declined or not covered), as heads.
    counts: [AtomicU64; 3],
}

#[pymethods]
impl Reader {
    /// `interest`: `None`, or `(names, name_prefixes, keys)`; `limits`: the
    /// `(max_attribute_value_bytes, max_depth, max_attributes, max_events_per_span)` of a
    /// `Limits`.
    ///
    /// `facts`: `None`, or `(rules_json_text, carrier, SpanFact, DialectCall, ModelCall)` for
    /// the facts mode (a reader whose spans go to `TraceFacts` only).
    #[new]
    #[pyo3(signature = (span, head, event, interest, limits, facts=None))]
    fn new(
        py: Python<'_>,
        span: PyObject,
        head: PyObject,
        event: PyObject,
        interest: Option<(Vec<String>, Vec<String>, Vec<String>)>,
        limits: (usize, usize, usize, usize),
        facts: Option<FactsTerms>,
    ) -> PyResult<Self> {
        let interest = interest.map(|(names, prefixes, keys)| Interest {
            names: names.into_iter().collect(),
            prefixes,
            keys: keys.into_iter().collect(),
        });
        let facts = match facts {
            None => None,
            Some(terms) => Some(Arc::new(FactsMode::new(py, &head, terms)?)),
        };
        Ok(Reader {
            span,
            head,
            event,
            interest,
            limits: Limits {
                max_attribute_value_bytes: limits.0,
                max_depth: limits.1,
                max_attributes: limits.2,
                max_events_per_span: limits.3,
            },
            facts,
            counts: Default::default(),
        })
    }

    /// `(facts, spans, heads)`: how many spans this reader handed out as converter facts,
    /// as whole `Span`s and as `SpanHead`s (to tell that the facts mode is used).
    fn counts(&self) -> (u64, u64, u64) {
        let [facts, spans, heads] = &self.counts;
        (
            facts.load(Ordering::Relaxed),
            spans.load(Ordering::Relaxed),
            heads.load(Ordering::Relaxed),
        )
    }

    /// The spans of one protobuf traces message (`Span`, or `SpanHead` outside the interest),
    /// or `None` when the Python decoder must read it.
    fn traces<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
        origin: Bound<'py, PyString>,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        self.message(py, data, origin, false)
    }

    /// The spans of one protobuf traces message in parts (`TracePart`s of the heads and fact
    /// spans, whole `Span`s), or `None` when the Python decoder must read it. Facts mode only.
    fn trace_parts<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
        origin: Bound<'py, PyString>,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        self.parts_mode()?;
        self.message(py, data, origin, true)
    }

    /// The spans of one OTLP/JSON line in the canonical shape, or `None` when the Python
    /// path must read it.
    fn json_line<'py>(
        &self,
        py: Python<'py>,
        line: &[u8],
        origin: Bound<'py, PyString>,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        self.line(py, line, origin, false)
    }

    /// The spans of one OTLP/JSON line in parts (as `trace_parts`), or `None` when the
    /// Python path must read it. Facts mode only.
    fn json_line_parts<'py>(
        &self,
        py: Python<'py>,
        line: &[u8],
        origin: Bound<'py, PyString>,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        self.parts_mode()?;
        self.line(py, line, origin, true)
    }
}

impl Reader {
    fn message<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
        origin: Bound<'py, PyString>,
        parts: bool,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let Ok(resources) = traces::read_traces(data, &self.limits) else {
            return Ok(None);
        };
        self.build(py, &resources, origin, parts).map(Some)
    }

    fn line<'py>(
        &self,
        py: Python<'py>,
        line: &[u8],
        origin: Bound<'py, PyString>,
        parts: bool,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let Ok(request) = json::parse(line) else {
            return Ok(None);
        };
        let mut ids = Vec::new();
        let Ok(resources) = json::read_request(&request, &mut ids, &self.limits) else {
            return Ok(None);
        };
        self.build(py, &resources, origin, parts).map(Some)
    }

    /// The items of one record: each span as an object (`parts` false: `Reader.traces`), or
    /// the heads and fact spans in `TracePart`s of consecutive spans of a trace and the other
    /// spans as objects, in record order (`parts`: `Reader.trace_parts`).
    fn build<'py>(
        &self,
        py: Python<'py>,
        resources: &[Resource<'_>],
        origin: Bound<'py, PyString>,
        parts: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        let mut keys = Keys::default();
        let mut names = JsonKeys::default();
        let mut trace_hex: (&[u8], Option<Bound<'py, PyString>>) = (b"", None);
        let mut runs = Runs::default();
        for resource in resources {
            let attrs = dict(py, &resource.attributes, &mut keys)?;
            if parts {
                let set = !attrs.is_empty();
                runs.resources.push((attrs.clone().unbind(), set));
            }
            for scope in &resource.scopes {
                let scope_name = PyString::new(py, scope.name);
                if parts {
                    runs.scopes.push(scope_name.clone().unbind());
                }
                for span in &scope.spans {
                    if trace_hex.0 != span.trace_id || trace_hex.1.is_none() {
                        trace_hex = (span.trace_id, Some(hex(py, span.trace_id)));
                    }
                    let trace_id = trace_hex.1.clone().expect("set just above");
                    let mut outcome = if self.is_head(span) {
                        Outcome::Head
                    } else {
                        Outcome::Full
                    };
                    if let (Outcome::Full, Some(mode)) = (&outcome, &self.facts) {
                        outcome = facts::read(&mode.rules, span, &resource.attributes);
                    }
                    let found = match outcome {
                        Outcome::Full => None,
                        Outcome::Head => {
                            self.counts[2].fetch_add(1, Ordering::Relaxed);
                            Some(None)
                        }
                        Outcome::Facts(found) => {
                            self.counts[0].fetch_add(1, Ordering::Relaxed);
                            let made = found_of(py, &found, &scope_name, &mut keys, &mut names)?;
                            Some(Some(made))
                        }
                    };
                    if let Some(found) = found {
                        let part = PartSpan {
                            span_id: id_number(span.span_id),
                            parent: id_number(span.parent_span_id),
                            name: span.name.into(),
                            start_ns: span.start_ns,
                            end_ns: span.end_ns,
                            status_code: span.status_code,
                            resource: runs.resources.len().saturating_sub(1) as u32,
                            scope: runs.scopes.len().saturating_sub(1) as u32,
                            found,
                        };
                        if parts {
                            runs.push(py, &out, span.trace_id, &trace_id, part)?;
                        } else {
                            let classes = (self.head.bind(py), self.facts.as_deref());
                            let record = (&attrs, &scope_name, &origin);
                            out.append(part.object(py, classes, record, &trace_id)?)?;
                        }
                        continue;
                    }
                    if parts {
                        runs.close(py, &out)?;
                    }
                    self.counts[1].fetch_add(1, Ordering::Relaxed);
                    let events: Bound<'py, PyAny> = if span.events.is_empty() {
                        PyTuple::empty(py).into_any()
                    } else {
                        let list = PyList::empty(py);
                        for event in &span.events {
                            let args = (
                                event.name,
                                event.time_ns,
                                dict(py, &event.attributes, &mut keys)?,
                                event.dropped_attributes_count,
                            );
                            list.append(self.event.bind(py).call1(args)?)?;
                        }
                        list.into_any()
                    };
                    let attributes = dict(py, &span.attributes, &mut keys)?;
                    let args = PyTuple::new(
                        py,
                        [
                            trace_id.into_any(),
                            hex(py, span.span_id).into_any(),
                            hex(py, span.parent_span_id).into_any(),
                            PyString::new(py, span.name).into_any(),
                            span.kind.into_pyobject(py)?.into_any(),
                            span.start_ns.into_pyobject(py)?.into_any(),
                            span.end_ns.into_pyobject(py)?.into_any(),
                            span.status_code.into_pyobject(py)?.into_any(),
                            PyString::new(py, span.status_message).into_any(),
                            attributes.into_any(),
                            events,
                            attrs.clone().into_any(),
                            scope_name.clone().into_any(),
                            origin.clone().into_any(),
                        ],
                    )?;
                    out.append(self.span.bind(py).call1(args)?)?;
                }
            }
        }
        if let (true, Some(mode)) = (parts, &self.facts) {
            runs.finish(py, &out, mode, origin)?;
        }
        Ok(out)
    }

    /// Parts are read in the facts mode only.
    fn parts_mode(&self) -> PyResult<()> {
        if self.facts.is_none() {
            return Err(PyValueError::new_err(
                "trace parts are read by a Reader made with the facts terms",
            ));
        }
        Ok(())
    }

    /// A span outside the interest: it has a parent, no marker key, and a name no dialect reads.
    fn is_head(&self, span: &traces::Span<'_>) -> bool {
        let Some(interest) = &self.interest else {
            return false;
        };
        if span.parent_span_id.is_empty() {
            return false;
        }
        if span
            .attributes
            .iter()
            .any(|(key, _)| interest.keys.contains(*key))
        {
            return false;
        }
        let name = span.name;
        !(interest.names.contains(name) || interest.prefixes.iter().any(|p| name.starts_with(p)))
    }
}

/// The runs of a record read in parts: each run of consecutive heads and fact spans of one
/// trace becomes a `TracePart` at its place in the record's list (a placeholder until the
/// record's shared objects are complete).
#[derive(Default)]
struct Runs<'b> {
    resources: Vec<(Py<PyDict>, bool)>,
    scopes: Vec<Py<PyString>>,
    current: Option<(&'b [u8], Py<PyString>, Vec<PartSpan>)>,
    done: Vec<(usize, Py<PyString>, Vec<PartSpan>)>,
}

impl<'b> Runs<'b> {
    fn push(
        &mut self,
        py: Python<'_>,
        out: &Bound<'_, PyList>,
        trace: &'b [u8],
        trace_id: &Bound<'_, PyString>,
        span: PartSpan,
    ) -> PyResult<()> {
        if let Some((held, _, spans)) = &mut self.current {
            if *held == trace {
                spans.push(span);
                return Ok(());
            }
        }
        self.close(py, out)?;
        self.current = Some((trace, trace_id.clone().unbind(), vec![span]));
        Ok(())
    }

    /// Ends the open run: its place in `out` is taken.
    fn close(&mut self, py: Python<'_>, out: &Bound<'_, PyList>) -> PyResult<()> {
        if let Some((_, trace_id, spans)) = self.current.take() {
            self.done.push((out.len(), trace_id, spans));
            out.append(py.None())?;
        }
        Ok(())
    }

    fn finish(
        mut self,
        py: Python<'_>,
        out: &Bound<'_, PyList>,
        mode: &Arc<FactsMode>,
        origin: Bound<'_, PyString>,
    ) -> PyResult<()> {
        self.close(py, out)?;
        let shared = Arc::new(Shared {
            mode: Arc::clone(mode),
            origin: origin.unbind(),
            resources: self.resources,
            scopes: self.scopes,
        });
        for (at, trace_id, spans) in self.done {
            let part = TracePart::new(py, trace_id, &shared, spans);
            out.set_item(at, Bound::new(py, part)?)?;
        }
        Ok(())
    }
}
