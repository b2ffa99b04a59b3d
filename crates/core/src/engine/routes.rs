//! The route table an engine's receive tasks share: which batches wait on which address, and
//! the queries of each. A datagram goes to the batches asking its source address, with their
//! queries' ids; nothing else reaches a batch.

use std::collections::hash_map::Entry;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use smallvec::SmallVec;
use tokio::sync::mpsc;
use tracing::{debug, trace};

use crate::scheduler::{Event, QueryId};
use crate::transport::canonical;

/// Hash maps keyed by addresses: foldhash, seeded per map, instead of SipHash (hashing was
/// 5 % of a scan's instructions).
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// The queries of one batch waiting on one address: nearly always one, so kept inline.
pub(super) type Ids = SmallVec<[QueryId; 2]>;

/// A datagram on its way from a receive task to a driver: its source, its bytes, and when it
/// arrived (the kernel's receive time where the transport has it, else when the receive task
/// took it off the socket; the RTT is measured to then, not to whenever the driver gets round
/// to it).
///
/// With it go the batch's queries waiting on that address when it was routed: the driver
/// needs no map of its own from addresses to queries (one hash lookup per datagram, not two).
pub(super) type Received = (SocketAddr, Vec<u8>, Instant, Ids);

/// What a receive task hands a batch's driver: a datagram, or word that an address it asked
/// is unreachable (ICMP), with the batch's queries waiting on that address.
#[derive(Debug, PartialEq)]
pub(super) enum Routed {
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
pub(super) struct Routes {
    map: Mutex<HashMap<SocketAddr, AddrRoutes>>,
    /// Datagrams dropped because the batch they were for had [`DATAGRAM_QUEUE`](super::DATAGRAM_QUEUE) waiting.
    pub(super) dropped: AtomicU64,
}

impl Routes {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<SocketAddr, AddrRoutes>> {
        // A poisoned map is still a valid map: routing never panics while holding it.
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Query `id` of `batch` now waits on `addr`; true when that made a new route (the
    /// batch's first query there).
    #[cfg(test)]
    fn attach(&self, addr: SocketAddr, batch: u64, tx: &mpsc::Sender<Routed>, id: QueryId) -> bool {
        Self::attach_in(&mut self.lock(), addr, batch, tx, id)
    }

    fn attach_in(
        map: &mut HashMap<SocketAddr, AddrRoutes>,
        addr: SocketAddr,
        batch: u64,
        tx: &mpsc::Sender<Routed>,
        id: QueryId,
    ) -> bool {
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

    /// The route changes of `batch`'s scheduler, in order, under one lock: how many routes
    /// that made, and how many it removed.
    fn apply(
        &self,
        batch: u64,
        tx: &mpsc::Sender<Routed>,
        events: impl IntoIterator<Item = Event>,
    ) -> (usize, usize) {
        let mut map = self.lock();
        let (mut made, mut removed) = (0, 0);
        for e in events {
            match e {
                Event::Watch { addr, id } => {
                    made += usize::from(Self::attach_in(&mut map, addr, batch, tx, id))
                }
                Event::Unwatch { addr, id } => {
                    removed += usize::from(Self::detach_in(&mut map, addr, batch, id))
                }
            }
        }
        (made, removed)
    }

    /// Query `id` of `batch` no longer waits on `addr` (the route goes with its last query);
    /// true when that removed the route.
    #[cfg(test)]
    fn detach(&self, addr: SocketAddr, batch: u64, id: QueryId) -> bool {
        Self::detach_in(&mut self.lock(), addr, batch, id)
    }

    /// [`Routes::detach`] of several queries under one lock; how many routes that removed.
    fn detach_all(
        &self,
        batch: u64,
        queries: impl IntoIterator<Item = (SocketAddr, QueryId)>,
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
        id: QueryId,
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

    /// How many addresses have a route.
    pub(super) fn len(&self) -> usize {
        self.lock().len()
    }

    /// Removes every route of `batch`.
    pub(super) fn remove_batch(&self, batch: u64) {
        self.lock().retain(|_, routes| {
            routes.retain(|r| r.batch != batch);
            !routes.is_empty()
        });
    }

    /// Hands each datagram, with when it arrived, to the batches asking its sender (one lock
    /// for all of them).
    pub(super) fn dispatch<'a>(
        &self,
        datagrams: impl IntoIterator<Item = (SocketAddr, &'a [u8], Instant)>,
    ) {
        let map = self.lock();
        for (from, data, at) in datagrams {
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
    pub(super) fn dispatch_unreachable(&self, addr: SocketAddr) {
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
/// all finished, or its future dropped mid-flight because the [`super::Batch`] was dropped and
/// the task aborted), dropping the guard removes every route it still holds. An address has a
/// route exactly while it has a query of the batch.
pub(super) struct RouteGuard {
    routes: Arc<Routes>,
    batch: u64,
    tx: mpsc::Sender<Routed>,
    /// Routes of this batch in the map (so a batch that ends with none left, as every batch
    /// that runs to its end does, does not search the map for them).
    live: usize,
}

impl RouteGuard {
    pub(super) fn new(routes: Arc<Routes>, batch: u64, tx: mpsc::Sender<Routed>) -> Self {
        RouteGuard {
            routes,
            batch,
            tx,
            live: 0,
        }
    }

    /// Applies the scheduler's route changes ([`Event::Watch`]: query `id` now waits on
    /// `addr`; [`Event::Unwatch`]: no longer, the route going with its last query), in order,
    /// under one lock.
    pub(super) fn apply(&mut self, events: impl IntoIterator<Item = Event>) {
        let (made, removed) = self.routes.apply(self.batch, &self.tx, events);
        self.live = (self.live + made).saturating_sub(removed);
    }

    /// Every query given no longer waits on its address, under one lock.
    pub(super) fn detach_all(&mut self, queries: impl IntoIterator<Item = (SocketAddr, QueryId)>) {
        let removed = self.routes.detach_all(self.batch, queries);
        self.live = self.live.saturating_sub(removed);
    }
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        // The driver detaches what it still has in flight ([`super::driver::Driver`]'s
        // `Drop`); a search of the whole table is only the fallback.
        if self.live > 0 {
            self.routes.remove_batch(self.batch);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::DATAGRAM_QUEUE;

    fn q(id: u64) -> QueryId {
        QueryId(id)
    }

    /// A flood from an address with a query in flight, while its driver does not keep up,
    /// does not grow the batch's queue: datagrams past [`DATAGRAM_QUEUE`](super::DATAGRAM_QUEUE) are dropped and
    /// counted, the ones queued are kept in order.
    #[test]
    fn a_full_datagram_queue_drops_and_counts() {
        let routes = Routes::default();
        let flooder: SocketAddr = "127.0.0.1:27960".parse().unwrap();
        let (tx, mut rx) = mpsc::channel(DATAGRAM_QUEUE);
        assert!(routes.attach(flooder, 1, &tx, q(10)));
        let at = Instant::now();
        let extra = 1000;
        let datagrams: Vec<Vec<u8>> = (0..DATAGRAM_QUEUE + extra)
            .map(|i| i.to_string().into_bytes())
            .collect();
        routes.dispatch(datagrams.iter().map(|d| (flooder, d.as_slice(), at)));
        assert_eq!(routes.dropped.load(Ordering::Relaxed), extra as u64);
        for i in 0..DATAGRAM_QUEUE {
            let Routed::Datagram((_, d, _, _)) = rx.try_recv().unwrap() else {
                panic!("a datagram")
            };
            assert_eq!(d, i.to_string().into_bytes());
        }
        assert!(rx.try_recv().is_err());
        // Room again: the next datagram is queued, not dropped.
        routes.dispatch([(flooder, &b"after"[..], at)]);
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
        assert!(routes.attach(a, 1, &tx_a, q(10)));
        assert!(routes.attach(b, 2, &tx_b, q(20)));
        assert!(
            !routes.attach(b, 2, &tx_b, q(21)),
            "a second query, the same route"
        );
        let at = Instant::now();
        routes.dispatch([(b, &b"for b"[..], at)]);
        routes.dispatch([(stranger, &b"for no one"[..], at)]);
        let ids: Ids = smallvec::smallvec![q(20), q(21)];
        assert_eq!(
            rx_b.try_recv().unwrap(),
            Routed::Datagram((b, b"for b".to_vec(), at, ids))
        );
        assert!(rx_b.try_recv().is_err());
        assert!(
            rx_a.try_recv().is_err(),
            "a datagram from b reached a's route"
        );
        assert!(!routes.detach(b, 2, q(20)), "21 still waits on b");
        routes.dispatch([(b, &b"again"[..], at)]);
        let ids: Ids = smallvec::smallvec![q(21)];
        assert_eq!(
            rx_b.try_recv().unwrap(),
            Routed::Datagram((b, b"again".to_vec(), at, ids))
        );
        assert!(routes.detach(b, 2, q(21)));
        routes.dispatch([(b, &b"late"[..], at)]);
        assert!(rx_b.try_recv().is_err() && rx_a.try_recv().is_err());
        assert_eq!(routes.lock().len(), 1);
        // A batch that ends early takes every route of its own, and only those.
        assert!(routes.attach(a, 3, &tx_b, q(30)));
        assert!(routes.attach(b, 3, &tx_b, q(31)));
        routes.remove_batch(3);
        assert_eq!(routes.lock().len(), 1);
        assert_eq!(routes.lock().get(&a).map(|r| r.len()), Some(1));
        // Several queries detached under one lock: the routes they were the last on go.
        assert!(routes.attach(a, 4, &tx_b, q(40)));
        assert!(!routes.attach(a, 4, &tx_b, q(41)));
        assert!(routes.attach(b, 4, &tx_b, q(42)));
        assert_eq!(
            routes.detach_all(4, [(a, q(40)), (b, q(42)), (stranger, q(43))]),
            1
        );
        assert_eq!(routes.detach_all(4, [(a, q(41))]), 1);
        assert_eq!(routes.lock().len(), 1, "only batch 1's route on a is left");
    }

    /// A scheduler's route changes go in in order, under one lock: a route is made with the
    /// batch's first query on an address and goes with its last, and the guard's count of
    /// live routes follows (so a batch that ends with none does not search the table).
    #[test]
    fn a_guard_applies_route_changes_in_order() {
        let routes = Arc::new(Routes::default());
        let (a, b): (SocketAddr, SocketAddr) = (
            "127.0.0.1:5".parse().unwrap(),
            "127.0.0.1:6".parse().unwrap(),
        );
        let (tx, _rx) = mpsc::channel(16);
        let mut guard = RouteGuard::new(Arc::clone(&routes), 7, tx);
        let watch = |addr, id| Event::Watch { addr, id: q(id) };
        let unwatch = |addr, id| Event::Unwatch { addr, id: q(id) };
        guard.apply([watch(a, 1), watch(a, 2), watch(b, 3)]);
        assert_eq!((routes.len(), guard.live), (2, 2));
        // A query that ends and the next one on the same address, in one drain.
        guard.apply([unwatch(a, 1), unwatch(a, 2), watch(a, 4)]);
        assert_eq!((routes.len(), guard.live), (2, 2));
        guard.apply([unwatch(b, 3), unwatch(b, 3)]);
        assert_eq!((routes.len(), guard.live), (1, 1));
        guard.detach_all([(a, q(4))]);
        assert_eq!((routes.len(), guard.live), (0, 0));
        guard.apply([watch(b, 5)]);
        drop(guard);
        assert_eq!(routes.len(), 0, "a guard dropped takes its routes with it");
    }
}
