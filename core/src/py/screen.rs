//! `Screen`: redaction's first look (`crate::screen`), for `tooltrail.redact.Redaction`.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyString;

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
}
