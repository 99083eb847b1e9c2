//! tooltrail's compiled reading core: OTLP protobuf records and OTLP/JSON lines into the Python
//! objects the converter reads (`Span`, `SpanHead`, `SpanEvent` of `tooltrail.otlp.decode.span`),
//! or, in parts, into `TracePart`s that a `CoreTrace` collects in Rust and `Builder.build_core`
//! builds, the spans of a part never made Python objects.
//!
//! Two layers: the engine (every module but `py`), which knows nothing of Python, and the
//! bindings (`py/`), the only place that names PyO3: the module's classes and every
//! conversion between Python objects and the engine's values.
//! `tests/architecture/test_core_modules.py` holds that, and that no module imports another
//! that imports it back.
//!
//! A record the core would read differently from the Python path (any record the Python path
//! reports a problem in, and a few unusual spellings) comes back as `None`: the caller then
//! decodes it with the Python decoder, the reference, which reports it. So the diagnostics of
//! both paths are the same by construction; `tests/otlp/test_core_differential.py` checks the rest.

pub mod build;
pub mod collect;
pub mod facts;
pub mod ids;
pub mod json;
pub mod jsontext;
pub mod keys;
mod py;
pub mod rules;
pub mod screen;
pub mod tools;
pub mod traces;
pub mod values;
pub mod wire;

/// mimalloc for every Rust allocation of the extension (the `mimalloc` feature, which the
/// wheel's build turns on). With glibc's malloc, about 30% of reading JSON lines went to its
/// consolidation (`malloc_consolidate`) once collected traces held many small long-lived
/// allocations among the parser's short-lived ones; `tooltrail eval --workers 1` on a
/// 500k-span dump took 22% less CPU with mimalloc on JSON lines, 10% less on protobuf.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
