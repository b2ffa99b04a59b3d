//! A batch's driver: the tokio task that runs one [`Scheduler`] against the engine's sockets.
//! It routes what the receive tasks hand it to the scheduler, sends what the scheduler gives
//! ([`SEND_BATCH`] queries a `sendmmsg`), keeps the batch's routes in the shared table, feeds
//! a channel's jobs in, sleeps until the scheduler's next timeout, and hands outcomes to the
//! [`super::Batch`] as its reader makes room.

use std::net::SocketAddr;
use std::sync::Arc;

use smallvec::SmallVec;
use tokio::sync::mpsc;
use tracing::debug;

use super::routes::{RouteGuard, Routed};
use super::transmit::{now, transmit, Prepared, SEND_BATCH};
use super::Inner;
use crate::exchange::Exchange;
use crate::scheduler::{Outcome, Scheduler};

pub(super) struct Driver<E: Exchange> {
    /// This batch's routes, removed when the driver ends or is dropped.
    routes: RouteGuard,
    engine: Arc<Inner>,
    scheduler: Scheduler<E>,
    /// The channel jobs come from ([`super::Engine::run_receiver`]) until every sender is
    /// gone.
    jobs: Option<mpsc::Receiver<(SocketAddr, E)>>,
    out: mpsc::Sender<Outcome<E::Output>>,
}

/// What woke a driver.
enum Wake<E: Exchange> {
    Datagram(Routed),
    /// Room for one outcome (or the reader is gone).
    Room(Result<mpsc::OwnedPermit<Outcome<E::Output>>, mpsc::error::SendError<()>>),
    /// A job from the channel (`None`: every sender is gone).
    Job(Option<(SocketAddr, E)>),
    /// A timer, the pacing clock or the deadline.
    Time,
}

impl<E: Exchange> Driver<E> {
    pub(super) fn new(
        routes: RouteGuard,
        engine: Arc<Inner>,
        scheduler: Scheduler<E>,
        jobs: Option<mpsc::Receiver<(SocketAddr, E)>>,
        out: mpsc::Sender<Outcome<E::Output>>,
    ) -> Self {
        Driver {
            routes,
            engine,
            scheduler,
            jobs,
            out,
        }
    }

    pub(super) async fn run(mut self, mut datagrams: mpsc::Receiver<Routed>) {
        loop {
            self.flush_outcomes();
            self.feed_jobs();
            self.send_ready().await;
            self.apply_routes();
            if self.scheduler.is_finished() {
                break;
            }
            if self.out.is_closed() {
                debug!("batch dropped by its owner");
                break;
            }
            let wake = self.scheduler.poll_timeout();
            let sleep = async {
                match wake {
                    Some(w) => tokio::time::sleep_until(w.into()).await,
                    None => std::future::pending().await,
                }
            };
            let lagging = self.scheduler.has_outcome();
            let room = lagging.then(|| self.out.clone());
            let take_job = self.jobs.is_some() && self.scheduler.wants_job();
            let woke = {
                let jobs = &mut self.jobs;
                tokio::select! {
                    biased;
                    Some(d) = datagrams.recv() => Wake::Datagram(d),
                    permit = async { room.expect("lagging").reserve_owned().await }, if lagging => {
                        Wake::Room(permit.map_err(|_| mpsc::error::SendError(())))
                    }
                    job = async {
                        match jobs {
                            Some(rx) => rx.recv().await,
                            None => None,
                        }
                    }, if take_job => Wake::Job(job),
                    () = sleep => Wake::Time,
                }
            };
            match woke {
                Wake::Datagram(first) => {
                    let now = now();
                    self.on_routed(now, first);
                    // Drain what is already queued before looking at timers.
                    while let Ok(next) = datagrams.try_recv() {
                        self.on_routed(now, next);
                    }
                }
                Wake::Room(Ok(permit)) => {
                    if let Some(o) = self.scheduler.poll_outcome() {
                        permit.send(o);
                    }
                }
                Wake::Room(Err(_)) => {
                    debug!("batch dropped by its owner");
                    break;
                }
                Wake::Job(Some((addr, ex))) => self.scheduler.push_job(addr, ex),
                Wake::Job(None) => {
                    self.scheduler.close_jobs();
                    self.jobs = None;
                }
                Wake::Time => {}
            }
            self.scheduler.handle_timeout(now());
            if self.scheduler.is_expired() {
                // The jobs waiting in the channel are past the deadline too.
                if let Some(rx) = &mut self.jobs {
                    while let Ok((addr, ex)) = rx.try_recv() {
                        self.scheduler.push_job(addr, ex);
                    }
                }
                // What finished last goes to the reader before the batch ends.
                while let Some(o) = self.scheduler.poll_outcome() {
                    if self.out.send(o).await.is_err() {
                        break;
                    }
                }
                break;
            }
        }
        self.apply_routes();
        // `self.routes` is dropped here, or wherever the future is dropped: no route outlives it.
    }

    fn on_routed(&mut self, now: std::time::Instant, r: Routed) {
        match r {
            Routed::Datagram((from, data, at, ids)) => {
                self.scheduler.handle_datagram(now, from, &data, at, &ids);
            }
            Routed::Unreachable(addr, ids) => {
                self.scheduler.handle_unreachable(now, addr, &ids);
            }
        }
    }

    /// Hands finished queries to the reader as far as its channel has room (the rest wait in
    /// the scheduler, which starts no query meanwhile).
    fn flush_outcomes(&mut self) {
        while self.scheduler.has_outcome() {
            match self.out.try_reserve() {
                Ok(permit) => {
                    if let Some(o) = self.scheduler.poll_outcome() {
                        permit.send(o);
                    }
                }
                Err(mpsc::error::TrySendError::Full(())) => return,
                Err(mpsc::error::TrySendError::Closed(())) => {
                    while self.scheduler.poll_outcome().is_some() {}
                    return;
                }
            }
        }
    }

    /// Takes the channel's jobs that are there now, as far as the window has room.
    fn feed_jobs(&mut self) {
        let Some(rx) = &mut self.jobs else {
            return;
        };
        while self.scheduler.wants_job() {
            match rx.try_recv() {
                Ok((addr, ex)) => self.scheduler.push_job(addr, ex),
                Err(mpsc::error::TryRecvError::Empty) => return,
                Err(mpsc::error::TryRecvError::Disconnected) => {
                    self.scheduler.close_jobs();
                    self.jobs = None;
                    return;
                }
            }
        }
    }

    /// The scheduler's route changes, into the shared table under one lock.
    fn apply_routes(&mut self) {
        let scheduler = &mut self.scheduler;
        let mut events = std::iter::from_fn(|| scheduler.poll_event()).peekable();
        if events.peek().is_some() {
            self.routes.apply(events);
        }
    }

    async fn send_ready(&mut self) {
        // The ready queries go out [`SEND_BATCH`] at a time, their datagrams in as few system
        // calls as the transport allows (`sendmmsg`). Paced, every query whose datagrams are
        // due goes out at each wake-up (the scheduler's token bucket: the pacing clock
        // advances by one interval per datagram from where it was, so a late timer is made up
        // for, and lags the real clock by at most a few milliseconds' worth).
        loop {
            let mut batch: SmallVec<[Prepared; SEND_BATCH]> = SmallVec::new();
            let start = now();
            while batch.len() < SEND_BATCH {
                let Some(transmit) = self.scheduler.poll_transmit(start) else {
                    break;
                };
                batch.push(Prepared {
                    transmit,
                    error: None,
                    sent: None,
                });
            }
            // The routes of the queries just started, before their first datagram goes.
            self.apply_routes();
            if batch.is_empty() {
                return;
            }
            transmit(&self.engine, &mut batch).await;
            let after = now();
            for p in batch {
                let at = p.sent.unwrap_or(after);
                self.scheduler
                    .on_sent(p.transmit.id, p.transmit.attempt, at, p.error);
            }
        }
    }
}

/// A batch dropped mid-flight (its [`super::Batch`] dropped, the task aborted) takes its
/// queries' routes with it, by their own addresses under one lock, without searching a route
/// table that other batches share.
impl<E: Exchange> Drop for Driver<E> {
    fn drop(&mut self) {
        self.apply_routes();
        if self.scheduler.in_flight().next().is_some() {
            let held = self.scheduler.in_flight();
            self.routes.detach_all(held);
        }
    }
}
