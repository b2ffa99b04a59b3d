//! Prometheus metrics of the tracker (`/metrics`, the text exposition format).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::round::RoundReport;

/// Labels of the per-game gauges.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GameLabel {
    game: String,
}

/// Labels of the per-status gauge.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: String,
}

/// Labels of the per-master gauges.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MasterLabel {
    game: String,
    master: String,
}

/// The tracker's metrics and their registry.
#[derive(Debug)]
pub struct Metrics {
    registry: Mutex<Registry>,
    rounds: Counter,
    round_failures: Counter,
    maintenance_failures: Counter,
    pruned: Counter,
    servers: Family<StatusLabel, Gauge>,
    players: Family<GameLabel, Gauge>,
    master_up: Family<MasterLabel, Gauge>,
    master_servers: Family<MasterLabel, Gauge>,
    unlisted: Gauge,
    probe_seconds: Gauge<f64, AtomicU64>,
    write_seconds: Gauge<f64, AtomicU64>,
    last_round: Gauge,
    http_registered: AtomicBool,
}

/// The web guard's counters, read at each scrape.
#[derive(Debug)]
struct HttpCollector(Arc<fragstat_http_guard::Stats>);

impl Collector for HttpCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for (name, help, v) in self.0.values() {
            let name = format!("http_{name}");
            if name == "http_open" {
                let g = ConstGauge::new(i64::try_from(v).unwrap_or(i64::MAX));
                g.encode(encoder.encode_descriptor(&name, help, None, g.metric_type())?)?;
            } else {
                let c = ConstCounter::new(v);
                c.encode(encoder.encode_descriptor(&name, help, None, c.metric_type())?)?;
            }
        }
        Ok(())
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Registers every metric under the `fragstat_tracker` prefix.
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("fragstat_tracker");
        let m = Metrics {
            registry: Mutex::new(Registry::default()),
            rounds: Counter::default(),
            round_failures: Counter::default(),
            maintenance_failures: Counter::default(),
            pruned: Counter::default(),
            servers: Family::default(),
            players: Family::default(),
            master_up: Family::default(),
            master_servers: Family::default(),
            unlisted: Gauge::default(),
            probe_seconds: Gauge::default(),
            write_seconds: Gauge::default(),
            last_round: Gauge::default(),
            http_registered: AtomicBool::new(false),
        };
        registry.register("rounds", "Rounds written", m.rounds.clone());
        registry.register(
            "round_failures",
            "Rounds whose write failed",
            m.round_failures.clone(),
        );
        registry.register(
            "maintenance_failures",
            "Written rounds whose downsampling or pruning failed",
            m.maintenance_failures.clone(),
        );
        registry.register("pruned_rows", "Rows deleted by retention", m.pruned.clone());
        registry.register(
            "servers",
            "Servers by status in the last round",
            m.servers.clone(),
        );
        registry.register(
            "players",
            "Players by game in the last round",
            m.players.clone(),
        );
        registry.register(
            "master_up",
            "1 when the master gave a list in the last round, 0 when it did not (its servers \
             seen lately are still probed)",
            m.master_up.clone(),
        );
        registry.register(
            "master_servers",
            "Servers the master listed in the last round (when up)",
            m.master_servers.clone(),
        );
        registry.register(
            "servers_unlisted",
            "Servers probed in the last round only because they were seen lately: no master \
             listed them",
            m.unlisted.clone(),
        );
        registry.register(
            "probe_seconds",
            "How long the last round's masters and probes took",
            m.probe_seconds.clone(),
        );
        registry.register(
            "write_seconds",
            "How long the last round's transaction took",
            m.write_seconds.clone(),
        );
        registry.register(
            "last_round_timestamp_ms",
            "When the last written round started (Unix ms)",
            m.last_round.clone(),
        );
        if let Ok(mut r) = m.registry.lock() {
            *r = registry;
        }
        m
    }

    /// Records one round.
    pub fn observe_round(&self, report: &RoundReport, write: Duration, written: bool) {
        // The masters as this round found them, written or not.
        self.master_up.clear();
        self.master_servers.clear();
        for m in &report.masters {
            let label = MasterLabel {
                game: m.game.clone(),
                master: m.master.clone(),
            };
            self.master_up
                .get_or_create(&label)
                .set(i64::from(m.servers.is_some()));
            if let Some(n) = m.servers {
                self.master_servers
                    .get_or_create(&label)
                    .set(i64::try_from(n).unwrap_or(i64::MAX));
            }
        }
        if !written {
            self.round_failures.inc();
            return;
        }
        self.rounds.inc();
        self.probe_seconds.set(report.elapsed.as_secs_f64());
        self.write_seconds.set(write.as_secs_f64());
        self.last_round.set(report.data.at);
        self.unlisted
            .set(i64::try_from(report.data.unlisted.len()).unwrap_or(i64::MAX));
        self.servers.clear();
        self.players.clear();
        for r in &report.data.records {
            let status = serde_json::to_value(r.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            self.servers.get_or_create(&StatusLabel { status }).inc();
            let players = r.info.as_ref().map_or(0, |i| i64::from(i.num_players));
            self.players
                .get_or_create(&GameLabel {
                    game: r.game.clone(),
                })
                .inc_by(players);
        }
    }

    /// Registers a metric of another part of the tracker (events, the webhook) under the
    /// same prefix.
    pub fn register(
        &self,
        name: &str,
        help: &str,
        metric: impl prometheus_client::registry::Metric,
    ) {
        if let Ok(mut r) = self.registry.lock() {
            r.register(name, help, metric);
        }
    }

    /// Counts rows deleted by retention.
    pub fn pruned(&self, rows: u64) {
        self.pruned.inc_by(rows);
    }

    /// Counts a written round whose downsampling or pruning failed.
    pub fn maintenance_failed(&self) {
        self.maintenance_failures.inc();
    }

    /// The text exposition.
    /// Exports the web guard's counters (`fragstat_tracker_http_*`: connections accepted,
    /// open, refused per cap, idle ones closed for room or time, requests rate limited…), once:
    /// a second web server of the same tracker keeps its own counters unexported.
    pub fn register_http(&self, stats: Arc<fragstat_http_guard::Stats>) {
        if self.http_registered.swap(true, Ordering::Relaxed) {
            return;
        }
        if let Ok(mut r) = self.registry.lock() {
            r.register_collector(Box::new(HttpCollector(stats)));
        }
    }

    /// The metrics in the text exposition format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if let Ok(r) = self.registry.lock() {
            // Writing to a String cannot fail.
            let _ = encode(&mut out, &r);
        }
        out
    }
}
