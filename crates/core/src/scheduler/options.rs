//! How a batch of queries is run: [`Options`].

use std::time::Duration;

use crate::manners::Ledger;

#[cfg(doc)]
use crate::{QueryError, Verdict};

/// How a batch of queries is run.
///
/// Build one from [`Options::default`] (the values of [`crate::defaults`]) with the `with_*` methods (the struct is
/// `#[non_exhaustive]`, so it cannot be written as a literal outside this crate):
///
/// ```
/// use std::time::Duration;
/// use fragstat_core::Options;
///
/// let o = Options::default()
///     .with_timeout(Duration::from_millis(500))
///     .with_retries(3)
///     .with_concurrency(256)
///     .with_rate(Some(1000))
///     .with_deadline(Some(Duration::from_secs(30)));
/// assert_eq!(o.retries, 3);
/// ```
///
/// ```compile_fail
/// // Not constructible by a literal outside fragstat-core: new limits may be added.
/// let o = fragstat_core::Options {
///     timeout: std::time::Duration::from_millis(500),
///     retries: 3,
///     concurrency: 256,
///     rate: None,
///     deadline: None,
///     max_datagrams: 4096,
///     max_bytes: 8 << 20,
///     lifetime: std::time::Duration::from_secs(60),
/// };
/// ```
///
/// # Per-query caps
///
/// A server, or anyone spoofing its address, could otherwise keep a query alive and growing
/// forever: every [`Verdict::Progress`] restarts the attempt timer, and a multi-datagram
/// exchange (a master list) keeps what it is sent. [`Options::max_datagrams`],
/// [`Options::max_bytes`] and [`Options::lifetime`] bound each query; reaching one ends that
/// query alone with [`QueryError::Exceeded`]. Every datagram handed to the query's exchange
/// counts, whatever the exchange says of it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Options {
    /// How long to wait for a reply to one attempt (and between datagrams of a multi-datagram
    /// reply) before retrying. With [`Options::adaptive`], the upper bound of the adaptive
    /// timeout, and what the last attempt of each step waits.
    pub timeout: Duration,
    /// Adaptive retransmission timeouts (default on): once replies of this batch have given
    /// round-trip times, an attempt that is not the last is retried after
    /// `SRTT + 4 · RTTVAR` (RFC 6298, [`crate::rto::RttEstimator`]), doubled per retry,
    /// within [`Options::min_timeout`] and [`Options::timeout`]. The last attempt of a step
    /// always waits the whole [`Options::timeout`], so a server slower than the batch's
    /// estimate but within the timeout still gets its answer in. Before the first sample,
    /// every attempt waits [`Options::timeout`]. Off: every attempt waits
    /// [`Options::timeout`].
    pub adaptive: bool,
    /// The shortest adaptive timeout (default 50 ms). Lower values retry sooner under loss
    /// but fire spuriously when replies queue: with 10 ms a lossless scan of 10,000 loopback
    /// servers sent 27 % more requests than needed, with 50 ms none (docs/benchmarks.md).
    pub min_timeout: Duration,
    /// Retries after the first attempt (each step of a handshake has its own).
    pub retries: u32,
    /// Queries in flight at once.
    pub concurrency: usize,
    /// At most this many datagrams per second (`None`: as fast as the socket takes them).
    pub rate: Option<u32>,
    /// A bound on the whole batch: queries still unfinished then end with
    /// [`QueryError::Deadline`].
    pub deadline: Option<Duration>,
    /// Datagrams one query accepts from its server (default 4096, far more than the longest
    /// master list). The next one ends the query with
    /// [`QueryError::Exceeded`] of
    /// [`LimitKind::Datagrams`](crate::LimitKind::Datagrams).
    pub max_datagrams: usize,
    /// Bytes one query accepts from its server, summed over its datagrams (default 8 MiB).
    /// A datagram that would go past it ends the query with
    /// [`QueryError::Exceeded`] of
    /// [`LimitKind::Bytes`](crate::LimitKind::Bytes).
    pub max_bytes: usize,
    /// A bound on one query's total time, counted from its first send, across retries,
    /// handshake steps and multi-datagram replies (a [`Verdict::Progress`] restarts the
    /// attempt timer, never this). When it passes, the query ends with
    /// [`QueryError::Exceeded`] of
    /// [`LimitKind::Lifetime`](crate::LimitKind::Lifetime) (default 60 s).
    ///
    /// A query that gets no reply at all lasts about `timeout * (retries + 1)` per handshake
    /// step (3 s with [`crate::defaults`]). Keep `lifetime` above that, or the lifetime, not the
    /// retries, ends such a query, reported as `Exceeded` rather than
    /// [`QueryError::Timeout`]. [`Options::deadline`] bounds the whole batch; this bounds each
    /// query, whenever it started.
    pub lifetime: Duration,
    /// The per-server budgets that space queries to servers whose engine limits them
    /// ([`crate::Exchange::spacing`], [`crate::manners`]). Batches given clones of one ledger
    /// space their queries together: an [`crate::Engine`] gives every batch its own unless
    /// one is set here, and `fragstat::Client` sets its own for every scan. `None` with
    /// [`crate::scheduler::Scheduler`] alone: a ledger for the batch.
    pub ledger: Option<Ledger>,
}

impl Default for Options {
    fn default() -> Self {
        // The one defaults table (crate::defaults), which the facade's Client uses too.
        use crate::defaults as d;
        Options {
            timeout: d::TIMEOUT,
            adaptive: true,
            min_timeout: d::MIN_TIMEOUT,
            retries: d::RETRIES,
            concurrency: d::CONCURRENCY,
            rate: None,
            deadline: None,
            max_datagrams: d::MAX_DATAGRAMS,
            max_bytes: d::MAX_BYTES,
            lifetime: d::LIFETIME,
            ledger: None,
        }
    }
}

impl Options {
    /// Sets [`Options::timeout`].
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets [`Options::adaptive`].
    #[must_use]
    pub fn with_adaptive(mut self, adaptive: bool) -> Self {
        self.adaptive = adaptive;
        self
    }

    /// Sets [`Options::min_timeout`].
    #[must_use]
    pub fn with_min_timeout(mut self, min_timeout: Duration) -> Self {
        self.min_timeout = min_timeout;
        self
    }

    /// Sets [`Options::retries`].
    #[must_use]
    pub fn with_retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// Sets [`Options::concurrency`].
    #[must_use]
    pub fn with_concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency;
        self
    }

    /// Sets [`Options::rate`].
    #[must_use]
    pub fn with_rate(mut self, rate: Option<u32>) -> Self {
        self.rate = rate;
        self
    }

    /// Sets [`Options::deadline`].
    #[must_use]
    pub fn with_deadline(mut self, deadline: Option<Duration>) -> Self {
        self.deadline = deadline;
        self
    }

    /// Sets [`Options::max_datagrams`].
    #[must_use]
    pub fn with_max_datagrams(mut self, max_datagrams: usize) -> Self {
        self.max_datagrams = max_datagrams;
        self
    }

    /// Sets [`Options::max_bytes`].
    #[must_use]
    pub fn with_max_bytes(mut self, max_bytes: usize) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Sets [`Options::lifetime`].
    #[must_use]
    pub fn with_lifetime(mut self, lifetime: Duration) -> Self {
        self.lifetime = lifetime;
        self
    }

    /// Sets [`Options::ledger`].
    #[must_use]
    pub fn with_ledger(mut self, ledger: Option<Ledger>) -> Self {
        self.ledger = ledger;
        self
    }
}
