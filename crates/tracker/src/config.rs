//! `track.toml`: what to poll, how often, how long to keep it, where to store and serve it.
//!
//! ```toml
//! database = "fragstat-track.db"        # an SQLite file, or postgres://user@host/db
//! listen = "127.0.0.1:8080"             # the web page, the API and /metrics
//! interval_secs = 60                    # one round a minute
//! retention_hours = 168                 # keep a week
//! timeout_ms = 500                      # per attempt
//! retries = 5                         # after the first attempt
//! concurrency = 1024                    # queries in flight
//!
//! [history]                             # how history is kept (all optional)
//! raw_hours = 24                        # per-round series (players, bots, ping) this long…
//! bucket_minutes = 10                   # …then one row per server per 10 minutes
//! series_hours = 168                    # downsampled series   } each defaults to
//! changes_hours = 168                   # server state changes } retention_hours
//! sessions_hours = 168                  # closed player sessions }
//! players_hours = 168                   # players not seen since }
//! rounds_hours = 168                    # rounds, and servers not probed since }
//! session_gap_secs = 300                # a server silent this long ends its sessions
//! flush_rounds = 10                     # open sessions' scores written every 10 rounds
//! new_players_per_round = 32            # new players a server may bring per round (churn)
//!
//! [[source]]
//! game = "q3"
//! masters = ["master.ioquake3.org"]     # HOST[:PORT]; the game's master port by default
//! servers = ["203.0.113.7:27960"]       # polled whether a master lists them or not
//! ext = false                           # getserversExt where the game has it
//!
//! webhook = "https://hooks.example.org/…"  # POST each round's events (docs/tracker.md, Events)
//! webhook_format = "json"               # or "discord"
//! webhook_tries = 5                     # attempts per batch (1 s, 2 s, 4 s… apart, ≤ 60 s)
//! webhook_timeout_ms = 10000            # per request
//! webhook_queue = 64                    # round batches waiting; the oldest dropped past it
//! sse_max_clients = 64                  # /api/events clients at once (503 beyond)
//!
//! [web]                                 # the web server's guard (all optional)
//! max_connections = 512                 # open at once
//! max_per_ip = 16                       # open at once from one host (IPv4 address, IPv6 /64)
//! max_per_site = 64                     # … from one IPv4 /24, IPv6 /56
//! max_per_net = 128                     # … from one IPv4 /16, IPv6 /48
//! max_per_provider = 256                # … from one IPv6 /32
//! request_rate = 20                     # requests a second per host (0: no limit; 429 beyond)
//! request_burst = 100                   # … at once after a quiet spell
//! net_request_rate = 100                # requests a second per IPv4 /24, IPv6 /48
//! net_request_burst = 400
//! sse_max_per_host = 2                  # /api/events streams per host (IPv4 address, IPv6 /64)
//! sse_max_per_network = 8               # … per IPv4 /24 and /16, IPv6 /56, /48 and /32
//! connecting_ip_header = "X-Real-IP"    # behind a proxy: the client's IP, believed only
//! trusted_proxies = ["127.0.0.1/32"]    # from these networks
//! title = "fragstat track"              # the pages' title
//! base_path = ""                        # behind a reverse proxy on a sub-path: "/servers"
//! cors_origins = []                     # origins allowed to read the API from a browser, or ["*"]
//! ```
//!
//! `[web.api]` sets the API's request rates and keys ([`api`]); `webhook_secret` signs the
//! webhook's POSTs (HMAC-SHA256, docs/tracker.md, "Webhook signatures").
//!
//! `[push]` listens for the events ET: Legacy servers push (`sv_tracker`): [`crate::push`].
//!
//! `geoip = "PATH"` (top level) names an MMDB file for the servers' countries, and
//! `country_from_name = false` stops a tag in a server's name (`[DE] …`) from declaring its
//! country (on by default; docs/tracker.md, "Countries").

use std::net::SocketAddr;
use std::time::Duration;

use serde::Deserialize;

pub mod api;
pub use api::{ApiConfig, ApiKey, Secret};

/// Why a configuration was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// Not valid TOML, or a key of the wrong type.
    #[error("{0}")]
    Toml(#[from] toml::de::Error),
    /// A game id the registry does not know.
    #[error("unknown game {0:?} (see `fragstat games`)")]
    UnknownGame(String),
    /// A value out of range or missing.
    #[error("{0}")]
    Invalid(String),
}

/// One thing to poll: a game's masters and extra servers.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// Registry id (`q3`, `openarena`, `warsow`…).
    pub game: String,
    /// Masters: `HOST[:PORT]` for UDP masters, a URL for HTTP lists (ETQW, DDNet).
    #[serde(default)]
    pub masters: Vec<String>,
    /// Servers polled every round whatever the masters say, `HOST[:PORT]`.
    #[serde(default)]
    pub servers: Vec<String>,
    /// Ask masters with the extended request (Quake III `getserversExt`: IPv6 too).
    #[serde(default)]
    pub ext: bool,
}

/// The web server's guard: connection caps and, behind a proxy, where the client's address
/// comes from.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct WebConfig {
    /// Connections open at once.
    pub max_connections: usize,
    /// Connections open at once from one host (IPv4 address, IPv6 /64); trusted proxies are
    /// exempt.
    pub max_per_ip: usize,
    /// Connections open at once from one IPv4 /24 or IPv6 /56.
    pub max_per_site: usize,
    /// Connections open at once from one IPv4 /16 or IPv6 /48.
    pub max_per_net: usize,
    /// Connections open at once from one IPv6 /32.
    pub max_per_provider: usize,
    /// Requests a second per client host (0: no limit); `429 Too Many Requests` beyond.
    pub request_rate: u32,
    /// Requests at once per client host after a quiet spell.
    pub request_burst: u32,
    /// Requests a second per IPv4 /24 or IPv6 /48 (0: no limit).
    pub net_request_rate: u32,
    /// Requests at once per network after a quiet spell.
    pub net_request_burst: u32,
    /// `/api/events` streams open at once per client host (IPv4 address, IPv6 /64; behind a
    /// trusted proxy, the client its header names), besides `sse_max_clients` in all.
    pub sse_max_per_host: u64,
    /// `/api/events` streams open at once per IPv4 /24 and /16, IPv6 /56, /48 and /32.
    pub sse_max_per_network: u64,
    /// The header a TLS-terminating proxy sets to the client's IP.
    pub connecting_ip_header: Option<String>,
    /// Networks (CIDR) or addresses of the proxies whose header is believed.
    pub trusted_proxies: Vec<String>,
    /// The site's title, shown in every page's heading and `<title>`.
    pub title: String,
    /// The path the site is served under behind a reverse proxy (`/servers`), or empty: every
    /// link, form, script and API URL the pages write starts with it, and the routes are
    /// served under it.
    pub base_path: String,
    /// Origins allowed to read the API from a browser (CORS): `https://example.org`, or `*`
    /// for any. Empty (the default): no CORS headers.
    pub cors_origins: Vec<String>,
    /// `[web.api]`: the API's request rates and keys.
    pub api: ApiConfig,
}

impl Default for WebConfig {
    fn default() -> Self {
        let l = fragstat_http_guard::Limits::default();
        WebConfig {
            max_connections: l.max_connections,
            max_per_ip: l.max_per_ip,
            max_per_site: l.max_per_site,
            max_per_net: l.max_per_net,
            max_per_provider: l.max_per_provider,
            request_rate: l.request_rate.per_sec,
            request_burst: l.request_rate.burst,
            net_request_rate: l.net_request_rate.per_sec,
            net_request_burst: l.net_request_rate.burst,
            sse_max_per_host: 2,
            sse_max_per_network: 8,
            connecting_ip_header: None,
            trusted_proxies: Vec::new(),
            title: DEFAULT_TITLE.into(),
            base_path: String::new(),
            cors_origins: Vec::new(),
            api: ApiConfig::default(),
        }
    }
}

/// The pages' title when `[web] title` is not given.
pub const DEFAULT_TITLE: &str = "fragstat track";

impl WebConfig {
    /// The base path as the router and the pages use it: empty, or `/a/b` (no trailing
    /// slash).
    pub fn base(&self) -> &str {
        self.base_path.trim_end_matches('/')
    }

    /// Checks the title, the base path and the CORS origins.
    pub fn check_site(&self) -> Result<(), String> {
        if self.title.trim().is_empty() || self.title.len() > 200 {
            return Err("[web] title must be 1 to 200 bytes".into());
        }
        let base = self.base();
        if !base.is_empty() {
            let ok = base.starts_with('/')
                && !base.contains("//")
                && base.bytes().all(|b| {
                    b.is_ascii_alphanumeric() || matches!(b, b'/' | b'-' | b'_' | b'.' | b'~')
                })
                && !base.split('/').any(|seg| seg == "." || seg == "..");
            if !ok {
                return Err(format!(
                    "[web] base_path {:?} must be a path like \"/servers\" (letters, digits, - _ . ~ and /)",
                    self.base_path
                ));
            }
        }
        for o in &self.cors_origins {
            if o == "*" {
                continue;
            }
            let parsed = url::Url::parse(o).ok();
            let ok = parsed.as_ref().is_some_and(|u| {
                matches!(u.scheme(), "http" | "https")
                    && u.host_str().is_some()
                    && u.path() == "/"
                    && u.query().is_none()
                    && !o.ends_with('/')
            });
            if !ok {
                return Err(format!(
                    "[web] cors_origins: {o:?} is not an origin like \"https://example.org\" (or \"*\")"
                ));
            }
        }
        Ok(())
    }

    /// The guard's limits.
    pub fn limits(&self) -> fragstat_http_guard::Limits {
        fragstat_http_guard::Limits {
            max_connections: self.max_connections,
            max_per_ip: self.max_per_ip,
            max_per_site: self.max_per_site,
            max_per_net: self.max_per_net,
            max_per_provider: self.max_per_provider,
            request_rate: fragstat_http_guard::Rate {
                per_sec: self.request_rate,
                burst: self.request_burst,
            },
            net_request_rate: fragstat_http_guard::Rate {
                per_sec: self.net_request_rate,
                burst: self.net_request_burst,
            },
            ..fragstat_http_guard::Limits::default()
        }
    }

    /// The `/api/events` streams' caps per prefix (every level wider than the host gets
    /// `sse_max_per_network`, raised to the host's if below it).
    pub fn sse_caps(&self) -> fragstat::core::fair::Caps {
        let host = self.sse_max_per_host;
        let net = self.sse_max_per_network.max(host);
        fragstat::core::fair::Caps {
            v4: [host, net, net],
            v6: [host, net, net, net],
        }
    }

    /// Where the client's address comes from.
    pub fn client_ip(&self) -> Result<fragstat_http_guard::ClientIp, String> {
        match &self.connecting_ip_header {
            Some(h) => fragstat_http_guard::ClientIp::from_header(h, &self.trusted_proxies),
            None if self.trusted_proxies.is_empty() => Ok(fragstat_http_guard::ClientIp::default()),
            None => Err("trusted_proxies needs connecting_ip_header".into()),
        }
    }
}

/// The form of the webhook's POSTs.
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum WebhookFormat {
    /// `{"at": …, "events": […], "omitted": n}`.
    #[default]
    Json,
    /// Discord's `{"content": …, "embeds": […]}`.
    Discord,
}

/// `[history]`: how history is kept. Every retention defaults to `retention_hours` (0: keep
/// for ever).
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HistoryConfig {
    /// Hours the per-round series (players, bots, ping of every server every round) are
    /// kept before they are downsampled (default 24).
    pub raw_hours: Option<f64>,
    /// Minutes per downsampled series row (default 10).
    pub bucket_minutes: Option<f64>,
    /// Hours the downsampled series are kept.
    pub series_hours: Option<f64>,
    /// Hours server state changes (map, name, slots, up/down) are kept; each server's latest
    /// is kept whatever its age.
    pub changes_hours: Option<f64>,
    /// Hours closed player sessions are kept.
    pub sessions_hours: Option<f64>,
    /// Hours a player not seen (and with no session left) is kept.
    pub players_hours: Option<f64>,
    /// Hours rounds are kept, and servers not probed.
    pub rounds_hours: Option<f64>,
    /// Seconds a server may stay silent before its players' sessions end (default 300).
    pub session_gap_secs: Option<f64>,
    /// Open sessions' scores and last-seen times are written every this many rounds
    /// (default 10).
    pub flush_rounds: Option<u64>,
    /// New players (sessions opened) a server may bring in a round, the churn budget (32).
    pub new_players_per_round: Option<usize>,
}

/// The whole configuration.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// An SQLite file path, `sqlite://…` or `postgres://…`.
    #[serde(default = "default_database")]
    pub database: String,
    /// Where the web server listens.
    #[serde(default = "default_listen")]
    pub listen: SocketAddr,
    /// Seconds from the start of one round to the start of the next.
    #[serde(default = "default_interval")]
    pub interval_secs: f64,
    /// Hours of history kept; older rows are pruned after each round (0: keep everything).
    #[serde(default = "default_retention")]
    pub retention_hours: f64,
    /// Milliseconds to wait for one attempt.
    #[serde(default = "default_timeout")]
    pub timeout_ms: u64,
    /// Retries after the first attempt.
    #[serde(default = "default_retries")]
    pub retries: u32,
    /// Queries in flight at once.
    #[serde(default = "default_concurrency")]
    pub concurrency: usize,
    /// Stop after this many rounds (0: run until interrupted).
    #[serde(default)]
    pub rounds: u64,
    /// Schema 1 kept each round's whole JSON record when true. Since schema 2 history is
    /// kept as changes (`[history]`) and only each server's latest record is stored: the key
    /// is still read, so older files load, and has no effect.
    #[serde(default = "default_true")]
    pub snapshot_records: bool,
    /// POST each round's events to this URL (http or https).
    #[serde(default)]
    pub webhook: Option<String>,
    /// The webhook's form.
    #[serde(default)]
    pub webhook_format: WebhookFormat,
    /// Signs every webhook POST with HMAC-SHA256 under this secret (`X-Fragstat-Signature`
    /// over `X-Fragstat-Timestamp`, a dot and the body); none: unsigned.
    #[serde(default)]
    pub webhook_secret: Option<Secret>,
    /// Attempts per webhook batch before it is dropped.
    #[serde(default = "default_webhook_tries")]
    pub webhook_tries: u32,
    /// Milliseconds one webhook request may take.
    #[serde(default = "default_webhook_timeout")]
    pub webhook_timeout_ms: u64,
    /// Round batches waiting for the webhook at most (the oldest is dropped past it).
    #[serde(default = "default_webhook_queue")]
    pub webhook_queue: usize,
    /// `/api/events` clients at once; more are answered 503.
    #[serde(default = "default_sse_max_clients")]
    pub sse_max_clients: usize,
    /// How history is kept.
    #[serde(default)]
    pub history: HistoryConfig,
    /// What to poll.
    #[serde(default, rename = "source")]
    pub sources: Vec<Source>,
    /// The web server's guard and the site's title, base path and CORS origins.
    #[serde(default)]
    pub web: WebConfig,
    /// An MMDB file (GeoIP country database) to look the servers' countries up in, locally;
    /// none: countries only where a server declares one (docs/tracker.md, "Countries").
    #[serde(default)]
    pub geoip: Option<std::path::PathBuf>,
    /// Whether a clear country tag at the start or end of a server's name (`[DE] …`,
    /// `… | NL`) declares its country, over GeoIP and under its list's location
    /// ([`crate::geoip::name_tag_country`]).
    #[serde(default = "default_true")]
    pub country_from_name: bool,
    /// A read replica: serve the web from the database and never poll or write (another
    /// tracker writes the rounds). CLI `--web-only`; docs/tracker.md, "Several trackers".
    #[serde(default)]
    pub web_only: bool,
    /// Listen for the events servers push (ET: Legacy's `sv_tracker`): `[push]`,
    /// [`crate::push::PushConfig`]; none by default.
    #[serde(default)]
    pub push: Option<crate::push::PushConfig>,
}

fn default_webhook_tries() -> u32 {
    5
}
fn default_webhook_timeout() -> u64 {
    10_000
}
fn default_webhook_queue() -> usize {
    64
}
fn default_sse_max_clients() -> usize {
    64
}
fn default_true() -> bool {
    true
}
fn default_database() -> String {
    "fragstat-track.db".into()
}
fn default_listen() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 8080))
}
fn default_interval() -> f64 {
    60.0
}
fn default_retention() -> f64 {
    168.0
}
fn default_timeout() -> u64 {
    u64::try_from(fragstat::defaults::TIMEOUT.as_millis()).unwrap_or(500)
}
fn default_retries() -> u32 {
    fragstat::defaults::RETRIES
}
fn default_concurrency() -> usize {
    fragstat::defaults::CONCURRENCY
}

impl Default for Config {
    fn default() -> Self {
        Config {
            database: default_database(),
            listen: default_listen(),
            interval_secs: default_interval(),
            retention_hours: default_retention(),
            timeout_ms: default_timeout(),
            retries: default_retries(),
            concurrency: default_concurrency(),
            rounds: 0,
            snapshot_records: true,
            webhook: None,
            webhook_format: WebhookFormat::Json,
            webhook_secret: None,
            webhook_tries: default_webhook_tries(),
            webhook_timeout_ms: default_webhook_timeout(),
            webhook_queue: default_webhook_queue(),
            sse_max_clients: default_sse_max_clients(),
            history: HistoryConfig::default(),
            sources: Vec::new(),
            web: WebConfig::default(),
            geoip: None,
            country_from_name: true,
            web_only: false,
            push: None,
        }
    }
}

/// Longest round interval taken (a week).
const MAX_INTERVAL_SECS: f64 = 7.0 * 86_400.0;
/// Longest retention taken (a century).
const MAX_RETENTION_HOURS: f64 = 100.0 * 366.0 * 24.0;

impl Config {
    /// Parses and checks a `track.toml`.
    pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
        let c = Config::parse(text)?;
        c.check()?;
        Ok(c)
    }

    /// Parses a `track.toml` without [`Config::check`]ing it (command-line flags may complete
    /// it first).
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        Ok(toml::from_str(text)?)
    }

    /// Checks every value: games known, something to poll, numbers in range.
    pub fn check(&self) -> Result<(), ConfigError> {
        if self.sources.is_empty() && !self.web_only {
            return Err(ConfigError::Invalid(
                "nothing to poll: add a [[source]] with a game and masters or servers".into(),
            ));
        }
        for s in &self.sources {
            if fragstat::game(&s.game).is_none() {
                return Err(ConfigError::UnknownGame(s.game.clone()));
            }
            if s.masters.is_empty() && s.servers.is_empty() {
                return Err(ConfigError::Invalid(format!(
                    "source {:?} has neither masters nor servers",
                    s.game
                )));
            }
        }
        // Bounded above too: a value that passed here must not panic in `interval()` or
        // `retention()` later.
        if !(self.interval_secs.is_finite()
            && (0.05..=MAX_INTERVAL_SECS).contains(&self.interval_secs))
        {
            return Err(ConfigError::Invalid(format!(
                "interval_secs must be between 0.05 and {MAX_INTERVAL_SECS}"
            )));
        }
        if !(self.retention_hours.is_finite()
            && (0.0..=MAX_RETENTION_HOURS).contains(&self.retention_hours))
        {
            return Err(ConfigError::Invalid(format!(
                "retention_hours must be between 0 and {MAX_RETENTION_HOURS}"
            )));
        }
        self.web
            .limits()
            .check()
            .map_err(|e| ConfigError::Invalid(format!("[web]: {e}")))?;
        if self.web.sse_max_per_host == 0 || self.web.sse_max_per_network == 0 {
            return Err(ConfigError::Invalid(
                "[web] sse_max_per_host and sse_max_per_network must be at least 1".into(),
            ));
        }
        self.web.check_site().map_err(ConfigError::Invalid)?;
        self.web.api.check().map_err(ConfigError::Invalid)?;
        if let Some(s) = &self.webhook_secret {
            s.check("webhook_secret", 16)
                .map_err(ConfigError::Invalid)?;
        }
        self.web
            .client_ip()
            .map_err(|e| ConfigError::Invalid(format!("[web]: {e}")))?;
        if let Some(w) = &self.webhook {
            match url::Url::parse(w) {
                Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
                // The text is not repeated: a webhook's URL holds its token (Discord, Slack).
                _ => {
                    return Err(ConfigError::Invalid(
                        "webhook is not an http:// or https:// URL with a host (its text is not \
                         shown: it may hold a token)"
                            .into(),
                    ))
                }
            }
        }
        if self.webhook_tries == 0
            || !(1..=3_600_000).contains(&self.webhook_timeout_ms)
            || self.webhook_queue == 0
            || !(1..=100_000).contains(&self.sse_max_clients)
        {
            return Err(ConfigError::Invalid(
                "webhook_tries and webhook_queue must be at least 1, webhook_timeout_ms 1 to 3600000, sse_max_clients 1 to 100000".into(),
            ));
        }
        let h = &self.history;
        for (key, v) in [
            ("raw_hours", h.raw_hours),
            ("bucket_minutes", h.bucket_minutes),
            ("series_hours", h.series_hours),
            ("changes_hours", h.changes_hours),
            ("sessions_hours", h.sessions_hours),
            ("players_hours", h.players_hours),
            ("rounds_hours", h.rounds_hours),
            // Seconds, under the same bound as the hours.
            ("session_gap_secs", h.session_gap_secs.map(|s| s / 3600.0)),
        ] {
            if let Some(v) = v {
                if !(v.is_finite() && (0.0..=MAX_RETENTION_HOURS).contains(&v)) {
                    let max = if key.ends_with("_secs") {
                        MAX_RETENTION_HOURS * 3600.0
                    } else {
                        MAX_RETENTION_HOURS
                    };
                    return Err(ConfigError::Invalid(format!(
                        "[history] {key} must be between 0 and {max}"
                    )));
                }
            }
        }
        if h.bucket_minutes.is_some_and(|b| b < 1.0 / 60.0) || h.flush_rounds == Some(0) {
            return Err(ConfigError::Invalid(
                "[history] bucket_minutes must be at least a second, flush_rounds at least 1"
                    .into(),
            ));
        }
        if self.timeout_ms == 0 || self.concurrency == 0 {
            return Err(ConfigError::Invalid(
                "timeout_ms and concurrency must be at least 1".into(),
            ));
        }
        if let Some(p) = &self.push {
            if self.web_only {
                return Err(ConfigError::Invalid(
                    "[push] needs the rounds (the servers it hears are theirs): not with web_only"
                        .into(),
                ));
            }
            p.check()
                .map_err(|e| ConfigError::Invalid(format!("[push] {e}")))?;
        }
        Ok(())
    }

    /// The round interval.
    pub fn interval(&self) -> Duration {
        Duration::from_secs_f64(self.interval_secs.max(0.05))
    }

    /// How long history is kept; `None` keeps everything.
    pub fn retention(&self) -> Option<Duration> {
        (self.retention_hours > 0.0).then(|| Duration::from_secs_f64(self.retention_hours * 3600.0))
    }

    /// How history is kept (`[history]`, each retention defaulting to `retention_hours`).
    pub fn history(&self) -> crate::store::History {
        let h = &self.history;
        let hours = |v: Option<f64>| match v {
            Some(v) if v > 0.0 => Some(Duration::from_secs_f64(v * 3600.0)),
            Some(_) => None,
            None => self.retention(),
        };
        let mut out = crate::store::History::keeping(self.retention());
        if let Some(r) = h.raw_hours {
            out.raw = Duration::from_secs_f64(r * 3600.0);
        }
        if let Some(b) = h.bucket_minutes {
            out.bucket = Duration::from_secs_f64(b * 60.0);
        }
        out.series = hours(h.series_hours);
        out.changes = hours(h.changes_hours);
        out.sessions = hours(h.sessions_hours);
        out.players = hours(h.players_hours);
        out.rounds = hours(h.rounds_hours);
        out.session_gap = h
            .session_gap_secs
            .map_or(out.session_gap, Duration::from_secs_f64);
        out.flush_rounds = h.flush_rounds.unwrap_or(out.flush_rounds);
        out.new_players_per_round = h.new_players_per_round.unwrap_or(out.new_players_per_round);
        out
    }
}

#[cfg(test)]
mod tests;
