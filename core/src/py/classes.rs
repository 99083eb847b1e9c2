//! The Python classes the core makes objects of are handed in, not imported: each is checked
//! once, when its `Reader` or `Builder` is made, against the fields the core fills by
//! position, so that a field added or moved on one side fails at once rather than filling
//! the wrong field.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// `cls.__match_args__` starts with `fields`, or a `ValueError`.
pub(super) fn check_fields(cls: &Bound<'_, PyAny>, fields: &[&str]) -> PyResult<()> {
    let names: Vec<String> = cls.getattr("__match_args__")?.extract()?;
    if names.len() < fields.len() || names[..fields.len()] != *fields {
        return Err(PyValueError::new_err(format!(
            "tooltrail_core builds {} with the fields {fields:?}, the class has {names:?}",
            cls.getattr("__name__")?
        )));
    }
    Ok(())
}
