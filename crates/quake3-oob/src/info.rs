//! Infostrings: `\key\value\key\value…`, kept in wire order with raw bytes.

use crate::DecodeError;

/// An ordered list of raw key/value pairs as they appeared on the wire.
///
/// Keys and values are bytes: Quake strings have no defined encoding and may carry colour codes,
/// leading spaces, TABs and (in ioq3 `fs_manifest`) newlines. Lookup is by exact key; when a
/// key repeats, [`InfoString::get`] returns the first, as the engines' `Info_ValueForKey` does.
///
/// Stored as one byte buffer plus ranges, so decoding a reply costs two allocations however
/// many cvars it has.
#[derive(Debug, Clone, Default)]
pub struct InfoString {
    buf: Vec<u8>,
    /// `(key start, key end = value start, value end)` in `buf`: each value is stored right
    /// after its key.
    spans: Vec<(u32, u32, u32)>,
}

/// Iterator over the pairs of an [`InfoString`], in wire order.
#[derive(Debug, Clone)]
pub struct Pairs<'a> {
    buf: &'a [u8],
    spans: std::slice::Iter<'a, (u32, u32, u32)>,
}

impl<'a> Pairs<'a> {
    fn get(&self, span: &(u32, u32, u32)) -> (&'a [u8], &'a [u8]) {
        let (k, v, e) = (span.0 as usize, span.1 as usize, span.2 as usize);
        (
            self.buf.get(k..v).unwrap_or_default(),
            self.buf.get(v..e).unwrap_or_default(),
        )
    }
}

impl<'a> Iterator for Pairs<'a> {
    type Item = (&'a [u8], &'a [u8]);
    fn next(&mut self) -> Option<Self::Item> {
        let span = self.spans.next()?;
        Some(self.get(span))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.spans.size_hint()
    }
}

impl DoubleEndedIterator for Pairs<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let span = self.spans.next_back()?;
        Some(self.get(span))
    }
}

impl ExactSizeIterator for Pairs<'_> {}

impl PartialEq for InfoString {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.pairs().eq(other.pairs())
    }
}

impl Eq for InfoString {}

impl InfoString {
    /// An empty infostring.
    pub fn new() -> Self {
        Self::default()
    }

    /// The pairs in wire order.
    pub fn pairs(&self) -> Pairs<'_> {
        Pairs {
            buf: &self.buf,
            spans: self.spans.iter(),
        }
    }

    /// Number of pairs.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    /// True when there are no pairs.
    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// The value of the first pair whose key is `key`.
    pub fn get(&self, key: &str) -> Option<&[u8]> {
        self.get_bytes(key.as_bytes())
    }

    /// The value of the first pair whose key is exactly `key` (bytes).
    pub fn get_bytes(&self, key: &[u8]) -> Option<&[u8]> {
        self.pairs().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The value of the first present key of `keys`, parsed as a decimal integer.
    pub fn get_int(&self, keys: &[&str]) -> Option<i64> {
        keys.iter().find_map(|k| {
            let v = self.get(k)?;
            std::str::from_utf8(v).ok()?.trim().parse().ok()
        })
    }

    /// The value of the first present key of `keys`.
    pub fn get_any(&self, keys: &[&str]) -> Option<&[u8]> {
        keys.iter().find_map(|k| self.get(k))
    }

    /// Appends a pair at the end (wire order). Does not check the bytes: see [`InfoString::encode`].
    ///
    /// # Panics
    /// Never for real data: an infostring over 4 GiB cannot be stored.
    pub fn push(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        let pos = |n: usize| u32::try_from(n).expect("infostring under 4 GiB");
        let k = pos(self.buf.len());
        self.buf.extend_from_slice(key.as_ref());
        let v = pos(self.buf.len());
        self.buf.extend_from_slice(value.as_ref());
        self.spans.push((k, v, pos(self.buf.len())));
    }

    /// Removes every pair whose key is `key`.
    pub fn remove(&mut self, key: &[u8]) {
        let buf = &self.buf;
        self.spans
            .retain(|&(k, v, _)| buf.get(k as usize..v as usize) != Some(key));
    }

    /// Sets `key` the way the Quake III engines do (`Info_SetValueForKey`): removes the old pair
    /// and puts the new one in front; an empty value only removes.
    pub fn set_like_engine(&mut self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>) {
        let key = key.as_ref();
        let mut rebuilt = InfoString::new();
        if !value.as_ref().is_empty() {
            rebuilt.push(key, value);
        }
        for (k, v) in self.pairs().filter(|(k, _)| *k != key) {
            rebuilt.push(k, v);
        }
        *self = rebuilt;
    }

    /// Parses `\k\v\k\v…` from `bytes`, which start at absolute offset `base` in the datagram.
    ///
    /// An empty input is an empty infostring. A non-empty one must start with `\` and have an
    /// even number of fields (`\k\` is key `k` with an empty value); one extra empty field
    /// from a trailing `\` is accepted, as some servers end with one.
    pub fn parse(bytes: &[u8], base: usize) -> Result<Self, DecodeError> {
        let mut info = InfoString {
            buf: Vec::with_capacity(bytes.len()),
            spans: Vec::new(),
        };
        let Some(body) = bytes.strip_prefix(b"\\") else {
            if bytes.is_empty() {
                return Ok(info);
            }
            return Err(DecodeError::InfoString {
                offset: base,
                reason: "does not start with '\\'",
            });
        };
        let mut fields: Vec<&[u8]> = body.split(|&b| b == b'\\').collect();
        if fields.len() % 2 == 1 && fields.last().is_some_and(|f| f.is_empty()) {
            fields.pop();
        }
        let mut offset = base + 1;
        let mut fields = fields.into_iter();
        while let Some(key) = fields.next() {
            let key_offset = offset;
            offset += key.len() + 1;
            let Some(value) = fields.next() else {
                return Err(DecodeError::InfoString {
                    offset: key_offset,
                    reason: "odd number of fields: key without a value",
                });
            };
            offset += value.len() + 1;
            info.push(key, value);
        }
        Ok(info)
    }

    /// Appends the wire form to `out`. Fails if a key or value contains `\` or a NUL byte, or a
    /// key is empty, since such pairs cannot be read back.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        for (k, v) in self.pairs() {
            if k.is_empty() {
                return Err(EncodeError::EmptyKey);
            }
            if k.iter().chain(v).any(|&b| b == b'\\' || b == 0) {
                return Err(EncodeError::Forbidden {
                    key: String::from_utf8_lossy(k).into_owned(),
                });
            }
            out.push(b'\\');
            out.extend_from_slice(k);
            out.push(b'\\');
            out.extend_from_slice(v);
        }
        Ok(())
    }
}

impl<K: AsRef<[u8]>, V: AsRef<[u8]>> FromIterator<(K, V)> for InfoString {
    fn from_iter<T: IntoIterator<Item = (K, V)>>(iter: T) -> Self {
        let mut info = InfoString::new();
        for (k, v) in iter {
            info.push(k, v);
        }
        info
    }
}

/// Why a value could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// An infostring key or value holds `\` or NUL.
    #[error("infostring pair {key:?} contains '\\' or NUL")]
    Forbidden {
        /// The key of the offending pair (lossy UTF-8).
        key: String,
    },
    /// An infostring key is empty.
    #[error("infostring key is empty")]
    EmptyKey,
    /// A player name contains `"` or a newline, or another text field a byte it cannot carry.
    #[error("{field} contains a byte the protocol cannot carry")]
    BadText {
        /// The field.
        field: &'static str,
    },
    /// A challenge does not satisfy the rules every engine accepts.
    #[error("challenge must be 1-64 printable ASCII bytes without \\ / ; \" %")]
    BadChallenge,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_encodes() {
        let info = InfoString::parse(b"\\a\\1\\ b\\\\c\\x y", 10).unwrap();
        assert_eq!(
            InfoString::parse(b"\\a\\", 0).unwrap().get("a"),
            Some(&b""[..])
        );
        assert_eq!(InfoString::parse(b"\\a\\b\\", 0).unwrap().len(), 1);
        assert_eq!(info.get("a"), Some(&b"1"[..]));
        assert_eq!(info.get(" b"), Some(&b""[..]));
        assert_eq!(info.get("c"), Some(&b"x y"[..]));
        let mut out = Vec::new();
        info.encode(&mut out).unwrap();
        assert_eq!(out, b"\\a\\1\\ b\\\\c\\x y");
    }

    #[test]
    fn odd_fields_name_the_offset() {
        let err = InfoString::parse(b"\\a\\1\\b", 100).unwrap_err();
        assert_eq!(err.offset(), 105);
        assert!(err.to_string().contains("odd number"), "{err}");
    }

    #[test]
    fn engine_set_prepends_and_drops_empty() {
        let mut info = InfoString::new();
        info.set_like_engine("challenge", "x");
        info.set_like_engine("gamename", "Quake3Arena");
        info.set_like_engine("empty", "");
        let keys: Vec<_> = info.pairs().map(|(k, _)| k.to_vec()).collect();
        assert_eq!(keys, vec![b"gamename".to_vec(), b"challenge".to_vec()]);
    }

    #[test]
    fn remove_drops_every_match() {
        let mut info: InfoString = [("a", "1"), ("b", "2"), ("a", "3")].into_iter().collect();
        info.remove(b"a");
        assert_eq!(info, [("b", "2")].into_iter().collect());
        info.remove(b"zz");
        assert_eq!(info.len(), 1);
    }

    #[test]
    fn refuses_unencodable() {
        let info: InfoString = [("k", "a\\b")].into_iter().collect();
        assert!(info.encode(&mut Vec::new()).is_err());
    }
}
