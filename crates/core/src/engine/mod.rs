//! The query engine: one shared transport per address family, a receive task per transport
//! that routes datagrams by source address to the batch that asked ([`routes`]), and a
//! driver per batch ([`driver`]): a tokio task over the batch's sans-IO
//! [`Scheduler`](crate::scheduler::Scheduler), which decides what is sent when, matches,
//! retries and times out.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::{debug, trace, Instrument};

use crate::exchange::Exchange;
use crate::manners::Ledger;
use crate::scheduler::{Jobs, Scheduler};
pub use crate::scheduler::{Options, Outcome};
use crate::transport::{Backoff, RecvBatch, Transport, UdpTransport};
use crate::QueryError;

mod driver;
mod routes;
mod transmit;

use driver::Driver;
use routes::{RouteGuard, Routes};
use transmit::now;

struct Inner {
    v4: Option<Arc<dyn Transport>>,
    v6: Option<Arc<dyn Transport>>,
    routes: Arc<Routes>,
    next_batch: AtomicU64,
    tasks: Vec<JoinHandle<()>>,
    /// The budgets of batches that bring none ([`Options::ledger`]).
    ledger: Ledger,
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
                                backoff.reset();
                                // Each datagram with its own arrival time (the kernel's, where
                                // the transport has it): replies that waited in the socket
                                // while this task was held up are not all timed at once.
                                routes.dispatch(batch.datagrams_at(now()));
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
                ledger: Ledger::new(),
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
        self.inner.routes.len()
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
        self.start(Jobs::exact(jobs.into_iter()), None, options)
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
        self.start(Jobs::iter(jobs.into_iter()), None, options)
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
        self.start(Jobs::pushed(), Some(jobs), options)
    }

    /// Starts a batch's driver over `jobs` (pushed from `channel` when there is one).
    fn start<E: Exchange>(
        &self,
        jobs: Jobs<E>,
        channel: Option<mpsc::Receiver<(SocketAddr, E)>>,
        options: Options,
    ) -> Batch<E::Output> {
        let (out_tx, out_rx) = mpsc::channel(OUTCOME_QUEUE);
        let (dg_tx, dg_rx) = mpsc::channel(DATAGRAM_QUEUE);
        let id = self.inner.next_batch.fetch_add(1, Ordering::Relaxed);
        let total = jobs.total();
        let mut options = options;
        if options.ledger.is_none() {
            options.ledger = Some(self.inner.ledger.clone());
        }
        let scheduler = Scheduler::new(now(), options, jobs)
            .with_families(self.inner.v4.is_some(), self.inner.v6.is_some());
        let driver = Driver::new(
            RouteGuard::new(Arc::clone(&self.inner.routes), id, dg_tx),
            Arc::clone(&self.inner),
            scheduler,
            channel,
            out_tx,
        );
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
