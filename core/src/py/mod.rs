//! The Python bindings: every `#[pyclass]`, `#[pymethods]` and `#[pymodule]` of the core,
//! and every conversion between Python objects and the engine's values. The engine (the
//! other modules of the crate) knows nothing of Python; where it must compare values only
//! Python can read, it asks through a trait of its own (`build::ValueRules`), which
//! `builder.rs` implements.
//!
//! - `reader.rs`: `Reader`, records into spans, facts or `TracePart`s;
//! - `parts.rs`: `TracePart` and what the facts mode keeps of a span;
//! - `coretrace.rs`: `CoreTrace`, a trace collected in Rust;
//! - `builder.rs`: `Builder`, `EvalTrace`s built by the port (`loader.rs` reads `TraceFacts`
//!   in, `maker.rs` makes the `EvalTrace`, `handles.rs` holds the values only carried);
//! - `mode.rs`, `classes.rs`, `objects.rs`: the facts mode's rules and classes, the check of
//!   the classes' fields, the Python objects of decoded values;
//! - `screen.rs`: `Screen`, redaction's first look (`crate::screen`).

mod builder;
mod classes;
mod coretrace;
mod handles;
mod loader;
mod maker;
mod mode;
mod objects;
mod parts;
mod reader;
mod screen;

use pyo3::prelude::*;

/// The module `tooltrail_core` (its stub, `core/tooltrail_core.pyi`, lists what it holds).
#[pymodule]
fn tooltrail_core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<reader::Reader>()?;
    m.add_class::<builder::Builder>()?;
    m.add_class::<parts::TracePart>()?;
    m.add_class::<coretrace::CoreTrace>()?;
    m.add_class::<screen::Screen>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // What `Reader` takes: 1, its `facts` argument; 2, and it reads in parts (`trace_parts`,
    // `CoreTrace`, `Builder.build_core`). `otlp/read/core.py` asks, so that a core built
    // before reads as before.
    m.add("FACTS_MODE", 2)?;
    Ok(())
}
