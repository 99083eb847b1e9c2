//! Redaction's first look (`screen::Screen`): it must end without a panic on any rules and any
//! text, and a text it calls clear must be ASCII without an escape that spells a letter
//! (`\u`, `\x`, an octal digit...), hold none of the names (normalized as keys are: lower
//! case, no `_` or `-`; found by a plain substring search) and no anchor with what its guard
//! requires around it.
//! The input: names separated by `\x01`, then `\x02`, then the text; anchors and their guards
//! are made of the text's own first characters.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tooltrail_core::screen::{Anchor, Screen};

fn normalized(text: &str) -> String {
    text.chars()
        .filter(|&c| c != '_' && c != '-')
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// The text's first three characters as anchors: the first needs a word after it, the second
/// a character before it, the third a run of two of the next characters.
fn anchors_of(text: &str) -> Vec<Anchor> {
    let first: Vec<char> = text.chars().take(5).collect();
    let mut anchors: Vec<Anchor> = Vec::new();
    for (n, &anchor) in first.iter().take(3).enumerate() {
        if anchors.iter().any(|(known, ..)| *known == anchor) {
            continue; // one guard an anchor, as `credentials` gives them
        }
        let word = first
            .get(3)
            .map(|c| vec![c.to_string()])
            .unwrap_or_default();
        let behind = first.get(4).map(|c| c.to_string()).unwrap_or_default();
        anchors.push(match n {
            0 => (anchor, String::new(), 0, word, String::new()),
            1 => (anchor, String::new(), 0, Vec::new(), behind),
            _ => (
                anchor,
                first.iter().skip(1).collect(),
                2,
                Vec::new(),
                String::new(),
            ),
        });
    }
    anchors
}

fn passes(text: &str, at: usize, anchor: &Anchor) -> bool {
    let (_, allowed, count, words, behind) = anchor;
    let after = &text[at + 1..];
    text[..at].ends_with(behind.as_str())
        && after.len() >= *count
        && after
            .bytes()
            .take(*count)
            .all(|b| allowed.as_bytes().contains(&b))
        && (words.is_empty() || words.iter().any(|word| after.starts_with(word.as_str())))
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let Some((rules, text)) = input.split_once('\x02') else {
        return;
    };
    let names: Vec<String> = rules.split('\x01').map(normalized).collect();
    let anchors = anchors_of(text);
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
        for anchor in &anchors {
            for (at, _) in text.match_indices(anchor.0) {
                assert!(
                    !passes(text, at, anchor),
                    "{:?} at {at} in {text:?}",
                    anchor.0
                );
            }
        }
    }
});
