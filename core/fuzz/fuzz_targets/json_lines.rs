//! One OTLP/JSON line: the core's reader must end, without a panic, on any bytes; and what it
//! accepts must hold only valid ids and values within the limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tooltrail_core::json::{parse, read_request};

#[path = "accepted.rs"]
mod accepted;

fuzz_target!(|data: &[u8]| {
    let Ok(request) = parse(data) else {
        return;
    };
    let mut ids = Vec::new();
    if let Ok(resources) = read_request(&request, &mut ids, &accepted::LIMITS) {
        accepted::check(&resources, false);
    }
});
