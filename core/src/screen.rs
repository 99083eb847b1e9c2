//! Redaction's first look, compiled: whether a text surely holds nothing to hide.
//!
//! `tooltrail.redact.Redaction` screens every string of a tool span (and of a span a receiver
//! dumps) before it parses anything: a configured key's name, an escape that could spell one,
//! or a credential shape's anchor that passes its guard send the text to the full redaction.
//! The Python screen is several scans of the text by `re` and `str` plus the interpreter's
//! work around them (3.4 us for a tool span's 140 characters); this is two passes over its
//! bytes (0.7 us with the call). It is conservative, never exact: `clear` answers
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
        bytes[..at].ends_with(&self.behind)
            && after.len() >= self.count
            && after[..self.count]
                .iter()
                .all(|&next| self.allowed[usize::from(next)])
            && (self.words.is_empty() || self.words.iter().any(|word| after.starts_with(word)))
    }
}

/// An anchor as Python hands it over: `(anchor, allowed, count, words, behind)`.
pub type Anchor = (char, String, usize, Vec<String>, String);

/// The compiled first look of one `Redaction`.
pub struct Screen {
    /// The normalized key names (lower case, without `_` and `-`) by their first byte, and
    /// per first byte the second bytes they go on with (a bit per byte; a name of one byte
    /// sets them all): a text's pairs of bytes are looked up once each, and names are compared
    /// only where one of them begins with the pair.
    names: Vec<Vec<Box<[u8]>>>,
    seconds: [u128; 128],
    /// A name that normalizes to nothing, which every text holds.
    empty: bool,
    /// Per ASCII byte, 1 + the index of its guard in `guards` when it is a credential anchor.
    guard_of: [u8; 128],
    guards: Vec<Guard>,
    /// Whether card numbers are looked for.
    cards: bool,
    /// No credential is shorter: a shorter text is tested for names only.
    shortest: usize,
}

/// Why a `Screen` cannot be made: a name or anchor beyond ASCII (the Python screen then
/// runs alone).
#[derive(Debug, PartialEq, Eq)]
pub struct NotAscii;

/// The fewest digits of a card number (ISO/IEC 7812).
const CARD_DIGITS: usize = 13;

impl Screen {
    /// `anchors`: each anchor character of the chosen shapes with its guard.
    pub fn new(
        names: &[String],
        anchors: &[Anchor],
        cards: bool,
        shortest: usize,
    ) -> Result<Screen, NotAscii> {
        if !names.iter().all(|name| name.is_ascii()) {
            return Err(NotAscii);
        }
        let mut guard_of = [0u8; 128];
        let mut guards = Vec::with_capacity(anchors.len());
        for (anchor, allowed, count, words, behind) in anchors {
            if !anchor.is_ascii()
                || !allowed.is_ascii()
                || !behind.is_ascii()
                || !words.iter().all(|word| word.is_ascii())
            {
                return Err(NotAscii);
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
            guard_of[*anchor as usize] = u8::try_from(guards.len()).map_err(|_| NotAscii)?;
        }
        let mut by_first: Vec<Vec<Box<[u8]>>> = (0..128).map(|_| Vec::new()).collect();
        let mut seconds = [0u128; 128];
        for name in names.iter().filter(|name| !name.is_empty()) {
            let bytes = name.as_bytes();
            let first = usize::from(bytes[0]);
            by_first[first].push(bytes.into());
            seconds[first] |= bytes.get(1).map_or(u128::MAX, |&second| 1u128 << second);
        }
        Ok(Screen {
            names: by_first,
            seconds,
            empty: names.iter().any(|name| name.is_empty()),
            guard_of,
            guards,
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
        let mut normalized = Vec::with_capacity(bytes.len());
        for &byte in bytes {
            if byte != b'_' && byte != b'-' {
                normalized.push(byte.to_ascii_lowercase());
            }
        }
        (0..normalized.len()).any(|at| {
            let first = usize::from(normalized[at]);
            // past the end a name of one byte may still match: every bit is set for it
            let second = normalized
                .get(at + 1)
                .map_or(u128::MAX, |&byte| 1u128 << byte);
            self.seconds[first] & second != 0
                && self.names[first]
                    .iter()
                    .any(|name| normalized[at..].starts_with(name))
        })
    }

    /// Whether a credential may begin in `bytes`: an anchor followed by what its guard
    /// requires, or (card numbers on) a run of digits, spaces and dashes that holds
    /// `CARD_DIGITS` digits or more. Every way the card patterns group a card number's digits
    /// lies inside such a run, so this finds whatever `credentials.may_hold_card` finds.
    fn credential_may_start(&self, bytes: &[u8]) -> bool {
        let mut digits = 0;
        for (at, &byte) in bytes.iter().enumerate() {
            let guard = self.guard_of[usize::from(byte)];
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
            true,
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
        assert_eq!(wide.err(), Some(NotAscii));
        let anchor = Screen::new(&[], &[('\u{e9}', none(), 0, vec![], none())], false, 10);
        assert_eq!(anchor.err(), Some(NotAscii));
        let word = Screen::new(
            &[],
            &[('B', none(), 0, vec!["\u{e9}".into()], none())],
            false,
            10,
        );
        assert_eq!(word.err(), Some(NotAscii));
    }

    #[test]
    fn an_empty_name_is_everywhere() {
        let s = Screen::new(&[String::new()], &[], false, 10).unwrap();
        assert!(!s.clear("anything"));
    }
}
