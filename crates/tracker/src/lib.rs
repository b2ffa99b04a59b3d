//! `fragstat track`: a live server browser with history.
//!
//! Every round the tracker asks the configured masters for their lists, probes every listed
//! (and configured) server for its players through the engine, and writes what changed in one
//! transaction — player sessions, server state changes and a per-round series of the numbers,
//! downsampled after a day — to an embedded SQLite file by default, or to PostgreSQL for
//! several trackers and readers (the same schema, kept by migrations). Each table keeps its
//! rows for its own retention. A web server shows a server browser, a page per
//! server with its player count over time, a player search, a JSON API described by OpenAPI,
//! and Prometheus metrics.
//!
//! ```no_run
//! # async fn run() -> Result<(), fragstat_tracker::TrackError> {
//! use fragstat_tracker::{config::Config, Tracker};
//! let config = Config::from_toml(r#"
//!     database = "track.db"
//!     [[source]]
//!     game = "q3"
//!     masters = ["127.0.0.1:27950"]
//! "#)?;
//! let tracker = Tracker::open(config).await?;
//! let listener = fragstat_tracker::web::bind(tracker.config().listen).await?;
//! tracker.run(listener, std::future::pending(), |_| {}).await?;
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

pub mod bots;
pub mod config;
pub mod engine;
pub mod events;
pub mod geoip;
pub mod metrics;
pub mod privacy;
pub mod push;
pub mod round;
pub mod store;
pub mod web;

use std::future::Future;
use std::sync::Arc;

use fragstat::Client;

use crate::config::{Config, ConfigError};
use crate::engine::{Engine, Role, RoleKind};
use crate::geoip::Countries;
use crate::metrics::Metrics;
use crate::round::RoundReport;
use crate::store::{Store, StoreError};

/// Why the tracker could not start or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrackError {
    /// The configuration was refused.
    #[error("configuration: {0}")]
    Config(ConfigError),
    /// The database could not be opened or written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A socket could not be bound, or the web server failed.
    #[error("{0}")]
    Io(std::io::Error),
    /// The client could not be built (its sockets bound): the client's error, with its
    /// `source()` chain.
    #[error(transparent)]
    Client(#[from] fragstat::Error),
    /// The webhook's HTTP client could not be built.
    #[error("the webhook's HTTP client could not be built")]
    Webhook(#[source] reqwest::Error),
    /// The web server's task ended without returning (it panicked or was cancelled).
    #[error("the web server's task failed")]
    Web(#[source] tokio::task::JoinError),
}

// By hand, not `#[from]`: the message already holds the cause, so it is no `source` (a report
// of the chain would say it twice).
impl From<ConfigError> for TrackError {
    fn from(e: ConfigError) -> Self {
        TrackError::Config(e)
    }
}

impl From<std::io::Error> for TrackError {
    fn from(e: std::io::Error) -> Self {
        TrackError::Io(e)
    }
}

/// A tracker: its configuration, database, client and metrics.
#[derive(Debug)]
pub struct Tracker {
    config: Config,
    store: Store,
    /// The client of [`Tracker::round`] (none for a web-only tracker; [`Tracker::run`]'s
    /// rounds build their own on their thread).
    client: Option<Client>,
    metrics: Arc<Metrics>,
    events: events::Events,
    countries: Arc<Countries>,
    role: Arc<Role>,
    /// MMDB reloads ([`Tracker::reload_geoip`]) that worked, and that failed.
    geoip_reloads: [prometheus_client::metrics::counter::Counter; 2],
    /// The about page's text (`[privacy] about`, or `about_file` as read at start).
    about: Option<String>,
    /// The API's keys and request rates (one for every [`Tracker::state`]).
    access: Arc<web::Access>,
}

impl Tracker {
    /// Checks the configuration, opens and migrates the database and binds the client's
    /// sockets (none for a web-only tracker).
    pub async fn open(config: Config) -> Result<Tracker, TrackError> {
        config.check()?;
        let countries = Countries::from_config(config.geoip.as_deref())
            .map_err(|e| ConfigError::Invalid(e.to_string()))?
            .with_name_tags(config.country_from_name);
        let about = config.privacy.about_text().map_err(ConfigError::Invalid)?;
        let store = Store::open(&config.database)
            .await?
            .with_history(config.history());
        // The names never stored, from the start (each round reads the forgotten again).
        let forgotten = store.forgotten(round::MAX_FORGOTTEN).await?;
        let names = config.privacy.opt_out.iter().map(String::as_str);
        store.set_opt_out(privacy::OptOut::new(
            names.chain(forgotten.iter().map(String::as_str)),
        ));
        let client = if config.web_only {
            None
        } else {
            Some(round::client(&config).await?)
        };
        let metrics = Arc::new(Metrics::new());
        let role = if config.web_only {
            RoleKind::WebOnly
        } else {
            RoleKind::Standby
        };
        let role = Arc::new(Role::new(role, 0, &metrics));
        let geoip_reloads: [prometheus_client::metrics::counter::Counter; 2] = Default::default();
        metrics.register(
            "geoip_reloads",
            "MMDB files read again and swapped in (SIGHUP)",
            geoip_reloads[0].clone(),
        );
        metrics.register(
            "geoip_reload_failures",
            "MMDB reloads refused (the file could not be read; the table in use stayed)",
            geoip_reloads[1].clone(),
        );
        let events = events::Events::new(&config, &metrics).map_err(TrackError::Webhook)?;
        if let Some(p) = events.pushes() {
            // Pushed players who opted out are never published either (crate::privacy).
            p.opt_out_of(&store);
        }
        let access = Arc::new(web::Access::new(&config.web.api, &metrics));
        Ok(Tracker {
            access,
            config,
            store,
            client,
            metrics,
            events,
            countries: Arc::new(countries),
            role,
            geoip_reloads,
            about,
        })
    }

    /// Reads the configured MMDB file (`geoip`) again and swaps it in, for `fragstat track`'s
    /// SIGHUP: replace the file (write a new one and rename it over the old), then signal.
    /// A file that cannot be read leaves the table in use, and says why (logged and
    /// returned). `Ok(false)` when no MMDB is configured.
    pub fn reload_geoip(&self) -> Result<bool, geoip::GeoIpError> {
        let Some(path) = &self.config.geoip else {
            tracing::info!("SIGHUP: no GeoIP database configured (geoip), nothing to reload");
            return Ok(false);
        };
        match self.countries.reload(path) {
            Ok(()) => {
                self.geoip_reloads[0].inc();
                let built = self
                    .countries
                    .build_epoch()
                    .and_then(|s| i64::try_from(s).ok())
                    .map(|s| web::time_text(s.saturating_mul(1000)))
                    .unwrap_or_default();
                tracing::info!("GeoIP reloaded from {} (built {built})", path.display());
                Ok(true)
            }
            Err(e) => {
                self.geoip_reloads[1].inc();
                tracing::warn!("GeoIP not reloaded, the table in use stays: {e}");
                Err(e)
            }
        }
    }

    /// This tracker's role: the writer, a standby or web-only.
    pub fn role(&self) -> &Arc<Role> {
        &self.role
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The database.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The metrics.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// What the web handlers need.
    pub fn state(&self) -> web::AppState {
        web::AppState {
            store: self.store.clone(),
            metrics: self.metrics.clone(),
            refresh_secs: self.config.interval_secs.clamp(1.0, 60.0),
            events: self.events.hub(),
            site: web::Site {
                about: self.about.clone(),
                ..web::Site::of(&self.config)
            },
            countries: self.countries.clone(),
            role: self.role.clone(),
            access: self.access.clone(),
        }
    }

    /// Runs one round now: poll, write, prune; then its events (to `/api/events` and the
    /// webhook). Whatever the writer's lease (see [`Tracker::run`]); a web-only tracker
    /// refuses ([`StoreError::NotWriter`]).
    pub async fn round(&self) -> Result<RoundReport, StoreError> {
        let Some(client) = &self.client else {
            return Err(StoreError::NotWriter);
        };
        let r = round::round(
            client,
            &self.store,
            &self.config,
            &self.metrics,
            &self.countries,
        )
        .await?;
        self.events.forget(&self.store.opt_out());
        self.events.round(&r);
        Ok(r)
    }

    /// The events of the rounds.
    pub fn events(&self) -> &events::Events {
        &self.events
    }

    /// Listens for pushed events (`[push]`, [`push`]) on `socket` until `stop` resolves: what
    /// [`Tracker::run`] does on `[push] listen`, for callers that bind the socket themselves.
    /// `None` without `[push]`.
    pub fn serve_pushes(
        &self,
        socket: tokio::net::UdpSocket,
        stop: impl Future<Output = ()> + Send + 'static,
    ) -> Option<impl Future<Output = ()> + Send + 'static> {
        Some(self.events.pushes()?.serve(socket, stop))
    }

    /// Serves the web pages on `listener` and runs rounds until `config.rounds` have been
    /// written (0: forever) or `stop` resolves; `on_round` sees each written round.
    ///
    /// The rounds run on a thread and runtime of their own ([`engine`]); the web, the events
    /// and `on_round` on the caller's. Before each round the tracker takes the writer's lease
    /// ([`Store::lead`]): of several trackers on one database one writes, the others serve
    /// the web and take over at their next round when it stops. A web-only tracker
    /// (`config.web_only`) only serves, until `stop`.
    pub async fn run(
        &self,
        listener: tokio::net::TcpListener,
        stop: impl Future<Output = ()>,
        on_round: impl Fn(&RoundReport),
    ) -> Result<(), TrackError> {
        let (tx, mut rx) = tokio::sync::watch::channel(false);
        let client_ip = self.config.web.client_ip().map_err(ConfigError::Invalid)?;
        let web = tokio::spawn(web::serve_guarded(
            listener,
            self.state(),
            self.config.web.limits(),
            client_ip,
            async move {
                let _ = rx.wait_for(|s| *s).await;
            },
        ));
        if let Some(p) = &self.config.push {
            let socket = tokio::net::UdpSocket::bind(p.listen).await?;
            tracing::info!(
                "listening for pushed events (ET: Legacy sv_tracker) on udp {}",
                socket.local_addr()?
            );
            let mut rx = tx.subscribe();
            let stopped = async move {
                let _ = rx.wait_for(|s| *s).await;
            };
            if let Some(f) = self.serve_pushes(socket, stopped) {
                tokio::spawn(f);
            }
        }
        let engine = if self.config.web_only {
            tracing::info!("web only: this tracker serves the database and never polls or writes");
            None
        } else {
            Some(self.start_engine()?)
        };
        let ended = match engine {
            None => {
                stop.await;
                Ok(())
            }
            Some((mut rounds, done)) => {
                tokio::pin!(stop);
                loop {
                    tokio::select! {
                        r = rounds.recv() => match r {
                            Some(r) => {
                                self.events.forget(&self.store.opt_out());
                                self.events.round(&r);
                                on_round(&r);
                            }
                            None => break,
                        },
                        () = &mut stop => break,
                    }
                }
                done.await
            }
        };
        self.events.close();
        let _ = tx.send(true);
        match web.await {
            Ok(r) => r?,
            Err(e) => return Err(TrackError::Web(e)),
        }
        ended.map_err(TrackError::from)
    }

    /// Starts the rounds' thread: the rounds it writes, and its end.
    fn start_engine(
        &self,
    ) -> Result<
        (
            tokio::sync::mpsc::Receiver<RoundReport>,
            impl Future<Output = std::io::Result<()>>,
        ),
        TrackError,
    > {
        let (rounds_tx, rounds_rx) = tokio::sync::mpsc::channel(4);
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let done = Engine {
            store: self.store.clone(),
            config: self.config.clone(),
            metrics: self.metrics.clone(),
            countries: self.countries.clone(),
            role: self.role.clone(),
        }
        .spawn(rounds_tx, stop_rx)?;
        let done = async move {
            let _ = stop_tx.send(true);
            done.await
                .unwrap_or_else(|_| Err(std::io::Error::other("the rounds' thread ended")))
        };
        Ok((rounds_rx, done))
    }
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use super::TrackError;

    /// The client's error reaches the tracker's caller typed, with its `source()` chain: not
    /// text inside an `io::Error`.
    #[test]
    fn client_errors_stay_typed() {
        let d = fragstat::DecodeError::Missing {
            field: "x",
            offset: 3,
        };
        let e = TrackError::from(fragstat::Error::Decode(d.clone()));
        assert!(matches!(&e, TrackError::Client(fragstat::Error::Decode(_))));
        let src = e
            .source()
            .and_then(|s| s.downcast_ref::<fragstat::DecodeError>());
        assert_eq!(src, Some(&d));
    }
}
