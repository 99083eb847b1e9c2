//! JSON text inside attribute values (tool arguments, GenAI output messages), parsed into the
//! values `orjson.loads` gives, or declined.
//!
//! The Python path parses such text with orjson, and falls back to the standard library's
//! `json` (NaN, integers past 64 bits, text with a run of 19 digits: `model.parse_args`). The
//! core reads only what both would read alike: strict JSON, integers within i64 or u64,
//! finite floats, no lone surrogate, no control character in a string, nesting up to
//! `MAX_DEPTH`. Anything else is `Fallback`, and the span goes to the Python path.
//! Objects keep their members in order, a repeated key included: turned into a Python dict
//! member by member, the key keeps its first position and takes its last value, as orjson's.

use crate::wire::{Fallback, Read};

/// Nesting the core parses at most (orjson's own limit is 1024).
pub const MAX_DEPTH: usize = 64;

#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Int(i64),
    /// An integer past i64 but within u64.
    UInt(u64),
    Float(f64),
    Str(String),
    Array(Vec<Json>),
    /// Members in text order (a repeated key stays repeated: see `get`).
    Object(Vec<(String, Json)>),
}

impl Json {
    /// The value of `key` in an object, as a Python dict answers it: the last one.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(members) => members.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// Whether `text` has a run of 19 ASCII digits (`model._LONG_DIGITS`): the Python path then
/// parses it with the standard library, not orjson.
pub fn has_long_digits(text: &str) -> bool {
    let mut run = 0;
    for b in text.bytes() {
        if b.is_ascii_digit() {
            run += 1;
            if run >= 19 {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
}

/// The value of the JSON text `text`, or `Fallback`.
pub fn parse(text: &str) -> Read<Json> {
    let mut p = Parser {
        text,
        s: text.as_bytes(),
        pos: 0,
    };
    p.ws();
    let value = p.value(0)?;
    p.ws();
    if p.pos != p.s.len() {
        return Err(Fallback);
    }
    Ok(value)
}

struct Parser<'a> {
    text: &'a str,
    s: &'a [u8],
    pos: usize,
}

impl<'a> Parser<'a> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.pos) {
            self.pos += 1;
        }
    }

    fn peek(&self) -> Read<u8> {
        self.s.get(self.pos).copied().ok_or(Fallback)
    }

    fn eat(&mut self, literal: &[u8]) -> Read<()> {
        if self.s[self.pos..].starts_with(literal) {
            self.pos += literal.len();
            Ok(())
        } else {
            Err(Fallback)
        }
    }

    fn value(&mut self, depth: usize) -> Read<Json> {
        match self.peek()? {
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => Ok(Json::Str(self.string()?)),
            b't' => self.eat(b"true").map(|()| Json::Bool(true)),
            b'f' => self.eat(b"false").map(|()| Json::Bool(false)),
            b'n' => self.eat(b"null").map(|()| Json::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(Fallback),
        }
    }

    fn object(&mut self, depth: usize) -> Read<Json> {
        if depth > MAX_DEPTH {
            return Err(Fallback);
        }
        self.pos += 1;
        let mut members = Vec::new();
        self.ws();
        if self.peek()? == b'}' {
            self.pos += 1;
            return Ok(Json::Object(members));
        }
        loop {
            self.ws();
            if self.peek()? != b'"' {
                return Err(Fallback);
            }
            let key = self.string()?;
            self.ws();
            self.eat(b":")?;
            self.ws();
            let value = self.value(depth)?;
            members.push((key, value));
            self.ws();
            match self.peek()? {
                b',' => self.pos += 1,
                b'}' => {
                    self.pos += 1;
                    return Ok(Json::Object(members));
                }
                _ => return Err(Fallback),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Read<Json> {
        if depth > MAX_DEPTH {
            return Err(Fallback);
        }
        self.pos += 1;
        let mut items = Vec::new();
        self.ws();
        if self.peek()? == b']' {
            self.pos += 1;
            return Ok(Json::Array(items));
        }
        loop {
            self.ws();
            items.push(self.value(depth)?);
            self.ws();
            match self.peek()? {
                b',' => self.pos += 1,
                b']' => {
                    self.pos += 1;
                    return Ok(Json::Array(items));
                }
                _ => return Err(Fallback),
            }
        }
    }

    fn string(&mut self) -> Read<String> {
        self.pos += 1; // the opening quote
        let mut out = String::new();
        let mut start = self.pos;
        loop {
            // Skip to the next byte that ends the run of plain characters in one tight scan;
            // the run is then sliced from the `str` (`slice`), and copied once when the string
            // has no escape. Byte by byte, re-validated and grown, reading strings took ~8%
            // more of `Reader.trace_parts`' time (tool arguments, GenAI messages).
            let plain = self.s[self.pos..]
                .iter()
                .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
                .ok_or(Fallback)?;
            self.pos += plain;
            let b = self.peek()?;
            match b {
                b'"' => {
                    let run = self.slice(start)?;
                    self.pos += 1;
                    if out.is_empty() {
                        return Ok(run.to_owned()); // no escape: one allocation of its size
                    }
                    out.push_str(run);
                    return Ok(out);
                }
                b'\\' => {
                    out.push_str(self.slice(start)?);
                    self.pos += 1;
                    let escape = self.peek()?;
                    self.pos += 1;
                    match escape {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => out.push(self.unicode()?),
                        _ => return Err(Fallback),
                    }
                    start = self.pos;
                }
                _ => return Err(Fallback), // a control character
            }
        }
    }

    /// The text from `start` to here: whole UTF-8 characters, since the input is a `str` and
    /// both ends sit next to ASCII bytes: sliced from the `str`, not validated again.
    fn slice(&self, start: usize) -> Read<&'a str> {
        self.text.get(start..self.pos).ok_or(Fallback)
    }

    fn hex4(&mut self) -> Read<u32> {
        let digits = self.s.get(self.pos..self.pos + 4).ok_or(Fallback)?;
        let mut value = 0u32;
        for d in digits {
            let n = (*d as char).to_digit(16).ok_or(Fallback)?;
            value = value * 16 + n;
        }
        self.pos += 4;
        Ok(value)
    }

    /// A `\u` escape (after the `u`): a surrogate pair is one character; a lone surrogate
    /// is `Fallback` (orjson refuses it, the standard library keeps it).
    fn unicode(&mut self) -> Read<char> {
        let first = self.hex4()?;
        if (0xDC00..0xE000).contains(&first) {
            return Err(Fallback);
        }
        if (0xD800..0xDC00).contains(&first) {
            self.eat(b"\\u")?;
            let second = self.hex4()?;
            if !(0xDC00..0xE000).contains(&second) {
                return Err(Fallback);
            }
            let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
            return char::from_u32(code).ok_or(Fallback);
        }
        char::from_u32(first).ok_or(Fallback)
    }

    fn number(&mut self) -> Read<Json> {
        let start = self.pos;
        if self.peek()? == b'-' {
            self.pos += 1;
        }
        match self.peek()? {
            b'0' => self.pos += 1,
            b'1'..=b'9' => self.digits(),
            _ => return Err(Fallback),
        }
        let mut float = false;
        if self.s.get(self.pos) == Some(&b'.') {
            self.pos += 1;
            if !self.peek()?.is_ascii_digit() {
                return Err(Fallback);
            }
            self.digits();
            float = true;
        }
        if let Some(b'e' | b'E') = self.s.get(self.pos) {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.s.get(self.pos) {
                self.pos += 1;
            }
            if !self.peek()?.is_ascii_digit() {
                return Err(Fallback);
            }
            self.digits();
            float = true;
        }
        let text = self.slice(start)?;
        if float {
            let value: f64 = text.parse().map_err(|_| Fallback)?;
            if !value.is_finite() {
                return Err(Fallback); // orjson refuses it; the standard library gives inf
            }
            return Ok(Json::Float(value));
        }
        if let Ok(value) = text.parse::<i64>() {
            return Ok(Json::Int(value));
        }
        // past u64 orjson gives a float and the standard library an int: left to Python
        text.parse::<u64>().map(Json::UInt).map_err(|_| Fallback)
    }

    fn digits(&mut self) {
        while let Some(b'0'..=b'9') = self.s.get(self.pos) {
            self.pos += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_orjson_reads() {
        assert_eq!(
            parse(r#" {"a": [1, -2.5e3, "\u00e9\ud83d\ude00", null, true]} "#),
            Ok(Json::Object(vec![(
                "a".into(),
                Json::Array(vec![
                    Json::Int(1),
                    Json::Float(-2500.0),
                    Json::Str("é😀".into()),
                    Json::Null,
                    Json::Bool(true)
                ])
            )]))
        );
        assert_eq!(
            parse("[\"caf\u{e9} \\\"q\\\" \u{1f600}\", \"\", \"\\n\"]"),
            Ok(Json::Array(vec![
                Json::Str("caf\u{e9} \"q\" \u{1f600}".into()),
                Json::Str(String::new()),
                Json::Str("\n".into()),
            ]))
        );
        assert_eq!(parse("18446744073709551615"), Ok(Json::UInt(u64::MAX)));
        assert_eq!(parse("-0"), Ok(Json::Int(0)));
    }

    #[test]
    fn declines_what_the_parsers_may_read_differently() {
        for text in [
            "18446744073709551616",
            "-9223372036854775809",
            "1e400",
            "NaN",
            r#""\ud800""#,
            r#""\udc00x""#,
            "\"a\u{1}\"",
            "01",
            "1.",
            "[1,]",
            "{\"a\":1}x",
            "\u{c}1",
        ] {
            assert_eq!(parse(text), Err(Fallback), "{text}");
        }
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert_eq!(parse(&deep), Err(Fallback));
        assert!(has_long_digits("{\"a\": 1234567890123456789}"));
        assert!(!has_long_digits("{\"a\": 123456789012345678}"));
    }
}
