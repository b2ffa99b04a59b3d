//! [`Error`]: why a query, a master list or a scan has no result, as an enum to match.

use std::net::SocketAddr;

use fragstat_core::{DecodeError, QueryError};

/// Why a query, a master list or a scan item has no result.
///
/// Match the variants you act on and keep a catch-all arm: variants may be added.
///
/// ```
/// fn describe(e: &fragstat::Error) -> &'static str {
///     match e {
///         fragstat::Error::Timeout { .. } => "no answer",
///         fragstat::Error::Decode(d) if d.field().is_some() => "a malformed reply",
///         fragstat::Error::Exceeded(_) => "the server sent too much",
///         _ => "other",
///     }
/// }
/// # let _ = describe;
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No reply to any attempt.
    #[error("timed out after {attempts} attempt{}", if *attempts == 1 { "" } else { "s" })]
    Timeout {
        /// Attempts sent in the last step.
        attempts: u32,
    },
    /// The whole scan's deadline passed before this query finished.
    #[error("the scan's deadline passed")]
    Deadline,
    /// Nothing listens there: the host answered ICMP port unreachable (or the network said
    /// it cannot be reached), so the query ended at once (Linux).
    #[error("down: nothing listens there (port unreachable)")]
    Down,
    /// Datagrams came from the server's address, but none answered this game's query:
    /// another game or version listens there.
    #[error("{replies} repl{} from the server, none an answer to this game's query", if *replies == 1 { "y" } else { "ies" })]
    Foreign {
        /// Attempts sent.
        attempts: u32,
        /// Datagrams that came and were not an answer.
        replies: u32,
    },
    /// The server (or master) replied, but the reply could not be decoded; the error names
    /// the field and byte offset.
    #[error("{0}")]
    Decode(#[source] DecodeError),
    /// The request could not be encoded (a challenge, name or option the protocol cannot
    /// carry): nothing was sent.
    #[error("the request cannot be encoded: {0}")]
    Encode(#[source] fragstat_core::EncodeError),
    /// A bound was reached: a server sent too many datagrams or bytes for one query, a
    /// query ran past its lifetime, an HTTP list was too large.
    #[error("{0}")]
    Exceeded(Limit),
    /// A host name did not resolve.
    #[error("{target}: {reason}")]
    Resolve {
        /// The address as given.
        target: String,
        /// Why not.
        reason: String,
    },
    /// An HTTP master list could not be fetched.
    #[error("{url}: {reason}")]
    Http {
        /// The URL asked.
        url: String,
        /// The HTTP status, when one came back.
        status: Option<u16>,
        /// What went wrong.
        reason: String,
    },
    /// The reply was not this game's, or the game has no such query.
    #[error("{0}")]
    Protocol(String),
    /// What was asked cannot be done (an option that does not fit the game, a master of the
    /// wrong kind, an empty list of masters…).
    #[error("{0}")]
    InvalidInput(String),
    /// No socket of the address's family (no IPv6 on this host).
    #[error("no socket for the address family of {0}")]
    Unsupported(SocketAddr),
    /// A send or socket error.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The scan was dropped first.
    #[error("cancelled")]
    Cancelled,
}

impl Error {
    /// True for [`Error::Timeout`] and [`Error::Deadline`].
    pub fn is_timeout(&self) -> bool {
        matches!(self, Error::Timeout { .. } | Error::Deadline)
    }
}

/// Which bound a query or list reached ([`Error::Exceeded`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LimitKind {
    /// Datagrams one query accepts from its server.
    Datagrams,
    /// Bytes one query accepts from its server.
    Bytes,
    /// One query's total time, in milliseconds.
    Lifetime,
    /// Bytes of an HTTP master list.
    HttpBody,
}

/// A bound and its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limit {
    /// Which bound.
    pub kind: LimitKind,
    /// Its value: a count of datagrams, bytes, or for [`LimitKind::Lifetime`] milliseconds.
    pub max: u64,
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (what, unit) = match self.kind {
            LimitKind::Datagrams => ("per-query datagrams", " datagrams"),
            LimitKind::Bytes => ("per-query bytes", " bytes"),
            LimitKind::Lifetime => ("per-query lifetime", " ms"),
            LimitKind::HttpBody => ("HTTP list size", " bytes"),
        };
        write!(f, "exceeded the {what} limit ({}{unit})", self.max)
    }
}

impl From<QueryError> for Error {
    fn from(e: QueryError) -> Self {
        match e {
            QueryError::Timeout { attempts } => Error::Timeout { attempts },
            QueryError::Deadline => Error::Deadline,
            QueryError::Unreachable => Error::Down,
            QueryError::Foreign { attempts, replies } => Error::Foreign { attempts, replies },
            QueryError::Decode(boxed) => match boxed.downcast::<DecodeError>() {
                Ok(d) => Error::Decode(*d),
                Err(other) => Error::Protocol(other.to_string()),
            },
            QueryError::Encode(e) => Error::Encode(e),
            QueryError::Unsupported(a) => Error::Unsupported(a),
            QueryError::Cancelled => Error::Cancelled,
            QueryError::Io(e) => Error::Io(e),
            QueryError::Exceeded { limit, max } => Error::Exceeded(Limit {
                kind: match limit {
                    "datagrams" => LimitKind::Datagrams,
                    "bytes" => LimitKind::Bytes,
                    _ => LimitKind::Lifetime,
                },
                max,
            }),
            other => Error::Protocol(other.to_string()),
        }
    }
}

impl From<DecodeError> for Error {
    fn from(e: DecodeError) -> Self {
        Error::Decode(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_errors_map_to_variants_users_can_match() {
        let d = DecodeError::Invalid {
            field: "clients",
            offset: 12,
            reason: "not a number",
        };
        match Error::from(QueryError::Decode(Box::new(d.clone()))) {
            Error::Decode(got) => {
                assert_eq!(got.field(), Some("clients"));
                assert_eq!(got.offset(), 12);
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            Error::from(QueryError::Timeout { attempts: 3 }),
            Error::Timeout { attempts: 3 }
        ));
        let e = Error::from(QueryError::Exceeded {
            limit: "bytes",
            max: 10,
        });
        assert!(matches!(
            e,
            Error::Exceeded(Limit {
                kind: LimitKind::Bytes,
                max: 10
            })
        ));
        assert_eq!(
            e.to_string(),
            "exceeded the per-query bytes limit (10 bytes)"
        );
        assert_eq!(
            Error::from(QueryError::Timeout { attempts: 1 }).to_string(),
            "timed out after 1 attempt"
        );
        let other: fragstat_core::BoxError = "something else".into();
        assert!(matches!(
            Error::from(QueryError::Decode(other)),
            Error::Protocol(_)
        ));
    }
}
