//! One polling round: every source's masters are asked for their lists (one engine batch),
//! the lists are merged with the configured servers, and every server is probed for its
//! players in a second batch (the engine's window: `concurrency` queries in flight, with
//! retries). The round is then written in one transaction and old rows pruned.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use fragstat::core::model::{Record, Status};
use fragstat::core::registry::{Ask, GameRef, MasterOptions, MasterQuery};
use fragstat::core::resolve::resolve_all;
use fragstat::core::{Engine, Options};
use serde::Serialize;

use crate::config::Config;
use crate::metrics::Metrics;
use crate::store::{RoundData, Store, StoreError};

/// How long a host name may take to resolve.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(2);

/// How long an HTTP master list may take.
const HTTP_TIMEOUT: Duration = Duration::from_secs(10);

/// Most bytes read from an HTTP master list.
const MAX_HTTP_LIST: usize = 64 << 20;

type HttpParse =
    fn(&[u8]) -> Result<fragstat::core::registry::HttpList, fragstat::core::DecodeError>;

/// GETs an HTTP master list (ETQW's feed, DDNet's `servers.json`) and parses it.
async fn fetch_list(
    url: &str,
    parse: HttpParse,
    timeout: Duration,
) -> Result<Vec<fragstat::MasterEntry>, String> {
    let client = reqwest::Client::builder()
        .timeout(timeout)
        .user_agent(concat!("fragstat-tracker/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("HTTP client: {e}"))?;
    let mut resp = client
        .get(url)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| e.to_string())?;
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| e.to_string())? {
        if body.len() + chunk.len() > MAX_HTTP_LIST {
            return Err(format!("list larger than {MAX_HTTP_LIST} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    let list = parse(&body).map_err(|e| e.to_string())?;
    for w in &list.warnings {
        tracing::warn!("master {url}: {w}");
    }
    Ok(list.servers)
}

/// What one master answered in a round.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct MasterReport {
    /// Registry id of the game asked for.
    pub game: String,
    /// The master as configured.
    pub master: String,
    /// Servers it listed, when it answered.
    pub servers: Option<usize>,
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

fn options(config: &Config) -> Options {
    Options::default()
        .with_timeout(Duration::from_millis(config.timeout_ms))
        .with_retries(config.retries)
        .with_concurrency(config.concurrency)
}

/// Asks every master and probes every server once; writes nothing.
pub async fn poll(engine: &Engine, config: &Config) -> RoundReport {
    let started = Instant::now();
    let at = now_ms();
    let mut masters = Vec::new();
    // (game, server) in first-seen order, each address once.
    let mut targets: Vec<(GameRef, SocketAddr)> = Vec::new();
    let mut seen = HashSet::new();
    let mut failed: Vec<Record> = Vec::new();

    // Masters: one batch for every UDP master of every source; HTTP lists fetched alongside.
    let mut jobs = Vec::new();
    let mut job_meta: Vec<(GameRef, String)> = Vec::new();
    let mut http: Vec<(GameRef, String, HttpParse)> = Vec::new();
    for source in &config.sources {
        let Some(game) = fragstat::game(&source.game) else {
            continue;
        };
        if source.masters.is_empty() {
            continue;
        }
        let opts = MasterOptions::default().with_ext(source.ext);
        if let Ok(MasterQuery::Http { parse, .. }) = game.master_query(&opts) {
            for url in &source.masters {
                http.push((game.clone(), url.clone(), parse));
            }
            continue;
        }
        let port = game.master_port().unwrap_or(0);
        for t in resolve_all(&source.masters, port, RESOLVE_TIMEOUT).await {
            let report = |error: String| MasterReport {
                game: game.id().to_string(),
                master: t.text.clone(),
                servers: None,
                error: Some(error),
            };
            let addr = match &t.addr {
                Ok(a) => *a,
                Err(e) => {
                    masters.push(report(e.clone()));
                    continue;
                }
            };
            match game.master_query(&opts) {
                Ok(MasterQuery::Udp(ex)) => {
                    jobs.push((addr, ex));
                    job_meta.push((game.clone(), t.text.clone()));
                }
                Ok(_) => masters.push(report("unknown kind of master".into())),
                Err(e) => masters.push(report(e.to_string())),
            }
        }
    }
    let fetches = futures_util::future::join_all(
        http.iter()
            .map(|(_, url, parse)| fetch_list(url, *parse, HTTP_TIMEOUT)),
    );
    let (udp_lists, http_lists) = tokio::join!(
        async {
            let mut lists = Vec::new();
            if !jobs.is_empty() {
                let mut batch = engine.run(jobs, options(config));
                while let Some(o) = batch.next().await {
                    lists.push(o);
                }
            }
            lists
        },
        fetches
    );
    // Each master's report, and its servers as targets (first listing wins).
    let mut add = |game: &GameRef, master: &str, list: Result<Vec<SocketAddr>, String>| {
        let (servers, error) = match list {
            Ok(list) => {
                let n = list.len();
                for a in list {
                    if seen.insert(a) {
                        targets.push((game.clone(), a));
                    }
                }
                (Some(n), None)
            }
            Err(e) => (None, Some(e)),
        };
        masters.push(MasterReport {
            game: game.id().to_string(),
            master: master.to_string(),
            servers,
            error,
        });
    };
    for ((game, url, _), list) in http.iter().zip(http_lists) {
        add(
            game,
            url,
            list.map(|l| l.into_iter().map(|e| e.addr).collect()),
        );
    }
    let mut lists = udp_lists;
    lists.sort_by_key(|o| o.index);
    for o in lists {
        if let Some((game, text)) = job_meta.get(o.index) {
            let list = o
                .result
                .map(|l| l.into_iter().map(|e| e.addr).collect())
                .map_err(|e| e.to_string());
            add(game, text, list);
        }
    }
    // Servers named in the config.
    for source in &config.sources {
        let Some(game) = fragstat::game(&source.game) else {
            continue;
        };
        for t in resolve_all(&source.servers, game.default_port(), RESOLVE_TIMEOUT).await {
            match t.addr {
                Ok(a) => {
                    if seen.insert(a) {
                        targets.push((game.clone(), a));
                    }
                }
                Err(e) => failed.push(Record::failed(Some(t.text), game.id(), Status::Error, e)),
            }
        }
    }

    // Probe every server, players included.
    let jobs = targets
        .iter()
        .map(|(g, a)| (*a, g.server_query(Ask::players())));
    let mut records: Vec<Option<Record>> = vec![None; targets.len()];
    let mut batch = engine.run(jobs, options(config));
    while let Some(o) = batch.next().await {
        let Some((game, _)) = targets.get(o.index) else {
            continue;
        };
        let record = match o.result {
            Ok(info) => Record::online(Some(o.addr.to_string()), game.id(), info, o.rtt),
            Err(e) => {
                let status = if e.is_timeout() {
                    Status::Timeout
                } else {
                    Status::Error
                };
                Record::failed(Some(o.addr.to_string()), game.id(), status, e.to_string())
            }
        };
        if let Some(slot) = records.get_mut(o.index) {
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
        },
        masters,
        elapsed: started.elapsed(),
        write: Duration::ZERO,
    }
}

/// Polls, writes the round in one transaction, prunes what is past retention, and updates
/// the metrics.
pub async fn round(
    engine: &Engine,
    store: &Store,
    config: &Config,
    metrics: &Arc<Metrics>,
) -> Result<RoundReport, StoreError> {
    let mut report = poll(engine, config).await;
    let write = Instant::now();
    let written = store.write_round(&report.data).await;
    report.write = write.elapsed();
    metrics.observe_round(&report, report.write, written.is_ok());
    written?;
    if let Some(keep) = config.retention() {
        let keep = i64::try_from(keep.as_millis()).unwrap_or(i64::MAX);
        let pruned = store.prune(report.data.at.saturating_sub(keep)).await?;
        metrics.pruned(pruned);
    }
    Ok(report)
}

/// Runs rounds every `config.interval()` (from the start of one to the start of the next;
/// a round that overruns is followed at once) until `config.rounds` rounds ran (0: forever)
/// or `stop` resolves. A round whose write fails is logged and the loop goes on.
pub async fn run(
    engine: &Engine,
    store: &Store,
    config: &Config,
    metrics: &Arc<Metrics>,
    on_round: impl Fn(&RoundReport),
) {
    let mut ticker = tokio::time::interval(config.interval());
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut n = 0u64;
    loop {
        ticker.tick().await;
        match round(engine, store, config, metrics).await {
            Ok(r) => on_round(&r),
            Err(e) => tracing::error!("round not written: {e}"),
        }
        n += 1;
        if config.rounds > 0 && n >= config.rounds {
            return;
        }
    }
}
