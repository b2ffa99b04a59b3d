//! A small reader over untrusted bytes that never indexes and always says where it failed.

use crate::DecodeError;

/// Cursor over a datagram. Every read is bounds-checked; offsets are absolute in the datagram.
#[derive(Debug, Clone)]
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Absolute offset of the next unread byte.
    pub(crate) fn offset(&self) -> usize {
        self.pos
    }

    /// The unread bytes.
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or_default()
    }

    pub(crate) fn peek(&self) -> Option<u8> {
        self.rest().first().copied()
    }

    /// Takes exactly `n` bytes or fails naming `field`.
    pub(crate) fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], DecodeError> {
        match self.rest().split_at_checked(n) {
            Some((head, _)) => {
                self.pos += n;
                Ok(head)
            }
            None => Err(DecodeError::Truncated {
                field,
                offset: self.pos,
                needed: n,
                available: self.rest().len(),
            }),
        }
    }

    /// Takes everything that is left.
    pub(crate) fn take_rest(&mut self) -> &'a [u8] {
        let r = self.rest();
        self.pos += r.len();
        r
    }

    /// Consumes `prefix` if the unread bytes start with it.
    pub(crate) fn eat(&mut self, prefix: &[u8]) -> bool {
        if self.rest().starts_with(prefix) {
            self.pos += prefix.len();
            true
        } else {
            false
        }
    }

    /// Takes bytes while `pred` holds.
    pub(crate) fn take_while(&mut self, pred: impl Fn(u8) -> bool) -> &'a [u8] {
        let rest = self.rest();
        let n = rest.iter().position(|&b| !pred(b)).unwrap_or(rest.len());
        let (head, _) = rest.split_at(n);
        self.pos += n;
        head
    }
}
