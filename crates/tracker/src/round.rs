//! One polling round, through a [`fragstat::Client`]: every source's masters are asked for
//! their lists (merged, filtered and capped by the client), the lists are merged with the
//! configured servers, and every server is probed for its players in one scan
//! (`concurrency` queries in flight, with retries). The round is then written in one
//! transaction (what changed), the old series downsampled and old rows pruned.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use fragstat::core::record::{Record, Status};
use fragstat::core::registry::{Ask, GameRef};
use fragstat::Client;
use futures_util::StreamExt;
use serde::Serialize;
use std::future::IntoFuture;

use crate::config::Config;
use crate::geoip::Countries;
use crate::metrics::Metrics;
use crate::store::{RoundData, Store, StoreError};

/// What one master answered in a round.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct MasterReport {
    /// Registry id of the game asked for.
    pub game: String,
    /// The master as configured.
    pub master: String,
    /// Servers it listed, when it answered.
    pub servers: Option<usize>,
    /// Of those, left out: addresses the list filter refuses (private, multicast…) and
    /// ports over the per-address cap (fragstat::ListFilter, ListLimits).
    pub dropped: usize,
    /// Why it gave no list.
    pub error: Option<String>,
}

/// What a round did.
#[derive(Debug, Clone)]
pub struct RoundReport {
    /// The data written.
    pub data: RoundData,
    /// Every master's answer.
    pub masters: Vec<MasterReport>,
    /// How long the masters and probes took.
    pub elapsed: Duration,
    /// How long writing the round took (zero until it is written).
    pub write: Duration,
}

/// Unix time in milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// The client every round polls through: the configuration's timeouts, and a new local
/// port for every round's masters and probes (servers probed in one round cannot aim
/// forged replies at the next round's port).
pub async fn client(config: &Config) -> Result<Client, fragstat::Error> {
    Client::builder()
        .timeout(Duration::from_millis(config.timeout_ms))
        .retries(config.retries)
        .concurrency(config.concurrency)
        .new_port_per_scan(true)
        .build()
        .await
}

/// Asks every master and probes every server once; writes nothing.
pub async fn poll(client: &Client, config: &Config) -> RoundReport {
    let started = Instant::now();
    let at = now_ms();
    // Masters: every source's masters at once (UDP or HTTP by the game's master kind),
    // merged, filtered and capped by the client.
    let requests: Vec<(GameRef, &crate::config::Source)> = config
        .sources
        .iter()
        .filter(|s| !s.masters.is_empty())
        .filter_map(|s| Some((fragstat::game(&s.game)?, s)))
        .collect();
    let lists = futures_util::future::join_all(requests.iter().map(|(game, source)| {
        client
            .master_list(game, source.masters.iter())
            .ext(source.ext)
            .into_future()
    }))
    .await;
    let mut masters = Vec::new();
    // (game, server) in first-seen order, each address once.
    let mut targets: Vec<(GameRef, SocketAddr)> = Vec::new();
    let mut seen = HashSet::new();
    let mut failed: Vec<Record> = Vec::new();
    // Where a list says a server is (DDNet's servers.json `location`), for its record.
    let mut locations: std::collections::HashMap<SocketAddr, String> =
        std::collections::HashMap::new();
    for ((game, source), list) in requests.iter().zip(lists) {
        match list {
            Ok(list) => {
                for l in list.entries() {
                    let location = l.entry.info.as_ref().and_then(|i| {
                        i.extra_as::<fragstat::teeworlds::ServerExtra>()?
                            .location
                            .clone()
                    });
                    if let Some(loc) = location {
                        locations.insert(l.entry.addr, loc);
                    }
                }
                for r in list.reports() {
                    masters.push(MasterReport {
                        game: game.id().to_string(),
                        master: r.master.clone(),
                        servers: r.is_online().then_some(r.listed),
                        dropped: r.dropped(),
                        error: r.error.as_ref().map(ToString::to_string),
                    });
                }
                for addr in list.servers() {
                    if seen.insert(addr) {
                        targets.push((game.clone(), addr));
                    }
                }
            }
            Err(e) => {
                for m in &source.masters {
                    masters.push(MasterReport {
                        game: game.id().to_string(),
                        master: m.clone(),
                        servers: None,
                        dropped: 0,
                        error: Some(e.to_string()),
                    });
                }
            }
        }
    }
    // Servers named in the config.
    for source in &config.sources {
        let Some(game) = fragstat::game(&source.game) else {
            continue;
        };
        for (text, addr) in client.resolve(&source.servers, game.default_port()).await {
            match addr {
                Ok(a) => {
                    if seen.insert(a) {
                        targets.push((game.clone(), a));
                    }
                }
                Err(e) => failed.push(Record::failed(
                    Some(text),
                    game.id(),
                    Status::Error,
                    e.to_string(),
                )),
            }
        }
    }

    // Probe every server, players included.
    let mut records: Vec<Option<Record>> = vec![None; targets.len()];
    let mut scan = client
        .scan_each(targets)
        // Players and every variable: for the Quake III family that is getinfo with
        // getstatus, whose counts (`clients`, `g_humanplayers`) tell the bots apart
        // (getstatus alone does not); the server page shows the variables.
        .ask(Ask::everything())
        .dedupe(false)
        .indexed();
    while let Some(item) = scan.next().await {
        let mut record = fragstat::record(&item.game, item.addr, item.result);
        if let Some(loc) = locations.get(&item.addr) {
            with_location(&mut record, loc);
        }
        // At most so many players and warnings per server held and stored (R8).
        crate::store::cap_record(&mut record);
        if let Some(slot) = records.get_mut(item.index) {
            *slot = Some(record);
        }
    }
    let mut records: Vec<Record> = records.into_iter().flatten().collect();
    records.extend(failed);
    RoundReport {
        data: RoundData {
            at,
            finished: now_ms(),
            records,
            countries: Default::default(),
        },
        masters,
        elapsed: started.elapsed(),
        write: Duration::ZERO,
    }
}

/// Copies the location a master list gave a Teeworlds server into its probed record's extra
/// (where the probe's own reply has none), so the record says where the server is.
fn with_location(record: &mut Record, location: &str) {
    use fragstat::teeworlds::ServerExtra;
    let Some(info) = record.info.as_mut() else {
        return;
    };
    let Some(extra) = info.extra_as::<ServerExtra>() else {
        return;
    };
    if extra.location.is_some() {
        return;
    }
    let mut extra = extra.clone();
    extra.location = Some(location.to_string());
    info.set_extra(extra);
}

/// Fills `data.countries` from its records: declared locations, else GeoIP.
pub fn fill_countries(data: &mut RoundData, countries: &Countries) {
    for r in &data.records {
        if let (Some(addr), Some(c)) = (r.address.as_deref(), countries.country(r)) {
            data.countries.insert(addr.to_string(), c);
        }
    }
}

/// Polls, writes the round in one transaction, prunes what is past retention, and updates
/// the metrics.
pub async fn round(
    client: &Client,
    store: &Store,
    config: &Config,
    metrics: &Arc<Metrics>,
    countries: &Countries,
) -> Result<RoundReport, StoreError> {
    let mut report = poll(client, config).await;
    fill_countries(&mut report.data, countries);
    let write = Instant::now();
    let written = store.write_round(&report.data).await;
    report.write = write.elapsed();
    metrics.observe_round(&report, report.write, written.is_ok());
    written?;
    // Downsampling and each table's retention (config `[history]`).
    let pruned = store.maintain(report.data.at).await?;
    metrics.pruned(pruned);
    Ok(report)
}

/// Runs rounds every `config.interval()` (from the start of one to the start of the next;
/// a round that overruns is followed at once) until `config.rounds` rounds ran (0: forever)
/// or `stop` resolves. A round whose write fails is logged and the loop goes on.
pub async fn run(
    client: &Client,
    store: &Store,
    config: &Config,
    metrics: &Arc<Metrics>,
    countries: &Countries,
    on_round: impl Fn(&RoundReport),
) {
    let mut ticker = tokio::time::interval(config.interval());
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut n = 0u64;
    loop {
        ticker.tick().await;
        match round(client, store, config, metrics, countries).await {
            Ok(r) => on_round(&r),
            Err(e) => tracing::error!("round not written: {e}"),
        }
        n += 1;
        if config.rounds > 0 && n >= config.rounds {
            return;
        }
    }
}
