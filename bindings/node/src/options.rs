//! The options objects of the JavaScript API (times in milliseconds), applied to the
//! library's builders.

use std::time::Duration;

use napi_derive::napi;

use crate::errors::invalid;

/// `new Client(options)`: the library's settings ([`fragstat::ClientBuilder`]).
#[napi(object)]
#[derive(Default)]
pub struct ClientOptions {
    /// How long one attempt waits at most, ms.
    pub timeout: Option<f64>,
    /// The shortest adaptive timeout, ms.
    pub min_timeout: Option<f64>,
    /// Adaptive timeouts (default true).
    pub adaptive: Option<bool>,
    /// Retries after the first attempt.
    pub retries: Option<u32>,
    /// Queries in flight at once.
    pub concurrency: Option<u32>,
    /// Datagrams per second at most (0: no limit).
    pub rate: Option<u32>,
    /// A bound on each scan as a whole, ms.
    pub deadline: Option<f64>,
    /// How long a master's list may take, ms.
    pub master_timeout: Option<f64>,
    /// A master list without an end marker ends after this much quiet, ms.
    pub master_quiet: Option<f64>,
    /// How long a host name lookup may take, ms.
    pub resolve_timeout: Option<f64>,
    /// How long an HTTP master list may take, ms.
    pub http_timeout: Option<f64>,
}

/// A time in ms from JavaScript: finite, not negative, under a year.
pub fn millis(name: &str, ms: f64) -> napi::Result<Duration> {
    if !ms.is_finite() || !(0.0..=31_536_000_000.0).contains(&ms) {
        return Err(invalid(format!(
            "{name}: {ms} is not a time in milliseconds"
        )));
    }
    Ok(Duration::from_secs_f64(ms / 1000.0))
}

impl ClientOptions {
    /// The library's client with these settings.
    pub fn build(self) -> napi::Result<fragstat::Client> {
        let mut b = fragstat::Client::builder();
        let time = |name: &str, v: Option<f64>| v.map(|ms| millis(name, ms)).transpose();
        if let Some(t) = time("timeout", self.timeout)? {
            b = b.timeout(t);
        }
        if let Some(t) = time("minTimeout", self.min_timeout)? {
            b = b.min_timeout(t);
        }
        if let Some(a) = self.adaptive {
            b = b.adaptive(a);
        }
        if let Some(r) = self.retries {
            b = b.retries(r);
        }
        if let Some(c) = self.concurrency {
            b = b.concurrency(c as usize);
        }
        if let Some(r) = self.rate {
            b = b.rate(Some(r));
        }
        if let Some(t) = time("deadline", self.deadline)? {
            b = b.deadline(Some(t));
        }
        if let Some(t) = time("masterTimeout", self.master_timeout)? {
            b = b.master_timeout(t);
        }
        if let Some(t) = time("masterQuiet", self.master_quiet)? {
            b = b.master_quiet(t);
        }
        if let Some(t) = time("resolveTimeout", self.resolve_timeout)? {
            b = b.resolve_timeout(t);
        }
        if let Some(t) = time("httpTimeout", self.http_timeout)? {
            b = b.http_timeout(t);
        }
        b.build().map_err(|e| crate::errors::js(&e))
    }
}

/// `client.query(game, address, options)`.
#[napi(object)]
#[derive(Default)]
pub struct QueryOptions {
    /// Ask for the players too.
    pub players: Option<bool>,
    /// Ask for the rules (server variables) too.
    pub rules: Option<bool>,
    /// This query's attempt timeout, ms.
    pub timeout: Option<f64>,
    /// This query's retries.
    pub retries: Option<u32>,
}

/// `client.scan(game, addresses, options)`.
#[napi(object)]
#[derive(Default)]
pub struct ScanOptions {
    /// Ask for the players too.
    pub players: Option<bool>,
    /// Ask for the rules too.
    pub rules: Option<bool>,
    /// The attempt timeout, ms.
    pub timeout: Option<f64>,
    /// Retries.
    pub retries: Option<u32>,
    /// Queries in flight at once.
    pub concurrency: Option<u32>,
    /// Datagrams per second (0: no limit).
    pub rate: Option<u32>,
    /// A bound on the scan as a whole, ms.
    pub deadline: Option<f64>,
    /// Ask a server listed twice once (default true).
    pub dedupe: Option<bool>,
    /// Results waiting for the reader at most (default 64): when they are not read, the
    /// scan waits (backpressure).
    pub buffer: Option<u32>,
}

/// `client.masterList(game, masters, options)`.
#[napi(object)]
#[derive(Default)]
pub struct MasterOptions {
    /// Ask for extended lists (IPv6 too, `getserversExt`) where the game has them.
    pub ext: Option<bool>,
    /// The game name a master is asked for (Dæmon, DarkPlaces games).
    pub gamename: Option<String>,
    /// The protocol number asked for.
    pub protocol: Option<i32>,
    /// With no master given: catalogue entries (`HOST:PORT`) to ask at another address.
    pub master_at: Option<std::collections::HashMap<String, String>>,
}

/// One source of `client.watch(sources, options)`.
#[napi(object)]
pub struct WatchSource {
    /// The game.
    pub game: String,
    /// Masters whose lists to watch.
    pub masters: Option<Vec<String>>,
    /// Servers to watch.
    pub servers: Option<Vec<String>>,
    /// Extended master lists.
    pub ext: Option<bool>,
}

/// `client.watch(sources, options)`.
#[napi(object)]
#[derive(Default)]
pub struct WatchOptions {
    /// Time between scans, ms (default 60 000).
    pub interval: Option<f64>,
    /// Stop after this many scans (default: never).
    pub scans: Option<u32>,
    /// Ask for the rules too (the players are always asked).
    pub rules: Option<bool>,
    /// Events for what the first scan finds too (servers up, players there), instead of
    /// taking it as the baseline (default false).
    pub initial: Option<bool>,
}
