//! Query errors: the layer above each protocol's decode error.

use std::net::SocketAddr;

use crate::wire::DecodeError;

/// Why a query has no result.
///
/// Typed through and through: a decode failure is the family codec's [`DecodeError`], never
/// a boxed error that a caller would have to downcast, so this does not compile:
///
/// ```compile_fail
/// let boxed: fragstat_core::BoxError = "any error".into();
/// let _ = fragstat_core::QueryError::Decode(boxed);
/// ```
///
/// and neither does an exchange's verdict holding one:
///
/// ```compile_fail
/// let boxed: fragstat_core::BoxError = "any error".into();
/// let _: fragstat_core::Verdict<()> = fragstat_core::Verdict::Invalid(boxed);
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// No reply to any attempt.
    #[error("timed out after {attempts} attempt{}", if *attempts == 1 { "" } else { "s" })]
    Timeout {
        /// Attempts sent in the last step.
        attempts: u32,
    },
    /// The batch deadline passed first.
    #[error("batch deadline passed")]
    Deadline,
    /// The host said nothing listens there (ICMP port unreachable), or the network said it
    /// cannot be reached: the query ended at once.
    #[error("port unreachable: nothing listens there")]
    Unreachable,
    /// Datagrams came from the server's address on every attempt, but none answered this
    /// query (another game or version listens there, or forged replies).
    #[error("{replies} repl{} from the server, none an answer to this query", if *replies == 1 { "y" } else { "ies" })]
    Foreign {
        /// Attempts sent in the last step.
        attempts: u32,
        /// Datagrams that came and were not an answer.
        replies: u32,
    },
    /// The server replied, but the reply could not be decoded (and nothing better came): the
    /// family codec's [`DecodeError`], with its field and byte offset.
    #[error("{0}")]
    Decode(#[source] DecodeError),
    /// The request could not be encoded (a challenge or name the protocol cannot carry):
    /// nothing was sent.
    #[error("the request cannot be encoded: {0}")]
    Encode(#[source] crate::encode::EncodeError),
    /// The engine has no socket for the address family.
    #[error("no socket for the address family of {0}")]
    Unsupported(SocketAddr),
    /// The batch was dropped before this query finished.
    #[error("cancelled")]
    Cancelled,
    /// Sending to the server failed (and no reply came).
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
    /// The query reached one of its per-query caps (the engine's `Options`): its server sent
    /// too many datagrams or bytes, or it ran past its lifetime.
    #[error("{}", Limit { kind: *limit, max: *max })]
    Exceeded {
        /// Which cap: [`LimitKind::Datagrams`], [`LimitKind::Bytes`] or
        /// [`LimitKind::Lifetime`].
        limit: LimitKind,
        /// The cap's value: a count of datagrams or bytes, or for [`LimitKind::Lifetime`]
        /// milliseconds.
        max: u64,
    },
}

/// Which bound a query or list reached ([`QueryError::Exceeded`], and the facade's
/// `Error::Exceeded`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LimitKind {
    /// Datagrams one query accepts from its server ([`crate::Options::max_datagrams`]).
    Datagrams,
    /// Bytes one query accepts from its server ([`crate::Options::max_bytes`]).
    Bytes,
    /// One query's total time, in milliseconds ([`crate::Options::lifetime`]).
    Lifetime,
    /// Bytes of an HTTP master list (the facade's cap; the engine never reports it).
    HttpBody,
}

impl LimitKind {
    /// A stable name for the kind: `datagrams`, `bytes`, `lifetime` or `http_body`.
    pub fn name(self) -> &'static str {
        match self {
            LimitKind::Datagrams => "datagrams",
            LimitKind::Bytes => "bytes",
            LimitKind::Lifetime => "lifetime",
            LimitKind::HttpBody => "http_body",
        }
    }
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

impl QueryError {
    /// True for [`QueryError::Timeout`] and [`QueryError::Deadline`].
    pub fn is_timeout(&self) -> bool {
        matches!(self, QueryError::Timeout { .. } | QueryError::Deadline)
    }
}
