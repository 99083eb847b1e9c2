//! The Python objects of the engine's decoded values: attribute values (`traces::AnyValue`)
//! as the Python decoder makes them, parsed JSON text (`jsontext::Json`) as orjson gives it,
//! ids as hex strings; with the per-record caches of the keys they share.

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

use crate::ids::hex_text;
use crate::jsontext::Json;
use crate::traces::AnyValue;

/// An id's bytes as the hex string spans hold.
pub(super) fn hex<'py>(py: Python<'py>, id: &[u8]) -> Bound<'py, PyString> {
    let mut buf = [0u8; 32];
    PyString::new(py, hex_text(id, &mut buf))
}

/// A parsed JSON value as orjson gives it: an object member by member into a dict (a key
/// repeated keeps its first position and takes its last value).
pub(super) fn json_value<'py>(
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
pub(super) struct JsonKeys<'py> {
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

/// Attribute keys made once per record: most spans of a record share them, and a key object
/// used again keeps its hash.
#[derive(Default)]
pub(super) struct Keys<'a, 'py> {
    made: HashMap<&'a str, Bound<'py, PyString>>,
}

impl<'a, 'py> Keys<'a, 'py> {
    pub(super) fn get(&mut self, py: Python<'py>, key: &'a str) -> Bound<'py, PyString> {
        self.made
            .entry(key)
            .or_insert_with(|| PyString::new(py, key))
            .clone()
    }
}

/// The dict of attribute pairs (a repeated key: its last value, at its first position).
pub(super) fn dict<'a, 'py>(
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

/// An attribute value as the Python decoder makes it.
pub(super) fn value_of<'a, 'py>(
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
