//! Reading untrusted datagrams: a cursor that never indexes and always says which field
//! failed at which byte offset, and the [`DecodeError`] every family codec returns.
//!
//! Text protocols (Quake III out-of-band, Teeworlds 0.6's decimal strings) and binary ones
//! (idTech 4 and ETQW little-endian, Teeworlds 0.7 varints) use the same reader.
//!
//! ```
//! use fragstat_core::wire::{DecodeError, Reader};
//! let mut r = Reader::new(b"\x01\x02\x00\x00name\0abc");
//! assert_eq!(r.u16_le("slot")?, 0x0201);
//! assert_eq!(r.u16_be("pad")?, 0);
//! assert_eq!(r.cstr("name")?, b"name");
//! assert_eq!(r.offset(), 9);
//! let err = r.u32_le("rate").unwrap_err();
//! assert_eq!((err.kind(), err.field(), err.offset()), ("truncated", Some("rate"), 9));
//! # Ok::<(), DecodeError>(())
//! ```

pub use crate::encode::{Encode, EncodeError};

/// Why a datagram could not be decoded. Offsets are absolute byte positions in the datagram.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The datagram does not start with the family's header.
    #[error("bad header at offset 0: expected {expected:02x?}, found {found:02x?}")]
    BadHeader {
        /// The header the family expects.
        expected: &'static [u8],
        /// The first bytes actually found (at most as many as expected).
        found: Vec<u8>,
    },
    /// The command word or packet type is not one this codec knows.
    #[error(
        "unknown command {:?} at offset {offset}",
        String::from_utf8_lossy(command)
    )]
    UnknownCommand {
        /// Offset of the command.
        offset: usize,
        /// The command found (at most 32 bytes).
        command: Vec<u8>,
    },
    /// The command is known but is not the one the caller expected.
    #[error(
        "unexpected command {:?} at offset {offset}, expected {expected}",
        String::from_utf8_lossy(command)
    )]
    UnexpectedCommand {
        /// Offset of the command.
        offset: usize,
        /// The command found.
        command: Vec<u8>,
        /// What the caller asked for.
        expected: &'static str,
    },
    /// The datagram ended inside a field.
    #[error("truncated {field} at offset {offset}: needed {needed} bytes, {available} left")]
    Truncated {
        /// The field being read.
        field: &'static str,
        /// Where it starts.
        offset: usize,
        /// Bytes it needs.
        needed: usize,
        /// Bytes that were left.
        available: usize,
    },
    /// A field is missing altogether (a terminator never came).
    #[error("missing {field} at offset {offset}")]
    Missing {
        /// The field expected.
        field: &'static str,
        /// Where it was expected.
        offset: usize,
    },
    /// A number field is not a valid decimal integer in range.
    #[error(
        "bad number in {field} at offset {offset}: {:?}",
        String::from_utf8_lossy(text)
    )]
    BadNumber {
        /// The field.
        field: &'static str,
        /// Offset of the field.
        offset: usize,
        /// The text found (at most 32 bytes).
        text: Vec<u8>,
    },
    /// A field holds a value the protocol does not allow.
    #[error("bad {field} at offset {offset}: {reason}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// Offset of the offending byte or field.
        offset: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// A count read from the wire is above what the protocol allows (checked before looping
    /// or allocating).
    #[error("too many {field} at offset {offset}: {count}, at most {max}")]
    TooMany {
        /// The counted field.
        field: &'static str,
        /// Offset of the count (or of the element over the limit).
        offset: usize,
        /// The count found.
        count: u64,
        /// The largest allowed.
        max: u64,
    },
    /// A version or variant this codec does not know how to read (never guessed).
    #[error("unsupported {field} at offset {offset}: {value}")]
    Unsupported {
        /// The field (e.g. `protocol`).
        field: &'static str,
        /// Offset of the field.
        offset: usize,
        /// The value found, readable.
        value: String,
    },
}

impl DecodeError {
    /// The byte offset the error refers to.
    pub fn offset(&self) -> usize {
        match self {
            DecodeError::BadHeader { .. } => 0,
            DecodeError::UnknownCommand { offset, .. }
            | DecodeError::UnexpectedCommand { offset, .. }
            | DecodeError::Truncated { offset, .. }
            | DecodeError::Missing { offset, .. }
            | DecodeError::BadNumber { offset, .. }
            | DecodeError::Invalid { offset, .. }
            | DecodeError::TooMany { offset, .. }
            | DecodeError::Unsupported { offset, .. } => *offset,
        }
    }

    /// A stable name for the kind of error (`truncated`, `bad_number`…), as fixtures and the
    /// CLI's JSON spell it.
    pub fn kind(&self) -> &'static str {
        match self {
            DecodeError::BadHeader { .. } => "bad_header",
            DecodeError::UnknownCommand { .. } => "unknown_command",
            DecodeError::UnexpectedCommand { .. } => "unexpected_command",
            DecodeError::Truncated { .. } => "truncated",
            DecodeError::Missing { .. } => "missing",
            DecodeError::BadNumber { .. } => "bad_number",
            DecodeError::Invalid { .. } => "invalid",
            DecodeError::TooMany { .. } => "too_many",
            DecodeError::Unsupported { .. } => "unsupported",
        }
    }

    /// The field that failed, where the error names one.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            DecodeError::BadHeader { .. } => Some("header"),
            DecodeError::UnknownCommand { .. } | DecodeError::UnexpectedCommand { .. } => {
                Some("command")
            }
            DecodeError::Truncated { field, .. }
            | DecodeError::Missing { field, .. }
            | DecodeError::BadNumber { field, .. }
            | DecodeError::Invalid { field, .. }
            | DecodeError::TooMany { field, .. }
            | DecodeError::Unsupported { field, .. } => Some(field),
        }
    }

    /// The same error with every offset moved by `base` (for a codec that decodes a slice
    /// starting at `base` in the datagram).
    pub fn shifted(mut self, base: usize) -> Self {
        match &mut self {
            DecodeError::BadHeader { .. } => {}
            DecodeError::UnknownCommand { offset, .. }
            | DecodeError::UnexpectedCommand { offset, .. }
            | DecodeError::Truncated { offset, .. }
            | DecodeError::Missing { offset, .. }
            | DecodeError::BadNumber { offset, .. }
            | DecodeError::Invalid { offset, .. }
            | DecodeError::TooMany { offset, .. }
            | DecodeError::Unsupported { offset, .. } => *offset += base,
        }
        self
    }
}

/// Copies at most 32 bytes of `text` for an error message.
pub fn excerpt(text: &[u8]) -> Vec<u8> {
    text.iter().take(32).copied().collect()
}

/// Parses a decimal `i32` (optional sign, at most 10 digits, no spaces) or fails naming
/// `field` at `offset`.
pub fn decimal_i32(text: &[u8], field: &'static str, offset: usize) -> Result<i32, DecodeError> {
    let bad = || DecodeError::BadNumber {
        field,
        offset,
        text: excerpt(text),
    };
    let (neg, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, text),
    };
    if digits.is_empty() || digits.len() > 10 {
        return Err(bad());
    }
    // One pass: at most 10 digits fit an i64 whatever they are.
    let mut v: i64 = 0;
    for &d in digits {
        let digit = d.wrapping_sub(b'0');
        if digit > 9 {
            return Err(bad());
        }
        v = v * 10 + i64::from(digit);
    }
    if neg {
        v = -v;
    }
    i32::try_from(v).map_err(|_| bad())
}

/// The positions of `needle` in `hay`, in order, found eight bytes at a time.
///
/// For text made of short fields (infostrings, status lines: a separator every few bytes),
/// where a vectorised search pays its setup again for every field.
///
/// ```
/// let p: Vec<usize> = fragstat_core::wire::positions(b"\\a\\bc\\\\d", b'\\').collect();
/// assert_eq!(p, [0, 2, 5, 6]);
/// ```
pub fn positions(hay: &[u8], needle: u8) -> Positions<'_> {
    Positions {
        hay,
        pattern: u64::from_le_bytes([needle; 8]),
        base: 0,
        next: 0,
        mask: 0,
    }
}

/// The iterator of [`positions`].
#[derive(Debug, Clone)]
pub struct Positions<'a> {
    hay: &'a [u8],
    pattern: u64,
    /// Where the word of `mask` starts.
    base: usize,
    /// Where the next word starts.
    next: usize,
    /// One high bit per byte of the current word that matched and is not yet reported.
    mask: u64,
}

impl Iterator for Positions<'_> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
        loop {
            if self.mask != 0 {
                let at = self.base + (self.mask.trailing_zeros() / 8) as usize;
                self.mask &= self.mask - 1;
                return Some(at);
            }
            let rest = self.hay.get(self.next..).filter(|r| !r.is_empty())?;
            let (word, n) = match rest.first_chunk::<8>() {
                Some(w) => (u64::from_le_bytes(*w), 8),
                None => {
                    // The last few bytes, one by one (a copy of variable length is a call).
                    let mut w = [0u8; 8];
                    for (d, s) in w.iter_mut().zip(rest) {
                        *d = *s;
                    }
                    (u64::from_le_bytes(w), rest.len())
                }
            };
            let x = word ^ self.pattern;
            // Exactly the zero bytes of `x` (no borrow between bytes): their high bit set.
            let mut zero = !(((x & LOW7) + LOW7) | x | LOW7);
            if n < 8 {
                zero &= (1u64 << (8 * n)) - 1;
            }
            self.base = self.next;
            self.next += n;
            self.mask = zero;
        }
    }
}

/// Checks a count read from the wire against the protocol's maximum before anything loops
/// over it or allocates for it.
pub fn bounded(
    count: u64,
    max: u64,
    field: &'static str,
    offset: usize,
) -> Result<usize, DecodeError> {
    if count > max {
        return Err(DecodeError::TooMany {
            field,
            offset,
            count,
            max,
        });
    }
    usize::try_from(count).map_err(|_| DecodeError::TooMany {
        field,
        offset,
        count,
        max: usize::MAX as u64,
    })
}

/// A cursor over a datagram. Every read is bounds-checked; offsets are absolute in the
/// datagram (or from `base`, see [`Reader::with_base`]).
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

macro_rules! fixed {
    ($($(#[$doc:meta])* $name:ident -> $ty:ty, $n:literal, $conv:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(&mut self, field: &'static str) -> Result<$ty, DecodeError> {
            Ok(<$ty>::$conv(self.array::<$n>(field)?))
        }
    )*};
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Reader {
            buf,
            pos: 0,
            base: 0,
        }
    }

    /// A reader over `buf`, which starts at absolute offset `base` in the datagram: offsets
    /// in errors and from [`Reader::offset`] are absolute.
    pub fn with_base(buf: &'a [u8], base: usize) -> Self {
        Reader { buf, pos: 0, base }
    }

    /// Absolute offset of the next unread byte.
    pub fn offset(&self) -> usize {
        self.base + self.pos
    }

    /// The unread bytes.
    pub fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or_default()
    }

    /// Number of unread bytes.
    pub fn remaining(&self) -> usize {
        self.rest().len()
    }

    /// True when every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.rest().is_empty()
    }

    /// The next byte, not consumed.
    pub fn peek(&self) -> Option<u8> {
        self.rest().first().copied()
    }

    /// Takes exactly `n` bytes or fails naming `field`.
    pub fn take(&mut self, field: &'static str, n: usize) -> Result<&'a [u8], DecodeError> {
        match self.rest().split_at_checked(n) {
            Some((head, _)) => {
                self.pos += n;
                Ok(head)
            }
            None => Err(DecodeError::Truncated {
                field,
                offset: self.offset(),
                needed: n,
                available: self.remaining(),
            }),
        }
    }

    /// Takes exactly `N` bytes as an array (a fixed-size field: an address, a port, a
    /// challenge) or fails naming `field`.
    pub fn array<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], DecodeError> {
        match self.rest().first_chunk::<N>() {
            Some(a) => {
                self.pos += N;
                Ok(*a)
            }
            None => Err(DecodeError::Truncated {
                field,
                offset: self.offset(),
                needed: N,
                available: self.remaining(),
            }),
        }
    }

    /// Takes the next `len` bytes as a reader of their own (a length-prefixed block): it
    /// cannot read past the block, and its offsets stay absolute. Fails naming `field` when
    /// fewer than `len` bytes are left.
    pub fn sub(&mut self, field: &'static str, len: usize) -> Result<Reader<'a>, DecodeError> {
        let base = self.offset();
        let block = self.take(field, len)?;
        Ok(Reader::with_base(block, base))
    }

    /// Takes everything that is left.
    pub fn take_rest(&mut self) -> &'a [u8] {
        let r = self.rest();
        self.pos += r.len();
        r
    }

    /// Consumes `prefix` if the unread bytes start with it.
    pub fn eat(&mut self, prefix: &[u8]) -> bool {
        if self.rest().starts_with(prefix) {
            self.pos += prefix.len();
            true
        } else {
            false
        }
    }

    /// Consumes `expected` or fails with [`DecodeError::Invalid`] naming `field`.
    pub fn expect(
        &mut self,
        field: &'static str,
        expected: &[u8],
        reason: &'static str,
    ) -> Result<(), DecodeError> {
        if self.eat(expected) {
            return Ok(());
        }
        if self.remaining() < expected.len() && expected.starts_with(self.rest()) {
            return Err(DecodeError::Truncated {
                field,
                offset: self.offset(),
                needed: expected.len(),
                available: self.remaining(),
            });
        }
        Err(DecodeError::Invalid {
            field,
            offset: self.offset(),
            reason,
        })
    }

    /// Takes bytes while `pred` holds.
    pub fn take_while(&mut self, pred: impl Fn(u8) -> bool) -> &'a [u8] {
        let rest = self.rest();
        let n = rest.iter().position(|&b| !pred(b)).unwrap_or(rest.len());
        let (head, _) = rest.split_at(n);
        self.pos += n;
        head
    }

    /// Takes bytes up to the next `delim` and consumes the delimiter; fails with
    /// [`DecodeError::Missing`] (`field` terminator) when there is none.
    pub fn until(&mut self, field: &'static str, delim: u8) -> Result<&'a [u8], DecodeError> {
        let rest = self.rest();
        match rest.iter().position(|&b| b == delim) {
            Some(n) => {
                let (head, _) = rest.split_at(n);
                self.pos += n + 1;
                Ok(head)
            }
            None => Err(DecodeError::Missing {
                field,
                offset: self.offset() + rest.len(),
            }),
        }
    }

    /// A NUL-terminated string (the NUL consumed, not returned).
    pub fn cstr(&mut self, field: &'static str) -> Result<&'a [u8], DecodeError> {
        self.until(field, 0)
    }

    /// A NUL-terminated string of at most `max` bytes before the NUL.
    pub fn cstr_max(&mut self, field: &'static str, max: usize) -> Result<&'a [u8], DecodeError> {
        let start = self.offset();
        let s = self.cstr(field)?;
        if s.len() > max {
            return Err(DecodeError::TooMany {
                field,
                offset: start,
                count: s.len() as u64,
                max: max as u64,
            });
        }
        Ok(s)
    }

    /// One byte.
    pub fn u8(&mut self, field: &'static str) -> Result<u8, DecodeError> {
        let b = self.take(field, 1)?;
        Ok(b.first().copied().unwrap_or(0))
    }

    fixed! {
        /// A little-endian `u16`.
        u16_le -> u16, 2, from_le_bytes;
        /// A big-endian `u16`.
        u16_be -> u16, 2, from_be_bytes;
        /// A little-endian `u32`.
        u32_le -> u32, 4, from_le_bytes;
        /// A big-endian `u32`.
        u32_be -> u32, 4, from_be_bytes;
        /// A little-endian `i32`.
        i32_le -> i32, 4, from_le_bytes;
        /// A big-endian `i32`.
        i32_be -> i32, 4, from_be_bytes;
        /// A little-endian `u64`.
        u64_le -> u64, 8, from_le_bytes;
        /// A big-endian `u64`.
        u64_be -> u64, 8, from_be_bytes;
        /// A little-endian IEEE 754 `f32`.
        f32_le -> f32, 4, from_le_bytes;
        /// A big-endian IEEE 754 `f32`.
        f32_be -> f32, 4, from_be_bytes;
    }

    /// A Teeworlds 0.7 variable-length integer (`CVariableInt`): the first byte holds an
    /// extension bit (0x80), the sign (0x40) and 6 bits; each further byte an extension bit
    /// and 7 bits, at most 5 bytes in all. Overlong encodings and values beyond 32 bits fail.
    pub fn varint(&mut self, field: &'static str) -> Result<i32, DecodeError> {
        let start = self.offset();
        let first = self.u8(field)?;
        let sign = (first >> 6) & 1;
        let mut value = u32::from(first & 0x3F);
        let mut more = first & 0x80 != 0;
        let mut shift = 6;
        let mut len = 1;
        while more {
            if len == 5 {
                return Err(DecodeError::Invalid {
                    field,
                    offset: start,
                    reason: "varint longer than 5 bytes",
                });
            }
            let b = self.take(field, 1).map_err(|_| DecodeError::Truncated {
                field,
                offset: start,
                needed: len + 1,
                available: len,
            })?;
            let b = b.first().copied().unwrap_or(0);
            let bits = u32::from(b & 0x7F);
            if shift == 27 && bits > 0x1F {
                return Err(DecodeError::Invalid {
                    field,
                    offset: start,
                    reason: "varint value beyond 32 bits",
                });
            }
            value |= bits << shift;
            shift += 7;
            len += 1;
            more = b & 0x80 != 0;
        }
        // Sign flag: the value is stored as its bitwise complement (`i ^ -(i < 0)`).
        let v = value as i32;
        Ok(if sign == 1 { !v } else { v })
    }

    /// A decimal integer in ASCII up to the next NUL (Teeworlds 0.6 fields).
    pub fn decimal_cstr(&mut self, field: &'static str) -> Result<i32, DecodeError> {
        let start = self.offset();
        let s = self.cstr(field)?;
        decimal_i32(s, field, start)
    }

    /// A count from the wire, checked against `max` before use.
    pub fn count_u8(&mut self, field: &'static str, max: u64) -> Result<usize, DecodeError> {
        let start = self.offset();
        let n = self.u8(field)?;
        bounded(u64::from(n), max, field, start)
    }

    /// A little-endian 16-bit count, checked against `max` before use.
    pub fn count_u16_le(&mut self, field: &'static str, max: u64) -> Result<usize, DecodeError> {
        let start = self.offset();
        let n = self.u16_le(field)?;
        bounded(u64::from(n), max, field, start)
    }

    /// A little-endian 32-bit count, checked against `max` before use.
    pub fn count_u32_le(&mut self, field: &'static str, max: u64) -> Result<usize, DecodeError> {
        let start = self.offset();
        let n = self.u32_le(field)?;
        bounded(u64::from(n), max, field, start)
    }

    /// A count read by `read` (a varint, a decimal string…) that must not be negative; the
    /// error's offset is the count's first byte, not the byte after it.
    pub fn non_negative(
        &mut self,
        field: &'static str,
        read: impl FnOnce(&mut Self, &'static str) -> Result<i32, DecodeError>,
    ) -> Result<i32, DecodeError> {
        let start = self.offset();
        let v = read(self, field)?;
        if v < 0 {
            return Err(DecodeError::Invalid {
                field,
                offset: start,
                reason: "negative count",
            });
        }
        Ok(v)
    }
}

/// Encodes `v` as a Teeworlds 0.7 variable-length integer (the inverse of [`Reader::varint`]).
pub fn put_varint(out: &mut Vec<u8>, v: i32) {
    let sign = u8::from(v < 0);
    let mut u = if v < 0 { !v as u32 } else { v as u32 };
    let mut b = (sign << 6) | (u & 0x3F) as u8;
    u >>= 6;
    while u != 0 {
        out.push(b | 0x80);
        b = (u & 0x7F) as u8;
        u >>= 7;
    }
    out.push(b);
}

/// The byte offset in `body` of the line and column a `serde_json` error names, for
/// [`DecodeError`]s of JSON documents (HTTP master lists).
///
/// ```
/// let body = b"{\n  \"a\": x}";
/// let e = serde_json::from_slice::<serde_json::Value>(body).unwrap_err();
/// assert_eq!(body[fragstat_core::wire::json_error_offset(body, &e)], b'x');
/// ```
pub fn json_error_offset(body: &[u8], e: &serde_json::Error) -> usize {
    let mut line = 1;
    let mut start = 0;
    for (i, b) in body.iter().enumerate() {
        if line == e.line() {
            break;
        }
        if *b == b'\n' {
            line += 1;
            start = i + 1;
        }
    }
    (start + e.column().saturating_sub(1)).min(body.len())
}

#[cfg(test)]
mod tests;
