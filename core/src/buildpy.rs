//! The Python side of the builder's port (`build.rs`): a `TraceFacts` read into the port's
//! structs (attribute by attribute, values the port only carries kept as handles into a
//! table), and the `EvalTrace` made of what it built, with the classes `convert/build.py`
//! hands over once (their fields checked when the `Builder` is made).
//!
//! Anything the loader cannot read as the Python builder would (another type where a text or
//! a count is expected, a text Rust cannot hold, one `ModelCall` object listed twice) and any
//! comparison that raises is a decline: `build` returns `None` and the Python builder builds
//! the trace. Each outcome is counted (`Builder.counts`).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::build::{
    self, Asked, Built, Call, Decline, Fact, Judge, Trace, Val, ABSENT, ROLE_AGENT, ROLE_EXCLUDED,
    ROLE_MODEL, ROLE_TOOL, ROLE_WORKFLOW, ROOT,
};
use crate::check_fields;
use crate::corepy::{self, CoreTrace};

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

/// Builds `EvalTrace`s of `TraceFacts` (`convert/build.py` makes one per core module).
#[pyclass(frozen, module = "tooltrail_core")]
pub struct Builder {
    eval_trace: PyObject,
    tool_call: PyObject,
    turn: PyObject,
    deferred_spans: PyObject,
    agent_span: PyObject,
    fits: PyObject,
    lost_precision: PyObject,
    is_final_answer: PyObject,
    final_text: PyObject,
    /// Traces built; declined: a field of another shape, a comparison that raised, no trace.
    counts: [AtomicU64; 4],
}

#[pymethods]
impl Builder {
    /// `classes`: `(EvalTrace, ToolCall, Turn, deferred_spans, AgentSpan)` of
    /// `tooltrail.model`; `rules`: `(calls.fits, calls.lost_precision, final.is_final_answer,
    /// final.final_text)`.
    #[new]
    fn new(
        classes: (PyObject, PyObject, PyObject, PyObject, PyObject),
        rules: (PyObject, PyObject, PyObject, PyObject),
        py: Python<'_>,
    ) -> PyResult<Self> {
        let (eval_trace, tool_call, turn, deferred_spans, agent_span) = classes;
        check_fields(eval_trace.bind(py), EVAL_TRACE_FIELDS)?;
        check_fields(tool_call.bind(py), TOOL_CALL_FIELDS)?;
        check_fields(turn.bind(py), TURN_FIELDS)?;
        check_fields(agent_span.bind(py), AGENT_SPAN_FIELDS)?;
        let (fits, lost_precision, is_final_answer, final_text) = rules;
        Ok(Self {
            eval_trace,
            tool_call,
            turn,
            deferred_spans,
            agent_span,
            fits,
            lost_precision,
            is_final_answer,
            final_text,
            counts: Default::default(),
        })
    }

    /// The `EvalTrace` of `traces` (a sequence of `TraceFacts`: one trace, or the traces of a
    /// conversation), or `None` when the Python builder must build it.
    fn build<'py>(
        &self,
        py: Python<'py>,
        traces: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let mut values: Vec<Bound<'py, PyAny>> = Vec::new();
        let loaded = load(py, traces, &mut values);
        self.finish(py, loaded, &values)
    }

    /// The `EvalTrace` of `traces` (a sequence of `CoreTrace`s), as `build` makes it of the
    /// `TraceFacts` they export, read from their Rust structs; `None` when the Python builder
    /// must build it (the traces are left as they are).
    fn build_core<'py>(
        &self,
        py: Python<'py>,
        traces: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let mut values: Vec<Bound<'py, PyAny>> = Vec::new();
        let mut collected = Vec::new();
        for trace in traces.try_iter()? {
            let trace = trace?;
            let core = trace.downcast::<CoreTrace>()?.borrow();
            match corepy::trace_of(py, &core, &mut values) {
                Ok(trace) => collected.push(trace),
                Err(why) => return self.finish(py, Err(why), &values),
            }
        }
        self.finish(py, Ok(collected), &values)
    }

    /// `(built, declined for a field's shape, for a comparison that raised, for no trace)`.
    fn counts(&self) -> (u64, u64, u64, u64) {
        let [built, shape, value, empty] = &self.counts;
        (
            built.load(Ordering::Relaxed),
            shape.load(Ordering::Relaxed),
            value.load(Ordering::Relaxed),
            empty.load(Ordering::Relaxed),
        )
    }
}

impl Builder {
    /// Build `loaded` (the loader's or the collector's traces) and make its `EvalTrace`, or
    /// count the decline.
    fn finish<'py>(
        &self,
        py: Python<'py>,
        loaded: Result<Vec<Trace>, Decline>,
        values: &[Bound<'py, PyAny>],
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        let built = loaded.and_then(|traces| {
            let mut judge = PyJudge {
                py,
                values,
                builder: self,
            };
            build::build(traces, &mut judge)
        });
        match built {
            Ok(built) => {
                self.counts[0].fetch_add(1, Ordering::Relaxed);
                self.make(py, built, values).map(Some)
            }
            Err(why) => {
                let slot = match why {
                    Decline::Shape => 1,
                    Decline::Value => 2,
                    Decline::Empty => 3,
                };
                self.counts[slot].fetch_add(1, Ordering::Relaxed);
                Ok(None)
            }
        }
    }
}

/// The rules over values, asked of Python.
struct PyJudge<'a, 'py> {
    py: Python<'py>,
    values: &'a [Bound<'py, PyAny>],
    builder: &'a Builder,
}

impl PyJudge<'_, '_> {
    fn ask(&self, rule: &PyObject, a: Val, b: Val) -> Result<bool, Decline> {
        let (a, b) = (&self.values[a.0 as usize], &self.values[b.0 as usize]);
        let answer = rule
            .bind(self.py)
            .call1((a, b))
            .map_err(|_| Decline::Value)?;
        answer.is_truthy().map_err(|_| Decline::Value)
    }
}

impl Judge for PyJudge<'_, '_> {
    fn same(&mut self, a: Val, b: Val) -> Result<bool, Decline> {
        let (a, b) = (&self.values[a.0 as usize], &self.values[b.0 as usize]);
        a.eq(b).map_err(|_| Decline::Value)
    }

    fn fits(&mut self, recorded: Val, asked: Val) -> Result<bool, Decline> {
        self.ask(&self.builder.fits, recorded, asked)
    }

    fn lost_precision(&mut self, recorded: Val, asked: Val) -> Result<bool, Decline> {
        // `lost_precision`'s first step, the common case (both records agree), without a frame
        let (a, b) = (
            &self.values[recorded.0 as usize],
            &self.values[asked.0 as usize],
        );
        if let Ok(true) = a.eq(b) {
            return Ok(false);
        }
        self.ask(&self.builder.lost_precision, recorded, asked)
    }

    fn is_final_answer(&mut self, scope: &str, name: &str) -> Result<bool, Decline> {
        let rule = self.builder.is_final_answer.bind(self.py);
        let answer = rule.call1((scope, name)).map_err(|_| Decline::Value)?;
        answer.is_truthy().map_err(|_| Decline::Value)
    }

    fn final_text(&mut self, args: Option<Val>) -> Result<Option<String>, Decline> {
        let arg = match args {
            Some(v) => self.values[v.0 as usize].clone(),
            None => self.py.None().into_bound(self.py),
        };
        let rule = self.builder.final_text.bind(self.py);
        let text = rule.call1((arg,)).map_err(|_| Decline::Value)?;
        opt_text(&text)
    }
}

// -- the loader ---------------------------------------------------------------------------

fn attr<'py>(
    obj: &Bound<'py, PyAny>,
    name: &Bound<'py, PyString>,
) -> Result<Bound<'py, PyAny>, Decline> {
    obj.getattr(name).map_err(|_| Decline::Shape)
}

/// The text of a `str`, borrowed.
fn borrowed<'a>(value: &'a Bound<'_, PyAny>) -> Result<&'a str, Decline> {
    let text = value.downcast::<PyString>().map_err(|_| Decline::Shape)?;
    text.to_str().map_err(|_| Decline::Shape)
}

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

fn text(value: &Bound<'_, PyAny>) -> Result<String, Decline> {
    let text = value.downcast::<PyString>().map_err(|_| Decline::Shape)?;
    Ok(text.to_str().map_err(|_| Decline::Shape)?.to_owned())
}

fn opt_text(value: &Bound<'_, PyAny>) -> Result<Option<String>, Decline> {
    if value.is_none() {
        Ok(None)
    } else {
        text(value).map(Some)
    }
}

fn count(value: &Bound<'_, PyAny>) -> Result<u64, Decline> {
    if !value.is_exact_instance_of::<PyInt>() {
        return Err(Decline::Shape);
    }
    value.extract().map_err(|_| Decline::Shape)
}

fn small(value: &Bound<'_, PyAny>) -> Result<i64, Decline> {
    if !value.is_exact_instance_of::<PyInt>() {
        return Err(Decline::Shape);
    }
    value.extract().map_err(|_| Decline::Shape)
}

fn truth(value: &Bound<'_, PyAny>) -> Result<bool, Decline> {
    value.is_truthy().map_err(|_| Decline::Shape)
}

/// A handle to a value the port only carries (`None`: Python's `None`).
pub(crate) fn keep<'py>(
    value: Bound<'py, PyAny>,
    values: &mut Vec<Bound<'py, PyAny>>,
) -> Option<Val> {
    if value.is_none() {
        return None;
    }
    values.push(value);
    Some(Val(values.len() as u32 - 1))
}

/// A handle to any value, `None` included.
pub(crate) fn keep_any<'py>(value: Bound<'py, PyAny>, values: &mut Vec<Bound<'py, PyAny>>) -> Val {
    values.push(value);
    Val(values.len() as u32 - 1)
}

/// `(key, value)` of a dict with text keys.
pub(crate) fn pairs<'py>(
    value: &Bound<'py, PyAny>,
    values: &mut Vec<Bound<'py, PyAny>>,
) -> Result<Vec<(String, Val)>, Decline> {
    if value.is_none() {
        return Ok(Vec::new());
    }
    let dict = value.downcast::<PyDict>().map_err(|_| Decline::Shape)?;
    let mut out = Vec::with_capacity(dict.len());
    for (key, item) in dict.iter() {
        let key = text(&key)?;
        values.push(item);
        out.push((key, Val(values.len() as u32 - 1)));
    }
    Ok(out)
}

fn load<'py>(
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

/// The resource's scalar attributes and `service.name` into `trace` (the loader's and the
/// collector's, `corepy.rs`, one rule).
pub(crate) fn resource_into<'py>(
    trace: &mut Trace,
    resource: &Bound<'py, PyDict>,
    values: &mut Vec<Bound<'py, PyAny>>,
) -> Result<(), Decline> {
    for (key, value) in resource.iter() {
        let key = text(&key)?;
        if key == "service.name" && value.is_instance_of::<PyString>() {
            trace.service_name = Some(text(&value)?);
        }
        let scalar = value.is_instance_of::<PyString>()
            || value.is_instance_of::<PyBool>()
            || value.is_instance_of::<PyInt>()
            || value.is_instance_of::<PyFloat>();
        if scalar {
            values.push(value);
            trace.resource.push((key, Val(values.len() as u32 - 1)));
        }
    }
    Ok(())
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

// -- the maker ----------------------------------------------------------------------------

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

/// A string of few distinct values (a tool's name, a call's source, an agent's name, an
/// attribute's key), as one shared object: Python's interned copy. The Python builder hands
/// on the objects it was given, which its traces share; new strings per call held traces at
/// about 1 KB more per trace than the Python builder's (`bench_core_memory.py`). Python frees
/// an interned string no object holds any more, so this holds nothing past the traces.
fn shared<'py>(py: Python<'py>, text: &str) -> Bound<'py, PyString> {
    PyString::intern(py, text)
}

fn shared_opt<'py>(py: Python<'py>, text: Option<&str>) -> Bound<'py, PyAny> {
    match text {
        Some(text) => shared(py, text).into_any(),
        None => py.None().into_bound(py),
    }
}

impl Builder {
    fn make<'py>(
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
                shared(py, &row.name).into_any(),
                py_val(py, row.args, values),
                py_opt(py, row.call_id.as_deref()),
                values[row.span_id.0 as usize].clone(),
                py_val(py, row.parent_span_id, values),
                row.start_ns.into_pyobject(py)?.into_any(),
                row.end_ns.into_pyobject(py)?.into_any(),
                status.clone().into_any(),
                py_val(py, row.error, values),
                row.turn.into_pyobject(py)?.into_any(),
                shared_opt(py, row.agent.as_deref()),
                shared(py, &row.source).into_any(),
                py_val(py, row.result, values),
                values[row.span_name.0 as usize].clone(),
            ];
            let call = PyTuple::new(py, &fields[..13])?;
            calls.append(self.tool_call.bind(py).call1(call)?)?;
            rows.append(PyTuple::new(py, fields)?)?;
        }
        let spans = self.deferred_spans.bind(py).call1((rows,))?;
        let trace_id = PyString::new(py, &built.trace_id);
        let metadata = metadata(py, &built.meta, values, &trace_id)?;
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
                shared_opt(py, agent.name.as_deref()),
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
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item(intern!(py, "turn_count"), meta.turn_count)?;
    if let Some(service) = &meta.service_name {
        dict.set_item(intern!(py, "service.name"), shared(py, service))?;
    }
    if let Some((name, span_id)) = &meta.root {
        dict.set_item(intern!(py, "root_span_name"), &values[name.0 as usize])?;
        dict.set_item(intern!(py, "root_span_id"), span_id)?;
    }
    if let Some(agent) = &meta.agent_name {
        dict.set_item(intern!(py, "agent_name"), shared(py, agent))?;
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
        attributes.set_item(shared(py, key), &values[value.0 as usize])?;
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
                by_model.set_item(shared(py, model), entry)?;
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
