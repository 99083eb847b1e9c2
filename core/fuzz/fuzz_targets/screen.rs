//! Redaction's first look (`screen::Screen`): it must end without a panic on any rules and any
//! text, and a text it calls clear must be ASCII without an escape that spells a letter
//! (`\u`, `\x`, an octal digit...), hold none of the names
//! (normalized as keys are: lower case, no `_` or `-`; found by a plain substring search) and
//! no anchor followed by what its guard requires.
//! The input: names separated by `\x01`, then `\x02`, then the text; anchors are the text's
//! own first bytes, each guarded by the next few bytes of the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tooltrail_core::screen::Screen;

fn normalized(text: &str) -> String {
    text.chars()
        .filter(|&c| c != '_' && c != '-')
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let Some((rules, text)) = input.split_once('\x02') else {
        return;
    };
    let names: Vec<String> = rules.split('\x01').map(normalized).collect();
    let mut anchors: Vec<(char, String, usize)> = Vec::new();
    for (n, anchor) in text.chars().take(3).enumerate() {
        // one guard an anchor, as `credentials` gives them
        if anchors.iter().all(|(known, _, _)| *known != anchor) {
            anchors.push((anchor, text.chars().skip(1).take(4).collect(), n));
        }
    }
    let Ok(screen) = Screen::new(&names, &anchors, true, 10) else {
        return;
    };
    if !screen.clear(text) {
        return;
    }
    assert!(text.is_ascii(), "{text:?}");
    for escape in [
        "\\u", "\\U", "\\x", "\\N", "\\0", "\\1", "\\2", "\\3", "\\4", "\\5", "\\6", "\\7",
    ] {
        assert!(!text.contains(escape), "{escape:?} in {text:?}");
    }
    let plain = normalized(text);
    for name in &names {
        assert!(!plain.contains(name.as_str()), "{name:?} in {text:?}");
    }
    if text.len() >= 10 {
        let bytes = text.as_bytes();
        for (anchor, allowed, count) in &anchors {
            for (at, _) in text.match_indices(*anchor) {
                let after = &bytes[at + 1..];
                let passes = after.len() >= *count
                    && after[..*count]
                        .iter()
                        .all(|b| allowed.as_bytes().contains(b));
                assert!(!passes, "{anchor:?} at {at} in {text:?}");
            }
        }
    }
});
