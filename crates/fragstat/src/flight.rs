//! Single flight: identical queries in flight on one [`crate::Client`] (same game, address,
//! ask, timeout and retries) are sent once, and every caller gets the result.
//!
//! A flight is a shared future held by its callers; the table keeps only a weak handle, so a
//! flight whose callers all dropped their queries is dropped too (its batch cancelled, nothing
//! sent after), and the next identical query starts a new one.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::{FutureExt, Shared, WeakShared};

use crate::{Ask, Error, Response};

type Outcome = Arc<Result<Response, Error>>;
type Flight = Pin<Box<dyn Future<Output = Outcome> + Send>>;

/// What makes two queries the same.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub(crate) game: String,
    pub(crate) addr: SocketAddr,
    /// The [`Ask`]'s fields.
    pub(crate) ask: (bool, bool, bool, Option<i32>),
    pub(crate) timeout: Option<Duration>,
    pub(crate) retries: Option<u32>,
}

impl Key {
    pub(crate) fn new(
        game: &str,
        addr: SocketAddr,
        ask: Ask,
        timeout: Option<Duration>,
        retries: Option<u32>,
    ) -> Self {
        Key {
            game: game.to_string(),
            addr,
            ask: (ask.players, ask.rules, ask.short, ask.protocol),
            timeout,
            retries,
        }
    }
}

/// The flights in the air, by query.
#[derive(Debug, Default)]
pub(crate) struct Flights {
    table: Mutex<HashMap<Key, (u64, WeakShared<Flight>)>>,
    next: AtomicU64,
}

/// Entries the table holds before it sweeps out flights whose callers are all gone.
const SWEEP_AT: usize = 256;

impl Flights {
    /// The result of the flight for `key`: the one in the air, or a new one of `run`.
    pub(crate) async fn join<F>(self: Arc<Self>, key: Key, run: F) -> Result<Response, Error>
    where
        F: Future<Output = Result<Response, Error>> + Send + 'static,
    {
        let flight = self.flight(key, run);
        let outcome = flight.await;
        match &*outcome {
            Ok(r) => Ok(r.clone()),
            Err(e) => Err(copy(e)),
        }
    }

    fn flight<F>(self: &Arc<Self>, key: Key, run: F) -> Shared<Flight>
    where
        F: Future<Output = Result<Response, Error>> + Send + 'static,
    {
        let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(flying) = table.get(&key).and_then(|(_, w)| w.upgrade()) {
            return flying;
        }
        if table.len() >= SWEEP_AT {
            table.retain(|_, (_, w)| w.upgrade().is_some());
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let flights = Arc::downgrade(self);
        let landed = key.clone();
        let flight: Flight = Box::pin(async move {
            let result = run.await;
            // Landed: later identical queries ask the server again.
            if let Some(flights) = flights.upgrade() {
                let mut table = flights.table.lock().unwrap_or_else(|e| e.into_inner());
                if table.get(&landed).is_some_and(|(i, _)| *i == id) {
                    table.remove(&landed);
                }
            }
            Arc::new(result)
        });
        let shared = flight.shared();
        if let Some(weak) = shared.downgrade() {
            table.insert(key, (id, weak));
        }
        shared
    }
}

/// The error of a flight for one of its callers.
fn copy(e: &Error) -> Error {
    e.clone()
}
