//! Query errors: the layer above each protocol's decode error.

use std::net::SocketAddr;

use crate::exchange::BoxError;

/// Why a query has no result.
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
    /// The server replied, but the reply could not be decoded (and nothing better came).
    #[error("{0}")]
    Decode(#[source] BoxError),
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
    #[error("exceeded the per-query {limit} limit ({max}{unit})", unit = limit_unit(limit))]
    Exceeded {
        /// Which cap: `"datagrams"`, `"bytes"` or `"lifetime"`.
        limit: &'static str,
        /// The cap's value: a count of datagrams or bytes, or for `"lifetime"` milliseconds.
        max: u64,
    },
}

fn limit_unit(limit: &str) -> &'static str {
    match limit {
        "datagrams" => " datagrams",
        "bytes" => " bytes",
        "lifetime" => " ms",
        _ => "",
    }
}

impl QueryError {
    /// True for [`QueryError::Timeout`] and [`QueryError::Deadline`].
    pub fn is_timeout(&self) -> bool {
        matches!(self, QueryError::Timeout { .. } | QueryError::Deadline)
    }
}
