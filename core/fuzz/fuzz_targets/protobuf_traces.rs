//! One protobuf traces record (`ExportTraceServiceRequest` / `TracesData`): the core's reader
//! must end, without a panic, on any bytes; and what it accepts must hold only valid ids
//! and values within the limits (anything else is the Python path's to report).
#![no_main]

use libfuzzer_sys::fuzz_target;
use tooltrail_core::traces::read_traces;

#[path = "accepted.rs"]
mod accepted;

fuzz_target!(|data: &[u8]| {
    if let Ok(resources) = read_traces(data, &accepted::LIMITS) {
        accepted::check(&resources, true);
    }
});
