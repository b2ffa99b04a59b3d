//! One polling round, through a [`fragstat::Client`]: every source's masters are asked for
//! their lists (merged, filtered and capped by the client), the lists are merged with the
//! configured servers, and every server is probed for its players in one scan
//! (`concurrency` queries in flight, with retries). The round is then written in one
//! transaction (what changed), the old series downsampled and old rows pruned.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fragstat::core::registry::Ask;
use fragstat::Client;
use serde::Serialize;

use crate::config::Config;
use crate::geoip::Countries;
use crate::metrics::Metrics;
use crate::store::{MasterRow, RoundData, Store, StoreError};

/// What one master answered in a round.
#[derive(Debug, Clone, Serialize)]
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
    /// Why it gave no list: the client's error, typed (written as its text in the JSON, the
    /// events and the database).
    #[serde(serialize_with = "error_text")]
    pub error: Option<fragstat::Error>,
}

fn error_text<S: serde::Serializer>(e: &Option<fragstat::Error>, s: S) -> Result<S::Ok, S::Error> {
    match e {
        Some(e) => s.serialize_str(&e.to_string()),
        None => s.serialize_none(),
    }
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
    /// The players' joins and leaves as the store wrote them (the sessions it opened and
    /// closed, [`crate::store::RoundWritten`]); `None` until the round is written (the
    /// events' differ then decides them from the records).
    pub players: Option<Vec<fragstat::events::Event>>,
}

/// Most names forgotten (`fragstat track forget`) a round reads, far more than a site has
/// (past it, a name's rows are still deleted when it is forgotten, but it could be stored
/// again).
pub const MAX_FORGOTTEN: i64 = 100_000;

/// Unix time in milliseconds.
pub fn now_ms() -> i64 {
    fragstat::unix_ms()
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
}

/// Asks every master and probes every server once ([`fragstat::Client::poll`], players
/// asked for); writes nothing.
pub async fn poll(client: &Client, config: &Config) -> RoundReport {
    poll_with(client, config, &[]).await
}

/// [`poll`], and probes `recent` too (`(game, addr)`, the servers seen lately:
/// [`Store::recent_servers`]) whether or not a master lists them now; those no master
/// listed and the configuration does not name are the round's `unlisted`.
pub async fn poll_with(
    client: &Client,
    config: &Config,
    recent: &[(String, String)],
) -> RoundReport {
    let started = Instant::now();
    let mut named: HashSet<&str> = HashSet::new();
    let sources: Vec<fragstat::Source> = config
        .sources
        .iter()
        .filter_map(|s| {
            named.extend(s.servers.iter().map(String::as_str));
            let game = fragstat::game(&s.game)?;
            let again = recent
                .iter()
                .filter(|(g, _)| g == game.id())
                .map(|(_, addr)| addr.clone());
            Some(
                fragstat::Source::new(&game)
                    .masters(s.masters.iter().cloned())
                    .servers(s.servers.iter().cloned().chain(again))
                    .ext(s.ext),
            )
        })
        .collect();
    // Players and every variable: for the Quake III family that is getinfo with getstatus,
    // whose counts (`clients`, `g_humanplayers`) tell the bots apart (getstatus alone does
    // not); the server page shows the variables.
    let mut polled = client.poll(&sources, Ask::everything()).await;
    // The client bounded each record as it arrived (ServerInfo::cap, H5); the store's caps
    // checked once more (lengths only, nothing to do unless they are lower).
    for record in &mut polled.records {
        crate::store::cap_record(record);
    }
    // Which players are bots: what the servers said, else their counts and pings
    // (crate::bots), once, for the sessions, the pages and the events alike.
    crate::bots::mark_all(&mut polled.records);
    // Probed only because it was seen lately: neither listed nor named.
    let unlisted = polled
        .records
        .iter()
        .skip(polled.from_masters)
        .filter_map(|r| r.address.as_deref())
        .filter(|a| !named.contains(a))
        .map(str::to_string)
        .collect();
    let masters = polled
        .masters
        .into_iter()
        .map(|m| MasterReport {
            game: m.game,
            master: m.master,
            servers: m.listed,
            dropped: m.dropped,
            error: m.error,
        })
        .collect::<Vec<_>>();
    RoundReport {
        data: RoundData {
            at: polled.at,
            finished: polled.finished,
            records: polled.records,
            countries: Default::default(),
            unlisted,
            masters: masters.iter().map(|m| m.row(polled.at)).collect(),
        },
        masters,
        elapsed: started.elapsed(),
        write: Duration::ZERO,
        players: None,
    }
}

impl MasterReport {
    /// As the `masters` table holds it (`up_since`/`down_since` are the writer's).
    pub fn row(&self, at: i64) -> MasterRow {
        MasterRow {
            game: self.game.clone(),
            master: self.master.clone(),
            up: self.servers.is_some(),
            listed: self.servers.map(|n| i64::try_from(n).unwrap_or(i64::MAX)),
            dropped: i64::try_from(self.dropped).unwrap_or(i64::MAX),
            error: self.error.as_ref().map(ToString::to_string),
            checked_at: at,
            up_since: None,
            down_since: None,
        }
    }
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
    // Every server seen within the session gap is probed again, listed or not (a server
    // that leaves its master's list, or whose master is down, is seen going down).
    let since = now_ms().saturating_sub(config.history().session_gap.as_millis() as i64);
    let recent = match store.recent_servers(since).await {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!("the servers seen lately could not be read: {e}");
            Vec::new()
        }
    };
    let mut report = poll_with(client, config, &recent).await;
    fill_countries(&mut report.data, countries);
    // The players who opted out leave the round here, before anything is written or
    // announced (crate::privacy): the configuration's names and those forgotten since.
    let opt_out = match store.forgotten(MAX_FORGOTTEN).await {
        Ok(forgotten) => {
            let names = config.privacy.opt_out.iter().map(String::as_str);
            crate::privacy::OptOut::new(names.chain(forgotten.iter().map(String::as_str)))
        }
        Err(e) => {
            tracing::warn!("the names forgotten could not be read (the last ones hold): {e}");
            (*store.opt_out()).clone()
        }
    };
    opt_out.filter(&mut report.data.records);
    store.set_opt_out(opt_out);
    let write = Instant::now();
    let written = store.write_round(&report.data).await;
    report.write = write.elapsed();
    metrics.observe_round(&report, report.write, written.is_ok());
    let written = written?;
    metrics.churn_refused(written.churn_refused);
    report.players = Some(written.events);
    // Downsampling and each table's retention (config `[history]`). The round is written
    // whatever happens here: a failure is logged and counted, and its events still go out.
    match store.maintain(report.data.at).await {
        Ok(pruned) => metrics.pruned(pruned),
        Err(e) => {
            tracing::error!("round written; downsampling or pruning failed: {e}");
            metrics.maintenance_failed();
        }
    }
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
