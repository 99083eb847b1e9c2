//! tooltrail's compiled reading core: OTLP protobuf records and OTLP/JSON lines into the Python objects the
//! converter reads (`Span`, `SpanHead`, `SpanEvent` of `tooltrail.otlp.decode.span`).
//!
//! A record the core would read differently from the Python path (any record the Python path
//! reports a problem in, and a few unusual spellings) comes back as `None`: the caller then
//! decodes it with the Python decoder, the reference, which reports it. So the diagnostics of
//! both paths are the same by construction; `tests/otlp/test_core_differential.py` checks the rest.

pub mod json;
pub mod traces;
pub mod wire;

use std::collections::{HashMap, HashSet};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use traces::{AnyValue, Limits, Resource};

/// Which spans the converter needs in full (`otlp.decode.span.Interest`, passed in as data).
struct Interest {
    names: HashSet<String>,
    prefixes: Vec<String>,
    keys: HashSet<String>,
}

/// Reads records for one set of classes, interest and limits.
#[pyclass(frozen, module = "tooltrail_core")]
struct Reader {
    span: PyObject,
    head: PyObject,
    event: PyObject,
    interest: Option<Interest>,
    limits: Limits,
}

#[pymethods]
impl Reader {
    /// `interest`: `None`, or `(names, name_prefixes, keys)`; `limits`: the
    /// `(max_attribute_value_bytes, max_depth, max_attributes, max_events_per_span)` of a
    /// `Limits`.
    #[new]
    #[pyo3(signature = (span, head, event, interest, limits))]
    fn new(
        span: PyObject,
        head: PyObject,
        event: PyObject,
        interest: Option<(Vec<String>, Vec<String>, Vec<String>)>,
        limits: (usize, usize, usize, usize),
    ) -> Self {
        let interest = interest.map(|(names, prefixes, keys)| Interest {
            names: names.into_iter().collect(),
            prefixes,
            keys: keys.into_iter().collect(),
        });
        Reader {
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
        }
    }

    /// The spans of one protobuf traces message (`Span`, or `SpanHead` outside the interest),
    /// or `None` when the Python decoder must read it.
    fn traces<'py>(
        &self,
        py: Python<'py>,
        data: &[u8],
        origin: Bound<'py, PyString>,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let Ok(resources) = traces::read_traces(data, &self.limits) else {
            return Ok(None);
        };
        self.build(py, &resources, origin).map(Some)
    }

    /// The spans of one OTLP/JSON line in the canonical shape, or `None` when the Python
    /// path must read it.
    fn json_line<'py>(
        &self,
        py: Python<'py>,
        line: &[u8],
        origin: Bound<'py, PyString>,
    ) -> PyResult<Option<Bound<'py, PyList>>> {
        let Ok(request) = json::parse(line) else {
            return Ok(None);
        };
        let mut ids = Vec::new();
        let Ok(resources) = json::read_request(&request, &mut ids, &self.limits) else {
            return Ok(None);
        };
        self.build(py, &resources, origin).map(Some)
    }
}

impl Reader {
    fn build<'py>(
        &self,
        py: Python<'py>,
        resources: &[Resource<'_>],
        origin: Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        let mut keys = Keys::default();
        let mut trace_hex: (&[u8], Option<Bound<'py, PyString>>) = (b"", None);
        for resource in resources {
            let attrs = dict(py, &resource.attributes, &mut keys)?;
            for scope in &resource.scopes {
                let scope_name = PyString::new(py, scope.name);
                for span in &scope.spans {
                    if trace_hex.0 != span.trace_id || trace_hex.1.is_none() {
                        trace_hex = (span.trace_id, Some(hex(py, span.trace_id)));
                    }
                    let trace_id = trace_hex.1.clone().expect("set just above");
                    let parent = hex(py, span.parent_span_id);
                    let name = PyString::new(py, span.name);
                    let common = (
                        trace_id,
                        hex(py, span.span_id),
                        parent,
                        name,
                        span.kind,
                        span.start_ns,
                        span.end_ns,
                        span.status_code,
                    );
                    if self.is_head(span) {
                        let args = PyTuple::new(
                            py,
                            [
                                common.0.into_any(),
                                common.1.into_any(),
                                common.2.into_any(),
                                common.3.into_any(),
                                common.5.into_pyobject(py)?.into_any(),
                                common.6.into_pyobject(py)?.into_any(),
                                common.7.into_pyobject(py)?.into_any(),
                                attrs.clone().into_any(),
                                scope_name.clone().into_any(),
                                origin.clone().into_any(),
                            ],
                        )?;
                        out.append(self.head.bind(py).call1(args)?)?;
                        continue;
                    }
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
                            common.0.into_any(),
                            common.1.into_any(),
                            common.2.into_any(),
                            common.3.into_any(),
                            common.4.into_pyobject(py)?.into_any(),
                            common.5.into_pyobject(py)?.into_any(),
                            common.6.into_pyobject(py)?.into_any(),
                            common.7.into_pyobject(py)?.into_any(),
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
        Ok(out)
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

fn hex<'py>(py: Python<'py>, id: &[u8]) -> Bound<'py, PyString> {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [0u8; 32];
    let n = id.len().min(16);
    for (i, byte) in id[..n].iter().enumerate() {
        buf[2 * i] = DIGITS[usize::from(byte >> 4)];
        buf[2 * i + 1] = DIGITS[usize::from(byte & 15)];
    }
    let text = std::str::from_utf8(&buf[..2 * n]).expect("hex digits are ASCII");
    PyString::new(py, text)
}

/// Attribute keys made once per record: most spans of a record share them, and a key object
/// used again keeps its hash.
#[derive(Default)]
struct Keys<'a, 'py> {
    made: HashMap<&'a str, Bound<'py, PyString>>,
}

impl<'a, 'py> Keys<'a, 'py> {
    fn get(&mut self, py: Python<'py>, key: &'a str) -> Bound<'py, PyString> {
        self.made
            .entry(key)
            .or_insert_with(|| PyString::new(py, key))
            .clone()
    }
}

fn dict<'a, 'py>(
    py: Python<'py>,
    pairs: &'a [(&'a str, AnyValue<'a>)],
    keys: &mut Keys<'a, 'py>,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    for (key, value) in pairs {
        out.set_item(keys.get(py, key), value_of(py, value, keys)?)?;
    }
    Ok(out)
}

fn value_of<'a, 'py>(
    py: Python<'py>,
    value: &'a AnyValue<'a>,
    keys: &mut Keys<'a, 'py>,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        AnyValue::None => py.None().into_bound(py),
        AnyValue::Str(s) => PyString::new(py, s).into_any(),
        AnyValue::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        AnyValue::Int(i) => i.into_pyobject(py)?.into_any(),
        AnyValue::Double(d) => d.into_pyobject(py)?.into_any(),
        AnyValue::Bytes(b) => PyBytes::new(py, b).into_any(),
        AnyValue::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(value_of(py, item, keys)?)?;
            }
            list.into_any()
        }
        AnyValue::Kv(pairs) => dict(py, pairs, keys)?.into_any(),
    })
}

#[pymodule]
fn tooltrail_core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Reader>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
