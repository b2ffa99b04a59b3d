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
    /// What to poll.
    #[serde(default, rename = "source")]
    pub sources: Vec<Source>,
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
            sources: Vec::new(),
        }
    }
}

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
        if !(self.interval_secs.is_finite() && self.interval_secs >= 0.05) {
            return Err(ConfigError::Invalid(
                "interval_secs must be at least 0.05".into(),
            ));
        }
        if !(self.retention_hours.is_finite() && self.retention_hours >= 0.0) {
            return Err(ConfigError::Invalid(
                "retention_hours must be 0 or more".into(),
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
}
