//! Where a batch's jobs come from: [`Jobs`].

use std::collections::VecDeque;
use std::net::SocketAddr;

use crate::canonical;

/// The jobs of a batch not yet started: an iterator taken from only as the concurrency
/// window frees (so exchanges are made as their queries start), or a queue the caller pushes
/// jobs into as they arrive ([`Jobs::pushed`], [`super::Scheduler::push_job`]).
pub struct Jobs<E> {
    kind: Kind<E>,
    /// The index of the next job.
    next: usize,
    /// Jobs not yet taken, when the iterator said; `None` while an iterator of unknown
    /// length may still have more, and for pushed jobs.
    left: Option<usize>,
    /// No job will come any more (the iterator has ended, or the pushing side closed).
    done: bool,
}

enum Kind<E> {
    Iter(Box<dyn Iterator<Item = (SocketAddr, E)> + Send>),
    /// Pushed jobs not started yet.
    Pushed(VecDeque<(SocketAddr, E)>),
}

impl<E> std::fmt::Debug for Jobs<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jobs")
            .field("pushed", &matches!(self.kind, Kind::Pushed(_)))
            .field("next", &self.next)
            .field("left", &self.left)
            .field("done", &self.done)
            .finish()
    }
}

impl<E> Jobs<E> {
    /// The jobs of an iterator that knows its length (as [`crate::Engine::run_lazy`] takes
    /// them); an iterator shorter than it said ends the jobs there.
    pub fn exact<I>(iter: I) -> Self
    where
        I: ExactSizeIterator<Item = (SocketAddr, E)> + Send + 'static,
    {
        let left = iter.len();
        Jobs {
            kind: Kind::Iter(Box::new(iter)),
            next: 0,
            left: Some(left),
            done: left == 0,
        }
    }

    /// The jobs of an iterator of unknown length (as [`crate::Engine::run_iter`] takes
    /// them): taken until it ends.
    pub fn iter<I>(iter: I) -> Self
    where
        I: Iterator<Item = (SocketAddr, E)> + Send + 'static,
    {
        Jobs {
            kind: Kind::Iter(Box::new(iter)),
            next: 0,
            left: None,
            done: false,
        }
    }

    /// Jobs pushed one by one as they arrive ([`super::Scheduler::push_job`]) until
    /// [`super::Scheduler::close_jobs`] (as [`crate::Engine::run_receiver`] feeds its
    /// channel's jobs).
    pub fn pushed() -> Self {
        Jobs {
            kind: Kind::Pushed(VecDeque::new()),
            next: 0,
            left: None,
            done: false,
        }
    }

    /// How many jobs there are in all, when known in advance ([`Jobs::exact`]).
    pub fn total(&self) -> Option<usize> {
        self.left.map(|l| l + self.next)
    }

    /// No job will come any more.
    pub(crate) fn is_exhausted(&self) -> bool {
        match &self.kind {
            Kind::Iter(_) => self.done,
            Kind::Pushed(queue) => self.done && queue.is_empty(),
        }
    }

    /// Jobs are pushed, and the pushing side has not closed.
    pub(crate) fn is_open_queue(&self) -> bool {
        matches!(self.kind, Kind::Pushed(_)) && !self.done
    }

    /// Pushed jobs waiting to start.
    pub(crate) fn queued(&self) -> usize {
        match &self.kind {
            Kind::Iter(_) => 0,
            Kind::Pushed(queue) => queue.len(),
        }
    }

    /// Queues a pushed job; false (and the job dropped) for an iterator's jobs or once
    /// closed.
    pub(crate) fn push(&mut self, addr: SocketAddr, ex: E) -> bool {
        match &mut self.kind {
            Kind::Pushed(queue) if !self.done => {
                queue.push_back((addr, ex));
                true
            }
            _ => false,
        }
    }

    /// No more jobs will be pushed.
    pub(crate) fn close(&mut self) {
        if matches!(self.kind, Kind::Pushed(_)) {
            self.done = true;
        }
    }

    /// The next job available now: its index, canonical address and exchange.
    pub(crate) fn pop_front(&mut self) -> Option<(usize, SocketAddr, E)> {
        let (addr, ex) = match &mut self.kind {
            Kind::Pushed(queue) => queue.pop_front()?,
            Kind::Iter(_) if self.done => return None,
            Kind::Iter(iter) => {
                // An iterator shorter than it said it was ends the batch's jobs there.
                let Some(job) = iter.next() else {
                    self.done = true;
                    return None;
                };
                if let Some(left) = &mut self.left {
                    *left = left.saturating_sub(1);
                    if *left == 0 {
                        self.done = true;
                    }
                }
                job
            }
        };
        let index = self.next;
        self.next += 1;
        Some((index, canonical(addr), ex))
    }
}
