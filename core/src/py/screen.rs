//! `Screen`: redaction's first look (`crate::screen`), for `tooltrail.redact.Redaction`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyFrozenSet, PyInt, PyString};

/// Whether a text surely holds nothing to hide (`Redaction._names_nothing`'s first look).
#[pyclass(frozen, module = "tooltrail_core")]
pub(super) struct Screen {
    inner: crate::screen::Screen,
}

#[pymethods]
impl Screen {
    /// `names`: the normalized key names; `anchors`: `(anchor, allowed, count, words, behind)`
    /// per anchor of the credential shapes (`credentials.Guard`); `cards`: card numbers are
    /// looked for; `shortest`: the shortest credential. `ValueError` for a name or anchor
    /// beyond ASCII, or more than it holds.
    #[new]
    fn new(
        names: Vec<String>,
        anchors: Vec<crate::screen::Anchor>,
        cards: bool,
        shortest: usize,
    ) -> PyResult<Self> {
        crate::screen::Screen::new(&names, &anchors, cards, shortest)
            .map(|inner| Self { inner })
            .map_err(|why| {
                PyValueError::new_err(match why {
                    crate::screen::Unscreenable::NotAscii => "a name or anchor beyond ASCII",
                    crate::screen::Unscreenable::TooLarge => "more names or anchors than it holds",
                })
            })
    }

    /// `True` when `text` surely holds no key name, escape or credential; `False`: maybe
    /// (also for a string that is not valid UTF-8, a lone surrogate).
    fn clear(&self, text: &Bound<'_, PyString>) -> bool {
        text.to_str().is_ok_and(|text| self.inner.clear(text))
    }

    /// How many strings there are, `extra` and the values of `values` (not counting those
    /// under a key of `skip`), when each is at most `max_chars` long and `clear`, and every
    /// other value is an `int`, a `float` or a `bool` (exactly those types); `None` for
    /// anything else: a structured value, or a string that is not surely clear (the caller's
    /// Python screen then decides).
    /// A tool span's attributes are screened so before it is tagged: one call, where the
    /// loop over them in Python and the screen of their strings joined cost twice as much.
    #[pyo3(signature = (values, skip, max_chars, extra=None))]
    fn clear_strings(
        &self,
        values: &Bound<'_, PyDict>,
        skip: &Bound<'_, PyFrozenSet>,
        max_chars: usize,
        extra: Option<&Bound<'_, PyString>>,
    ) -> PyResult<Option<usize>> {
        // ASCII (which `clear` requires) has as many bytes as characters
        let clear = |text: &Bound<'_, PyString>| {
            text.to_str()
                .is_ok_and(|text| text.len() <= max_chars && self.inner.clear(text))
        };
        let mut strings = 0;
        if let Some(extra) = extra {
            if !clear(extra) {
                return Ok(None);
            }
            strings += 1;
        }
        for (key, value) in values.iter() {
            if let Ok(text) = value.downcast_exact::<PyString>() {
                if skip.contains(&key)? {
                    continue;
                }
                if !clear(text) {
                    return Ok(None);
                }
                strings += 1;
            } else if !(value.is_exact_instance_of::<PyInt>()
                || value.is_exact_instance_of::<PyFloat>()
                || value.is_exact_instance_of::<PyBool>())
            {
                return Ok(None);
            }
        }
        Ok(Some(strings))
    }
}
