//! JSON text inside attribute values (`jsontext::parse`): it must end without a panic on any
//! text, and what it accepts serde_json must read as the same value (a repeated key: the
//! last value), so that the core never reads as JSON what a JSON parser refuses.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tooltrail_core::jsontext::{parse, Json};

fn same(mine: &Json, theirs: &Value) -> bool {
    match (mine, theirs) {
        (Json::Null, Value::Null) => true,
        (Json::Bool(a), Value::Bool(b)) => a == b,
        // "-0": an int 0 for orjson (and the core), -0.0 for serde_json
        (Json::Int(a), Value::Number(b)) => {
            b.as_i64() == Some(*a) || (*a == 0 && b.as_f64() == Some(0.0))
        }
        (Json::UInt(a), Value::Number(b)) => b.as_u64() == Some(*a),
        (Json::Float(a), Value::Number(b)) => {
            b.as_f64().is_some_and(|b| b.to_bits() == a.to_bits())
        }
        (Json::Str(a), Value::String(b)) => a == b,
        (Json::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y))
        }
        (Json::Object(members), Value::Object(b)) => {
            let mine_keys: std::collections::BTreeSet<&str> =
                members.iter().map(|(k, _)| k.as_str()).collect();
            mine_keys.len() == b.len()
                && b.iter()
                    .all(|(k, v)| mine.get(k).is_some_and(|m| same(m, v)))
        }
        _ => false,
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(value) = parse(text) {
        let theirs: Value =
            serde_json::from_str(text).expect("serde_json reads what the core reads");
        assert!(same(&value, &theirs), "{text:?}: {value:?} != {theirs:?}");
    }
});
