//! The rounds on a thread and runtime of their own, apart from the web (as the master
//! server's UDP loop): page rendering, JSON, compression and hashing never hold up a probe's
//! receive task, so its timestamps, RTTs and timeouts are the network's. The thread builds
//! its own client (its sockets registered with its own runtime), takes the writer's lease
//! before each round ([`crate::store::Store::lead`]), and hands each written round back to
//! the web side, which sends its events.

use std::sync::atomic::{AtomicI64, AtomicU8, Ordering};
use std::sync::Arc;

use prometheus_client::metrics::gauge::Gauge;
use serde::Serialize;
use tokio::sync::{mpsc, oneshot, watch};

use crate::config::Config;
use crate::geoip::Countries;
use crate::metrics::Metrics;
use crate::round::{self, RoundReport};
use crate::store::Store;

/// What a tracker does with its database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RoleKind {
    /// It holds the writer's lease: it polls and writes the rounds.
    Writer,
    /// Another tracker writes; this one serves the web and takes over when that one stops.
    Standby,
    /// A read replica (`--web-only`): it never polls or writes.
    WebOnly,
}

/// This tracker's role now, and since when (shared with the web's `/healthz` and exported
/// as the metric `fragstat_tracker_writer`).
#[derive(Debug)]
pub struct Role {
    kind: AtomicU8,
    since: AtomicI64,
    gauge: Gauge,
}

impl Role {
    /// A role, `kind` from `since` (Unix ms), registered in `metrics`.
    pub fn new(kind: RoleKind, since: i64, metrics: &Metrics) -> Role {
        let role = Role {
            kind: AtomicU8::new(kind as u8),
            since: AtomicI64::new(since),
            gauge: Gauge::default(),
        };
        metrics.register(
            "writer",
            "1 while this tracker holds the writer's lease and writes the rounds; 0 for a standby or a web-only tracker",
            role.gauge.clone(),
        );
        role.gauge.set(i64::from(kind == RoleKind::Writer));
        role
    }

    /// The role now.
    pub fn kind(&self) -> RoleKind {
        match self.kind.load(Ordering::Relaxed) {
            0 => RoleKind::Writer,
            1 => RoleKind::Standby,
            _ => RoleKind::WebOnly,
        }
    }

    /// Since when (Unix ms) it has had this role.
    pub fn since(&self) -> i64 {
        self.since.load(Ordering::Relaxed)
    }

    /// Sets the role at `now`; whether it changed.
    pub fn set(&self, kind: RoleKind, now: i64) -> bool {
        let old = self.kind.swap(kind as u8, Ordering::Relaxed);
        if old == kind as u8 {
            return false;
        }
        self.since.store(now, Ordering::Relaxed);
        self.gauge.set(i64::from(kind == RoleKind::Writer));
        true
    }
}

/// What the engine's thread runs with.
pub(crate) struct Engine {
    pub(crate) store: Store,
    pub(crate) config: Config,
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) countries: Arc<Countries>,
    pub(crate) role: Arc<Role>,
}

impl Engine {
    /// Starts the rounds on a thread of their own; written rounds come on `rounds`, and
    /// the returned receiver resolves when the thread has stopped (its rounds done, or
    /// `stop` set).
    pub(crate) fn spawn(
        self,
        rounds: mpsc::Sender<RoundReport>,
        mut stop: watch::Receiver<bool>,
    ) -> std::io::Result<oneshot::Receiver<std::io::Result<()>>> {
        let (done_tx, done_rx) = oneshot::channel();
        std::thread::Builder::new()
            .name("fragstat-track-engine".into())
            .spawn(move || {
                let r = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map(|rt| {
                        rt.block_on(async move {
                            tokio::select! {
                                () = self.rounds(&rounds) => {}
                                _ = stop.wait_for(|s| *s) => {}
                            }
                            // The lease goes with the writer's connection, closed on this
                            // runtime (whose reactor it is registered with).
                            self.store.release().await;
                        });
                    });
                let _ = done_tx.send(r);
            })?;
        Ok(done_rx)
    }

    /// Runs rounds every interval while this tracker holds the writer's lease, until
    /// `config.rounds` rounds were written (0: forever).
    async fn rounds(&self, out: &mpsc::Sender<RoundReport>) {
        let client = match round::client(&self.config).await {
            Ok(c) => c,
            Err(e) => {
                tracing::error!("cannot start the probes: {e}");
                return;
            }
        };
        let mut ticker = tokio::time::interval(self.config.interval());
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut n = 0u64;
        loop {
            ticker.tick().await;
            if !self.take_turn().await {
                continue;
            }
            match round::round(
                &client,
                &self.store,
                &self.config,
                &self.metrics,
                &self.countries,
            )
            .await
            {
                Ok(r) => {
                    if out.send(r).await.is_err() {
                        return;
                    }
                }
                Err(e) => tracing::error!("round not written: {e}"),
            }
            n += 1;
            if self.config.rounds > 0 && n >= self.config.rounds {
                return;
            }
        }
    }

    /// Takes (or keeps) the writer's lease, and says when this tracker's role changes.
    async fn take_turn(&self) -> bool {
        let held = match self.store.lead().await {
            Ok(held) => held,
            Err(e) => {
                // Not another tracker's doing: no round this time, and asked again next.
                tracing::warn!("no round: the writer's lease could not be taken: {e}");
                self.role.set(RoleKind::Standby, round::now_ms());
                return false;
            }
        };
        let kind = if held {
            RoleKind::Writer
        } else {
            RoleKind::Standby
        };
        if self.role.set(kind, round::now_ms()) || self.role.since() == 0 {
            self.role.since.store(round::now_ms(), Ordering::Relaxed);
            if held {
                tracing::info!("this tracker is the writer: it polls and writes the rounds");
            } else {
                tracing::info!(
                    "another tracker writes the rounds: this one is a standby (serves the web, takes over when that one stops)"
                );
            }
        }
        held
    }
}
