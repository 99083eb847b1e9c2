//! `Builder`: `EvalTrace`s built by the builder's port (`build.rs`) of `TraceFacts` (read in
//! by `loader.rs`) or of `CoreTrace`s (`coretrace.rs`), made by `maker.rs`; the rules over
//! values the port cannot read (`build::ValueRules`: `==`, `calls.fits`, ...) asked of
//! Python here.
//!
//! Anything the loader cannot read as the Python builder would (another type where a text or
//! a count is expected, a text Rust cannot hold, one `ModelCall` object listed twice) and any
//! comparison that raises is a decline: `build` returns `None` and the Python builder builds
//! the trace. Each outcome is counted (`Builder.counts`).

use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::prelude::*;

use super::coretrace::{trace_of, CoreTrace};
use super::handles::opt_text;
use super::loader::load;
use super::maker::ModelClasses;
use crate::build::{self, Decline, Trace, Val, ValueRules};

/// Builds `EvalTrace`s of `TraceFacts` (`convert/build.py` makes one per core module).
#[pyclass(frozen, module = "tooltrail_core")]
pub(super) struct Builder {
    classes: ModelClasses,
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
        let classes = ModelClasses::new(py, classes)?;
        let (fits, lost_precision, is_final_answer, final_text) = rules;
        Ok(Self {
            classes,
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
            match trace_of(py, &core, &mut values) {
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
            let mut rules = PyValueRules {
                py,
                values,
                builder: self,
            };
            build::build(traces, &mut rules)
        });
        match built {
            Ok(built) => {
                self.counts[0].fetch_add(1, Ordering::Relaxed);
                self.classes.make(py, built, values).map(Some)
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
struct PyValueRules<'a, 'py> {
    py: Python<'py>,
    values: &'a [Bound<'py, PyAny>],
    builder: &'a Builder,
}

impl PyValueRules<'_, '_> {
    fn ask(&self, rule: &PyObject, a: Val, b: Val) -> Result<bool, Decline> {
        let (a, b) = (&self.values[a.0 as usize], &self.values[b.0 as usize]);
        let answer = rule
            .bind(self.py)
            .call1((a, b))
            .map_err(|_| Decline::Value)?;
        answer.is_truthy().map_err(|_| Decline::Value)
    }
}

impl ValueRules for PyValueRules<'_, '_> {
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
