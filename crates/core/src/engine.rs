//! The query engine: one shared transport per address family, a receive task per transport
//! that routes datagrams by source address to the batch that asked, and a driver per batch
//! that sends, matches, retries and times out.

use std::cmp::Reverse;
use std::collections::hash_map::Entry;
use std::collections::{BinaryHeap, VecDeque};

/// Hash maps keyed by addresses and query ids: foldhash, seeded per map, instead of SipHash
/// (hashing was 5 % of a scan's instructions).
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
/// The queries of one batch waiting on one address: nearly always one, so kept inline.
type Ids = SmallVec<[u64; 2]>;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use slab::Slab;
use smallvec::SmallVec;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{debug, trace, Instrument};

use crate::exchange::{Exchange, Verdict};
use crate::rto::RttEstimator;
use crate::transport::{canonical, Backoff, RecvBatch, Transport, UdpTransport};
use crate::QueryError;

/// How a batch of queries is run.
///
/// Build one from [`Options::default`] with the `with_*` methods (the struct is
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
    /// [`QueryError::Exceeded`] `{ limit: "datagrams", .. }`.
    pub max_datagrams: usize,
    /// Bytes one query accepts from its server, summed over its datagrams (default 8 MiB).
    /// A datagram that would go past it ends the query with
    /// [`QueryError::Exceeded`] `{ limit: "bytes", .. }`.
    pub max_bytes: usize,
    /// A bound on one query's total time, counted from its first send, across retries,
    /// handshake steps and multi-datagram replies (a [`Verdict::Progress`] restarts the
    /// attempt timer, never this). When it passes, the query ends with
    /// [`QueryError::Exceeded`] `{ limit: "lifetime", .. }` (default 60 s).
    ///
    /// A query that gets no reply at all lasts about `timeout * (retries + 1)` per handshake
    /// step (3 s with the defaults). Keep `lifetime` above that, or the lifetime, not the
    /// retries, ends such a query, reported as `Exceeded` rather than
    /// [`QueryError::Timeout`]. [`Options::deadline`] bounds the whole batch; this bounds each
    /// query, whenever it started.
    pub lifetime: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            timeout: Duration::from_millis(1000),
            adaptive: true,
            min_timeout: Duration::from_millis(50),
            retries: 2,
            concurrency: 1024,
            rate: None,
            deadline: None,
            max_datagrams: 4096,
            max_bytes: 8 << 20,
            lifetime: Duration::from_secs(60),
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
}

/// The result of one query of a batch.
#[derive(Debug)]
pub struct Outcome<O> {
    /// The job's position in the batch.
    pub index: usize,
    /// The server queried (canonical form).
    pub addr: SocketAddr,
    /// The reply, or why there is none.
    pub result: Result<O, QueryError>,
    /// Round-trip time of the attempt that was answered (first datagram of the reply).
    pub rtt: Option<Duration>,
    /// Attempts sent in the last step (1 when the first attempt was answered).
    pub attempts: u32,
}

/// A datagram on its way from a receive task to a driver: its source, its bytes, and when
/// the receive task took it off the socket (the RTT is measured to then, not to whenever the
/// driver gets round to it).
///
/// With it go the batch's queries waiting on that address when it was routed: the driver
/// needs no map of its own from addresses to queries (one hash lookup per datagram, not two).
type Received = (SocketAddr, Vec<u8>, Instant, Ids);

/// What a receive task hands a batch's driver: a datagram, or word that an address it asked
/// is unreachable (ICMP), with the batch's queries waiting on that address.
#[derive(Debug, PartialEq)]
enum Routed {
    Datagram(Received),
    Unreachable(SocketAddr, Ids),
}

/// A batch asking an address, and its queries waiting on it.
struct Route {
    batch: u64,
    tx: mpsc::Sender<Routed>,
    ids: Ids,
}

/// The routes of one address: one batch asks it, nearly always.
type AddrRoutes = SmallVec<[Route; 1]>;

#[derive(Default)]
struct Routes {
    map: Mutex<HashMap<SocketAddr, AddrRoutes>>,
    /// Datagrams dropped because the batch they were for had [`DATAGRAM_QUEUE`] waiting.
    dropped: AtomicU64,
}

impl Routes {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SocketAddr, AddrRoutes>> {
        // A poisoned map is still a valid map: routing never panics while holding it.
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Query `id` of `batch` now waits on `addr`; true when that made a new route (the
    /// batch's first query there).
    fn attach(&self, addr: SocketAddr, batch: u64, tx: &mpsc::Sender<Routed>, id: u64) -> bool {
        let mut map = self.lock();
        let routes = map.entry(addr).or_default();
        match routes.iter_mut().find(|r| r.batch == batch) {
            Some(r) => {
                r.ids.push(id);
                false
            }
            None => {
                routes.push(Route {
                    batch,
                    tx: tx.clone(),
                    ids: smallvec::smallvec![id],
                });
                true
            }
        }
    }

    /// Query `id` of `batch` no longer waits on `addr` (the route goes with its last query);
    /// true when that removed the route.
    fn detach(&self, addr: SocketAddr, batch: u64, id: u64) -> bool {
        Self::detach_in(&mut self.lock(), addr, batch, id)
    }

    /// [`Routes::detach`] of several queries under one lock; how many routes that removed.
    fn detach_all(
        &self,
        batch: u64,
        queries: impl IntoIterator<Item = (SocketAddr, u64)>,
    ) -> usize {
        let mut map = self.lock();
        queries
            .into_iter()
            .filter(|&(addr, id)| Self::detach_in(&mut map, addr, batch, id))
            .count()
    }

    fn detach_in(
        map: &mut HashMap<SocketAddr, AddrRoutes>,
        addr: SocketAddr,
        batch: u64,
        id: u64,
    ) -> bool {
        let Entry::Occupied(mut entry) = map.entry(addr) else {
            return false;
        };
        let routes = entry.get_mut();
        let Some(pos) = routes.iter().position(|r| r.batch == batch) else {
            return false;
        };
        let gone = routes.get_mut(pos).is_some_and(|r| {
            r.ids.retain(|i| *i != id);
            r.ids.is_empty()
        });
        if gone {
            routes.remove(pos);
            if routes.is_empty() {
                entry.remove();
            }
        }
        gone
    }

    /// Removes every route of `batch`.
    fn remove_batch(&self, batch: u64) {
        self.lock().retain(|_, routes| {
            routes.retain(|r| r.batch != batch);
            !routes.is_empty()
        });
    }

    /// Hands each datagram to the batches asking its sender (one lock for all of them).
    fn dispatch<'a>(
        &self,
        datagrams: impl IntoIterator<Item = (SocketAddr, &'a [u8])>,
        at: Instant,
    ) {
        let map = self.lock();
        for (from, data) in datagrams {
            let from = canonical(from);
            match map.get(&from) {
                Some(routes) => {
                    for r in routes {
                        // A driver that lags (a stalled consumer, a flood from an address it
                        // asked) does not make the queue grow: the datagram is dropped and
                        // counted, as the kernel drops what overflows a socket buffer.
                        if let Err(mpsc::error::TrySendError::Full(_)) = r
                            .tx
                            .try_send(Routed::Datagram((from, data.to_vec(), at, r.ids.clone())))
                        {
                            self.dropped.fetch_add(1, Ordering::Relaxed);
                            trace!(%from, "dropped datagram: the batch's queue is full");
                        }
                    }
                }
                None => {
                    debug!(%from, len = data.len(), "dropped datagram from an address with no query in flight")
                }
            }
        }
    }
}

impl Routes {
    /// Tells the batches asking `addr` that it is unreachable.
    fn dispatch_unreachable(&self, addr: SocketAddr) {
        let map = self.lock();
        let addr = canonical(addr);
        if let Some(routes) = map.get(&addr) {
            for r in routes {
                // Dropped when the queue is full: the query then ends by its timeout.
                let _ = r.tx.try_send(Routed::Unreachable(addr, r.ids.clone()));
            }
        }
    }
}

/// The routes of one batch, owned by its driver: whichever way the driver ends (its queries
/// all finished, or its future dropped mid-flight because the [`Batch`] was dropped and the
/// task aborted), dropping the guard removes every route it still holds. An address has a
/// route exactly while it has a query of the batch.
struct RouteGuard {
    routes: Arc<Routes>,
    batch: u64,
    tx: mpsc::Sender<Routed>,
    /// Routes of this batch in the map (so a batch that ends with none left, as every batch
    /// that runs to its end does, does not search the map for them).
    live: usize,
}

impl RouteGuard {
    /// Query `id` now waits on `addr` (routed there from its first query on).
    fn attach(&mut self, addr: SocketAddr, id: u64) {
        if self.routes.attach(addr, self.batch, &self.tx, id) {
            self.live += 1;
        }
    }

    /// Query `id` no longer waits on `addr` (the route goes with its last query).
    fn detach(&mut self, addr: SocketAddr, id: u64) {
        if self.routes.detach(addr, self.batch, id) {
            self.live = self.live.saturating_sub(1);
        }
    }

    /// [`RouteGuard::detach`] of every query given, under one lock.
    fn detach_all(&mut self, queries: impl IntoIterator<Item = (SocketAddr, u64)>) {
        let removed = self.routes.detach_all(self.batch, queries);
        self.live = self.live.saturating_sub(removed);
    }
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        // The driver detaches what it still has in flight ([`Driver`]'s `Drop`); a search of
        // the whole table is only the fallback.
        if self.live > 0 {
            self.routes.remove_batch(self.batch);
        }
    }
}

struct Inner {
    v4: Option<Arc<dyn Transport>>,
    v6: Option<Arc<dyn Transport>>,
    routes: Arc<Routes>,
    next_batch: AtomicU64,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// The query engine. Cheap to clone; every clone shares the sockets. Dropping the last clone
/// stops its receive tasks.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("v4", &self.inner.v4.as_ref().map(|t| t.local_addr()))
            .field("v6", &self.inner.v6.as_ref().map(|t| t.local_addr()))
            .finish()
    }
}

impl Engine {
    /// Binds one UDP socket per address family (IPv6 only where the host has it).
    /// Must be called inside a tokio runtime.
    pub async fn bind() -> std::io::Result<Engine> {
        let v4 = UdpTransport::any_v4()?.report_unreachable()?;
        let v6 = match UdpTransport::any_v6().and_then(UdpTransport::report_unreachable) {
            Ok(t) => Some(Arc::new(t) as Arc<dyn Transport>),
            Err(e) => {
                debug!(error = %e, "no IPv6 socket; IPv6 servers will fail");
                None
            }
        };
        Ok(Self::with_transports(Some(Arc::new(v4)), v6))
    }

    /// An engine over the given transports (for tests: `testing::SimNet`, feature `testing`).
    /// Must be called inside a tokio runtime.
    pub fn with_transports(
        v4: Option<Arc<dyn Transport>>,
        v6: Option<Arc<dyn Transport>>,
    ) -> Engine {
        let routes = Arc::new(Routes::default());
        let tasks = [&v4, &v6]
            .into_iter()
            .flatten()
            .map(|t| {
                let t = Arc::clone(t);
                let routes = Arc::clone(&routes);
                tokio::spawn(async move {
                    let mut batch = RecvBatch::new();
                    let mut backoff = Backoff::default();
                    loop {
                        match t.recv_batch(&mut batch).await {
                            Ok(()) => {
                                let at = Instant::now();
                                backoff.reset();
                                routes.dispatch(batch.datagrams(), at);
                            }
                            // ICMP errors about what was sent (port unreachable) surface here
                            // with IP_RECVERR: the error queue says whom they are about. Other
                            // errors: keep going, backing off if they persist.
                            Err(e) => {
                                let mut down = Vec::new();
                                let _ = t.take_unreachable(&mut down);
                                if down.is_empty() {
                                    trace!(error = %e, "receive error");
                                    backoff.wait(&e).await;
                                } else {
                                    for addr in down {
                                        trace!(%addr, "unreachable");
                                        routes.dispatch_unreachable(addr);
                                    }
                                }
                            }
                        }
                    }
                })
            })
            .collect();
        Engine {
            inner: Arc::new(Inner {
                v4,
                v6,
                routes,
                next_batch: AtomicU64::new(1),
                tasks,
            }),
        }
    }

    /// Local addresses of the engine's sockets.
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        [&self.inner.v4, &self.inner.v6]
            .into_iter()
            .flatten()
            .filter_map(|t| t.local_addr().ok())
            .collect()
    }

    /// How many addresses have a route: a query in flight to them, in any batch. A
    /// diagnostic: 0 whenever no batch is running (finished and dropped batches leave none).
    pub fn routed_addresses(&self) -> usize {
        self.inner.routes.lock().len()
    }

    /// Datagrams dropped since the engine started because the batch they answered already
    /// had [`DATAGRAM_QUEUE`] datagrams waiting (its driver lagging behind a flood).
    pub fn dropped_datagrams(&self) -> u64 {
        self.inner.routes.dropped.load(Ordering::Relaxed)
    }

    /// Runs a batch of queries. Results stream out as each query finishes. Dropping the
    /// [`Batch`] cancels the queries still running.
    pub fn run<E, I>(&self, jobs: I, options: Options) -> Batch<E::Output>
    where
        E: Exchange,
        I: IntoIterator<Item = (SocketAddr, E)>,
    {
        let jobs: Vec<(SocketAddr, E)> = jobs.into_iter().collect();
        self.run_lazy(jobs, options)
    }

    /// [`Engine::run`], taking each job from `jobs` only when its query can start (a slot of
    /// [`Options::concurrency`] is free), so an iterator that makes its exchanges as it goes
    /// keeps only the queries in flight in memory: a scan of 100,000 servers does not hold
    /// 100,000 exchanges, and each is freed about as soon after it was made as the one
    /// before.
    ///
    /// The iterator runs in the batch's task, a job at a time: a panic there ends the batch
    /// (its [`Batch`] then ends early, as if dropped), and when [`Options::deadline`] passes,
    /// the jobs not yet started are still made, each to be reported as
    /// [`QueryError::Deadline`].
    ///
    /// Queries start only as the [`Batch`] is read: once [`OUTCOME_QUEUE`] outcomes wait
    /// unread, no new query starts until the reader takes some (the ones in flight finish),
    /// so a reader that stops holds the batch's memory where it is.
    ///
    /// ```
    /// # use fragstat_core::{Engine, Exchange, Options, Verdict};
    /// # struct Ping;
    /// # impl Exchange for Ping {
    /// #     type Output = ();
    /// #     fn requests(&mut self, _: u32) -> Result<Vec<Vec<u8>>, fragstat_core::EncodeError> { Ok(vec![b"ping".to_vec()]) }
    /// #     fn on_datagram(&mut self, _: &[u8]) -> Verdict<()> { Verdict::Ignore("") }
    /// # }
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let engine = Engine::bind().await?;
    /// let servers: Vec<std::net::SocketAddr> = vec!["127.0.0.1:9".parse().unwrap()];
    /// let options = Options::default().with_timeout(std::time::Duration::from_millis(20)).with_retries(0);
    /// let batch = engine.run_lazy(servers.into_iter().map(|a| (a, Ping)), options);
    /// assert_eq!(batch.remaining(), Some(1));
    /// # Ok(()) }
    /// ```
    pub fn run_lazy<E, I>(&self, jobs: I, options: Options) -> Batch<E::Output>
    where
        E: Exchange,
        I: IntoIterator<Item = (SocketAddr, E)>,
        I::IntoIter: ExactSizeIterator + Send + 'static,
    {
        let jobs = Jobs::new(jobs.into_iter());
        let total = jobs.left;
        self.start(Source::Iter(jobs), total, options)
    }

    /// [`Engine::run_lazy`] over an iterator whose length is not known in advance (a filter,
    /// a chain of lists): jobs are taken as slots free until it ends; indexes count jobs in
    /// the order taken, and [`Batch::remaining`] is `None`.
    pub fn run_iter<E, I>(&self, jobs: I, options: Options) -> Batch<E::Output>
    where
        E: Exchange,
        I: IntoIterator<Item = (SocketAddr, E)>,
        I::IntoIter: Send + 'static,
    {
        self.start(
            Source::Iter(Jobs::unsized_(jobs.into_iter())),
            None,
            options,
        )
    }

    /// A batch fed by a channel: jobs are taken from `jobs` as slots free (and as they
    /// arrive: the batch can start while a master list is still coming in), and the batch
    /// ends when every sender is dropped and every query received has finished. Indexes
    /// count jobs in the order they were received. Backpressure works both ways: a full
    /// `jobs` channel holds its senders back, and a reader that stops reading the
    /// [`Batch`] stops new queries (see [`Engine::run_lazy`]).
    pub fn run_receiver<E: Exchange>(
        &self,
        jobs: mpsc::Receiver<(SocketAddr, E)>,
        options: Options,
    ) -> Batch<E::Output> {
        self.start(
            Source::Channel {
                rx: jobs,
                next: 0,
                closed: false,
            },
            None,
            options,
        )
    }

    fn start<E: Exchange>(
        &self,
        jobs: Source<E>,
        total: Option<usize>,
        options: Options,
    ) -> Batch<E::Output> {
        let (out_tx, out_rx) = mpsc::channel(OUTCOME_QUEUE);
        let (dg_tx, dg_rx) = mpsc::channel(DATAGRAM_QUEUE);
        let id = self.inner.next_batch.fetch_add(1, Ordering::Relaxed);
        let rtt = RttEstimator::new(options.min_timeout, options.timeout);
        let window = options
            .concurrency
            .clamp(1, MAX_IN_FLIGHT)
            .min(total.unwrap_or(usize::MAX))
            .min(INITIAL_SLOTS);
        let burst = options.rate.filter(|r| *r > 0).map_or(Duration::ZERO, |r| {
            // Tokens that may be saved up while the batch waits (a late timer, a send that
            // had to wait for room): a few milliseconds' worth, at least one datagram.
            Duration::from_secs_f64(f64::from(r.max(1)).recip() * PACING_BURST).max(PACING_CATCH_UP)
        });
        let driver = Driver {
            routes: RouteGuard {
                routes: Arc::clone(&self.inner.routes),
                batch: id,
                tx: dg_tx,
                live: 0,
            },
            engine: Arc::clone(&self.inner),
            options,
            pending: jobs,
            slots: Slab::with_capacity(window),
            timers: BinaryHeap::new(),
            send_queue: VecDeque::new(),
            next_seq: 0,
            next_send: Instant::now(),
            burst,
            rtt,
            out: out_tx,
            backlog: VecDeque::new(),
        };
        let span = tracing::debug_span!("batch", id, jobs = total);
        let task = tokio::spawn(driver.run(dg_rx).instrument(span));
        Batch {
            rx: out_rx,
            task,
            remaining: total,
        }
    }

    /// Runs one query.
    pub async fn query<E: Exchange>(
        &self,
        addr: SocketAddr,
        exchange: E,
        options: Options,
    ) -> Outcome<E::Output> {
        let mut batch = self.run([(addr, exchange)], options);
        match batch.next().await {
            Some(o) => o,
            None => Outcome {
                index: 0,
                addr,
                result: Err(QueryError::Cancelled),
                rtt: None,
                attempts: 0,
            },
        }
    }
}

/// Datagrams one batch may have waiting for its driver; more are dropped and counted
/// ([`Engine::dropped_datagrams`]).
pub const DATAGRAM_QUEUE: usize = 4096;

/// Outcomes one batch may have waiting for its reader before it stops starting queries.
pub const OUTCOME_QUEUE: usize = 256;

/// Slots allocated up front for a batch's queries in flight (more are allocated as needed).
const INITIAL_SLOTS: usize = 4096;

/// Paced sends: how many datagrams' worth of time may be saved up (at least
/// [`PACING_CATCH_UP`]), so a timer that fires late is made up for without bursting.
const PACING_BURST: f64 = 4.0;

/// Paced sends: the shortest saved-up time (a few timer ticks).
const PACING_CATCH_UP: Duration = Duration::from_millis(4);

/// A running batch: a stream of [`Outcome`]s in the order queries finish.
#[derive(Debug)]
pub struct Batch<O> {
    rx: mpsc::Receiver<Outcome<O>>,
    task: JoinHandle<()>,
    remaining: Option<usize>,
}

impl<O> Batch<O> {
    /// The next finished query, or `None` when all have finished.
    pub async fn next(&mut self) -> Option<Outcome<O>> {
        std::future::poll_fn(|cx| self.poll_next_outcome(cx)).await
    }

    /// The next finished query if one is ready now, without waiting.
    pub fn try_next(&mut self) -> Option<Outcome<O>> {
        let o = self.rx.try_recv().ok()?;
        self.count_one();
        Some(o)
    }

    /// Queries not yet reported; `None` for a batch fed by a channel
    /// ([`Engine::run_receiver`]), whose size is not known in advance.
    pub fn remaining(&self) -> Option<usize> {
        self.remaining
    }

    /// Waits for every query and returns the outcomes sorted by job index.
    pub async fn collect_sorted(mut self) -> Vec<Outcome<O>> {
        let mut all = Vec::with_capacity(self.remaining.unwrap_or(0));
        while let Some(o) = self.next().await {
            all.push(o);
        }
        all.sort_by_key(|o| o.index);
        all
    }

    fn count_one(&mut self) {
        if let Some(r) = &mut self.remaining {
            *r = r.saturating_sub(1);
        }
    }

    fn poll_next_outcome(&mut self, cx: &mut Context<'_>) -> Poll<Option<Outcome<O>>> {
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(o)) => {
                self.count_one();
                Poll::Ready(Some(o))
            }
            other => other,
        }
    }
}

impl<O> futures_core::Stream for Batch<O> {
    type Item = Outcome<O>;
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_next_outcome(cx)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, self.remaining)
    }
}

impl<O> Drop for Batch<O> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Slot<E> {
    /// The query's id ([`slot_in`]).
    id: u64,
    index: usize,
    addr: SocketAddr,
    ex: E,
    /// Attempts sent in the current step.
    attempts: u32,
    /// When each attempt of the current step was sent.
    sent_at: SmallVec<[Instant; 4]>,
    /// Timer generation: a popped timer whose generation differs is stale.
    generation: u64,
    rtt: Option<Duration>,
    /// What went wrong last (an undecodable reply, a failed send): reported instead of a
    /// bare timeout.
    last_error: Option<QueryError>,
    /// Datagrams handed to the exchange so far, across every attempt and step.
    datagrams: usize,
    /// Their bytes.
    bytes: usize,
    /// When the query's lifetime ends (set at its first send).
    expires: Option<Instant>,
    /// Datagrams from its address that were not an answer to it.
    ignored: u32,
}

/// When a timer of `slot` set for `t` fires: `t`, or the end of the query's lifetime if that
/// comes first. A query's lifetime is enforced through its one live timer (and on every
/// datagram), so there is no second timer per query: the heap holds about one entry per query
/// in flight, not one per query started in the last [`Options::lifetime`].
fn timer_at<E>(slot: &Slot<E>, t: Instant) -> Instant {
    slot.expires.map_or(t, |e| t.min(e))
}

/// `t + d`, or far in the future when that overflows (a huge timeout means "never").
fn later(t: Instant, d: Duration) -> Instant {
    const FAR: Duration = Duration::from_secs(86_400 * 365 * 30);
    t.checked_add(d).or_else(|| t.checked_add(FAR)).unwrap_or(t)
}

fn exceeded(limit: &'static str, max: u128) -> QueryError {
    QueryError::Exceeded {
        limit,
        max: u64::try_from(max).unwrap_or(u64::MAX),
    }
}

/// Whether a datagram of `len` bytes received at `at` would take the query past a cap.
fn over_cap<E>(slot: &Slot<E>, options: &Options, len: usize, at: Instant) -> Option<QueryError> {
    if slot.expires.is_some_and(|e| at >= e) {
        Some(exceeded("lifetime", options.lifetime.as_millis()))
    } else if slot.datagrams >= options.max_datagrams {
        Some(exceeded("datagrams", options.max_datagrams as u128))
    } else if slot.bytes.saturating_add(len) > options.max_bytes {
        Some(exceeded("bytes", options.max_bytes as u128))
    } else {
        None
    }
}

/// The jobs of a batch not yet started, made as they are taken.
struct Jobs<E> {
    iter: Box<dyn Iterator<Item = (SocketAddr, E)> + Send>,
    /// The index of the next job.
    next: usize,
    /// Jobs not yet taken, when the iterator said; `None` while an iterator of unknown
    /// length may still have more.
    left: Option<usize>,
    /// The iterator has ended.
    done: bool,
}

impl<E> Jobs<E> {
    fn new<I>(iter: I) -> Self
    where
        I: ExactSizeIterator<Item = (SocketAddr, E)> + Send + 'static,
    {
        let left = iter.len();
        Jobs {
            left: Some(left),
            iter: Box::new(iter),
            next: 0,
            done: left == 0,
        }
    }

    fn unsized_<I>(iter: I) -> Self
    where
        I: Iterator<Item = (SocketAddr, E)> + Send + 'static,
    {
        Jobs {
            left: None,
            iter: Box::new(iter),
            next: 0,
            done: false,
        }
    }

    fn is_empty(&self) -> bool {
        self.done
    }

    /// The next job: its index, canonical address and exchange.
    fn pop_front(&mut self) -> Option<(usize, SocketAddr, E)> {
        if self.done {
            return None;
        }
        // An iterator shorter than it said it was ends the batch's jobs there.
        let Some((addr, ex)) = self.iter.next() else {
            self.done = true;
            return None;
        };
        if let Some(left) = &mut self.left {
            *left = left.saturating_sub(1);
            if *left == 0 {
                self.done = true;
            }
        }
        let index = self.next;
        self.next += 1;
        Some((index, canonical(addr), ex))
    }
}

/// Where a batch's jobs come from: an iterator ([`Engine::run_lazy`]) or a channel
/// ([`Engine::run_receiver`]).
enum Source<E> {
    Iter(Jobs<E>),
    Channel {
        rx: mpsc::Receiver<(SocketAddr, E)>,
        /// The index of the next job.
        next: usize,
        /// Every sender is gone (nothing more will come once the channel is empty).
        closed: bool,
    },
}

impl<E> Source<E> {
    /// No job will come any more.
    fn is_empty(&self) -> bool {
        match self {
            Source::Iter(j) => j.is_empty(),
            Source::Channel { rx, closed, .. } => *closed && rx.is_empty(),
        }
    }

    /// The next job available now.
    fn pop_front(&mut self) -> Option<(usize, SocketAddr, E)> {
        match self {
            Source::Iter(j) => j.pop_front(),
            Source::Channel { rx, next, closed } => match rx.try_recv() {
                Ok((addr, ex)) => {
                    let index = *next;
                    *next += 1;
                    Some((index, canonical(addr), ex))
                }
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    *closed = true;
                    None
                }
                Err(mpsc::error::TryRecvError::Empty) => None,
            },
        }
    }

    /// A channel that may still bring jobs and has none now (the driver waits on it).
    fn waiting(&self) -> bool {
        matches!(self, Source::Channel { rx, closed: false, .. } if rx.is_empty())
    }
}

/// A batch dropped mid-flight (its [`Batch`] dropped, the task aborted) takes its queries'
/// routes with it, by their own addresses under one lock, without searching a route table
/// that other batches share.
impl<E: Exchange> Drop for Driver<E> {
    fn drop(&mut self) {
        if !self.slots.is_empty() {
            let held = self.slots.iter().map(|(_, s)| (s.addr, s.id));
            self.routes.detach_all(held);
        }
    }
}

/// The query `id` if it is still in flight. An id is the query's slot (low 32 bits) and its
/// place in the batch (high 32 bits): a slot is used again by later queries, and whatever still
/// names an earlier one (a timer, a datagram routed meanwhile) finds it gone, not its
/// successor.
fn slot_in<E>(slots: &mut Slab<Slot<E>>, id: u64) -> Option<&mut Slot<E>> {
    slots.get_mut(slot_key(id)).filter(|s| s.id == id)
}

/// The id of the query in slot `key` that is the batch's `seq`th.
fn query_id(key: usize, seq: u64) -> u64 {
    // Slots are below `MAX_IN_FLIGHT` (the window is capped there): 32 bits.
    ((seq & 0xFFFF_FFFF) << 32) | (key as u64 & 0xFFFF_FFFF)
}

/// The slot of query `id`.
fn slot_key(id: u64) -> usize {
    (id & 0xFFFF_FFFF) as usize
}

struct Driver<E: Exchange> {
    /// This batch's routes, removed when the driver ends or is dropped.
    routes: RouteGuard,
    engine: Arc<Inner>,
    options: Options,
    pending: Source<E>,
    /// The queries in flight, by the low half of their ids (see [`slot_in`]).
    slots: Slab<Slot<E>>,
    timers: BinaryHeap<Reverse<(Instant, u64, u64)>>,
    /// Queries waiting to send their current attempt (retries go first).
    send_queue: VecDeque<u64>,
    /// Queries started so far: the high half of the next id.
    next_seq: u64,
    /// Paced: when the next datagram may go (a token bucket's clock: it advances by one
    /// interval per datagram, and lags the real clock by at most `burst`).
    next_send: Instant,
    /// Paced: how far `next_send` may lag behind now (time saved up while idle).
    burst: Duration,
    /// Round-trip times of this batch's replies, for the adaptive timeout.
    rtt: RttEstimator,
    out: mpsc::Sender<Outcome<E::Output>>,
    /// Finished queries the reader has not made room for: while any wait here, no new query
    /// starts.
    backlog: VecDeque<Outcome<E::Output>>,
}

/// What woke a driver.
enum Wake<E: Exchange> {
    Datagram(Routed),
    /// Room for one outcome (or the reader is gone).
    Room(Result<mpsc::OwnedPermit<Outcome<E::Output>>, mpsc::error::SendError<()>>),
    /// A job from a channel source (`None`: every sender is gone).
    Job(Option<(SocketAddr, E)>),
    /// A timer, the pacing clock or the deadline.
    Time,
}

impl<E: Exchange> Driver<E> {
    async fn run(mut self, mut datagrams: mpsc::Receiver<Routed>) {
        let deadline = self.options.deadline.map(|d| later(Instant::now(), d));
        let interval = self
            .options
            .rate
            .filter(|r| *r > 0)
            .map(|r| Duration::from_secs_f64(1.0 / f64::from(r)));
        let window = self.options.concurrency.clamp(1, MAX_IN_FLIGHT);
        loop {
            self.flush_backlog();
            if self.backlog.is_empty() {
                self.start_queries();
            }
            self.send_ready(interval).await;
            if self.slots.is_empty() && self.pending.is_empty() && self.backlog.is_empty() {
                break;
            }
            if self.out.is_closed() {
                debug!("batch dropped by its owner");
                break;
            }
            let mut wake = self.timers.peek().map(|Reverse((t, _, _))| *t);
            if !self.send_queue.is_empty() {
                wake = Some(wake.map_or(self.next_send, |w| w.min(self.next_send)));
            }
            if let Some(d) = deadline {
                wake = Some(wake.map_or(d, |w| w.min(d)));
            }
            let sleep = async {
                match wake {
                    Some(w) => tokio::time::sleep_until(w).await,
                    None => std::future::pending().await,
                }
            };
            let lagging = !self.backlog.is_empty();
            let room = lagging.then(|| self.out.clone());
            let take_job = !lagging && self.slots.len() < window && self.pending.waiting();
            let woke = {
                let pending = &mut self.pending;
                tokio::select! {
                    biased;
                    Some(d) = datagrams.recv() => Wake::Datagram(d),
                    permit = async { room.expect("lagging").reserve_owned().await }, if lagging => {
                        Wake::Room(permit.map_err(|_| mpsc::error::SendError(())))
                    }
                    job = async {
                        match pending {
                            Source::Channel { rx, .. } => rx.recv().await,
                            Source::Iter(_) => None,
                        }
                    }, if take_job => Wake::Job(job),
                    () = sleep => Wake::Time,
                }
            };
            match woke {
                Wake::Datagram(first) => {
                    self.on_routed(first);
                    // Drain what is already queued before looking at timers.
                    while let Ok(next) = datagrams.try_recv() {
                        self.on_routed(next);
                    }
                }
                Wake::Room(Ok(permit)) => {
                    if let Some(o) = self.backlog.pop_front() {
                        permit.send(o);
                    }
                }
                Wake::Room(Err(_)) => {
                    debug!("batch dropped by its owner");
                    break;
                }
                Wake::Job(Some((addr, ex))) => {
                    if let Source::Channel { next, .. } = &mut self.pending {
                        let index = *next;
                        *next += 1;
                        self.start_query(index, canonical(addr), ex);
                    }
                }
                Wake::Job(None) => {
                    if let Source::Channel { closed, .. } = &mut self.pending {
                        *closed = true;
                    }
                }
                Wake::Time => {}
            }
            let now = Instant::now();
            if deadline.is_some_and(|d| now >= d) {
                self.expire_all();
                // What finished last goes to the reader before the batch ends.
                while let Some(o) = self.backlog.pop_front() {
                    if self.out.send(o).await.is_err() {
                        break;
                    }
                }
                break;
            }
            self.fire_timers(now);
        }
        // `self.routes` is dropped here, or wherever the future is dropped: no route outlives it.
    }

    fn on_routed(&mut self, r: Routed) {
        match r {
            Routed::Datagram((from, data, at, ids)) => self.on_datagram(from, &data, at, &ids),
            Routed::Unreachable(addr, ids) => {
                for id in ids {
                    if slot_in(&mut self.slots, id).is_some_and(|s| s.addr == addr) {
                        debug!(%addr, "unreachable");
                        self.finish(id, Err(QueryError::Unreachable));
                    }
                }
            }
        }
    }

    /// Hands waiting outcomes to the reader as far as its channel has room.
    fn flush_backlog(&mut self) {
        while let Some(o) = self.backlog.pop_front() {
            match self.out.try_send(o) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(o)) => {
                    self.backlog.push_front(o);
                    return;
                }
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    self.backlog.clear();
                    return;
                }
            }
        }
    }

    fn start_queries(&mut self) {
        while self.slots.len() < self.options.concurrency.clamp(1, MAX_IN_FLIGHT) {
            let Some((index, addr, ex)) = self.pending.pop_front() else {
                break;
            };
            self.start_query(index, addr, ex);
        }
    }

    fn start_query(&mut self, index: usize, addr: SocketAddr, ex: E) {
        let transport = if addr.is_ipv4() {
            &self.engine.v4
        } else {
            &self.engine.v6
        };
        if transport.is_none() {
            self.emit(index, addr, Err(QueryError::Unsupported(addr)), None, 0);
            return;
        }
        let entry = self.slots.vacant_entry();
        let id = query_id(entry.key(), self.next_seq);
        self.next_seq += 1;
        entry.insert(Slot {
            id,
            index,
            addr,
            ex,
            attempts: 0,
            sent_at: SmallVec::new(),
            generation: 0,
            rtt: None,
            last_error: None,
            datagrams: 0,
            bytes: 0,
            expires: None,
            ignored: 0,
        });
        self.routes.attach(addr, id);
        self.send_queue.push_back(id);
    }

    async fn send_ready(&mut self, interval: Option<Duration>) {
        // The ready queries go out [`SEND_BATCH`] at a time, their datagrams in as few system
        // calls as the transport allows (`sendmmsg`). Paced, every query whose datagrams are
        // due goes out at each wake-up (a token bucket: the pacing clock advances by one
        // interval per datagram from where it was, so a late timer is made up for, and lags
        // the real clock by at most `burst`, so an idle spell saves up only a few
        // milliseconds' worth).
        loop {
            let mut batch: SmallVec<[Prepared; SEND_BATCH]> = SmallVec::new();
            let mut paced_out = false;
            let now = Instant::now();
            if interval.is_some() {
                if let Some(floor) = now.checked_sub(self.burst) {
                    self.next_send = self.next_send.max(floor);
                }
            }
            while batch.len() < SEND_BATCH {
                let Some(&id) = self.send_queue.front() else {
                    break;
                };
                if interval.is_some() && now < self.next_send {
                    paced_out = true;
                    break;
                }
                // Queued twice (stepped on and retried in one drain): its next attempt goes in
                // the next batch, numbered after this one.
                if batch.iter().any(|p| p.id == id) {
                    break;
                }
                self.send_queue.pop_front();
                // A query that waited for its turn (paced) past its lifetime ends unsent.
                if self.ended_by_lifetime(id, now) {
                    continue;
                }
                let Some(slot) = slot_in(&mut self.slots, id) else {
                    continue;
                };
                let attempt = slot.attempts;
                let datagrams = match slot.ex.requests(attempt) {
                    Ok(d) => d,
                    Err(e) => {
                        self.finish(id, Err(QueryError::Encode(e)));
                        continue;
                    }
                };
                if let Some(iv) = interval {
                    let n = u32::try_from(datagrams.len().max(1)).unwrap_or(u32::MAX);
                    self.next_send = later(self.next_send, iv.saturating_mul(n));
                }
                batch.push(Prepared {
                    id,
                    attempt,
                    addr: slot.addr,
                    datagrams,
                    error: None,
                    sent: None,
                });
            }
            if batch.is_empty() {
                return;
            }
            transmit(&self.engine, &mut batch).await;
            let after = Instant::now();
            for p in batch {
                let now = p.sent.unwrap_or(after);
                let Some(slot) = slot_in(&mut self.slots, p.id) else {
                    continue;
                };
                if let Some(e) = p.error {
                    slot.last_error = Some(QueryError::Io(e));
                }
                slot.attempts += 1;
                slot.sent_at.push(now);
                slot.generation += 1;
                if p.attempt > 0 {
                    debug!(addr = %p.addr, attempt = p.attempt, "retry sent");
                }
                if slot.expires.is_none() {
                    slot.expires = Some(later(now, self.options.lifetime));
                }
                let wait = attempt_wait(&self.options, &self.rtt, p.attempt);
                let at = timer_at(slot, later(now, wait));
                self.timers.push(Reverse((at, p.id, slot.generation)));
            }
            if paced_out {
                return;
            }
        }
    }

    /// `at`: when the receive task took the datagram off the socket; `ids`: the queries that
    /// waited on `from` when it was routed.
    fn on_datagram(&mut self, from: SocketAddr, data: &[u8], at: Instant, ids: &[u64]) {
        let mut reasons = Vec::new();
        for &id in ids {
            // A query that finished since is gone (its slot empty or another query's).
            let Some(slot) = slot_in(&mut self.slots, id).filter(|s| s.addr == from) else {
                continue;
            };
            if let Some(err) = over_cap(slot, &self.options, data.len(), at) {
                debug!(%from, error = %err, "query ended");
                self.finish(id, Err(err));
                continue;
            }
            slot.datagrams += 1;
            slot.bytes = slot.bytes.saturating_add(data.len());
            match slot.ex.on_datagram(data) {
                Verdict::Ignore(reason) => {
                    slot.ignored = slot.ignored.saturating_add(1);
                    reasons.push(reason);
                }
                Verdict::Invalid(e) => {
                    debug!(%from, error = %e, "undecodable reply");
                    slot.last_error = Some(QueryError::Decode(e));
                    return;
                }
                Verdict::Progress { attempt, wait } => {
                    self.sample_rtt(id, attempt, at);
                    let Some(slot) = slot_in(&mut self.slots, id) else {
                        return;
                    };
                    slot.generation += 1;
                    let wait = wait.unwrap_or(self.options.timeout);
                    let at = timer_at(slot, later(Instant::now(), wait));
                    self.timers.push(Reverse((at, id, slot.generation)));
                    return;
                }
                Verdict::Advance => {
                    slot.attempts = 0;
                    slot.sent_at.clear();
                    slot.rtt = None;
                    slot.generation += 1;
                    self.send_queue.push_front(id);
                    return;
                }
                Verdict::Partial { attempt } => {
                    self.sample_rtt(id, attempt, at);
                    let Some(slot) = slot_in(&mut self.slots, id) else {
                        return;
                    };
                    slot.generation += 1;
                    let current = slot.attempts.saturating_sub(1);
                    let wait = attempt_wait(&self.options, &self.rtt, current);
                    let at = timer_at(slot, later(Instant::now(), wait));
                    self.timers.push(Reverse((at, id, slot.generation)));
                    return;
                }
                Verdict::Done { output, attempt } => {
                    self.sample_rtt(id, attempt, at);
                    debug!(%from, ok = output.is_ok(), "query answered");
                    self.finish(id, output.map_err(QueryError::Decode));
                    return;
                }
            }
        }
        debug!(%from, len = data.len(), ?reasons, "dropped datagram that answers no query");
    }

    /// Records the query's RTT (once per step) and, when it is unambiguous (the reply names
    /// its attempt, or only one attempt was sent: Karn's rule), feeds it to the estimator.
    fn sample_rtt(&mut self, id: u64, attempt: Option<u32>, at: Instant) {
        let Some(slot) = slot_in(&mut self.slots, id) else {
            return;
        };
        if slot.rtt.is_some() {
            return;
        }
        record_rtt(slot, attempt, at);
        if attempt.is_some() || slot.attempts == 1 {
            if let Some(rtt) = slot.rtt {
                self.rtt.sample(rtt);
            }
        }
    }

    fn fire_timers(&mut self, now: Instant) {
        while let Some(&Reverse((t, id, generation))) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            let Some(slot) = slot_in(&mut self.slots, id) else {
                continue;
            };
            if slot.generation != generation {
                continue;
            }
            if self.ended_by_lifetime(id, now) {
                continue;
            }
            let Some(slot) = slot_in(&mut self.slots, id) else {
                continue;
            };
            let exhausted = slot.attempts > self.options.retries;
            if let Some(result) = slot.ex.on_timeout(exhausted) {
                self.finish(id, result.map_err(QueryError::Decode));
                continue;
            }
            // A partial reply the exchange cannot finish with is asked for again: its
            // `requests` names only what is still missing.
            if slot.attempts <= self.options.retries {
                debug!(addr = %slot.addr, attempt = slot.attempts, "attempt timed out");
                slot.generation += 1;
                self.send_queue.push_front(id);
            } else {
                let attempts = slot.attempts;
                let replies = slot.ignored;
                let err = slot.last_error.take().unwrap_or(if replies > 0 {
                    QueryError::Foreign { attempts, replies }
                } else {
                    QueryError::Timeout { attempts }
                });
                debug!(addr = %slot.addr, attempts, "query timed out");
                self.finish(id, Err(err));
            }
        }
    }

    fn expire_all(&mut self) {
        let ids: Vec<u64> = self.slots.iter().map(|(_, s)| s.id).collect();
        for id in ids {
            let salvaged = slot_in(&mut self.slots, id).and_then(|s| s.ex.on_timeout(true));
            let result = match salvaged {
                Some(r) => r.map_err(QueryError::Decode),
                None => Err(QueryError::Deadline),
            };
            self.finish(id, result);
        }
        while let Some((index, addr, _)) = self.pending.pop_front() {
            self.emit(index, addr, Err(QueryError::Deadline), None, 0);
        }
    }

    /// Ends query `id` if its lifetime has passed at `now`; true when it did.
    fn ended_by_lifetime(&mut self, id: u64, now: Instant) -> bool {
        let Some(slot) = slot_in(&mut self.slots, id) else {
            return false;
        };
        if slot.expires.is_none_or(|e| e > now) {
            return false;
        }
        debug!(addr = %slot.addr, "query ran past its lifetime");
        let err = exceeded("lifetime", self.options.lifetime.as_millis());
        self.finish(id, Err(err));
        true
    }

    fn finish(&mut self, id: u64, result: Result<E::Output, QueryError>) {
        if slot_in(&mut self.slots, id).is_none() {
            return;
        }
        let Some(slot) = self.slots.try_remove(slot_key(id)) else {
            return;
        };
        self.routes.detach(slot.addr, id);
        let rtt = if result.is_ok() { slot.rtt } else { None };
        self.emit(slot.index, slot.addr, result, rtt, slot.attempts);
    }

    /// Hands an outcome to the reader, or keeps it in the backlog while the reader lags.
    fn emit(
        &mut self,
        index: usize,
        addr: SocketAddr,
        result: Result<E::Output, QueryError>,
        rtt: Option<Duration>,
        attempts: u32,
    ) {
        let outcome = Outcome {
            index,
            addr,
            result,
            rtt,
            attempts,
        };
        if !self.backlog.is_empty() {
            self.backlog.push_back(outcome);
            return;
        }
        match self.out.try_send(outcome) {
            Ok(()) | Err(mpsc::error::TrySendError::Closed(_)) => {}
            Err(mpsc::error::TrySendError::Full(o)) => self.backlog.push_back(o),
        }
    }
}

/// The most queries a batch has in flight (an id keeps a query's slot in 32 bits).
const MAX_IN_FLIGHT: usize = u32::MAX as usize;

/// Queries whose datagrams go out together (see [`Driver::send_ready`]): a burst of replies is
/// answered by a few system calls, not one per datagram, while one call's datagrams (stamped
/// together when it returns) leave within a few tens of microseconds of each other.
const SEND_BATCH: usize = 16;

/// A query's datagrams for one attempt, about to go out.
struct Prepared {
    id: u64,
    attempt: u32,
    addr: SocketAddr,
    datagrams: Vec<Vec<u8>>,
    /// Why one of them did not go.
    error: Option<std::io::Error>,
    /// When the last of them went (the attempt's send time, for its RTT).
    sent: Option<Instant>,
}

/// Sends the datagrams of `batch`, each address family in as few system calls as its
/// transport allows ([`Transport::try_send_batch`]); a datagram the socket cannot take now
/// is awaited alone. Each datagram is still a unit of the task's budget, as one awaited send
/// was: a long burst yields now and then, so the receive task keeps taking replies off the
/// socket (and stamping their RTT) meanwhile.
async fn transmit(engine: &Inner, batch: &mut [Prepared]) {
    for (v4, transport) in [(true, &engine.v4), (false, &engine.v6)] {
        let Some(t) = transport else {
            continue;
        };
        let mut failed: SmallVec<[(usize, std::io::Error); 2]> = SmallVec::new();
        // (position in `batch`, when its datagram went)
        let mut stamps: SmallVec<[(usize, Instant); SEND_BATCH]> = SmallVec::new();
        // (position in `batch`, address, datagram)
        let list: SmallVec<[(usize, SocketAddr, &[u8]); SEND_BATCH]> = batch
            .iter()
            .enumerate()
            .filter(|(_, p)| p.addr.is_ipv4() == v4)
            .flat_map(|(i, p)| p.datagrams.iter().map(move |d| (i, p.addr, d.as_slice())))
            .collect();
        let mut done = 0;
        let mut refused = 0;
        while let Some(rest) = list.get(done..).filter(|r| !r.is_empty()) {
            let pairs: SmallVec<[(SocketAddr, &[u8]); SEND_BATCH]> =
                rest.iter().map(|&(_, a, d)| (a, d)).collect();
            // Stamped just before the call: a reply can be received (on another thread)
            // before the call returns, and its RTT must not come out negative (zero).
            let before = Instant::now();
            let sent = match t.try_send_batch(&pairs) {
                Ok(n) if n > 0 => n,
                Ok(_) => 0,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => 0,
                // An ICMP error about an earlier datagram (IP_RECVERR) is reported on the next
                // call, this send: nothing went; it is read (and routed) by the receive task.
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused && refused < 8 => {
                    refused += 1;
                    continue;
                }
                Err(e) => {
                    if let Some(&(i, addr, _)) = rest.first() {
                        debug!(%addr, error = %e, "send failed");
                        failed.push((i, e));
                    }
                    done += 1;
                    continue;
                }
            };
            if sent == 0 {
                // The socket is full: wait for room for this one, then try the rest together.
                if let Some(&(i, addr, d)) = rest.first() {
                    let mut r = t.send_to(d, addr).await;
                    if r.as_ref()
                        .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused)
                    {
                        // An earlier datagram's ICMP error, reported here: send again.
                        r = t.send_to(d, addr).await;
                    }
                    if let Err(e) = r {
                        debug!(%addr, error = %e, "send failed");
                        failed.push((i, e));
                    }
                    stamps.push((i, Instant::now()));
                }
                done += 1;
                continue;
            }
            // Stamped as they leave: a later datagram of the batch may wait for room.
            stamps.extend(rest.iter().take(sent).map(|&(i, _, _)| (i, before)));
            for _ in 0..sent {
                tokio::task::consume_budget().await;
            }
            done += sent;
        }
        drop(list);
        for (i, e) in failed {
            if let Some(p) = batch.get_mut(i) {
                p.error = Some(e);
            }
        }
        for (i, at) in stamps {
            if let Some(p) = batch.get_mut(i) {
                p.sent = Some(at);
            }
        }
    }
}

/// How long attempt `attempt` (0: the first) of a step waits for its reply: the adaptive
/// timeout when it is on, has samples and this is not the last attempt; otherwise
/// [`Options::timeout`].
fn attempt_wait(options: &Options, rtt: &RttEstimator, attempt: u32) -> Duration {
    if !options.adaptive || attempt >= options.retries {
        return options.timeout;
    }
    rtt.backoff(attempt)
        .map_or(options.timeout, |d| d.min(options.timeout))
}

/// The RTT is taken once per step, at the first accepted datagram (`received`: when the
/// receive task got it), from the send time of the attempt it answers (the latest attempt when
/// the reply does not say).
fn record_rtt<E>(slot: &mut Slot<E>, attempt: Option<u32>, received: Instant) {
    if slot.rtt.is_some() {
        return;
    }
    let sent = attempt
        .and_then(|a| slot.sent_at.get(usize::try_from(a).ok()?))
        .or_else(|| slot.sent_at.iter().rev().find(|s| **s <= received))
        .or(slot.sent_at.last());
    slot.rtt = sent.map(|s| received.saturating_duration_since(*s));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flood from an address with a query in flight, while its driver does not keep up,
    /// does not grow the batch's queue: datagrams past [`DATAGRAM_QUEUE`] are dropped and
    /// counted, the ones queued are kept in order.
    #[test]
    fn a_full_datagram_queue_drops_and_counts() {
        let routes = Routes::default();
        let flooder: SocketAddr = "127.0.0.1:27960".parse().unwrap();
        let (tx, mut rx) = mpsc::channel(DATAGRAM_QUEUE);
        assert!(routes.attach(flooder, 1, &tx, 10));
        let at = Instant::now();
        let extra = 1000;
        let datagrams: Vec<Vec<u8>> = (0..DATAGRAM_QUEUE + extra)
            .map(|i| i.to_string().into_bytes())
            .collect();
        routes.dispatch(datagrams.iter().map(|d| (flooder, d.as_slice())), at);
        assert_eq!(routes.dropped.load(Ordering::Relaxed), extra as u64);
        for i in 0..DATAGRAM_QUEUE {
            let Routed::Datagram((_, d, _, _)) = rx.try_recv().unwrap() else {
                panic!("a datagram")
            };
            assert_eq!(d, i.to_string().into_bytes());
        }
        assert!(rx.try_recv().is_err());
        // Room again: the next datagram is queued, not dropped.
        routes.dispatch([(flooder, &b"after"[..])], at);
        assert!(matches!(rx.try_recv().unwrap(), Routed::Datagram((_, d, _, _)) if d == b"after"));
        assert_eq!(routes.dropped.load(Ordering::Relaxed), extra as u64);
    }

    /// The first of two source-address checks. The driver's own lookup by source address
    /// (pinned by `a_reply_from_another_address_never_completes_a_query` in tests/engine.rs)
    /// masks a routing table that delivers everywhere, so this one is pinned here.
    #[test]
    fn routes_deliver_only_to_routes_of_the_source_address() {
        let routes = Routes::default();
        let (a, b, stranger): (SocketAddr, SocketAddr, SocketAddr) = (
            "127.0.0.1:5".parse().unwrap(),
            "127.0.0.1:6".parse().unwrap(),
            "127.0.0.1:7".parse().unwrap(),
        );
        let (tx_a, mut rx_a) = mpsc::channel(16);
        let (tx_b, mut rx_b) = mpsc::channel(16);
        assert!(routes.attach(a, 1, &tx_a, 10));
        assert!(routes.attach(b, 2, &tx_b, 20));
        assert!(
            !routes.attach(b, 2, &tx_b, 21),
            "a second query, the same route"
        );
        let at = Instant::now();
        routes.dispatch([(b, &b"for b"[..])], at);
        routes.dispatch([(stranger, &b"for no one"[..])], at);
        let ids: Ids = smallvec::smallvec![20, 21];
        assert_eq!(
            rx_b.try_recv().unwrap(),
            Routed::Datagram((b, b"for b".to_vec(), at, ids))
        );
        assert!(rx_b.try_recv().is_err());
        assert!(
            rx_a.try_recv().is_err(),
            "a datagram from b reached a's route"
        );
        assert!(!routes.detach(b, 2, 20), "21 still waits on b");
        routes.dispatch([(b, &b"again"[..])], at);
        let ids: Ids = smallvec::smallvec![21];
        assert_eq!(
            rx_b.try_recv().unwrap(),
            Routed::Datagram((b, b"again".to_vec(), at, ids))
        );
        assert!(routes.detach(b, 2, 21));
        routes.dispatch([(b, &b"late"[..])], at);
        assert!(rx_b.try_recv().is_err() && rx_a.try_recv().is_err());
        assert_eq!(routes.lock().len(), 1);
        // A batch that ends early takes every route of its own, and only those.
        assert!(routes.attach(a, 3, &tx_b, 30));
        assert!(routes.attach(b, 3, &tx_b, 31));
        routes.remove_batch(3);
        assert_eq!(routes.lock().len(), 1);
        assert_eq!(routes.lock().get(&a).map(|r| r.len()), Some(1));
        // Several queries detached under one lock: the routes they were the last on go.
        assert!(routes.attach(a, 4, &tx_b, 40));
        assert!(!routes.attach(a, 4, &tx_b, 41));
        assert!(routes.attach(b, 4, &tx_b, 42));
        assert_eq!(routes.detach_all(4, [(a, 40), (b, 42), (stranger, 43)]), 1);
        assert_eq!(routes.detach_all(4, [(a, 41)]), 1);
        assert_eq!(routes.lock().len(), 1, "only batch 1's route on a is left");
    }
}
