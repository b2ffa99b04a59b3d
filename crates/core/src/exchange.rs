//! How a protocol describes one query to the engine, without doing any I/O.

use std::error::Error as StdError;

use crate::encode::EncodeError;
use crate::manners::Spacing;
use crate::wire::DecodeError;

/// A boxed error, for code outside the exchange layer that has nothing better. The exchange
/// layer itself carries typed errors: every family decodes to the one [`DecodeError`] and
/// encodes with the one [`EncodeError`], so nothing between a codec and the user is boxed.
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// One query to one server, described sans-IO. The engine owns sockets, timers and retries;
/// the exchange says what to send and whether a datagram from the server's address answers it.
///
/// The shapes this covers: a text challenge echoed in the reply (Quake III), binary
/// challenges (idTech 4, ETQW), tokens (Teeworlds), replies spanning several datagrams with
/// or without an end marker (master lists, DDNet `iex+`), and multi-step handshakes
/// (Teeworlds 0.7 fetches a token first): return [`Verdict::Advance`] and the engine sends the
/// next step's [`Exchange::requests`] at once.
pub trait Exchange: Send + 'static {
    /// What a finished query yields.
    type Output: Send + 'static;

    /// The datagrams to send for `attempt` (0 for the first, 1 for the first retry…) of the
    /// current step. Called again on every retry; a reply to any earlier attempt still counts.
    /// An error ends the query at once with [`QueryError::Encode`](crate::QueryError::Encode)
    /// (nothing is sent).
    fn requests(&mut self, attempt: u32) -> Result<Vec<Vec<u8>>, EncodeError>;

    /// A datagram arrived from this query's address.
    fn on_datagram(&mut self, datagram: &[u8]) -> Verdict<Self::Output>;

    /// The attempt timer ran out with no further datagram. Return `Some` to finish now (with
    /// what has been assembled so far, for replies that have no end marker); `None` to let the
    /// engine retry or give up. `exhausted` is true when no retry is left (or the batch
    /// deadline has passed): the last chance to return a partial answer.
    fn on_timeout(&mut self, exhausted: bool) -> Option<Result<Self::Output, DecodeError>> {
        let _ = exhausted;
        None
    }

    /// How the server this query goes to limits queries from one address
    /// ([`crate::manners::ServerEngine::spacing`]): the engine sends each attempt only when
    /// the server's budget in [`crate::Options::ledger`] has room for its datagrams, so a burst
    /// of queries to one server waits rather than being dropped. `None` (the default): sent at
    /// once. A registry game's [`crate::registry::Game::server_query`] says its engine's.
    fn spacing(&self) -> Option<Spacing> {
        None
    }

    /// Whether `datagram`, which [`Exchange::on_datagram`] ignored, is this game's answer to
    /// another query (another request, another challenge: a sibling query's reply). Such
    /// replies are not counted as foreign: a query they alone came to ends with
    /// [`QueryError::Timeout`](crate::QueryError::Timeout), not
    /// [`QueryError::Foreign`](crate::QueryError::Foreign). Default: false. A registry game's
    /// [`crate::registry::Game::server_query`] says true for what the game's decoder reads as a
    /// server's reply.
    fn answers_another_query(&self, datagram: &[u8]) -> bool {
        let _ = datagram;
        false
    }
}

/// What an exchange says of a datagram from its server's address.
///
/// `#[non_exhaustive]`: code outside this crate builds verdicts freely, but a `match` on one
/// needs a wildcard arm.
///
/// ```compile_fail
/// use fragstat_core::Verdict;
/// fn name(v: &Verdict<()>) -> &'static str {
///     match v {
///         Verdict::Ignore(_) => "ignore",
///         Verdict::Invalid(_) => "invalid",
///         Verdict::Progress { .. } => "progress",
///         Verdict::Partial { .. } => "partial",
///         Verdict::Advance => "advance",
///         Verdict::Done { .. } => "done",
///     }
/// }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Verdict<O> {
    /// Not an answer to this query (wrong challenge or token, another kind of packet). The
    /// engine logs it at debug, offers it to other queries to the same address, and waits on.
    Ignore(&'static str),
    /// From this server but undecodable. Kept: if the query then times out, this error is
    /// reported instead of a bare timeout (as [`QueryError::Decode`](crate::QueryError::Decode)).
    Invalid(DecodeError),
    /// Part of a multi-datagram reply was accepted; wait for more. The timer restarts with
    /// `wait`, or with the attempt timeout when `None`; when it runs out the engine calls
    /// [`Exchange::on_timeout`]. A short `wait` suits a reply that looks complete but may
    /// still have datagrams in flight (UDP reorders; master lists carry no count).
    /// `attempt` names the attempt it answers, when the reply shows it (for the RTT).
    Progress {
        /// The attempt answered, if known.
        attempt: Option<u32>,
        /// How long to wait for the next datagram (default: the attempt timeout).
        wait: Option<std::time::Duration>,
    },
    /// Part of the answer was accepted and the rest is asked for again by the next
    /// [`Exchange::requests`] (Quake III's infoResponse when the statusResponse is still
    /// missing). Unlike [`Verdict::Progress`], the timer restarts as for an attempt: with the
    /// engine's adaptive retransmission timeout, so a lost second reply is asked for again
    /// after a few round trips rather than a whole attempt timeout. When it runs out the
    /// engine calls [`Exchange::on_timeout`], then retries or gives up as usual.
    Partial {
        /// The attempt answered, if known.
        attempt: Option<u32>,
    },
    /// A handshake step is complete: the engine sends `requests(0)` of the next step now.
    Advance,
    /// The query is complete.
    Done {
        /// The result.
        output: Result<O, DecodeError>,
        /// The attempt answered, if known.
        attempt: Option<u32>,
    },
}

impl<E: Exchange + ?Sized> Exchange for Box<E> {
    type Output = E::Output;
    fn requests(&mut self, attempt: u32) -> Result<Vec<Vec<u8>>, EncodeError> {
        (**self).requests(attempt)
    }
    fn on_datagram(&mut self, datagram: &[u8]) -> Verdict<Self::Output> {
        (**self).on_datagram(datagram)
    }
    fn on_timeout(&mut self, exhausted: bool) -> Option<Result<Self::Output, DecodeError>> {
        (**self).on_timeout(exhausted)
    }
    fn spacing(&self) -> Option<Spacing> {
        (**self).spacing()
    }
    fn answers_another_query(&self, datagram: &[u8]) -> bool {
        (**self).answers_another_query(datagram)
    }
}

impl<O> Verdict<O> {
    /// The same verdict with its output mapped.
    pub fn map<U>(self, f: impl FnOnce(O) -> U) -> Verdict<U> {
        match self {
            Verdict::Ignore(r) => Verdict::Ignore(r),
            Verdict::Invalid(e) => Verdict::Invalid(e),
            Verdict::Progress { attempt, wait } => Verdict::Progress { attempt, wait },
            Verdict::Partial { attempt } => Verdict::Partial { attempt },
            Verdict::Advance => Verdict::Advance,
            Verdict::Done { output, attempt } => Verdict::Done {
                output: output.map(f),
                attempt,
            },
        }
    }
}

/// An exchange whose output is mapped by a function: see [`ExchangeExt::map_output`].
#[derive(Debug)]
pub struct MapOutput<E, F> {
    inner: E,
    f: F,
}

impl<E, F, U> Exchange for MapOutput<E, F>
where
    E: Exchange,
    F: FnMut(E::Output) -> U + Send + 'static,
    U: Send + 'static,
{
    type Output = U;
    fn requests(&mut self, attempt: u32) -> Result<Vec<Vec<u8>>, EncodeError> {
        self.inner.requests(attempt)
    }
    fn on_datagram(&mut self, datagram: &[u8]) -> Verdict<U> {
        let f = &mut self.f;
        self.inner.on_datagram(datagram).map(f)
    }
    fn on_timeout(&mut self, exhausted: bool) -> Option<Result<U, DecodeError>> {
        let f = &mut self.f;
        self.inner.on_timeout(exhausted).map(|r| r.map(f))
    }
    fn spacing(&self) -> Option<Spacing> {
        self.inner.spacing()
    }
    fn answers_another_query(&self, datagram: &[u8]) -> bool {
        self.inner.answers_another_query(datagram)
    }
}

/// Adapters for exchanges.
pub trait ExchangeExt: Exchange + Sized {
    /// Maps the output (e.g. a family's raw replies into the shared
    /// [`crate::model::ServerInfo`]).
    fn map_output<F, U>(self, f: F) -> MapOutput<Self, F>
    where
        F: FnMut(Self::Output) -> U + Send + 'static,
        U: Send + 'static,
    {
        MapOutput { inner: self, f }
    }

    /// Boxes the exchange as a trait object.
    fn boxed(self) -> Box<dyn Exchange<Output = Self::Output>> {
        Box::new(self)
    }
}

impl<E: Exchange> ExchangeExt for E {}
