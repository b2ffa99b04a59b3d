//! Infostrings: `\key\value\key\value…`, kept in wire order with raw bytes.

use crate::EncodeError;
use fragstat_core::model::Rules;

use crate::DecodeError;

/// An infostring: the shared [`Rules`] (ordered raw key/value pairs; every read method of
/// `Rules` works here through `Deref`) with the Quake III wire form ([`InfoString::parse`],
/// [`InfoString::encode`]).
///
/// Keys and values are bytes: Quake strings have no defined encoding and may carry colour
/// codes, leading spaces, TABs and (in ioq3 `fs_manifest`) newlines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InfoString(pub Rules);

impl std::ops::Deref for InfoString {
    type Target = Rules;
    fn deref(&self) -> &Rules {
        &self.0
    }
}

impl std::ops::DerefMut for InfoString {
    fn deref_mut(&mut self) -> &mut Rules {
        &mut self.0
    }
}

impl From<InfoString> for Rules {
    fn from(i: InfoString) -> Rules {
        i.0
    }
}

impl From<Rules> for InfoString {
    fn from(r: Rules) -> InfoString {
        InfoString(r)
    }
}

impl InfoString {
    /// An empty infostring.
    pub fn new() -> Self {
        Self::default()
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
        let Some(body) = bytes.strip_prefix(b"\\") else {
            if bytes.is_empty() {
                return Ok(InfoString::new());
            }
            return Err(DecodeError::Invalid {
                field: "infostring",
                offset: base,
                reason: "does not start with '\\'",
            });
        };
        // The body is copied once and its pairs kept as positions in it. Separators are
        // found eight bytes at a time without a search per field: fields are short (a key, a
        // number), and memchr's setup per field cost more than it saved. A key left over at
        // the end is the accepted trailing empty field when it is empty, an error otherwise.
        let mut info = InfoString(Rules::over(body));
        let mut key: Option<std::ops::Range<usize>> = None;
        let mut start = 0;
        let ends = fragstat_core::wire::positions(body, b'\\').chain(std::iter::once(body.len()));
        for end in ends {
            match key.take() {
                None => key = Some(start..end),
                Some(k) => {
                    info.0.push_span(k, start..end);
                }
            }
            start = end + 1;
        }
        if let Some(k) = key {
            if !k.is_empty() {
                return Err(DecodeError::Invalid {
                    field: "infostring",
                    offset: base + 1 + k.start,
                    reason: "odd number of fields: key without a value",
                });
            }
        }
        Ok(info)
    }

    /// Appends the wire form to `out`. Fails if a key or value contains `\` or a NUL byte, or a
    /// key is empty, since such pairs cannot be read back.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        for (k, v) in self.pairs() {
            if k.is_empty() {
                return Err(EncodeError::Empty {
                    field: "infostring key",
                });
            }
            if k.iter().chain(v).any(|&b| b == b'\\' || b == 0) {
                return Err(EncodeError::forbidden(format!(
                    "infostring pair {:?}",
                    String::from_utf8_lossy(k)
                )));
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
        InfoString(iter.into_iter().collect())
    }
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
