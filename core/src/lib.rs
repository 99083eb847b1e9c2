//! tooltrail's compiled reading core: OTLP protobuf records and OTLP/JSON lines into the Python objects the
//! converter reads (`Span`, `SpanHead`, `SpanEvent` of `tooltrail.otlp.decode.span`), or, in
//! parts (`parts.rs`), into `TracePart`s that a `CoreTrace` (`corepy.rs`) collects in Rust and
//! `Builder.build_core` builds, the spans of a part never made Python objects.
//!
//! A record the core would read differently from the Python path (any record the Python path
//! reports a problem in, and a few unusual spellings) comes back as `None`: the caller then
//! decodes it with the Python decoder, the reference, which reports it. So the diagnostics of
//! both paths are the same by construction; `tests/otlp/test_core_differential.py` checks the rest.

pub mod build;
mod buildpy;
pub mod collect;
mod corepy;
pub mod facts;
pub mod json;
pub mod jsontext;
mod parts;
pub mod rules;
pub mod tools;
pub mod traces;
pub mod wire;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use facts::{Args, Facts, Outcome};

/// mimalloc for every Rust allocation of the extension (the `mimalloc` feature, which the
/// wheel's build turns on). With glibc's malloc, about 30% of reading JSON lines went to its
/// consolidation (`malloc_consolidate`) once collected traces held many small long-lived
/// allocations among the parser's short-lived ones; `tooltrail eval --workers 1` on a
/// 500k-span dump took 22% less CPU with mimalloc on JSON lines, 10% less on protobuf.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use jsontext::Json;
use parts::{Found, Notes, PartAsked, PartCall, PartFact, PartSpan, Shared, TracePart};
use rules::Rules;
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
    /// The facts mode: spans of interest come as their converter facts where the port
    /// covers them (`facts.rs`).
    facts: Option<Arc<FactsMode>>,
    /// Spans handed out as facts, as whole `Span`s (declined or not covered), as heads.
    counts: [AtomicU64; 3],
}

/// The rules and the Python classes of the facts mode.
pub(crate) struct FactsMode {
    pub(crate) rules: Rules,
    pub(crate) head: PyObject,
    pub(crate) carrier: PyObject,
    pub(crate) span_fact: PyObject,
    pub(crate) dialect_call: PyObject,
    pub(crate) model_call: PyObject,
    /// The `source` texts of the calls the port reads (`Rules::sources`), made once.
    pub(crate) call_sources: Vec<Py<PyString>>,
}

/// The fields, in order, the core builds each class with (checked against the classes'
/// `__match_args__` when a `Reader` is made, so a field added or moved on one side fails
/// at once rather than filling the wrong field).
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

/// `cls.__match_args__` starts with `fields`, or a `ValueError`.
fn check_fields(cls: &Bound<'_, PyAny>, fields: &[&str]) -> PyResult<()> {
    let names: Vec<String> = cls.getattr("__match_args__")?.extract()?;
    if names.len() < fields.len() || names[..fields.len()] != *fields {
        return Err(PyValueError::new_err(format!(
            "tooltrail_core builds {} with the fields {fields:?}, the class has {names:?}",
            cls.getattr("__name__")?
        )));
    }
    Ok(())
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
        facts: Option<(String, PyObject, PyObject, PyObject, PyObject)>,
    ) -> PyResult<Self> {
        let interest = interest.map(|(names, prefixes, keys)| Interest {
            names: names.into_iter().collect(),
            prefixes,
            keys: keys.into_iter().collect(),
        });
        let facts = match facts {
            None => None,
            Some((text, carrier, span_fact, dialect_call, model_call)) => {
                check_fields(carrier.bind(py), CARRIER_FIELDS)?;
                check_fields(span_fact.bind(py), SPAN_FACT_FIELDS)?;
                check_fields(dialect_call.bind(py), DIALECT_CALL_FIELDS)?;
                check_fields(model_call.bind(py), MODEL_CALL_FIELDS)?;
                let rules = Rules::parse(&text).map_err(|e| PyValueError::new_err(e.0))?;
                let call_sources = (rules.sources.iter())
                    .map(|s| PyString::intern(py, s).unbind())
                    .collect();
                Some(Arc::new(FactsMode {
                    rules,
                    head: head.clone_ref(py),
                    call_sources,
                    carrier,
                    span_fact,
                    dialect_call,
                    model_call,
                }))
            }
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
                            span_id: parts::id_number(span.span_id),
                            parent: parts::id_number(span.parent_span_id),
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

/// The facts of `found` kept for its `PartSpan`: the Python values made now (arguments,
/// labels), the rest as Rust values.
fn found_of<'a, 'py>(
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

/// A parsed JSON value as orjson gives it: an object member by member into a dict (a key
/// repeated keeps its first position and takes its last value).
fn json_value<'py>(
    py: Python<'py>,
    value: &Json,
    names: &mut JsonKeys<'py>,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Json::Null => py.None().into_bound(py),
        Json::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Json::Int(i) => i.into_pyobject(py)?.into_any(),
        Json::UInt(u) => u.into_pyobject(py)?.into_any(),
        Json::Float(f) => f.into_pyobject(py)?.into_any(),
        Json::Str(s) => PyString::new(py, s).into_any(),
        Json::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(json_value(py, item, names)?)?;
            }
            list.into_any()
        }
        Json::Object(members) => {
            let dict = PyDict::new(py);
            for (key, item) in members {
                dict.set_item(names.get(py, key), json_value(py, item, names)?)?;
            }
            dict.into_any()
        }
    })
}

/// The keys of JSON objects (arguments) made once per record, short ones only and up to a
/// bound: the arguments of the many calls of a record hold the same few names (orjson caches
/// its keys too), and traces held keep one object per name, as on the Python path.
#[derive(Default)]
struct JsonKeys<'py> {
    made: HashMap<String, Bound<'py, PyString>>,
}

impl<'py> JsonKeys<'py> {
    /// Keys kept per record at most, and the longest kept.
    const MAX_KEYS: usize = 1024;
    const MAX_CHARS: usize = 64;

    fn get(&mut self, py: Python<'py>, key: &str) -> Bound<'py, PyString> {
        if let Some(found) = self.made.get(key) {
            return found.clone();
        }
        let made = PyString::new(py, key);
        if key.len() <= Self::MAX_CHARS && self.made.len() < Self::MAX_KEYS {
            self.made.insert(key.to_owned(), made.clone());
        }
        made
    }
}

pub(crate) fn hex<'py>(py: Python<'py>, id: &[u8]) -> Bound<'py, PyString> {
    let mut buf = [0u8; 32];
    PyString::new(py, hex_text(id, &mut buf))
}

/// `id` (at most 16 bytes: the longest id) as lowercase hex, written into `buf`.
pub(crate) fn hex_text<'b>(id: &[u8], buf: &'b mut [u8; 32]) -> &'b str {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let n = id.len().min(16);
    for (i, byte) in id[..n].iter().enumerate() {
        buf[2 * i] = DIGITS[usize::from(byte >> 4)];
        buf[2 * i + 1] = DIGITS[usize::from(byte & 15)];
    }
    std::str::from_utf8(&buf[..2 * n]).expect("hex digits are ASCII")
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
    m.add_class::<buildpy::Builder>()?;
    m.add_class::<TracePart>()?;
    m.add_class::<corepy::CoreTrace>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // What `Reader` takes: 1, its `facts` argument; 2, and it reads in parts (`trace_parts`,
    // `CoreTrace`, `Builder.build_core`). `otlp/read/core.py` asks, so that a core built
    // before reads as before.
    m.add("FACTS_MODE", 2)?;
    Ok(())
}
