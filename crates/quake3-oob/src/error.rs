//! Decode errors: every variant says which field failed and at which byte offset.

/// Why a datagram could not be decoded. Offsets are absolute byte positions in the datagram.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The datagram does not start with the `FF FF FF FF` out-of-band marker.
    #[error("bad header at offset 0: not an out-of-band packet (expected FF FF FF FF, found {found:02x?})")]
    BadHeader {
        /// The first bytes actually found (at most four).
        found: Vec<u8>,
    },
    /// The command word after the header is not one this codec knows.
    #[error(
        "unknown command {:?} at offset {offset}",
        String::from_utf8_lossy(command)
    )]
    UnknownCommand {
        /// Offset of the command word.
        offset: usize,
        /// The command word (at most 32 bytes).
        command: Vec<u8>,
    },
    /// The command is known but is not the one the caller expected.
    #[error(
        "unexpected command {:?} at offset {offset}, expected {expected}",
        String::from_utf8_lossy(command)
    )]
    UnexpectedCommand {
        /// Offset of the command word.
        offset: usize,
        /// The command word found.
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
    /// A field is missing altogether.
    #[error("missing {field} at offset {offset}")]
    Missing {
        /// The field expected.
        field: &'static str,
        /// Where it was expected.
        offset: usize,
    },
    /// An infostring (`\key\value…`) is malformed.
    #[error("bad infostring at offset {offset}: {reason}")]
    InfoString {
        /// Offset of the offending byte or field.
        offset: usize,
        /// What is wrong.
        reason: &'static str,
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
    /// A request carries an argument the protocol forbids.
    #[error("bad {field} at offset {offset}: {reason}")]
    BadArgument {
        /// The field.
        field: &'static str,
        /// Offset of the field.
        offset: usize,
        /// What is wrong.
        reason: &'static str,
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
            | DecodeError::InfoString { offset, .. }
            | DecodeError::BadNumber { offset, .. }
            | DecodeError::BadArgument { offset, .. } => *offset,
        }
    }
}

/// Copies at most 32 bytes of `text` for an error message.
pub(crate) fn excerpt(text: &[u8]) -> Vec<u8> {
    text.iter().take(32).copied().collect()
}

/// Parses a decimal `i32` (optional leading `-`) or fails naming `field`.
pub(crate) fn parse_i32(
    text: &[u8],
    field: &'static str,
    offset: usize,
) -> Result<i32, DecodeError> {
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
    if digits.is_empty() || digits.len() > 10 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(bad());
    }
    let mut v: i64 = 0;
    for d in digits {
        v = v * 10 + i64::from(d - b'0');
    }
    if neg {
        v = -v;
    }
    i32::try_from(v).map_err(|_| bad())
}
