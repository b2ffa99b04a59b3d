//! [`Error`]: why a query, a master list or a scan has no result, as an enum to match.

use std::net::SocketAddr;

use fragstat_core::registry::{AskError, MasterQueryError};
pub use fragstat_core::resolve::ResolveError;
use fragstat_core::{DecodeError, QueryError};
pub use fragstat_core::{Limit, LimitKind};

/// The HTTP client's error behind an [`Error::Http`], shared so that a client that failed to
/// build reports the same error to every caller.
pub type HttpSource = std::sync::Arc<dyn std::error::Error + Send + Sync + 'static>;

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
#[cfg_attr(test, derive(strum::VariantNames))]
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
    /// A host name did not resolve: the resolver gave no answer in time, failed (the
    /// resolver's `io::Error` is the [`source`](std::error::Error::source)), or gave no
    /// address. An address that cannot be read (a bad port, port 0) is
    /// [`Error::InvalidInput`] instead, returned before anything is sent.
    #[error("{target}: {source}")]
    Resolve {
        /// The address as given.
        target: String,
        /// Why not.
        #[source]
        source: ResolveError,
    },
    /// An HTTP master list could not be fetched. `source` is the HTTP client's error when
    /// there was one (connection refused, TLS, a timeout); a status or a redirect has none.
    #[error("{url}: {reason}")]
    Http {
        /// The URL asked.
        url: String,
        /// The HTTP status, when one came back.
        status: Option<u16>,
        /// What went wrong, one line.
        reason: String,
        /// The HTTP client's error.
        #[source]
        source: Option<HttpSource>,
    },
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

/// A copy for each caller of a shared result (one query answered to several callers). Every
/// variant copies exactly, sources included, except [`Error::Io`]: `io::Error` is not
/// `Clone`, so the copy keeps its kind and message.
impl Clone for Error {
    fn clone(&self) -> Self {
        match self {
            Error::Timeout { attempts } => Error::Timeout {
                attempts: *attempts,
            },
            Error::Deadline => Error::Deadline,
            Error::Down => Error::Down,
            Error::Foreign { attempts, replies } => Error::Foreign {
                attempts: *attempts,
                replies: *replies,
            },
            Error::Decode(e) => Error::Decode(e.clone()),
            Error::Encode(e) => Error::Encode(e.clone()),
            Error::Exceeded(l) => Error::Exceeded(*l),
            Error::Resolve { target, source } => Error::Resolve {
                target: target.clone(),
                source: source.clone(),
            },
            Error::Http {
                url,
                status,
                reason,
                source,
            } => Error::Http {
                url: url.clone(),
                status: *status,
                reason: reason.clone(),
                source: source.clone(),
            },
            Error::InvalidInput(m) => Error::InvalidInput(m.clone()),
            Error::Unsupported(a) => Error::Unsupported(*a),
            Error::Io(e) => Error::Io(std::io::Error::new(e.kind(), e.to_string())),
            Error::Cancelled => Error::Cancelled,
        }
    }
}

impl From<QueryError> for Error {
    /// One variant for one: nothing is downcast or matched by its text.
    fn from(e: QueryError) -> Self {
        match e {
            QueryError::Timeout { attempts } => Error::Timeout { attempts },
            QueryError::Deadline => Error::Deadline,
            QueryError::Unreachable => Error::Down,
            QueryError::Foreign { attempts, replies } => Error::Foreign { attempts, replies },
            QueryError::Decode(e) => Error::Decode(e),
            QueryError::Encode(e) => Error::Encode(e),
            QueryError::Unsupported(a) => Error::Unsupported(a),
            QueryError::Cancelled => Error::Cancelled,
            QueryError::Io(e) => Error::Io(e),
            QueryError::Exceeded { limit, max } => Error::Exceeded(Limit { kind: limit, max }),
            // `QueryError` is `#[non_exhaustive]`: a variant added in core and not yet here
            // stays typed, as the source of an I/O error, until it gets its own variant.
            other => Error::Io(std::io::Error::other(other)),
        }
    }
}

impl From<DecodeError> for Error {
    fn from(e: DecodeError) -> Self {
        Error::Decode(e)
    }
}

impl From<MasterQueryError> for Error {
    /// An unencodable request is [`Error::Encode`]; options the game's master has no form
    /// for, or a game with no master, are [`Error::InvalidInput`].
    fn from(e: MasterQueryError) -> Self {
        match e {
            MasterQueryError::Encode(e) => Error::Encode(e),
            other => Error::InvalidInput(other.to_string()),
        }
    }
}

impl From<AskError> for Error {
    fn from(e: AskError) -> Self {
        Error::InvalidInput(e.to_string())
    }
}

/// A resolver's answer as an [`Error`]: an address that cannot be read (a bad port) or that
/// names port 0 is [`Error::InvalidInput`]; a lookup that failed is [`Error::Resolve`], with
/// the resolver's error as its source.
pub(crate) fn resolved(
    text: &str,
    addr: Result<SocketAddr, ResolveError>,
) -> Result<SocketAddr, Error> {
    match addr {
        Ok(a) => queryable(text, a),
        Err(ResolveError::Address(e)) => Err(Error::InvalidInput(e.to_string())),
        Err(source) => Err(Error::Resolve {
            target: text.to_string(),
            source,
        }),
    }
}

/// `addr`, or [`Error::InvalidInput`] for port 0: no server listens there, and a send to it
/// fails on every attempt (`EINVAL` on Linux), so the query ends before it starts.
pub(crate) fn queryable(text: &str, addr: SocketAddr) -> Result<SocketAddr, Error> {
    if addr.port() == 0 {
        return Err(Error::InvalidInput(format!(
            "bad port in {text:?}: port 0 is not a server's port"
        )));
    }
    Ok(addr)
}

/// `game`'s query of `addr` in a scan, or for port 0 one that fails at once, sending
/// nothing (the scan reports it as [`Error::InvalidInput`] through [`queryable`]).
pub(crate) fn server_query(
    game: &fragstat_core::registry::GameRef,
    addr: SocketAddr,
    ask: fragstat_core::registry::Ask,
) -> Box<dyn fragstat_core::Exchange<Output = fragstat_core::model::ServerInfo>> {
    if addr.port() == 0 {
        return Box::new(PortZero);
    }
    game.server_query(ask)
}

/// The query of a port-0 address: nothing to send.
struct PortZero;

impl fragstat_core::Exchange for PortZero {
    type Output = fragstat_core::model::ServerInfo;
    fn requests(&mut self, _attempt: u32) -> Result<Vec<Vec<u8>>, fragstat_core::EncodeError> {
        Err(fragstat_core::EncodeError::Invalid(
            "port 0 is not a server's port",
        ))
    }
    fn on_datagram(&mut self, _datagram: &[u8]) -> fragstat_core::Verdict<Self::Output> {
        fragstat_core::Verdict::Ignore("no request was sent")
    }
}

#[cfg(test)]
mod tests;
