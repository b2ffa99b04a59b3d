//! The query scheduler, sans-IO (in the manner of quinn-proto): the state machine of one
//! batch of queries — its slots, attempt timers, retries, adaptive timeouts, per-query caps,
//! pacing, concurrency window, lazily taken jobs and outcomes — with no sockets, no runtime
//! and no clock of its own: every call that depends on the time is given `now`.
//!
//! The tokio [`crate::Engine`] is a thin driver over it (feature `runtime`): it routes the
//! datagrams of its sockets to [`Scheduler::handle_datagram`], sends what
//! [`Scheduler::poll_transmit`] gives (reporting each send with [`Scheduler::on_sent`]), sleeps
//! until [`Scheduler::poll_timeout`], and hands [`Scheduler::poll_outcome`] to the reader.
//!
//! The caller's loop, after anything that happened (a datagram, a timeout, a job pushed,
//! outcomes taken):
//! 1. [`Scheduler::poll_event`] until `None`: make datagrams from each [`Event::Watch`]
//!    address reach [`Scheduler::handle_datagram`] with the query's id (before sending to it),
//!    stop for [`Event::Unwatch`];
//! 2. [`Scheduler::poll_transmit`] until `None`, sending each [`Transmit`] and reporting it
//!    with [`Scheduler::on_sent`] (the time just before the send: the attempt's RTT is
//!    measured from it);
//! 3. [`Scheduler::poll_outcome`] until `None`; no new query starts while an outcome waits,
//!    so a caller that stops taking them holds the batch where it is;
//! 4. until [`Scheduler::is_finished`], wait for a datagram or [`Scheduler::poll_timeout`]
//!    and call [`Scheduler::handle_timeout`] when it passes.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use fragstat_core::scheduler::{Event, Jobs, Scheduler};
//! use fragstat_core::{Exchange, Options, Verdict};
//!
//! struct Ping;
//! impl Exchange for Ping {
//!     type Output = ();
//!     fn requests(&mut self, _: u32) -> Result<Vec<Vec<u8>>, fragstat_core::EncodeError> {
//!         Ok(vec![b"ping".to_vec()])
//!     }
//!     fn on_datagram(&mut self, d: &[u8]) -> Verdict<()> {
//!         if d == b"pong" { Verdict::Done { output: Ok(()), attempt: None } } else { Verdict::Ignore("") }
//!     }
//! }
//!
//! let server = "127.0.0.1:27960".parse().unwrap();
//! let start = Instant::now();
//! let mut s = Scheduler::new(start, Options::default(), Jobs::exact([(server, Ping)].into_iter()));
//! let t = s.poll_transmit(start).expect("the first attempt");
//! assert_eq!((t.destination, t.datagrams.clone()), (server, vec![b"ping".to_vec()]));
//! let Some(Event::Watch { id, .. }) = s.poll_event() else { panic!() };
//! s.on_sent(t.id, t.attempt, start, None);
//! let later = start + Duration::from_millis(30);
//! s.handle_datagram(later, server, b"pong", later, &[id]);
//! let o = s.poll_outcome().unwrap();
//! assert_eq!((o.result.is_ok(), o.rtt), (true, Some(Duration::from_millis(30))));
//! assert!(s.is_finished());
//! ```

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use slab::Slab;
use tracing::debug;

use crate::exchange::{Exchange, Verdict};
use crate::manners::Ledger;
use crate::rto::RttEstimator;
use crate::QueryError;

mod jobs;
mod options;
mod slot;
mod spacing;
#[cfg(test)]
mod tests;

pub use jobs::Jobs;
pub use options::Options;
use slot::{
    attempt_wait, exceeded, later, over_cap, query_id, record_rtt, slot_in, slot_key, timer_at,
    Slot,
};

/// The scheduler logs under the engine's target, as it did when it was the engine's driver
/// (`RUST_LOG=fragstat_core::engine=debug` shows every query's course).
const LOG: &str = "fragstat_core::engine";

/// The most queries a batch has in flight (an id keeps a query's slot in 32 bits).
const MAX_IN_FLIGHT: usize = u32::MAX as usize;

/// Slots allocated up front for a batch's queries in flight (more are allocated as needed).
const INITIAL_SLOTS: usize = 4096;

/// Paced sends: how many datagrams' worth of time may be saved up (at least
/// [`PACING_CATCH_UP`]), so a timer that fires late is made up for without bursting.
const PACING_BURST: f64 = 4.0;

/// Paced sends: the shortest saved-up time (a few timer ticks).
const PACING_CATCH_UP: Duration = Duration::from_millis(4);

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

/// A query of a batch, as the route table and [`Scheduler::handle_datagram`] name it. A
/// query's id is never reused by a later query of the same batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct QueryId(pub(crate) u64);

/// What the caller's routing must do for the scheduler ([`Scheduler::poll_event`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Query `id` now waits on `addr`: datagrams from `addr` are handed to
    /// [`Scheduler::handle_datagram`] with `id` among the ids (and ICMP errors about `addr` to
    /// [`Scheduler::handle_unreachable`]). Comes before the query's first [`Transmit`].
    Watch {
        /// The server (canonical form).
        addr: SocketAddr,
        /// The query.
        id: QueryId,
    },
    /// Query `id` has finished: it no longer waits on `addr`.
    Unwatch {
        /// The server.
        addr: SocketAddr,
        /// The query.
        id: QueryId,
    },
}

/// The datagrams of one attempt of one query, to send to `destination` now
/// ([`Scheduler::poll_transmit`]); report them with [`Scheduler::on_sent`].
#[derive(Debug)]
pub struct Transmit {
    /// The query.
    pub id: QueryId,
    /// The attempt (0: the first of the current step).
    pub attempt: u32,
    /// The server.
    pub destination: SocketAddr,
    /// What [`Exchange::requests`] gave for the attempt, in order.
    pub datagrams: Vec<Vec<u8>>,
}

/// One batch of queries, sans-IO: see the [module documentation](self).
pub struct Scheduler<E: Exchange> {
    options: Options,
    jobs: Jobs<E>,
    /// Address families the caller can send to: `(IPv4, IPv6)`.
    families: (bool, bool),
    /// Queries in flight at most.
    window: usize,
    /// The queries in flight, by the low half of their ids (see [`slot_in`]).
    slots: Slab<Slot<E>>,
    /// `(when, query id, generation)`.
    timers: BinaryHeap<Reverse<(Instant, u64, u64)>>,
    /// Queries waiting to send their current attempt (retries go first).
    send_queue: VecDeque<u64>,
    /// Queries started so far: the high half of the next id.
    next_seq: u64,
    /// Paced: the time between two datagrams.
    interval: Option<Duration>,
    /// Paced: when the next datagram may go (a token bucket's clock: it advances by one
    /// interval per datagram, and lags the real clock by at most `burst`).
    next_send: Instant,
    /// Paced: how far `next_send` may lag behind now (time saved up while idle).
    burst: Duration,
    /// Round-trip times of this batch's replies, for the adaptive timeout.
    rtt: RttEstimator,
    /// When the batch ends ([`Options::deadline`]).
    deadline: Option<Instant>,
    /// The deadline has passed: every query has ended.
    expired: bool,
    /// Finished queries not yet taken: while any wait, no new query starts.
    outcomes: VecDeque<Outcome<E::Output>>,
    /// Route changes not yet taken.
    events: VecDeque<Event>,
    /// The per-server budgets ([`Options::ledger`]).
    ledger: Ledger,
    /// Attempts held for their server's budget: `(when, query id)` (stale when the slot's
    /// `held` says another time).
    held: BinaryHeap<Reverse<(Instant, u64)>>,
}

impl<E: Exchange> std::fmt::Debug for Scheduler<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("jobs", &self.jobs)
            .field("in_flight", &self.slots.len())
            .field("timers", &self.timers.len())
            .field("send_queue", &self.send_queue.len())
            .field("outcomes", &self.outcomes.len())
            .field("events", &self.events.len())
            .field("expired", &self.expired)
            .finish_non_exhaustive()
    }
}

impl<E: Exchange> Scheduler<E> {
    /// A batch starting at `now` (its [`Options::deadline`] counts from then) over `jobs`.
    pub fn new(now: Instant, options: Options, jobs: Jobs<E>) -> Self {
        let window = options.concurrency.clamp(1, MAX_IN_FLIGHT);
        let capacity = window
            .min(jobs.total().unwrap_or(usize::MAX))
            .min(INITIAL_SLOTS);
        let rate = options.rate.filter(|r| *r > 0);
        let interval = rate.map(|r| Duration::from_secs_f64(1.0 / f64::from(r)));
        let burst = rate.map_or(Duration::ZERO, |r| {
            // Tokens that may be saved up while the batch waits (a late timer, a send that
            // had to wait for room): a few milliseconds' worth, at least one datagram.
            Duration::from_secs_f64(f64::from(r).recip() * PACING_BURST).max(PACING_CATCH_UP)
        });
        Scheduler {
            ledger: options.ledger.clone().unwrap_or_default(),
            held: BinaryHeap::new(),
            rtt: RttEstimator::new(options.min_timeout, options.timeout),
            deadline: options.deadline.map(|d| later(now, d)),
            options,
            jobs,
            families: (true, true),
            window,
            slots: Slab::with_capacity(capacity),
            timers: BinaryHeap::new(),
            send_queue: VecDeque::new(),
            next_seq: 0,
            interval,
            next_send: now,
            burst,
            expired: false,
            outcomes: VecDeque::new(),
            events: VecDeque::new(),
        }
    }

    /// Only these address families can be sent to (default: both): a job for another ends at
    /// once with [`QueryError::Unsupported`].
    #[must_use]
    pub fn with_families(mut self, v4: bool, v6: bool) -> Self {
        self.families = (v4, v6);
        self
    }

    /// The batch's options.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// How many jobs the batch has in all, when known in advance ([`Jobs::exact`]).
    pub fn total(&self) -> Option<usize> {
        self.jobs.total()
    }

    /// Adds a job to a batch of [`Jobs::pushed`] (ignored otherwise, or after
    /// [`Scheduler::close_jobs`]); it starts when the window has room. After the deadline it
    /// ends at once with [`QueryError::Deadline`].
    pub fn push_job(&mut self, addr: SocketAddr, exchange: E) {
        if self.jobs.push(addr, exchange) && self.expired {
            self.expire_jobs();
        }
    }

    /// No more jobs will be pushed: the batch ends when the ones pushed have finished.
    pub fn close_jobs(&mut self) {
        self.jobs.close();
    }

    /// Whether a pushed job would start now: the jobs are pushed and still open, the window
    /// has room for one more beside those pushed and waiting, and no outcome waits to be
    /// taken (a caller feeding a channel waits on it only then).
    pub fn wants_job(&self) -> bool {
        self.jobs.is_open_queue()
            && !self.expired
            && self.outcomes.is_empty()
            && self.slots.len() + self.jobs.queued() < self.window
    }

    /// The next datagrams to send, if a query has an attempt ready and pacing allows it now;
    /// starts queries as the window has room (none while an outcome waits to be taken).
    ///
    /// Each transmit must be reported with [`Scheduler::on_sent`] (its timer starts then);
    /// until it is, a second attempt of the same query is not handed out (`None`): report
    /// what was taken, then ask again. A query whose [`Exchange::requests`] fails ends with
    /// [`QueryError::Encode`] and nothing is sent.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        if self.expired {
            return None;
        }
        self.start_queries();
        self.release_held(now);
        if self.interval.is_some() {
            if let Some(floor) = now.checked_sub(self.burst) {
                self.next_send = self.next_send.max(floor);
            }
        }
        loop {
            let &id = self.send_queue.front()?;
            if self.interval.is_some() && now < self.next_send {
                return None;
            }
            // Queued twice (stepped on and retried in one drain) and still being sent: its
            // next attempt goes after this one is reported, numbered after it.
            if self
                .slots
                .get(slot_key(id))
                .is_some_and(|s| s.id == id && s.sending)
            {
                return None;
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
            let made = match slot.held.take() {
                Some((_, d)) => Ok(d),
                None => slot.ex.requests(attempt),
            };
            let datagrams = match made {
                Ok(d) => d,
                Err(e) => {
                    self.finish(id, Err(QueryError::Encode(e)));
                    continue;
                }
            };
            let Some(datagrams) = self.spaced(id, datagrams, now) else {
                continue;
            };
            let Some(slot) = slot_in(&mut self.slots, id) else {
                continue;
            };
            slot.sending = true;
            let destination = slot.addr;
            if let Some(iv) = self.interval {
                let n = u32::try_from(datagrams.len().max(1)).unwrap_or(u32::MAX);
                self.next_send = later(self.next_send, iv.saturating_mul(n));
            }
            return Some(Transmit {
                id: QueryId(id),
                attempt,
                destination,
                datagrams,
            });
        }
    }

    /// The datagrams of attempt `attempt` of query `id` ([`Scheduler::poll_transmit`]) went
    /// at `at` (the time just before the send call: a reply may be received before the call
    /// returns), or could not go (`error`: reported if no reply comes). Starts the attempt's
    /// timer.
    pub fn on_sent(
        &mut self,
        id: QueryId,
        attempt: u32,
        at: Instant,
        error: Option<std::io::Error>,
    ) {
        let Some(slot) = slot_in(&mut self.slots, id.0).filter(|s| s.sending) else {
            return;
        };
        slot.sending = false;
        if let Some(e) = error {
            slot.last_error = Some(QueryError::Io(e));
        }
        slot.attempts += 1;
        slot.sent_at.push(at);
        slot.generation += 1;
        if attempt > 0 {
            debug!(target: LOG, addr = %slot.addr, attempt, "retry sent");
        }
        if slot.expires.is_none() {
            slot.expires = Some(later(at, self.options.lifetime));
        }
        let wait = attempt_wait(&self.options, &self.rtt, attempt);
        let fire = timer_at(slot, later(at, wait));
        self.timers.push(Reverse((fire, id.0, slot.generation)));
    }

    /// A datagram from `from`, received at `received` (its RTT is measured to then), for
    /// the queries `ids` that wait on `from` (as the [`Event`]s set them up). `now` is when
    /// it is handled (timers restarted by it count from then).
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        from: SocketAddr,
        datagram: &[u8],
        received: Instant,
        ids: &[QueryId],
    ) {
        let mut reasons = Vec::new();
        for &QueryId(id) in ids {
            // A query that finished since is gone (its slot empty or another query's).
            let Some(slot) = slot_in(&mut self.slots, id).filter(|s| s.addr == from) else {
                continue;
            };
            if let Some(err) = over_cap(slot, &self.options, datagram.len(), received) {
                debug!(target: LOG, %from, error = %err, "query ended");
                self.finish(id, Err(err));
                continue;
            }
            slot.datagrams += 1;
            slot.bytes = slot.bytes.saturating_add(datagram.len());
            match slot.ex.on_datagram(datagram) {
                Verdict::Ignore(reason) => {
                    // The game's answer to a sibling query is no sign of another game.
                    if !slot.ex.answers_another_query(datagram) {
                        slot.ignored = slot.ignored.saturating_add(1);
                    }
                    reasons.push(reason);
                }
                Verdict::Invalid(e) => {
                    debug!(target: LOG, %from, error = %e, "undecodable reply");
                    slot.last_error = Some(QueryError::Decode(e));
                    return;
                }
                Verdict::Progress { attempt, wait } => {
                    self.sample_rtt(id, attempt, received);
                    let wait = wait.unwrap_or(self.options.timeout);
                    self.restart_timer(id, now, wait);
                    return;
                }
                Verdict::Advance => {
                    slot.held = None;
                    slot.attempts = 0;
                    slot.sent_at.clear();
                    slot.rtt = None;
                    slot.generation += 1;
                    self.send_queue.push_front(id);
                    return;
                }
                Verdict::Partial { attempt } => {
                    self.sample_rtt(id, attempt, received);
                    let Some(slot) = slot_in(&mut self.slots, id) else {
                        return;
                    };
                    let current = slot.attempts.saturating_sub(1);
                    let wait = attempt_wait(&self.options, &self.rtt, current);
                    self.restart_timer(id, now, wait);
                    return;
                }
                Verdict::Done { output, attempt } => {
                    self.sample_rtt(id, attempt, received);
                    debug!(target: LOG, %from, ok = output.is_ok(), "query answered");
                    self.finish(id, output.map_err(QueryError::Decode));
                    return;
                }
            }
        }
        debug!(target: LOG, %from, len = datagram.len(), ?reasons, "dropped datagram that answers no query");
    }

    /// The network reported `addr` unreachable (ICMP "port unreachable" from that host): for
    /// each query of `ids` waiting on it, the current attempt ends now (the next one is sent
    /// at once) instead of waiting out its timer. The query ends with
    /// [`QueryError::Unreachable`] only when two of its attempts drew such a report, or every
    /// attempt it may send did (one, with no retries): one report, which anyone able to
    /// forge the destination's address can send, costs a retry, not the answer.
    pub fn handle_unreachable(&mut self, now: Instant, addr: SocketAddr, ids: &[QueryId]) {
        for &QueryId(id) in ids {
            let Some(slot) = slot_in(&mut self.slots, id).filter(|s| s.addr == addr) else {
                continue;
            };
            // Before the first send there is nothing that could have bounced.
            let Some(&sent) = slot.sent_at.last() else {
                continue;
            };
            if slot.refused_for != Some(sent) {
                slot.refused_for = Some(sent);
                slot.refused = slot.refused.saturating_add(1);
            }
            let last = slot.attempts > self.options.retries;
            if slot.refused >= 2 || (last && slot.refused >= slot.attempts) {
                debug!(target: LOG, %addr, refused = slot.refused, "unreachable");
                self.finish(id, Err(QueryError::Unreachable));
            } else if !slot.sending {
                debug!(target: LOG, %addr, "unreachable: the attempt ends early");
                self.restart_timer(id, now, Duration::ZERO);
            }
        }
    }

    /// When [`Scheduler::handle_timeout`] is next due: the earliest attempt timer, the
    /// pacing clock when queries wait to send, or the deadline. `None`: nothing is timed
    /// (the batch waits on datagrams or jobs alone). Timers of queries that have moved on
    /// since they were set are dropped here, so they wake no one.
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        if self.expired {
            return None;
        }
        while let Some(&Reverse((_, id, generation))) = self.timers.peek() {
            if slot_in(&mut self.slots, id).is_some_and(|s| s.generation == generation) {
                break;
            }
            self.timers.pop();
        }
        let mut wake = self.timers.peek().map(|Reverse((t, _, _))| *t);
        if !self.send_queue.is_empty() {
            wake = Some(wake.map_or(self.next_send, |w| w.min(self.next_send)));
        }
        if let Some(h) = self.next_held() {
            wake = Some(wake.map_or(h, |w| w.min(h)));
        }
        if let Some(d) = self.deadline {
            wake = Some(wake.map_or(d, |w| w.min(d)));
        }
        wake
    }

    /// Fires what is due at `now`: attempt timers (retry, or give up with
    /// [`QueryError::Timeout`] / [`QueryError::Foreign`] / the last error), lifetimes, and the
    /// deadline (every query and job left ends, with [`QueryError::Deadline`] unless its
    /// exchange salvages an answer).
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.expired {
            return;
        }
        if self.deadline.is_some_and(|d| now >= d) {
            self.expire_all();
            return;
        }
        self.fire_timers(now);
    }

    /// The next finished query.
    pub fn poll_outcome(&mut self) -> Option<Outcome<E::Output>> {
        self.outcomes.pop_front()
    }

    /// Whether an outcome waits to be taken ([`Scheduler::poll_outcome`]).
    pub fn has_outcome(&self) -> bool {
        !self.outcomes.is_empty()
    }

    /// The next change to the routes the caller keeps for this batch.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// The queries in flight: `(address, id)`.
    pub fn in_flight(&self) -> impl Iterator<Item = (SocketAddr, QueryId)> + '_ {
        self.slots.iter().map(|(_, s)| (s.addr, QueryId(s.id)))
    }

    /// The deadline has passed (every query has ended).
    pub fn is_expired(&self) -> bool {
        self.expired
    }

    /// Nothing more will happen: no job left, no query in flight, no outcome to take.
    pub fn is_finished(&self) -> bool {
        self.outcomes.is_empty()
            && (self.expired || (self.slots.is_empty() && self.jobs.is_exhausted()))
    }

    fn start_queries(&mut self) {
        while self.outcomes.is_empty() && self.slots.len() < self.window {
            let Some((index, addr, ex)) = self.jobs.pop_front() else {
                break;
            };
            self.start_query(index, addr, ex);
        }
    }

    fn start_query(&mut self, index: usize, addr: SocketAddr, ex: E) {
        let supported = if addr.is_ipv4() {
            self.families.0
        } else {
            self.families.1
        };
        if !supported {
            self.emit(index, addr, Err(QueryError::Unsupported(addr)), None, 0);
            return;
        }
        let entry = self.slots.vacant_entry();
        let id = query_id(entry.key(), self.next_seq);
        self.next_seq += 1;
        entry.insert(Slot::new(id, index, addr, ex));
        self.events.push_back(Event::Watch {
            addr,
            id: QueryId(id),
        });
        self.send_queue.push_back(id);
    }

    /// A new timer for query `id`, `wait` from `now` (the one before it goes stale).
    fn restart_timer(&mut self, id: u64, now: Instant, wait: Duration) {
        let Some(slot) = slot_in(&mut self.slots, id) else {
            return;
        };
        slot.generation += 1;
        let at = timer_at(slot, later(now, wait));
        self.timers.push(Reverse((at, id, slot.generation)));
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
                debug!(target: LOG, addr = %slot.addr, attempt = slot.attempts, "attempt timed out");
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
                debug!(target: LOG, addr = %slot.addr, attempts, "query timed out");
                self.finish(id, Err(err));
            }
        }
    }

    fn expire_all(&mut self) {
        self.expired = true;
        let ids: Vec<u64> = self.slots.iter().map(|(_, s)| s.id).collect();
        for id in ids {
            let salvaged = slot_in(&mut self.slots, id).and_then(|s| s.ex.on_timeout(true));
            let result = match salvaged {
                Some(r) => r.map_err(QueryError::Decode),
                None => Err(QueryError::Deadline),
            };
            self.finish(id, result);
        }
        self.timers.clear();
        self.send_queue.clear();
        self.held.clear();
        self.expire_jobs();
    }

    /// Every job not started ends with [`QueryError::Deadline`] (an iterator's are still
    /// made, one at a time).
    fn expire_jobs(&mut self) {
        while let Some((index, addr, _)) = self.jobs.pop_front() {
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
        debug!(target: LOG, addr = %slot.addr, "query ran past its lifetime");
        let err = exceeded(
            crate::LimitKind::Lifetime,
            self.options.lifetime.as_millis(),
        );
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
        self.events.push_back(Event::Unwatch {
            addr: slot.addr,
            id: QueryId(id),
        });
        let rtt = if result.is_ok() { slot.rtt } else { None };
        self.emit(slot.index, slot.addr, result, rtt, slot.attempts);
    }

    fn emit(
        &mut self,
        index: usize,
        addr: SocketAddr,
        result: Result<E::Output, QueryError>,
        rtt: Option<Duration>,
        attempts: u32,
    ) {
        self.outcomes.push_back(Outcome {
            index,
            addr,
            result,
            rtt,
            attempts,
        });
    }
}
