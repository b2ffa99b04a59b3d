//! Events from the rounds: after each written round its records go through a
//! [`fragstat::events::Differ`] (the previous round kept in memory; the first round after
//! start is the baseline) for the servers' events, while the players' joins and leaves are
//! the sessions the store opened and closed ([`crate::store::RoundWritten`]: one engine, so an
//! event and a session never disagree), and the events go to the `/api/events` Server-Sent Events clients
//! (a broadcast channel of fixed capacity: a client that falls behind is told how many it
//! missed, `event: lagged`) and, when configured, to a webhook.
//!
//! The webhook gets one POST per round with events: JSON (`{"at": …, "events": […],
//! "omitted": n}`, at most [`WEBHOOK_MAX_EVENTS`] events) or Discord's form
//! (`{"content": …, "embeds": […]}` within Discord's limits). A round only enqueues its batch
//! (its first [`WEBHOOK_MAX_EVENTS`] events, the rest counted in `omitted`) in a queue bounded
//! in batches and in bytes ([`WEBHOOK_QUEUE_BYTES`]: the oldest batches are dropped when it is
//! full, and counted); a task of
//! its own sends them, each request within `webhook_timeout_ms`, retrying a failure after
//! 1 s, 2 s, 4 s… up to a minute (a 429's `Retry-After`, at most a minute, instead) up to
//! `webhook_tries` attempts, then dropping the batch (counted in `/metrics`). A 4xx other
//! than 408 and 429 is not retried: the batch is dropped at once.
//!
//! Every event gets a number ([`Published::id`]) and the last ones are kept
//! ([`replay`]) for `/api/events` clients that reconnect with `Last-Event-ID`. With
//! `webhook_secret` every POST is signed ([`signature`]: HMAC-SHA256 of the timestamp and the
//! body).

use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fragstat::core::fair::Shares;
use fragstat::events::{Differ, Event, EventKind};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::{broadcast, watch, OwnedSemaphorePermit, Semaphore};

use crate::config::Config;
use crate::metrics::Metrics;
use crate::round::RoundReport;

pub mod replay;
pub mod signature;
mod webhook;
use webhook::Queue;
pub use webhook::WEBHOOK_QUEUE_BYTES;

/// Events buffered for `/api/events` clients: one further behind than this is told it
/// lagged.
pub const SSE_BUFFER: usize = 1024;
/// Events in one JSON webhook POST at most; the rest of the round's are counted in
/// `omitted`.
pub const WEBHOOK_MAX_EVENTS: usize = 1000;
/// The longest wait a 429's `Retry-After` gets.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// The first retry's wait; doubled for each further one, up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_secs(1);
/// The longest wait between two attempts without a `Retry-After`.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// An event with its JSON, serialised once for every client.
#[derive(Debug)]
pub struct Published {
    /// Its number: 1 for this tracker's first event, one more for each (the SSE `id:` is
    /// [`EventHub::boot`], `-` and this).
    pub id: u64,
    /// The event.
    pub event: Event,
    /// Its JSON (`{"event": …, "server": …}`).
    pub json: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: String,
}

/// What the `/api/events` handler needs: the broadcast, the client caps (in all and per
/// address prefix), the stop signal.
#[derive(Debug, Clone)]
pub struct EventHub {
    tx: broadcast::Sender<Arc<Published>>,
    /// The last events, for clients that come back (`Last-Event-ID`).
    replay: Arc<Mutex<replay::Replay>>,
    /// When this tracker's events began (Unix ms): the first half of every event id.
    boot: i64,
    clients: Arc<Semaphore>,
    /// Streams held per client prefix (`[web] sse_max_per_host`, `sse_max_per_network`).
    shares: Arc<Mutex<Shares>>,
    refused_share: Counter,
    stop: watch::Receiver<bool>,
    connected: Gauge,
    refused: Counter,
    lagged: Counter,
}

/// One `/api/events` client's place (given back on drop).
#[derive(Debug)]
pub struct SseClient {
    _permit: OwnedSemaphorePermit,
    connected: Gauge,
    share: Option<(Arc<Mutex<Shares>>, IpAddr)>,
}

impl Drop for SseClient {
    fn drop(&mut self) {
        self.connected.dec();
        if let Some((shares, ip)) = &self.share {
            shares.lock().unwrap_or_else(|e| e.into_inner()).sub(*ip, 1);
        }
    }
}

impl EventHub {
    /// A place for one more client from `ip` (`None`: unknown, held to the cap in all
    /// only), or `None` when the cap in all or a prefix's cap is reached (counted).
    pub fn client(&self, ip: Option<IpAddr>) -> Option<SseClient> {
        let mut shares = self.shares.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(ip) = ip {
            if shares.check(ip, 1).is_err() {
                self.refused_share.inc();
                return None;
            }
        }
        match self.clients.clone().try_acquire_owned() {
            Ok(p) => {
                self.connected.inc();
                if let Some(ip) = ip {
                    shares.add(ip, 1);
                }
                Some(SseClient {
                    _permit: p,
                    connected: self.connected.clone(),
                    share: ip.map(|ip| (Arc::clone(&self.shares), ip)),
                })
            }
            Err(_) => {
                self.refused.inc();
                None
            }
        }
    }

    /// The events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Published>> {
        self.tx.subscribe()
    }

    /// The events after `last` still kept, and the events from then on: see
    /// [`replay::Resume`].
    pub fn resume(&self, last: u64) -> replay::Resume {
        let r = self.replay.lock().unwrap_or_else(|e| e.into_inner());
        // Subscribed under the lock the publisher sends under: nothing falls between.
        let rx = self.tx.subscribe();
        r.after(last, rx)
    }

    /// When this tracker's events began (Unix ms): event ids are `BOOT-N`.
    pub fn boot(&self) -> i64 {
        self.boot
    }

    /// Resolves when the tracker stops (streams end then).
    pub fn stopped(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut stop = self.stop.clone();
        async move {
            let _ = stop.wait_for(|s| *s).await;
        }
    }

    /// Counts events a lagging client missed.
    pub fn lagged(&self, missed: u64) {
        self.lagged.inc_by(missed);
    }
}

/// A round's events: the differ's of the servers (`events`, its player events dropped) and
/// the store's joins and leaves (`players`, the sessions it opened and closed: one engine
/// for the sessions and the events), each server's after its server events, in the
/// records' order; joins and leaves of servers without a record (their sessions ended) last.
fn with_players(events: Vec<Event>, players: &[Event], records: &[fragstat::Record]) -> Vec<Event> {
    use std::collections::HashMap;
    let mut out = Vec::with_capacity(events.len() + players.len());
    let mut by_server: HashMap<&str, Vec<&Event>> = HashMap::new();
    for e in players {
        by_server.entry(e.server.as_str()).or_default().push(e);
    }
    let mut servers: HashMap<String, Vec<Event>> = HashMap::new();
    for e in events {
        if !matches!(
            e.kind,
            EventKind::PlayerJoined(_) | EventKind::PlayerLeft(_)
        ) {
            servers.entry(e.server.clone()).or_default().push(e);
        }
    }
    for addr in records.iter().filter_map(|r| r.address.as_deref()) {
        out.extend(servers.remove(addr).unwrap_or_default());
        out.extend(
            by_server
                .remove(addr)
                .unwrap_or_default()
                .into_iter()
                .cloned(),
        );
    }
    out.extend(
        players
            .iter()
            .filter(|e| by_server.contains_key(e.server.as_str()))
            .cloned(),
    );
    out
}

/// What publishes events: to the `/api/events` broadcast, the counters by kind and the
/// webhook's queue. Pushed events ([`crate::push`]) go out at once and are held for the next
/// round's webhook batch (at most [`WEBHOOK_MAX_EVENTS`]; more are counted, not posted).
#[derive(Debug, Clone)]
pub struct Publisher {
    tx: broadcast::Sender<Arc<Published>>,
    replay: Arc<Mutex<replay::Replay>>,
    events: Family<KindLabel, Counter>,
    queue: Option<Arc<Queue>>,
    held: Arc<Mutex<Vec<Arc<Published>>>>,
    unposted: Counter,
}

impl Publisher {
    /// Serialises, counts and broadcasts `events`; what was published.
    fn publish(&self, events: Vec<Event>) -> Vec<Arc<Published>> {
        // Numbered, kept and sent under the replay's lock: a client resuming sees each event
        // once, from the buffer or from the channel.
        let mut replay = self.replay.lock().unwrap_or_else(|e| e.into_inner());
        let published: Vec<Arc<Published>> = events
            .into_iter()
            .map(|event| {
                let json = serde_json::to_string(&event).unwrap_or_default();
                Arc::new(Published {
                    id: replay.next_id(),
                    event,
                    json,
                })
            })
            .collect();
        for p in &published {
            replay.keep(p.clone());
            self.events
                .get_or_create(&KindLabel {
                    kind: p.event.kind.name().to_string(),
                })
                .inc();
            // No client connected is no error.
            let _ = self.tx.send(p.clone());
        }
        published
    }

    /// Pushed events: out at once; held for the next round's webhook batch.
    pub(crate) fn pushed(&self, events: Vec<Event>) {
        if events.is_empty() {
            return;
        }
        let published = self.publish(events);
        if self.queue.is_none() {
            return;
        }
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        let room = WEBHOOK_MAX_EVENTS.saturating_sub(held.len());
        let over = published.len().saturating_sub(room);
        held.extend(published.into_iter().take(room));
        self.unposted.inc_by(over as u64);
    }

    /// A round's events: out, and into the webhook's queue after the pushes held.
    fn round(&self, at: i64, events: Vec<Event>) -> usize {
        let n = events.len();
        let published = self.publish(events);
        if let Some(q) = &self.queue {
            let mut batch =
                std::mem::take(&mut *self.held.lock().unwrap_or_else(|e| e.into_inner()));
            batch.extend(published);
            if !batch.is_empty() {
                q.push(at, batch);
            }
        }
        n
    }
}

/// The differ, the hub and the webhook of a tracker, and its push listener.
#[derive(Debug)]
pub struct Events {
    differ: Mutex<Differ>,
    hub: EventHub,
    stop: watch::Sender<bool>,
    publisher: Publisher,
    push: Option<crate::push::Pushes>,
    sender: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Events {
    fn drop(&mut self) {
        if let Some(t) = &self.sender {
            t.abort();
        }
    }
}

impl Events {
    /// The differ and hub, and the webhook's sender task when one is configured (must run
    /// in a tokio runtime); its metrics registered in `metrics`. Fails when the webhook's
    /// HTTP client cannot be built.
    pub fn new(config: &Config, metrics: &Metrics) -> Result<Events, reqwest::Error> {
        let (tx, _) = broadcast::channel(SSE_BUFFER);
        let (stop, stop_rx) = watch::channel(false);
        let replay = Arc::new(Mutex::new(replay::Replay::new(
            replay::SSE_REPLAY,
            replay::SSE_REPLAY_BYTES,
        )));
        let hub = EventHub {
            tx,
            replay: replay.clone(),
            boot: crate::round::now_ms(),
            clients: Arc::new(Semaphore::new(config.sse_max_clients)),
            shares: Arc::new(Mutex::new(Shares::new(config.web.sse_caps()))),
            refused_share: Counter::default(),
            stop: stop_rx,
            connected: Gauge::default(),
            refused: Counter::default(),
            lagged: Counter::default(),
        };
        let events = Family::<KindLabel, Counter>::default();
        metrics.register("events", "Events from the rounds, by kind", events.clone());
        metrics.register(
            "sse_clients",
            "/api/events clients connected",
            hub.connected.clone(),
        );
        metrics.register(
            "sse_refused",
            "/api/events clients refused (over sse_max_clients)",
            hub.refused.clone(),
        );
        metrics.register(
            "sse_refused_per_host",
            "/api/events clients refused (over [web] sse_max_per_host or sse_max_per_network)",
            hub.refused_share.clone(),
        );
        metrics.register(
            "sse_lagged_events",
            "Events /api/events clients missed by falling behind",
            hub.lagged.clone(),
        );
        let (queue, sender) = webhook::start(config, metrics)?;
        let unposted = Counter::default();
        let publisher = Publisher {
            tx: hub.tx.clone(),
            replay,
            events,
            queue,
            held: Arc::default(),
            unposted: unposted.clone(),
        };
        let push = config.push.as_ref().map(|p| {
            metrics.register(
                "push_events_unposted",
                "Pushed events not held for the webhook (over 1,000 between two rounds)",
                unposted,
            );
            crate::push::Pushes::new(p, publisher.clone(), metrics)
        });
        Ok(Events {
            differ: Mutex::new(Differ::new()),
            hub,
            stop,
            publisher,
            push,
            sender,
        })
    }

    /// The push listener, when `[push]` is configured.
    pub fn pushes(&self) -> Option<crate::push::Pushes> {
        self.push.clone()
    }

    /// The hub for the web handlers.
    pub fn hub(&self) -> EventHub {
        self.hub.clone()
    }

    /// A written round: its events to the SSE clients and the webhook's queue (those a push
    /// already said left out; the servers heard from now on are the round's). Never waits.
    pub fn round(&self, report: &RoundReport) -> usize {
        let events = self
            .differ
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .update(report.data.at, &report.data.records);
        let mut events = match &report.players {
            Some(players) => with_players(events, players, &report.data.records),
            None => events,
        };
        if let Some(p) = &self.push {
            let mut l = p.listener.lock().unwrap_or_else(|e| e.into_inner());
            events = l.reconcile(report.data.at, &report.data.records, events);
            l.know(&report.data.records);
            p.servers.set(i64::try_from(l.known()).unwrap_or(i64::MAX));
        }
        self.publisher.round(report.data.at, events)
    }

    /// Drops from the SSE replay buffer the joins and leaves of the players `opt_out` names
    /// (each round, after reading the names forgotten): a client that resumes later is not
    /// sent them. How many were dropped.
    pub fn forget(&self, opt_out: &crate::privacy::OptOut) -> usize {
        self.publisher
            .replay
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .forget(opt_out)
    }

    /// Ends every `/api/events` stream (the tracker stops).
    pub fn close(&self) {
        let _ = self.stop.send(true);
    }
}
