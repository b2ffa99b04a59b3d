//! The web side: a server browser (`/`), a server page with its player-count chart (`/server/{addr}`),
//! a player search (`/players?q=`), the JSON API (`/api/servers`, `/api/servers/{addr}`,
//! `/api/servers/{addr}/history`, `/api/players`, described by `/api/openapi.json`) and
//! Prometheus `/metrics`, and `/healthz`.
//!
//! Pages are rendered on the server with maud, which escapes every string it is given; names
//! are shown with their colours as `<span style="color:#rrggbb">` runs whose colours come
//! from [`fragstat::core::text::runs`], never from the name's bytes. The browser page
//! refreshes its rows from `/api/servers` with a few lines of vanilla JavaScript that build
//! the DOM with `textContent` only.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use crate::geoip::Countries;
use crate::metrics::Metrics;
use crate::store::{Store, StoreError};

mod access;
mod api;
mod chart;
mod colour;
mod events;
mod health;
mod http;
mod join;
mod pages;
mod params;

pub use access::{Access, Refusal};
pub use api::{name_runs, BrowseQuery, HistoryQuery, NameRun, PlayerQuery, RoundsQuery};
pub use chart::chart;
pub use colour::{contrast_ratio, readable, BACKGROUND};
pub use health::{assess, Health, STALE_INTERVALS};
pub use http::{content_security_policy, etag_of, max_age, SECURITY_HEADERS};
pub use join::join_url;
pub use pages::{ago, race_time};
pub use params::documented as documented_parameters;

use api::{api_history, api_masters, api_player, api_players, api_rounds, api_server, api_servers};
use pages::{browser, player_page, players_page, server_page};

/// The OpenAPI 3.1 description of the JSON API, served at `/api/openapi.json`.
pub const OPENAPI: &str = include_str!("../openapi.json");

/// What the handlers share.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The database.
    pub store: Store,
    /// The metrics.
    pub metrics: Arc<Metrics>,
    /// Seconds between the browser page's refreshes.
    pub refresh_secs: f64,
    /// The rounds' events, for `/api/events`.
    pub events: crate::events::EventHub,
    /// The site: its title, base path, CORS origins and the limits its parameters take.
    pub site: Site,
    /// Servers' countries by GeoIP, for rows stored without one.
    pub countries: Arc<Countries>,
    /// This tracker's role (the writer, a standby, web-only), for `/healthz`.
    pub role: Arc<crate::engine::Role>,
    /// The API's keys and request rates (`[web.api]`).
    pub access: Arc<Access>,
}

/// What the site is: title, base path, CORS origins, and the history it can search.
#[derive(Debug, Clone, PartialEq)]
pub struct Site {
    /// Every page's title.
    pub title: String,
    /// The path the site is served under (`/servers`), or empty.
    pub base: String,
    /// Origins allowed to read the API from a browser (`*` for any); empty for none.
    pub cors_origins: Vec<String>,
    /// Hours of history kept (0: everything): the longest window of a server's history
    /// (its series, `[history] series_hours`, by default `retention_hours`).
    pub retention_hours: f64,
    /// Hours players are kept (`[history] players_hours`, 0: everything): the longest
    /// window of a player search.
    pub players_hours: f64,
    /// Seconds between rounds: how long an API answer may be cached.
    pub interval_secs: f64,
}

impl Default for Site {
    fn default() -> Self {
        Site {
            title: crate::config::DEFAULT_TITLE.into(),
            base: String::new(),
            cors_origins: Vec::new(),
            retention_hours: 168.0,
            players_hours: 168.0,
            interval_secs: 60.0,
        }
    }
}

impl Site {
    /// The site of a configuration.
    pub fn of(config: &crate::config::Config) -> Site {
        let history = config.history();
        let hours =
            |kept: Option<std::time::Duration>| kept.map_or(0.0, |d| d.as_secs_f64() / 3600.0);
        Site {
            title: config.web.title.clone(),
            base: config.web.base().to_string(),
            cors_origins: config.web.cors_origins.clone(),
            retention_hours: hours(history.series),
            players_hours: hours(history.players),
            interval_secs: config.interval_secs,
        }
    }

    /// `path` (starting with `/`) under the base path.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

/// The router: every page and API, under the site's base path, with CORS (when configured),
/// compression, and ETag/Cache-Control on the API.
pub fn router(state: AppState) -> Router {
    let site = state.site.clone();
    let b = site.base.clone();
    let mut r = Router::new()
        .route(&format!("{b}/"), get(browser))
        .route(&format!("{b}/server/{{addr}}"), get(server_page))
        .route(&format!("{b}/players"), get(players_page))
        .route(&format!("{b}/player/{{id}}"), get(player_page))
        .route(&format!("{b}/api/servers"), get(api_servers))
        .route(&format!("{b}/api/servers/{{addr}}"), get(api_server))
        .route(
            &format!("{b}/api/servers/{{addr}}/history"),
            get(api_history),
        )
        .route(&format!("{b}/api/players"), get(api_players))
        .route(&format!("{b}/api/players/{{id}}"), get(api_player))
        .route(&format!("{b}/api/rounds"), get(api_rounds))
        .route(&format!("{b}/api/masters"), get(api_masters))
        .route(&format!("{b}/api/events"), get(events::api_events))
        .route(&format!("{b}/api/openapi.json"), get(openapi))
        .route(&format!("{b}/metrics"), get(metrics))
        .route(&format!("{b}/healthz"), get(health::healthz));
    // Anything else: a 404 that says so (JSON under /api/, like every API error).
    r = r.fallback(|| async { not_found("page") });
    if !b.is_empty() {
        // `/servers` itself: to the browser page, `/servers/`.
        let to = format!("{b}/");
        r = r.route(
            &b,
            get(move || async move { axum::response::Redirect::permanent(&to) }),
        );
    }
    http::layers(r.with_state(state.clone()), &site, &state.access)
}

/// Serves `router(state)` on `listener` until `stop` resolves, with the default guard (see
/// [`serve_guarded`]).
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    serve_guarded(
        listener,
        state,
        fragstat_http_guard::Limits::default(),
        fragstat_http_guard::ClientIp::default(),
        stop,
    )
    .await
}

/// Serves `router(state)` on `listener` until `stop` resolves, behind fragstat's HTTP guard:
/// HTTP/1 only, timeouts, connection caps per address prefix, request rates (`limits`),
/// the client's address from a trusted proxy's header (`client_ip`).
pub async fn serve_guarded(
    listener: tokio::net::TcpListener,
    state: AppState,
    limits: fragstat_http_guard::Limits,
    client_ip: fragstat_http_guard::ClientIp,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    if let Ok(addr) = listener.local_addr() {
        fragstat_http_guard::warn_if_public_plain_http(addr, false, "the tracker's web server");
    }
    let stats = std::sync::Arc::<fragstat_http_guard::Stats>::default();
    state.metrics.register_http(std::sync::Arc::clone(&stats));
    fragstat_http_guard::Server {
        listener,
        tls: None,
        limits,
        client_ip,
        stats,
    }
    .serve(router(state), stop)
    .await
}

/// Binds `addr` for [`serve`].
pub async fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr).await
}

/// A handler's failure: a 4xx with its message (what was wrong with the request); a 500 with
/// [`INTERNAL_ERROR`] only, its detail (a database's error text) logged, never sent. Pages
/// answer it as plain text; under `/api/` every error answer, this one or any other (the
/// router's 404 and 405, a timeout's 503), is JSON: `{"error": message, "status": code}`
/// (`http::json_errors`).
#[derive(Debug)]
struct WebError(StatusCode, String);

/// The body of every 500: the detail is in the tracker's log.
pub const INTERNAL_ERROR: &str = "internal error (the tracker's log has the details)";

impl From<StoreError> for WebError {
    fn from(e: StoreError) -> Self {
        // A read past its time limit is the database being busy (a round, other readers):
        // 503, to be asked again, not a fault.
        if matches!(e, StoreError::Timeout) {
            tracing::warn!("web: {e}");
            return WebError(StatusCode::SERVICE_UNAVAILABLE, e.to_string());
        }
        WebError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        let body = if self.0.is_server_error() && self.0 != StatusCode::SERVICE_UNAVAILABLE {
            tracing::error!("web: {}", self.1);
            INTERNAL_ERROR.to_string()
        } else {
            self.1
        };
        (
            self.0,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            body,
        )
            .into_response()
    }
}

/// `2026-11-23T18:00:00Z` for a Unix-ms time.
pub fn time_text(ms: i64) -> String {
    fragstat::time_text(ms)
}

fn not_found(what: &str) -> WebError {
    WebError(StatusCode::NOT_FOUND, format!("no such {what}"))
}

async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI).into_response()
}

async fn metrics(State(st): State<AppState>) -> Response {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        st.metrics.encode(),
    )
        .into_response()
}
