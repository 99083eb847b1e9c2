//! Redaction's first look, compiled: whether a text surely holds nothing to hide.
//!
//! `tooltrail.redact.Redaction` screens every string of a tool span (and of a span a receiver
//! dumps) before it parses anything: a configured key's name, an escape that could spell one,
//! or a credential shape's anchor that passes its guard send the text to the full redaction.
//! The Python screen is several scans of the text by `re` and `str` plus the interpreter's
//! work around them (3.4 us for a tool span's 140 characters); this is two passes over its
//! bytes: 4,436 instructions and 0.40 us for a tool span's 141 bytes, where comparing names at
//! each pair of bytes that may begin one, and guards through `memcmp` (`starts_with`), took
//! 11,437 and 1.13 us. It is conservative, never exact: `clear` answers
//! `true` only where the Python screen would find nothing, and `false` (ask the Python
//! screen) for anything it does not model: text beyond ASCII (Unicode lower-casing can make
//! an ASCII name of other letters), an escape that could spell a letter, a digit run long
//! enough for a card number.
//! What it tests comes from Python as data: the normalized key names, and per anchor of the
//! credential shapes what its guard requires around it (`credentials.Guard`: characters
//! after it, a word after it, text before it), which the Python expressions are built from
//! too, so the rules stay written once.

/// What must surround an anchor byte (`credentials.Guard`): `count` bytes of `allowed` after
/// it, one of `words` right after it (none given: any), `behind` right before it.
struct Guard {
    allowed: [bool; 128],
    count: usize,
    words: Vec<Box<[u8]>>,
    behind: Box<[u8]>,
}

impl Guard {
    /// Whether the anchor at `at` of `bytes` has what this guard requires around it.
    fn passes(&self, bytes: &[u8], at: usize) -> bool {
        let after = &bytes[at + 1..];
        ends_with(&bytes[..at], &self.behind)
            && after.len() >= self.count
            && after[..self.count]
                .iter()
                .all(|&next| self.allowed[usize::from(next & 0x7f)])
            && (self.words.is_empty() || self.words.iter().any(|word| starts_with(after, word)))
    }
}

/// `text.starts_with(start)` and `text.ends_with(end)` compared a byte at a time. The slices'
/// own methods call `memcmp`, and most guards compare with nothing (an empty `behind`, whose
/// pointer is dangling): `memcmp` of no bytes at a dangling pointer took about 100 ns on the
/// machine this was measured on, 60 times a compare of 16 bytes (presumably its masked loads
/// at an unmapped address needing the processor's assist). The credential scan of a tool
/// span's 141 bytes took 0.63 us with them and 0.12 us without.
fn starts_with(text: &[u8], start: &[u8]) -> bool {
    text.len() >= start.len() && text.iter().zip(start).all(|(a, b)| a == b)
}

fn ends_with(text: &[u8], end: &[u8]) -> bool {
    text.len() >= end.len() && starts_with(&text[text.len() - end.len()..], end)
}

/// An anchor as Python hands it over: `(anchor, allowed, count, words, behind)`.
pub type Anchor = (char, String, usize, Vec<String>, String);

/// The compiled first look of one `Redaction`.
pub struct Screen {
    /// The normalized key names (lower case, without `_` and `-`) as one automaton that
    /// reads the text as it is (`NameAutomaton`).
    names: NameAutomaton,
    /// A name that normalizes to nothing, which every text holds.
    empty: bool,
    /// Per ASCII byte, 1 + the index of its guard in `guards` when it is a credential anchor.
    guard_of: [u8; 128],
    guards: Vec<Guard>,
    /// Per ASCII byte, whether the credential scan must look at it: an anchor, and (card
    /// numbers on) a digit, a space or a dash (a digit run goes on through those two).
    looked_at: [bool; 128],
    /// Whether card numbers are looked for.
    cards: bool,
    /// No credential is shorter: a shorter text is tested for names only.
    shortest: usize,
}

/// Why a `Screen` cannot be made (the Python screen then runs alone).
#[derive(Debug, PartialEq, Eq)]
pub enum Unscreenable {
    /// A name or anchor beyond ASCII.
    NotAscii,
    /// More names than the automaton can hold, or more than 255 anchors.
    TooLarge,
}

/// The fewest digits of a card number (ISO/IEC 7812).
const CARD_DIGITS: usize = 13;

impl Screen {
    /// `anchors`: each anchor character of the chosen shapes with its guard.
    pub fn new(
        names: &[String],
        anchors: &[Anchor],
        cards: bool,
        shortest: usize,
    ) -> Result<Screen, Unscreenable> {
        if !names.iter().all(|name| name.is_ascii()) {
            return Err(Unscreenable::NotAscii);
        }
        let mut guard_of = [0u8; 128];
        let mut guards = Vec::with_capacity(anchors.len());
        for (anchor, allowed, count, words, behind) in anchors {
            if !anchor.is_ascii()
                || !allowed.is_ascii()
                || !behind.is_ascii()
                || !words.iter().all(|word| word.is_ascii())
            {
                return Err(Unscreenable::NotAscii);
            }
            let mut set = [false; 128];
            for byte in allowed.bytes() {
                set[usize::from(byte)] = true;
            }
            guards.push(Guard {
                allowed: set,
                count: *count,
                words: words.iter().map(|word| word.as_bytes().into()).collect(),
                behind: behind.as_bytes().into(),
            });
            guard_of[*anchor as usize] =
                u8::try_from(guards.len()).map_err(|_| Unscreenable::TooLarge)?;
        }
        let mut looked_at = [false; 128];
        for byte in 0..128u8 {
            looked_at[usize::from(byte)] = guard_of[usize::from(byte)] != 0
                || (cards && (byte.is_ascii_digit() || byte == b' ' || byte == b'-'));
        }
        Ok(Screen {
            names: NameAutomaton::new(names).ok_or(Unscreenable::TooLarge)?,
            empty: names.iter().any(|name| name.is_empty()),
            guard_of,
            guards,
            looked_at,
            cards,
            shortest,
        })
    }

    /// Whether `text` surely holds no key name, escape or credential (`false`: maybe).
    pub fn clear(&self, text: &str) -> bool {
        let bytes = text.as_bytes();
        if !bytes.is_ascii() || spells_by_escape(bytes) || self.empty || self.names_any(bytes) {
            return false;
        }
        bytes.len() < self.shortest || !self.credential_may_start(bytes)
    }

    /// Whether a name occurs in `bytes` as keys are compared: lower case, `_` and `-` left out.
    fn names_any(&self, bytes: &[u8]) -> bool {
        self.names.finds_any(bytes)
    }

    /// Whether a credential may begin in `bytes`: an anchor followed by what its guard
    /// requires, or (card numbers on) a run of digits, spaces and dashes that holds
    /// `CARD_DIGITS` digits or more. Every way the card patterns group a card number's digits
    /// lies inside such a run, so this finds whatever `credentials.may_hold_card` finds.
    /// Only the bytes of `looked_at` are looked at; any other byte between two of them ends
    /// a digit run.
    fn credential_may_start(&self, bytes: &[u8]) -> bool {
        let mut digits = 0;
        let mut at = 0;
        // (`& 0x7f`: the text is ASCII already; it spares the bounds checks)
        while let Some(skipped) = bytes[at..]
            .iter()
            .position(|&byte| self.looked_at[usize::from(byte & 0x7f)])
        {
            at += skipped;
            if skipped > 0 {
                digits = 0;
            }
            let byte = bytes[at];
            let guard = self.guard_of[usize::from(byte & 0x7f)];
            if guard != 0 && self.guards[usize::from(guard - 1)].passes(bytes, at) {
                return true;
            }
            if byte.is_ascii_digit() {
                digits += 1;
                if self.cards && digits >= CARD_DIGITS {
                    return true;
                }
            } else if byte != b' ' && byte != b'-' {
                digits = 0;
            }
            at += 1;
        }
        false
    }
}

/// The key names as one automaton over ASCII bytes (Aho-Corasick, made a full table): a
/// text is read once, a byte a look-up, and `_` and `-` leave the state as it was while an
/// upper-case letter moves as its lower case does, so the text is matched as keys are
/// compared without a normalized copy of it. (Comparing names at each pair of bytes that may
/// begin one cost 48 instructions a byte of a tool span's 141, callgrind; a normalized copy
/// run through the `aho-corasick` crate, 36.)
struct NameAutomaton {
    /// `next[state * 128 + byte]`: the state after `byte`.
    next: Vec<u16>,
    /// Per state, whether a name ends there (or at a state it falls back to).
    found: Vec<bool>,
}

/// The states an automaton may have (its table's entries are `u16`).
const MAX_STATES: usize = 1 << 16;

impl NameAutomaton {
    /// `None` when the names need more than `MAX_STATES` states. The names are normalized
    /// ASCII; an empty one is left out (`Screen::empty` says what it means).
    fn new(names: &[String]) -> Option<NameAutomaton> {
        // the trie: `goto[state * 128 + byte]`, 0 meaning no edge (the root is never a target)
        let mut goto: Vec<u16> = vec![0; 128];
        let mut found = vec![false];
        for name in names.iter().filter(|name| !name.is_empty()) {
            let mut state = 0;
            for &byte in name.as_bytes() {
                let edge = state * 128 + usize::from(byte & 0x7f);
                if goto[edge] == 0 {
                    if found.len() >= MAX_STATES {
                        return None;
                    }
                    goto[edge] = u16::try_from(found.len()).ok()?;
                    found.push(false);
                    goto.extend([0; 128]);
                }
                state = usize::from(goto[edge]);
            }
            found[state] = true;
        }
        // breadth first, each state's missing edges taken from the state it falls back to
        // (already complete: it is nearer the root)
        let mut next = goto;
        let mut fallback = vec![0usize; found.len()];
        let mut queue = std::collections::VecDeque::new();
        queue.extend(
            next[..128]
                .iter()
                .map(|&child| usize::from(child))
                .filter(|&c| c != 0),
        );
        while let Some(state) = queue.pop_front() {
            found[state] = found[state] || found[fallback[state]];
            for byte in 0..128 {
                let child = usize::from(next[state * 128 + byte]);
                let via = next[fallback[state] * 128 + byte];
                if child == 0 {
                    next[state * 128 + byte] = via;
                } else {
                    fallback[child] = usize::from(via);
                    queue.push_back(child);
                }
            }
        }
        // read as keys are compared: separators skipped, upper case as lower case
        for state in 0..found.len() {
            let row = &mut next[state * 128..(state + 1) * 128];
            let itself = u16::try_from(state).ok()?;
            row[usize::from(b'_')] = itself;
            row[usize::from(b'-')] = itself;
            for upper in b'A'..=b'Z' {
                row[usize::from(upper)] = row[usize::from(upper.to_ascii_lowercase())];
            }
        }
        Some(NameAutomaton { next, found })
    }

    /// Whether a name occurs in the ASCII `bytes`, read as keys are compared.
    fn finds_any(&self, bytes: &[u8]) -> bool {
        let mut state = 0;
        for &byte in bytes {
            // (`& 0x7f`: the text is ASCII already; it spares the bounds check)
            state = usize::from(self.next[state * 128 + usize::from(byte & 0x7f)]);
            if self.found[state] {
                return true;
            }
        }
        false
    }
}

/// Whether `bytes` holds an escape that could spell a letter of a name once decoded (`\\u`,
/// `\\U`, `\\x`, `\\N`, an octal digit: `redact._ESCAPE`); `\\n` or `\\"` cannot.
fn spells_by_escape(bytes: &[u8]) -> bool {
    // (`contains` of a byte is one `memchr`: most texts hold no backslash at all)
    bytes.contains(&b'\\')
        && bytes.windows(2).any(|pair| {
            pair[0] == b'\\' && matches!(pair[1], b'u' | b'U' | b'x' | b'N' | b'0'..=b'7')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none() -> String {
        String::new()
    }

    fn screen() -> Screen {
        screen_with(true)
    }

    fn screen_with(cards: bool) -> Screen {
        let alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        let words = vec!["earer".to_string(), "asic".to_string()];
        Screen::new(
            &["password".to_string(), "apikey".to_string()],
            &[
                ('_', format!("{alnum}_+/="), 10, vec![], none()),
                ('-', format!("{alnum}_.-"), 9, vec![], none()),
                ('B', none(), 0, words, none()),
                ('J', none(), 0, vec![], "ey".to_string()),
                ('Q', none(), 0, vec![], none()),
            ],
            cards,
            10,
        )
        .unwrap()
    }

    #[test]
    fn plain_arguments_are_clear() {
        let s = screen();
        assert!(s.clear(r#"{"order_id": "ORD-7731", "amount": 49.99}"#));
        assert!(s.clear("short"));
        assert!(s.clear(""));
    }

    #[test]
    fn names_are_found_without_case_underscores_or_dashes() {
        let s = screen();
        assert!(!s.clear(r#"{"Pass_Word": 1}"#));
        assert!(!s.clear("api-key"));
        assert!(
            !s.clear("apikey"),
            "too short for a credential, still tested for names"
        );
        assert!(s.clear("passwor"));
    }

    #[test]
    fn anchors_that_pass_their_guard_are_not_clear() {
        let s = screen();
        assert!(!s.clear("token sk-abcdefghij rest"));
        assert!(s.clear("a range 5-7 and order_id"));
        assert!(!s.clear("Authorization: Bearer xyz"));
        assert!(!s.clear("header: Basic dXNlcjpwYXNz"));
        assert!(s.clear("Bob and Bill were here, But not Ben"));
        assert!(!s.clear("token eyJhbGciOi rest"));
        assert!(
            s.clear("a Jay walked in, eyes open"),
            "J without ey before it"
        );
        assert!(!s.clear("a Quiet one walked in"), "no guard: always counts");
        assert!(s.clear("a Quiet"), "shorter than any credential");
        assert!(
            s.clear("ends with an anchor -"),
            "a guard past the end fails"
        );
    }

    #[test]
    fn anything_it_does_not_model_is_not_clear() {
        let s = screen();
        assert!(!s.clear("caf\u{e9} latte and more"));
        assert!(!s.clear(r#"{"a": "\u0070"}"#));
        assert!(!s.clear(r#"{"a": "\x70 and \160"}"#));
        assert!(
            s.clear(r#"{"a": "line\nnext \"quoted\""}"#),
            "these spell no letter"
        );
        assert!(!s.clear("card 4111 1111 1111 1111"));
        assert!(!s.clear("n=4111111111111"));
        assert!(s.clear("n=411111111111 x"));
    }

    #[test]
    fn names_or_anchors_beyond_ascii_make_no_screen() {
        let wide = Screen::new(&["stra\u{df}e".to_string()], &[], false, 10);
        assert_eq!(wide.err(), Some(Unscreenable::NotAscii));
        let anchor = Screen::new(&[], &[('\u{e9}', none(), 0, vec![], none())], false, 10);
        assert_eq!(anchor.err(), Some(Unscreenable::NotAscii));
        let word = Screen::new(
            &[],
            &[('B', none(), 0, vec!["\u{e9}".into()], none())],
            false,
            10,
        );
        assert_eq!(word.err(), Some(Unscreenable::NotAscii));
    }

    #[test]
    fn an_empty_name_is_everywhere() {
        let s = Screen::new(&[String::new()], &[], false, 10).unwrap();
        assert!(!s.clear("anything"));
    }

    /// A small deterministic generator (xorshift), for texts the tests below compare on.
    struct Bytes(u64);

    impl Bytes {
        fn pick(&mut self, from: &[u8]) -> u8 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            from[(self.0 % from.len() as u64) as usize]
        }

        fn text(&mut self, from: &[u8], longest: usize) -> String {
            let length = usize::from(self.pick(&[0, 1, 2, 3, 5, 8, 13, 21, 34])).min(longest);
            (0..length).map(|_| char::from(self.pick(from))).collect()
        }
    }

    /// What `names_any` must answer, spelled as directly as it can be.
    fn names_in(names: &[String], text: &str) -> bool {
        let normalized: String = text
            .chars()
            .filter(|&c| c != '_' && c != '-')
            .map(|c| c.to_ascii_lowercase())
            .collect();
        names
            .iter()
            .any(|name| !name.is_empty() && normalized.contains(name.as_str()))
    }

    #[test]
    fn the_automaton_finds_what_a_search_of_the_normalized_text_finds() {
        let mut bytes = Bytes(0x9e37_79b9_7f4a_7c15);
        for _ in 0..300 {
            let count = usize::from(bytes.pick(&[1, 2, 3, 5]));
            let names: Vec<String> = (0..count).map(|_| bytes.text(b"abc", 4)).collect();
            let screen = Screen::new(&names, &[], false, 10).unwrap();
            for _ in 0..60 {
                let text = bytes.text(b"abcABC_-x ", 34);
                assert_eq!(
                    screen.names_any(text.as_bytes()),
                    names_in(&names, &text),
                    "names {names:?}, text {text:?}"
                );
            }
        }
    }

    #[test]
    fn a_name_inside_a_longer_one_that_fails_is_still_found() {
        let names = ["abcd".to_string(), "bce".to_string(), "c".to_string()];
        let s = Screen::new(&names[..2], &[], false, 10).unwrap();
        assert!(
            s.names_any(b"xAB_C-e"),
            "abc fails at e, bce goes on from bc"
        );
        assert!(!s.names_any(b"abcabcab"));
        let single = Screen::new(&names, &[], false, 10).unwrap();
        assert!(single.names_any(b"xxC"), "a name of one byte");
    }

    #[test]
    fn names_the_table_cannot_hold_make_no_screen() {
        let mut bytes = Bytes(7);
        let names: Vec<String> = (0..12_000)
            .map(|_| {
                (0..8)
                    .map(|_| char::from(bytes.pick(b"abcdefghijklmnopqrstuvwxyz")))
                    .collect()
            })
            .collect();
        let screen = Screen::new(&names, &[], false, 10);
        assert_eq!(screen.err(), Some(Unscreenable::TooLarge));
    }

    /// What `credential_may_start` must answer: every byte looked at in turn.
    fn credential_in(s: &Screen, bytes: &[u8]) -> bool {
        let mut digits = 0;
        for (at, &byte) in bytes.iter().enumerate() {
            let guard = s.guard_of[usize::from(byte)];
            if guard != 0 && s.guards[usize::from(guard - 1)].passes(bytes, at) {
                return true;
            }
            if byte.is_ascii_digit() {
                digits += 1;
                if s.cards && digits >= CARD_DIGITS {
                    return true;
                }
            } else if byte != b' ' && byte != b'-' {
                digits = 0;
            }
        }
        false
    }

    #[test]
    fn the_scan_that_skips_bytes_finds_what_a_scan_of_every_byte_finds() {
        let mut bytes = Bytes(0x2545_f491_4f6c_dd1d);
        let alphabet = b"0123456789 -_BJeyax";
        for cards in [true, false] {
            let s = screen_with(cards);
            for _ in 0..20_000 {
                let text = bytes.text(alphabet, 34);
                let long = format!("{text}{}", bytes.text(alphabet, 34));
                for sample in [&text, &long] {
                    assert_eq!(
                        s.credential_may_start(sample.as_bytes()),
                        credential_in(&s, sample.as_bytes()),
                        "{sample:?}, cards {cards}"
                    );
                }
            }
        }
    }
}
