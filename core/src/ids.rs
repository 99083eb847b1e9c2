//! Trace and span ids as text: the lowercase hex Python holds them as, and a span id's 8
//! bytes as one `u64` (how the facts mode keeps them, `py/parts.rs`, `collect.rs`). Apart
//! from the bindings so that the collector's ids and the builder's read the same.

/// `id` (at most 16 bytes: the longest id) as lowercase hex, written into `buf`.
pub fn hex_text<'b>(id: &[u8], buf: &'b mut [u8; 32]) -> &'b str {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let n = id.len().min(16);
    for (i, byte) in id[..n].iter().enumerate() {
        buf[2 * i] = DIGITS[usize::from(byte >> 4)];
        buf[2 * i + 1] = DIGITS[usize::from(byte & 15)];
    }
    std::str::from_utf8(&buf[..2 * n]).expect("hex digits are ASCII")
}

/// A span id as text: 16 hex digits, `""` for none.
pub fn id_hex(id: u64) -> String {
    let mut buf = [0u8; 32];
    hex_text(id_bytes(&id.to_be_bytes(), id), &mut buf).to_owned()
}

/// The bytes of id number `id` (`bytes`, its big-endian form), none for `0` (no id).
pub fn id_bytes(bytes: &[u8; 8], id: u64) -> &[u8] {
    if id == 0 {
        &[]
    } else {
        bytes
    }
}

/// An id's 8 bytes as a `u64` (big-endian, so its hex is the bytes' hex); `0`: none.
pub fn id_number(bytes: &[u8]) -> u64 {
    let mut buf = [0u8; 8];
    let n = bytes.len().min(8);
    buf[..n].copy_from_slice(&bytes[..n]);
    u64::from_be_bytes(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_read_as_their_bytes_hex() {
        let bytes = [0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd];
        let id = id_number(&bytes);
        assert_eq!(id_hex(id), "0af7651916cd43dd");
        assert_eq!(id_hex(0), "");
        assert_eq!(id_number(&[]), 0);
    }
}
