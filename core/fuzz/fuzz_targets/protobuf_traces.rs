//! One protobuf traces record (`ExportTraceServiceRequest` / `TracesData`): the core's reader
//! must end, without a panic, on any bytes; and what it accepts must hold only valid ids
//! and values within the limits (anything else is the Python path's to report).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tooltrail_core::traces::{read_traces, AnyValue, Limits};

/// Small limits, so that fuzzed sizes reach them.
const LIMITS: Limits = Limits {
    max_attribute_value_bytes: 64,
    max_depth: 4,
    max_attributes: 8,
    max_events_per_span: 3,
};

fn within(value: &AnyValue<'_>, depth: usize) {
    match value {
        AnyValue::Str(s) => assert!(s.len() <= LIMITS.max_attribute_value_bytes),
        AnyValue::Bytes(b) => assert!(b.len() <= LIMITS.max_attribute_value_bytes),
        AnyValue::Array(items) => {
            assert!(depth < LIMITS.max_depth);
            items.iter().for_each(|v| within(v, depth + 1));
        }
        AnyValue::Kv(pairs) => {
            assert!(depth < LIMITS.max_depth && pairs.len() <= LIMITS.max_attributes);
            pairs.iter().for_each(|(_, v)| within(v, depth + 1));
        }
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(resources) = read_traces(data, &LIMITS) else {
        return;
    };
    for resource in &resources {
        resource.attributes.iter().for_each(|(_, v)| within(v, 0));
        for scope in &resource.scopes {
            for span in &scope.spans {
                assert_eq!(span.trace_id.len(), 16);
                assert!(span.trace_id.iter().any(|b| *b != 0));
                assert_eq!(span.span_id.len(), 8);
                assert!(span.span_id.iter().any(|b| *b != 0));
                assert!(span.parent_span_id.is_empty() || span.parent_span_id.len() == 8);
                assert!(span.attributes.len() <= LIMITS.max_attributes);
                assert!(span.events.len() <= LIMITS.max_events_per_span);
                span.attributes.iter().for_each(|(_, v)| within(v, 0));
                for event in &span.events {
                    event.attributes.iter().for_each(|(_, v)| within(v, 0));
                }
            }
        }
    }
});
