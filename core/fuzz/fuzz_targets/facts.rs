//! The facts mode: the core's dialect port (`facts::read`, rules of `rules.json`) run over
//! every span the protobuf or JSON-lines reader accepts must end without a panic, and what it
//! hands out must be consistent: a head has a parent, a tool span a call, labels no content
//! key, a failure an error, and only agent, other and root spans note conversation and case
//! ids.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use tooltrail_core::facts::{read, Outcome};
use tooltrail_core::json::{parse, read_request};
use tooltrail_core::rules::{Rules, ROLE_AGENT, ROLE_OTHER, ROLE_TOOL};
use tooltrail_core::traces::{read_traces, Limits, Resource};

/// Limits that let argument and message JSON of some size through to the dialect port.
const LIMITS: Limits = Limits {
    max_attribute_value_bytes: 8192,
    max_depth: 8,
    max_attributes: 64,
    max_events_per_span: 8,
};

fn rules() -> &'static Rules {
    static RULES: OnceLock<Rules> = OnceLock::new();
    RULES.get_or_init(|| {
        Rules::parse(include_str!("../../../src/tooltrail/dialects/rules.json"))
            .expect("rules.json reads")
    })
}

fn check(resources: &[Resource<'_>]) {
    let rules = rules();
    for resource in resources {
        for scope in &resource.scopes {
            for span in &scope.spans {
                let root = span.parent_span_id.is_empty();
                match read(rules, span, &resource.attributes) {
                    Outcome::Head => assert!(!root, "a root is never a head"),
                    Outcome::Full => {}
                    Outcome::Facts(facts) => {
                        assert_eq!(facts.role == ROLE_TOOL, facts.call.is_some());
                        assert!(facts.role != ROLE_OTHER || root);
                        let noted = facts.role == ROLE_AGENT || facts.role == ROLE_OTHER || root;
                        assert_eq!(facts.noted, noted);
                        assert_eq!(facts.labels.is_some(), noted);
                        for (key, _) in facts.labels.iter().flatten() {
                            assert!(!rules.is_content(key));
                        }
                        if !facts.model_calls.is_empty() {
                            assert!(!facts.asked_unlisted);
                        }
                        // a failure the span records (Strands') is text, and makes an error
                        if let Some(failure) = facts.call.as_ref().and_then(|c| c.failure.as_ref())
                        {
                            assert!(!failure.is_empty() && facts.error.is_some());
                        }
                    }
                }
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(resources) = read_traces(data, &LIMITS) {
        check(&resources);
    }
    let Ok(request) = parse(data) else {
        return;
    };
    let mut ids = Vec::new();
    if let Ok(resources) = read_request(&request, &mut ids, &LIMITS) {
        check(&resources);
    }
});
