//! What every fuzz target asserts of what a reader accepted: only valid ids, and values
//! within the small limits the targets read with (anything else is the Python path's to
//! report). Included by each target with `#[path]`: cargo-fuzz builds each as its own binary.

use tooltrail_core::traces::{AnyValue, Limits, Resource};

/// Small limits, so that fuzzed sizes reach them.
pub const LIMITS: Limits = Limits {
    max_attribute_value_bytes: 64,
    max_depth: 4,
    max_attributes: 8,
    max_events_per_span: 3,
};

fn within(value: &AnyValue<'_>, depth: usize, bytes: bool) {
    match value {
        AnyValue::Str(s) => assert!(s.len() <= LIMITS.max_attribute_value_bytes),
        AnyValue::Bytes(b) => {
            assert!(bytes, "this reader leaves bytes values to the Python path");
            assert!(b.len() <= LIMITS.max_attribute_value_bytes);
        }
        AnyValue::Array(items) => {
            assert!(depth < LIMITS.max_depth);
            items.iter().for_each(|v| within(v, depth + 1, bytes));
        }
        AnyValue::Kv(pairs) => {
            assert!(depth < LIMITS.max_depth && pairs.len() <= LIMITS.max_attributes);
            pairs.iter().for_each(|(_, v)| within(v, depth + 1, bytes));
        }
        _ => {}
    }
}

/// Assert that `resources` hold only valid ids and values within `LIMITS`; `bytes`: whether
/// the reader may hand on bytes values (the JSON reader leaves them to the Python path).
pub fn check(resources: &[Resource<'_>], bytes: bool) {
    for resource in resources {
        resource
            .attributes
            .iter()
            .for_each(|(_, v)| within(v, 0, bytes));
        for scope in &resource.scopes {
            for span in &scope.spans {
                assert_eq!(span.trace_id.len(), 16);
                assert!(span.trace_id.iter().any(|b| *b != 0));
                assert_eq!(span.span_id.len(), 8);
                assert!(span.span_id.iter().any(|b| *b != 0));
                assert!(span.parent_span_id.is_empty() || span.parent_span_id.len() == 8);
                assert!(span.attributes.len() <= LIMITS.max_attributes);
                assert!(span.events.len() <= LIMITS.max_events_per_span);
                span.attributes
                    .iter()
                    .for_each(|(_, v)| within(v, 0, bytes));
                for event in &span.events {
                    event
                        .attributes
                        .iter()
                        .for_each(|(_, v)| within(v, 0, bytes));
                }
            }
        }
    }
}
