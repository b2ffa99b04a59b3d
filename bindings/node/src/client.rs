//! `Client`: one [`fragstat::Client`] (its sockets, scheduler and settings), shared by every
//! call made through it.

use std::net::SocketAddr;

use fragstat::core::record::{Record, Status};
use fragstat::core::registry::Ask;
use fragstat::GameRef;
use futures_util::StreamExt;
use napi_derive::napi;

use crate::errors::{invalid, js};
use crate::handles::{Call, Feed, Sink};
use crate::options::{millis, ClientOptions, MasterOptions, QueryOptions, ScanOptions};
use crate::options::{WatchOptions, WatchSource};

/// Results waiting for a scan's reader at most, by default.
const SCAN_BUFFER: u32 = 64;
/// Events waiting for a watch's reader at most (the library's own buffer is behind it).
const WATCH_BUFFER: usize = 64;

/// A record's JSON text (docs/json.md), as the CLI writes it.
fn record_json(record: &Record) -> String {
    let mut out = Vec::new();
    record.write_json(&mut out);
    // The writer writes UTF-8 (strings are escaped JSON): no copy but in a case that cannot be.
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

fn game(id: &str) -> napi::Result<GameRef> {
    fragstat::try_game(id).map_err(|e| js(&e))
}

/// A client: `index.js`'s `Client` wraps it.
#[napi]
pub struct Client {
    inner: fragstat::Client,
}

#[napi]
impl Client {
    /// A client with the library's settings (`INVALID_INPUT` for a bad one). Its sockets
    /// are bound on the first query.
    #[napi(constructor)]
    pub fn new(options: Option<ClientOptions>) -> napi::Result<Self> {
        Ok(Client {
            inner: options.unwrap_or_default().build()?,
        })
    }

    /// One server: the call resolves to its record's JSON, or rejects with the error.
    #[napi]
    pub fn query(
        &self,
        game_id: String,
        address: String,
        options: Option<QueryOptions>,
    ) -> napi::Result<Call> {
        let g = game(&game_id)?;
        let o = options.unwrap_or_default();
        let mut q = self.inner.query(&g, address);
        if o.players == Some(true) {
            q = q.players();
        }
        if o.rules == Some(true) {
            q = q.rules();
        }
        if let Some(t) = o.timeout {
            q = q.timeout(millis("timeout", t)?);
        }
        if let Some(r) = o.retries {
            q = q.retries(r);
        }
        Ok(Call::start(async move {
            let r = q.await.map_err(|e| js(&e))?;
            let addr = r.addr;
            Ok(record_json(&fragstat::record(&g, addr, Ok(r))))
        }))
    }

    /// A game's master list, merged: `masters` (`HOST[:PORT]`, or URLs for HTTP lists), or
    /// the game's catalogue when none is given. Resolves to the JSON of `fragstat master
    /// --format json` (`{masters, servers}`).
    #[napi]
    pub fn master_list(
        &self,
        game_id: String,
        masters: Option<Vec<String>>,
        options: Option<MasterOptions>,
    ) -> napi::Result<Call> {
        let g = game(&game_id)?;
        let o = options.unwrap_or_default();
        let masters = masters.unwrap_or_default();
        // With no masters: the catalogue, its entries named in `masterAt` pointed elsewhere
        // (in a fixed order, so a wrong entry is always the same one reported).
        let catalogue = if masters.is_empty() {
            let mut at = Vec::new();
            let mut given: Vec<(String, String)> =
                o.master_at.unwrap_or_default().into_iter().collect();
            given.sort();
            for (entry, addr) in given {
                let addr: SocketAddr = addr
                    .parse()
                    .map_err(|_| invalid(format!("masterAt {entry}: {addr} is not an IP:PORT")))?;
                at.push((entry, addr));
            }
            Some(fragstat::catalogue_at(&g, &at).map_err(|e| js(&e))?)
        } else {
            None
        };
        let client = self.inner.clone();
        Ok(Call::start(async move {
            // Each master's address once, as the CLI asks them.
            let masters = if masters.is_empty() {
                masters
            } else {
                client.dedupe_masters(&g, &masters).await.0
            };
            let mut request = client.master_list(&g, masters);
            if let Some(c) = catalogue {
                request = request.catalogue(c);
            }
            if let Some(ext) = o.ext {
                request = request.ext(ext);
            }
            if o.gamename.is_some() {
                request = request.gamename(o.gamename);
            }
            if o.protocol.is_some() {
                request = request.protocol(o.protocol);
            }
            let mut list = request.await.map_err(|e| js(&e))?;
            list.clear_no_time(&g);
            Ok(list.to_json().to_string())
        }))
    }

    /// Scans servers of one game: a feed of records (docs/json.md), one per server in the
    /// order they answer, with `status` `timeout`, `down` or `error` for the others. Host
    /// names are resolved first (one that does not resolve is an `error` record).
    #[napi]
    pub fn scan(
        &self,
        game_id: String,
        addresses: Vec<String>,
        options: Option<ScanOptions>,
    ) -> napi::Result<Feed> {
        let g = game(&game_id)?;
        let o = options.unwrap_or_default();
        let timeout = o.timeout.map(|t| millis("timeout", t)).transpose()?;
        let deadline = o.deadline.map(|t| millis("deadline", t)).transpose()?;
        let client = self.inner.clone();
        let buffer = o.buffer.unwrap_or(SCAN_BUFFER) as usize;
        Ok(Feed::start(buffer, move |tx| async move {
            let resolved = client.resolve_owned(addresses, g.default_port()).await;
            let mut addrs = Vec::with_capacity(resolved.len());
            for (text, r) in resolved {
                match r {
                    Ok(a) => addrs.push(a),
                    Err(e) => {
                        let why = fragstat::resolve_error(&text, &e);
                        let rec = Record::failed(Some(text), g.id(), Status::Error, why);
                        if tx.send(record_json(&rec)).await.is_err() {
                            return;
                        }
                    }
                }
            }
            let mut scan = client.scan(&g, addrs);
            if o.players == Some(true) {
                scan = scan.players();
            }
            if o.rules == Some(true) {
                scan = scan.rules();
            }
            if let Some(t) = timeout {
                scan = scan.timeout(t);
            }
            if let Some(r) = o.retries {
                scan = scan.retries(r);
            }
            if let Some(c) = o.concurrency {
                scan = scan.concurrency(c as usize);
            }
            if let Some(r) = o.rate {
                scan = scan.rate(Some(r));
            }
            if deadline.is_some() {
                scan = scan.deadline(deadline);
            }
            if let Some(d) = o.dedupe {
                scan = scan.dedupe(d);
            }
            while let Some((addr, result)) = scan.next().await {
                let rec = fragstat::record(&g, addr, result);
                if tx.send(record_json(&rec)).await.is_err() {
                    return;
                }
            }
        }))
    }

    /// Watches sources (masters' lists and servers): a feed of the library's events
    /// (docs/json.md, "Events").
    #[napi]
    pub fn watch(
        &self,
        sources: Vec<WatchSource>,
        options: Option<WatchOptions>,
    ) -> napi::Result<Feed> {
        let o = options.unwrap_or_default();
        let mut list = Vec::with_capacity(sources.len());
        for s in sources {
            let mut source = fragstat::Source::new(&game(&s.game)?);
            source = source.masters(s.masters.unwrap_or_default());
            source = source.servers(s.servers.unwrap_or_default());
            if let Some(ext) = s.ext {
                source = source.ext(ext);
            }
            list.push(source);
        }
        let interval = millis("interval", o.interval.unwrap_or(60_000.0))?;
        let mut ask = Ask::players();
        ask.rules = o.rules == Some(true);
        let differ = fragstat::events::Differ::new().initial(o.initial == Some(true));
        let watch = self
            .inner
            .watch(list, interval)
            .ask(ask)
            .differ(differ)
            .scans(o.scans.map_or(0, u64::from));
        Ok(Feed::start(WATCH_BUFFER, move |tx: Sink| async move {
            let mut watch = watch;
            while let Some(event) = watch.next().await {
                // An event is strings, numbers and booleans: writing it cannot fail.
                let Ok(json) = serde_json::to_string(&event) else {
                    continue;
                };
                if tx.send(json).await.is_err() {
                    return;
                }
            }
        }))
    }

    /// The local addresses of the client's sockets (bound on the first query).
    #[napi]
    pub fn local_addresses(&self) -> Vec<String> {
        self.inner
            .local_addrs()
            .iter()
            .map(ToString::to_string)
            .collect()
    }
}
