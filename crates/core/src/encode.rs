//! Encoding: the one error every family's encoders return, and the [`Encode`] trait that
//! gives every packet type the same `encode`/`to_bytes` pair.

use std::borrow::Cow;

/// Why a value cannot be written as the protocol's bytes (a request with a challenge the
/// engines reject, a name holding the protocol's separator, a slot out of range…).
///
/// `#[non_exhaustive]`; [`EncodeError::kind`] is a stable name for each variant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// A text field holds a byte the protocol cannot carry (NUL in a NUL-terminated
    /// string, `\` in an infostring, `"` or a newline in a Quake III player line…).
    #[error("{field} contains a byte the protocol cannot carry")]
    Forbidden {
        /// The field (for an infostring pair, with its key).
        field: Cow<'static, str>,
    },
    /// A key or name that ends a list on the wire when empty is empty.
    #[error("{field} is empty")]
    Empty {
        /// The field.
        field: &'static str,
    },
    /// A number outside what the field can hold or what the protocol allows there.
    #[error("{field} {value} is out of range")]
    OutOfRange {
        /// The field, with its rule (`"player slot (below 32, increasing)"`).
        field: &'static str,
        /// The value.
        value: i64,
    },
    /// A value the protocol cannot express (the message says which and why).
    #[error("{0}")]
    Invalid(&'static str),
}

impl EncodeError {
    /// A text field with a byte the protocol cannot carry.
    pub fn forbidden(field: impl Into<Cow<'static, str>>) -> Self {
        EncodeError::Forbidden {
            field: field.into(),
        }
    }

    /// The variant's stable name: `forbidden`, `empty`, `out_of_range` or `invalid`.
    pub fn kind(&self) -> &'static str {
        match self {
            EncodeError::Forbidden { .. } => "forbidden",
            EncodeError::Empty { .. } => "empty",
            EncodeError::OutOfRange { .. } => "out_of_range",
            EncodeError::Invalid(_) => "invalid",
        }
    }
}

/// A value written as a protocol's bytes. Implement [`Encode::encode`]; `to_bytes` comes
/// with it.
///
/// ```
/// use fragstat_core::wire::{Encode, EncodeError};
///
/// struct Ping(&'static [u8]);
/// impl Encode for Ping {
///     fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
///         if self.0.contains(&0) {
///             return Err(EncodeError::forbidden("ping payload"));
///         }
///         out.extend_from_slice(b"\xff\xff\xff\xffping ");
///         out.extend_from_slice(self.0);
///         Ok(())
///     }
/// }
///
/// assert_eq!(Ping(b"x").to_bytes().unwrap(), b"\xff\xff\xff\xffping x");
/// assert_eq!(Ping(b"\0").to_bytes().unwrap_err().kind(), "forbidden");
/// ```
pub trait Encode {
    /// Appends the encoding to `out` (on error, `out` may hold part of it).
    fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError>;

    /// Encodes into a fresh buffer.
    fn to_bytes(&self) -> Result<Vec<u8>, EncodeError> {
        let mut out = Vec::with_capacity(64);
        self.encode(&mut out)?;
        Ok(out)
    }
}

impl<T: Encode + ?Sized> Encode for &T {
    fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        (**self).encode(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_field() {
        assert_eq!(
            EncodeError::forbidden("player name").to_string(),
            "player name contains a byte the protocol cannot carry"
        );
        let e = EncodeError::OutOfRange {
            field: "player slot (below 32, increasing)",
            value: 40,
        };
        assert_eq!(
            e.to_string(),
            "player slot (below 32, increasing) 40 is out of range"
        );
        assert_eq!(e.kind(), "out_of_range");
        assert_eq!(
            EncodeError::Empty {
                field: "server-info key"
            }
            .to_string(),
            "server-info key is empty"
        );
    }
}
