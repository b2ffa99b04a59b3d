//! Pushed events: the tracker listens on a UDP port (`[push] listen`) for ET: Legacy's
//! `sv_tracker` datagrams ([`fragstat::events::push`]) from the servers its rounds know, and
//! publishes their events at once on `/api/events` (marked `"pushed": true`); the webhook gets
//! them with the next round's POST. Each round's events a push already said are not said
//! again. docs/tracker.md, "Pushed events (ET: Legacy)", is the admin's side.
//!
//! ```toml
//! [push]
//! listen = "0.0.0.0:27960"     # the UDP address the servers' sv_tracker names
//! max_datagram = 1400          # bytes; longer datagrams are dropped
//! host_rate = 20               # datagrams a second per server host (IPv4 address, IPv6 /64)
//! host_burst = 200
//! net_rate = 100               # … per IPv4 /24, IPv6 /48
//! net_burst = 800
//! max_servers = 4096           # servers whose pushes are heard at most
//! ```

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fragstat::core::fair::Rate;
use fragstat::events::push::{Dropped, PushLimits, PushListener};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use serde::Deserialize;

use crate::events::Publisher;
use crate::metrics::Metrics;

/// `[push]`: where and how pushes are heard (module docs).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PushConfig {
    /// The UDP address to listen on.
    pub listen: SocketAddr,
    /// Longest datagram taken (bytes).
    #[serde(default = "d_max_datagram")]
    pub max_datagram: usize,
    /// Datagrams a second per server host (IPv4 address, IPv6 /64); 0: no limit.
    #[serde(default = "d_host_rate")]
    pub host_rate: u32,
    /// … at once after a quiet spell.
    #[serde(default = "d_host_burst")]
    pub host_burst: u32,
    /// Datagrams a second per network (IPv4 /24, IPv6 /48); 0: no limit.
    #[serde(default = "d_net_rate")]
    pub net_rate: u32,
    /// … at once after a quiet spell.
    #[serde(default = "d_net_burst")]
    pub net_burst: u32,
    /// Servers whose pushes are heard at most (shared among address prefixes).
    #[serde(default = "d_max_servers")]
    pub max_servers: u64,
}

fn d_max_datagram() -> usize {
    PushLimits::default().max_datagram
}
fn d_host_rate() -> u32 {
    PushLimits::default().host_rate.per_sec
}
fn d_host_burst() -> u32 {
    PushLimits::default().host_rate.burst
}
fn d_net_rate() -> u32 {
    PushLimits::default().net_rate.per_sec
}
fn d_net_burst() -> u32 {
    PushLimits::default().net_rate.burst
}
fn d_max_servers() -> u64 {
    PushLimits::default().max_servers
}

impl PushConfig {
    /// Listening on `listen`, every limit at its default.
    pub fn on(listen: SocketAddr) -> Self {
        PushConfig {
            listen,
            max_datagram: d_max_datagram(),
            host_rate: d_host_rate(),
            host_burst: d_host_burst(),
            net_rate: d_net_rate(),
            net_burst: d_net_burst(),
            max_servers: d_max_servers(),
        }
    }

    /// The listener's limits; the rest of [`PushLimits`] at its defaults, the caps per prefix
    /// no more than `max_servers`.
    pub fn limits(&self) -> PushLimits {
        let mut l = PushLimits {
            max_datagram: self.max_datagram,
            host_rate: Rate {
                per_sec: self.host_rate,
                burst: self.host_burst,
            },
            net_rate: Rate {
                per_sec: self.net_rate,
                burst: self.net_burst,
            },
            max_servers: self.max_servers,
            ..PushLimits::default()
        };
        for c in l.caps.v4.iter_mut().chain(l.caps.v6.iter_mut()) {
            *c = (*c).min(self.max_servers.max(1));
        }
        l
    }

    /// Checks the values ([`PushLimits::check`]).
    pub fn check(&self) -> Result<(), String> {
        self.limits().check()
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabel {
    result: &'static str,
}

/// The push listener of a tracker, shared by its receive task and its rounds.
#[derive(Debug, Clone)]
pub struct Pushes {
    pub(crate) listener: Arc<Mutex<PushListener>>,
    publisher: Publisher,
    datagrams: Family<ResultLabel, Counter>,
    pub(crate) servers: Gauge,
    /// The store whose opt-out list the pushed players are held to ([`Pushes::opt_out_of`]).
    store: Arc<std::sync::OnceLock<crate::store::Store>>,
}

impl Pushes {
    /// A listener with `config`'s limits, its metrics registered in `metrics`.
    pub(crate) fn new(config: &PushConfig, publisher: Publisher, metrics: &Metrics) -> Self {
        let datagrams = Family::<ResultLabel, Counter>::default();
        metrics.register(
            "push_datagrams",
            "Pushed datagrams (ET: Legacy sv_tracker) by result: accepted, unknown (no known server at that address and port), too_large, rate, malformed",
            datagrams.clone(),
        );
        let servers = Gauge::default();
        metrics.register(
            "push_servers",
            "Servers whose pushes are heard (the last round's, of games that push)",
            servers.clone(),
        );
        Pushes {
            listener: Arc::new(Mutex::new(PushListener::new(
                config.limits(),
                std::time::Instant::now(),
            ))),
            publisher,
            datagrams,
            servers,
            store: Arc::default(),
        }
    }

    /// Holds the pushed players to `store`'s opt-out (crate::privacy): a pushed
    /// `player_joined` or `player_left` of a name never stored is never published.
    pub fn opt_out_of(&self, store: &crate::store::Store) {
        let _ = self.store.set(store.clone());
    }

    /// One datagram: its events published at once, or it is dropped (counted).
    pub fn datagram(&self, from: SocketAddr, datagram: &[u8]) {
        let at = fragstat::unix_ms();
        let r = self
            .listener
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .handle(std::time::Instant::now(), at, from, datagram);
        let result = match r {
            Ok(mut events) => {
                if let Some(store) = self.store.get() {
                    let opt_out = store.opt_out();
                    events.retain(|e| match &e.kind {
                        fragstat::events::EventKind::PlayerJoined(p)
                        | fragstat::events::EventKind::PlayerLeft(p) => !opt_out.matches(&p.name),
                        _ => true,
                    });
                }
                self.publisher.pushed(events);
                "accepted"
            }
            Err(d) => {
                if d != Dropped::Unknown {
                    tracing::debug!(%from, "push dropped: {}", d.name());
                }
                d.name()
            }
        };
        self.datagrams.get_or_create(&ResultLabel { result }).inc();
    }

    /// Receives pushes on `socket` until `stop` resolves.
    pub async fn serve(
        self,
        socket: tokio::net::UdpSocket,
        stop: impl Future<Output = ()> + Send + 'static,
    ) {
        tokio::pin!(stop);
        let mut buf = vec![0u8; fragstat::core::MAX_DATAGRAM];
        loop {
            tokio::select! {
                () = &mut stop => return,
                r = socket.recv_from(&mut buf) => match r {
                    Ok((n, from)) => self.datagram(from, buf.get(..n).unwrap_or_default()),
                    Err(e) => {
                        // An ICMP error surfaced on the socket, or a transient one.
                        tracing::debug!("push receive: {e}");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                },
            }
        }
    }
}
