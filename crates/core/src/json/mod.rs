//! The scan's NDJSON, written straight into a byte buffer: the bytes
//! `serde_json::to_writer` writes for the same record, several times faster.
//!
//! Nothing here names a key. The shape is defined once, in `shape.rs`: its `shape!` macro
//! makes each struct (with serde's derives, which serde_json and the reader use) and, from the
//! same field list, the struct's [`FastJson`] impl, whose keys are byte literals made by
//! `concat!`. What makes it fast is where serde_json spends on a record of ~90 strings: a
//! string that is printable ASCII with no `"` or `\` (nearly every name, map and server
//! variable) is checked eight bytes at a time and copied whole; small numbers (counts,
//! scores, pings) are written digit by digit; nothing goes through `io::Write`; names with
//! colour codes are stripped straight into the buffer. Everything else is escaped as
//! serde_json escapes (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, `\u00XX` with
//! lower-case hex for the other control characters; U+007F and non-ASCII written as they
//! are); floats and a family's `extra` go through serde_json itself. The tests compare the
//! two byte for byte on every fixture of every family, hostile text and every record shape
//! (`json_shapes.rs`).

use std::borrow::Cow;
use std::net::SocketAddr;

use serde::Serialize;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// True when any byte of `w` is below 0x20, `"` or `\\`, or (`ASCII`) above 0x7F. Exact as
/// a yes/no answer: the subtraction can only borrow out of a byte that already matched.
#[inline]
fn word_is_special<const ASCII: bool>(w: u64) -> bool {
    let control = w.wrapping_sub(ONES * 0x20) & !w;
    let q = w ^ (ONES * u64::from(b'"'));
    let quote = q.wrapping_sub(ONES) & !q;
    let s = w ^ (ONES * u64::from(b'\\'));
    let slash = s.wrapping_sub(ONES) & !s;
    let high = if ASCII { w } else { 0 };
    (control | quote | slash | high) & HIGHS != 0
}

#[inline]
fn byte_is_special<const ASCII: bool>(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\' || (ASCII && b >= 0x80)
}

/// The eight bytes at `at` as a word (`None` past the end).
#[inline]
fn word_at(s: &[u8], at: usize) -> Option<u64> {
    let w: [u8; 8] = s.get(at..at.checked_add(8)?)?.try_into().ok()?;
    Some(u64::from_le_bytes(w))
}

/// True when `s` can be copied between quotes as it is: no byte to escape (and with
/// `ASCII`, none above 0x7F: then any decoding of the bytes is the same text). Eight bytes
/// at a time, the last word overlapping the one before it; four to seven bytes are two
/// overlapping halves in one word.
#[inline]
fn is_plain_as<const ASCII: bool>(s: &[u8]) -> bool {
    let n = s.len();
    if n >= 8 {
        let mut at = 0;
        while at + 8 < n {
            if word_at(s, at).is_none_or(word_is_special::<ASCII>) {
                return false;
            }
            at += 8;
        }
        return !word_at(s, n - 8).is_none_or(word_is_special::<ASCII>);
    }
    if n >= 4 {
        let half = |at: usize| -> Option<u64> {
            let h: [u8; 4] = s.get(at..at + 4)?.try_into().ok()?;
            Some(u64::from(u32::from_le_bytes(h)))
        };
        return match (half(0), half(n - 4)) {
            (Some(lo), Some(hi)) => !word_is_special::<ASCII>(lo << 32 | hi),
            _ => false,
        };
    }
    !s.iter().any(|&b| byte_is_special::<ASCII>(b))
}

/// [`is_plain_as`] for text: no byte to escape.
#[inline]
fn is_plain(s: &[u8]) -> bool {
    is_plain_as::<false>(s)
}

/// [`is_plain_as`] for bytes: printable ASCII with nothing to escape.
#[inline]
pub(crate) fn is_plain_ascii(s: &[u8]) -> bool {
    is_plain_as::<true>(s)
}

/// Writes `s` as a JSON string, quotes included, escaped as serde_json escapes.
#[inline]
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    if is_plain(bytes) {
        out.reserve(bytes.len() + 2);
        out.push(b'"');
        out.extend_from_slice(bytes);
        out.push(b'"');
    } else {
        write_escaped(out, bytes);
    }
}

/// Plain bytes between quotes (checked by the caller with [`is_plain_ascii`]).
#[inline]
pub(crate) fn write_quoted(out: &mut Vec<u8>, bytes: &[u8]) {
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    out.extend_from_slice(bytes);
    out.push(b'"');
}

/// A string with something to escape, quotes included (UTF-8 bytes: every byte that needs
/// an escape is ASCII, so the runs between them stay whole characters).
#[cold]
fn write_escaped(out: &mut Vec<u8>, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if !byte_is_special::<false>(b) {
            continue;
        }
        out.extend_from_slice(bytes.get(start..i).unwrap_or_default());
        start = i + 1;
        let short = match b {
            b'"' => b'"',
            b'\\' => b'\\',
            0x08 => b'b',
            0x0C => b'f',
            b'\n' => b'n',
            b'\r' => b'r',
            b'\t' => b't',
            _ => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 0xF)]);
                continue;
            }
        };
        out.push(b'\\');
        out.push(short);
    }
    out.extend_from_slice(bytes.get(start..).unwrap_or_default());
    out.push(b'"');
}

pub(crate) fn write_u64(out: &mut Vec<u8>, n: u64) {
    // Counts, scores and pings are nearly always under 100: their digits are written
    // directly, not formatted and copied.
    match u8::try_from(n) {
        Ok(d @ 0..=9) => out.push(b'0' + d),
        Ok(d @ 10..=99) => out.extend_from_slice(&[b'0' + d / 10, b'0' + d % 10]),
        _ => out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes()),
    }
}

fn write_i64(out: &mut Vec<u8>, n: i64) {
    match u64::try_from(n) {
        Ok(n) => write_u64(out, n),
        Err(_) => out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes()),
    }
}

/// A float, through serde_json itself (one per record, `rtt_ms`): its digits are whatever
/// its float formatter writes (`null` for the non-finite).
pub(crate) fn write_float(out: &mut Vec<u8>, v: f64) {
    write_serde(out, &v);
}

/// Anything else (a family's `extra`, an address), through serde_json; a value it cannot
/// write (a map with keys that are not strings) is `null`, nothing half-written. (serde_json
/// itself refuses the whole record then: such an extra is a family's bug.)
pub(crate) fn write_serde<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    let start = out.len();
    if serde_json::to_writer(&mut *out, v).is_err() {
        out.truncate(start);
        out.extend_from_slice(b"null");
    }
}

/// A value written as serde_json writes it, without serde's per-field work. Implemented
/// for the field types of the shapes (`shape.rs`) and, by its `shape!` macro, for the
/// shapes themselves.
pub(crate) trait FastJson {
    /// Appends the value's JSON.
    fn write_json(&self, out: &mut Vec<u8>);
}

impl FastJson for u32 {
    #[inline]
    fn write_json(&self, out: &mut Vec<u8>) {
        write_u64(out, u64::from(*self));
    }
}

impl FastJson for i32 {
    #[inline]
    fn write_json(&self, out: &mut Vec<u8>) {
        write_i64(out, i64::from(*self));
    }
}

impl FastJson for bool {
    #[inline]
    fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(if *self { b"true" } else { b"false" });
    }
}

impl FastJson for f64 {
    fn write_json(&self, out: &mut Vec<u8>) {
        write_float(out, *self);
    }
}

impl FastJson for Cow<'_, str> {
    #[inline]
    fn write_json(&self, out: &mut Vec<u8>) {
        write_str(out, self);
    }
}

impl FastJson for Cow<'_, [String]> {
    fn write_json(&self, out: &mut Vec<u8>) {
        out.push(b'[');
        for (i, s) in self.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_str(out, s);
        }
        out.push(b']');
    }
}

impl FastJson for SocketAddr {
    fn write_json(&self, out: &mut Vec<u8>) {
        write_serde(out, self);
    }
}

impl<T: FastJson> FastJson for Option<T> {
    #[inline]
    fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Some(v) => v.write_json(out),
            None => out.extend_from_slice(b"null"),
        }
    }
}

#[cfg(test)]
mod tests;
