//! Maps and sets of fixed keys (the rules' attribute keys, span names and marker values, the
//! converter's interest), and the check that a span names no attribute key twice.
//!
//! Every attribute of every span is looked up in such maps. std's default hasher, SipHash-1-3
//! keyed at random, is built for maps whose keys an attacker may choose (HashDoS); it was 18% of
//! `Reader.trace_parts`'s instructions (callgrind, the GenAI dump of `bench_eval.py`: 812,838
//! hashes for 20,000 spans, about 100 instructions each). These maps are filled once from
//! trusted text (`rules.json`, the converter's `INTEREST`) and only looked up with a span's
//! keys, so an attacker cannot lengthen their probe sequences: a lookup of any key costs at
//! most the probes of a table of the rules' keys. So they hash with `KeyHasher`, a few
//! instructions per 8 bytes. A map that input fills (span ids, call ids, strings made) keeps
//! std's keyed hasher.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A multiply-rotate hash over 8-byte words, finished by an xor-shift-multiply mix so that the
/// low bits (a table's bucket) depend on every byte.
#[derive(Clone, Copy, Default)]
pub struct KeyHasher(u64);

/// An odd constant with well-spread bits: 2^64 divided by the golden ratio.
const SPREAD: u64 = 0x9e37_79b9_7f4a_7c15;
/// The finishing multiplier (an odd constant of the same kind).
const MIX: u64 = 0xff51_afd7_ed55_8ccd;

impl KeyHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SPREAD);
    }
}

impl Hasher for KeyHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for eight in &mut words {
            self.add(word(eight));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            // The length in the top byte: "ab" and "ab\0" differ.
            self.add(short_word(rest) ^ ((rest.len() as u64) << 56));
        }
    }

    #[inline]
    fn write_u8(&mut self, byte: u8) {
        self.add(u64::from(byte));
    }

    #[inline]
    fn finish(&self) -> u64 {
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(MIX);
        h ^ (h >> 29)
    }
}

/// How the maps of fixed keys hash.
pub type FixedKeys = BuildHasherDefault<KeyHasher>;
/// A map of fixed keys (see the module's text).
pub type KeyMap<K, V> = HashMap<K, V, FixedKeys>;
/// A set of fixed keys (see the module's text).
pub type KeySet<K> = HashSet<K, FixedKeys>;

/// The 8 bytes of `bytes` (exactly 8) as a number.
#[inline]
fn word(bytes: &[u8]) -> u64 {
    let mut eight = [0u8; 8];
    eight.copy_from_slice(bytes);
    u64::from_le_bytes(eight)
}

/// Up to 7 bytes as a number, byte by byte: a copy of a slice of variable length would be a
/// call to `memcpy` for every key.
#[inline]
fn short_word(bytes: &[u8]) -> u64 {
    let mut word = 0u64;
    for (at, byte) in bytes.iter().enumerate() {
        word ^= u64::from(*byte) << (8 * at);
    }
    word
}

/// A number that tells most keys apart at the cost of two loads: the length, the first and
/// the last 8 bytes (a short key's bytes one by one). Keys with equal numbers are told apart
/// by their texts, so it needs to be fast, not distinct.
#[inline]
fn sort_key(key: &str) -> u64 {
    let bytes = key.as_bytes();
    let n = bytes.len();
    let (head, tail) = if n >= 8 {
        (word(&bytes[..8]), word(&bytes[n - 8..]))
    } else {
        (short_word(bytes), 0)
    };
    head ^ tail.rotate_left(23) ^ ((n as u64) << 40)
}

/// Whether any key occurs twice among `keys`. Sorted by `sort_key` first, then by text among
/// equal numbers, so that equal keys lie side by side and the texts (which share long
/// prefixes such as `gen_ai.`) are compared only when two numbers are equal: sorting the
/// texts themselves was 6% of `Reader.trace_parts`'s instructions.
pub fn has_repeated_key<'k>(keys: impl Iterator<Item = &'k str>) -> bool {
    let mut keyed: Vec<(u64, &str)> = keys.map(|key| (sort_key(key), key)).collect();
    if keyed.len() < 2 {
        return false;
    }
    keyed.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
    keyed.windows(2).any(|w| w[0] == w[1])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::Hash;

    /// The `KeyHasher` hash of one key, as a map of fixed keys hashes it.
    fn hash_of(key: &str) -> u64 {
        let mut hasher = KeyHasher::default();
        key.hash(&mut hasher);
        hasher.finish()
    }

    #[test]
    fn finds_a_repeated_key_wherever_it_lies() {
        assert!(!has_repeated_key(
            ["a", "b", "gen_ai.tool.name"].into_iter()
        ));
        assert!(has_repeated_key(
            ["gen_ai.tool.name", "x", "y", "gen_ai.tool.name"].into_iter()
        ));
        assert!(has_repeated_key(["", ""].into_iter()));
        assert!(!has_repeated_key(["only"].into_iter()));
        assert!(!has_repeated_key(std::iter::empty()));
        // Equal sort numbers (same length, first and last 8 bytes), different texts.
        let (a, b) = ("gen_ai.input.x.messages", "gen_ai.input.y.messages");
        assert_eq!(sort_key(a), sort_key(b));
        assert!(!has_repeated_key([a, b].into_iter()));
        assert!(has_repeated_key([a, b, "z", a].into_iter()));
        assert!(has_repeated_key([b, a, b].into_iter()));
    }

    #[test]
    fn texts_that_differ_in_length_or_one_byte_hash_apart() {
        let keys = [
            "ab",
            "ab\0",
            "gen_ai.tool.name",
            "gen_ai.tool.type",
            "gen_ai.tool.names",
        ];
        let hashes: HashSet<u64> = keys.iter().map(|k| hash_of(k)).collect();
        assert_eq!(hashes.len(), keys.len());
    }

    #[test]
    fn a_map_of_fixed_keys_finds_each_and_nothing_else() {
        let map: KeyMap<String, usize> = (0..500).map(|n| (format!("key.{n}"), n)).collect();
        for n in 0..500 {
            assert_eq!(map.get(format!("key.{n}").as_str()), Some(&n));
        }
        assert_eq!(map.get("key.500"), None);
        assert_eq!(map.get(""), None);
    }

    #[test]
    fn the_buckets_of_similar_keys_spread() {
        // The low 4 bits pick among 16 buckets: keys that differ in one late byte must not
        // all fall into one of them.
        let buckets: HashSet<u64> = (b'a'..=b'z')
            .map(|c| hash_of(&format!("gen_ai.request.{}", c as char)) & 15)
            .collect();
        assert!(buckets.len() >= 10, "{buckets:?}");
    }
}
