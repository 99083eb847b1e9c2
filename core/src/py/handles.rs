//! Python values read for the builder's port (`build.rs`): texts and counts checked as the
//! Python builder would find them (anything else is `Decline::Shape`), and the values the
//! port only carries (arguments, results, ids, label values) kept in one table, the port
//! holding their index (`build::Val`). The loader of `TraceFacts` (`loader.rs`) and the
//! reader of a `CoreTrace` (`coretrace.rs`) read through the same functions, one rule.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};

use crate::build::{Decline, Trace, Val};

pub(super) fn attr<'py>(
    obj: &Bound<'py, PyAny>,
    name: &Bound<'py, PyString>,
) -> Result<Bound<'py, PyAny>, Decline> {
    obj.getattr(name).map_err(|_| Decline::Shape)
}

/// The text of a `str`, borrowed.
pub(super) fn borrowed<'a>(value: &'a Bound<'_, PyAny>) -> Result<&'a str, Decline> {
    let text = value.downcast::<PyString>().map_err(|_| Decline::Shape)?;
    text.to_str().map_err(|_| Decline::Shape)
}

pub(super) fn text(value: &Bound<'_, PyAny>) -> Result<String, Decline> {
    let text = value.downcast::<PyString>().map_err(|_| Decline::Shape)?;
    Ok(text.to_str().map_err(|_| Decline::Shape)?.to_owned())
}

pub(super) fn opt_text(value: &Bound<'_, PyAny>) -> Result<Option<String>, Decline> {
    if value.is_none() {
        Ok(None)
    } else {
        text(value).map(Some)
    }
}

pub(super) fn count(value: &Bound<'_, PyAny>) -> Result<u64, Decline> {
    if !value.is_exact_instance_of::<PyInt>() {
        return Err(Decline::Shape);
    }
    value.extract().map_err(|_| Decline::Shape)
}

pub(super) fn small(value: &Bound<'_, PyAny>) -> Result<i64, Decline> {
    if !value.is_exact_instance_of::<PyInt>() {
        return Err(Decline::Shape);
    }
    value.extract().map_err(|_| Decline::Shape)
}

pub(super) fn truth(value: &Bound<'_, PyAny>) -> Result<bool, Decline> {
    value.is_truthy().map_err(|_| Decline::Shape)
}

/// A handle to a value the port only carries (`None`: Python's `None`).
pub(super) fn keep<'py>(
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
pub(super) fn keep_any<'py>(value: Bound<'py, PyAny>, values: &mut Vec<Bound<'py, PyAny>>) -> Val {
    values.push(value);
    Val(values.len() as u32 - 1)
}

/// `(key, value)` of a dict with text keys.
pub(super) fn pairs<'py>(
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

/// The resource's scalar attributes and `service.name` into `trace` (the loader's and the
/// collector's, `coretrace.rs`, one rule).
pub(super) fn resource_into<'py>(
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
