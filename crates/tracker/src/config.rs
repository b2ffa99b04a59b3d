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
//! snapshot_records = true               # keep every round's whole JSON record
//!
//! [[source]]
//! game = "q3"
//! masters = ["master.ioquake3.org"]     # HOST[:PORT]; the game's master port by default
//! servers = ["203.0.113.7:27960"]       # polled whether a master lists them or not
//! ext = false                           # getserversExt where the game has it
//!
//! webhook = "https://hooks.example.org/…"  # POST each round's events (docs/tracker.md, Events)
//! webhook_format = "json"               # or "discord"
//! webhook_tries = 5                     # attempts per batch (1 s, 2 s, 4 s… apart)
//! webhook_timeout_ms = 10000            # per request
//! webhook_queue = 64                    # round batches waiting; the oldest dropped past it
//! sse_max_clients = 64                  # /api/events clients at once (503 beyond)
//!
//! [web]                                 # the web server's guard (all optional)
//! max_connections = 512                 # open at once
//! max_per_ip = 16                       # open at once from one host (IPv4 address, IPv6 /64)
//! connecting_ip_header = "X-Real-IP"    # behind a proxy: the client's IP, believed only
//! trusted_proxies = ["127.0.0.1/32"]    # from these networks
//! ```

use std::net::SocketAddr;
use std::time::Duration;

use serde::Deserialize;

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
    /// The header a TLS-terminating proxy sets to the client's IP.
    pub connecting_ip_header: Option<String>,
    /// Networks (CIDR) or addresses of the proxies whose header is believed.
    pub trusted_proxies: Vec<String>,
}

impl Default for WebConfig {
    fn default() -> Self {
        let l = fragstat_http_guard::Limits::default();
        WebConfig {
            max_connections: l.max_connections,
            max_per_ip: l.max_per_ip,
            connecting_ip_header: None,
            trusted_proxies: Vec::new(),
        }
    }
}

impl WebConfig {
    /// The guard's limits.
    pub fn limits(&self) -> fragstat_http_guard::Limits {
        fragstat_http_guard::Limits {
            max_connections: self.max_connections,
            max_per_ip: self.max_per_ip,
            ..fragstat_http_guard::Limits::default()
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
    /// Keep each snapshot's whole JSON record (every server variable), not only its counts,
    /// map and ping. The record is most of a snapshot's size (docs/tracker.md); the latest
    /// record of every server is kept either way.
    #[serde(default = "default_true")]
    pub snapshot_records: bool,
    /// POST each round's events to this URL (http or https).
    #[serde(default)]
    pub webhook: Option<String>,
    /// The webhook's form.
    #[serde(default)]
    pub webhook_format: WebhookFormat,
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
    /// What to poll.
    #[serde(default, rename = "source")]
    pub sources: Vec<Source>,
    /// The web server's guard.
    #[serde(default)]
    pub web: WebConfig,
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
            webhook_tries: default_webhook_tries(),
            webhook_timeout_ms: default_webhook_timeout(),
            webhook_queue: default_webhook_queue(),
            sse_max_clients: default_sse_max_clients(),
            sources: Vec::new(),
            web: WebConfig::default(),
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
        if self.sources.is_empty() {
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
        self.web.limits().check().map_err(ConfigError::Invalid)?;
        self.web
            .client_ip()
            .map_err(|e| ConfigError::Invalid(format!("[web]: {e}")))?;
        if let Some(w) = &self.webhook {
            match url::Url::parse(w) {
                Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {}
                _ => {
                    return Err(ConfigError::Invalid(format!(
                        "webhook {w:?} is not an http:// or https:// URL"
                    )))
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
        if self.timeout_ms == 0 || self.concurrency == 0 {
            return Err(ConfigError::Invalid(
                "timeout_ms and concurrency must be at least 1".into(),
            ));
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_checks() {
        let c = Config::from_toml(
            "database = \"x.db\"\ninterval_secs = 30\n[[source]]\ngame = \"oa\"\nmasters = [\"m:27950\"]\n",
        )
        .unwrap();
        assert_eq!(c.sources[0].game, "oa");
        assert_eq!(c.interval(), Duration::from_secs(30));
        assert_eq!(c.retention(), Some(Duration::from_secs(168 * 3600)));
        assert!(matches!(
            Config::from_toml("[[source]]\ngame = \"nope\"\nservers = [\"a\"]"),
            Err(ConfigError::UnknownGame(_))
        ));
        assert!(matches!(
            Config::from_toml("[[source]]\ngame = \"q3\""),
            Err(ConfigError::Invalid(_))
        ));
        assert!(matches!(
            Config::from_toml("bogus = 1"),
            Err(ConfigError::Toml(_))
        ));
        assert!(matches!(
            Config::from_toml(""),
            Err(ConfigError::Invalid(_))
        ));
    }

    #[test]
    fn webhook_and_sse_settings() {
        let src = "[[source]]\ngame = \"oa\"\nservers = [\"a\"]\n";
        let c = Config::from_toml(&format!(
            "webhook = \"http://127.0.0.1:9/hook\"\nwebhook_format = \"discord\"\nsse_max_clients = 3\n{src}"
        ))
        .unwrap();
        assert_eq!(c.webhook_format, WebhookFormat::Discord);
        assert_eq!(c.sse_max_clients, 3);
        assert_eq!(Config::default().sse_max_clients, 64);
        for bad in [
            "webhook = \"ftp://x/\"\n",
            "webhook = \"not a url\"\n",
            "webhook_format = \"slack\"\n",
            "sse_max_clients = 0\n",
            "webhook_tries = 0\n",
            "webhook_queue = 0\n",
        ] {
            assert!(Config::from_toml(&format!("{bad}{src}")).is_err(), "{bad}");
        }
    }

    #[test]
    fn values_that_would_panic_later_are_refused() {
        let src = "[[source]]\ngame = \"oa\"\nservers = [\"a\"]\n";
        for bad in [
            "interval_secs = 1e30\n",
            "retention_hours = 1e20\n",
            "interval_secs = -1\n",
        ] {
            let r = Config::from_toml(&format!("{bad}{src}"));
            assert!(matches!(r, Err(ConfigError::Invalid(_))), "{bad}: {r:?}");
        }
        let c = Config::from_toml(&format!(
            "interval_secs = 604800\nretention_hours = 876000\n{src}"
        ))
        .unwrap();
        let _ = (c.interval(), c.retention());
        // The web guard's options.
        let c = Config::from_toml(&format!(
            "{src}[web]\nmax_per_ip = 4\nconnecting_ip_header = \"X-Real-IP\"\ntrusted_proxies = [\"127.0.0.1/32\"]\n"
        ))
        .unwrap();
        assert_eq!(c.web.limits().max_per_ip, 4);
        assert!(c.web.client_ip().unwrap().header.is_some());
        for bad in [
            "[web]\nmax_connections = 0\n",
            "[web]\ntrusted_proxies = [\"10.0.0.0/8\"]\n",
            "[web]\nconnecting_ip_header = \"X-Real-IP\"\n",
            "[web]\nbogus = 1\n",
        ] {
            assert!(Config::from_toml(&format!("{src}{bad}")).is_err(), "{bad}");
        }
    }
}
