//! The web side: a server browser (`/`), a server page with its player-count chart (`/server/{addr}`),
//! a player search (`/players?q=`), the JSON API (`/api/servers`, `/api/servers/{addr}`,
//! `/api/servers/{addr}/history`, `/api/players`, described by `/api/openapi.json`) and
//! Prometheus `/metrics`.
//!
//! Pages are rendered on the server with maud, which escapes every string it is given; names
//! are shown with their colours as `<span style="color:#rrggbb">` runs whose colours come
//! from [`fragstat::core::text::runs`], never from the name's bytes. The browser page
//! refreshes its rows from `/api/servers` with a few lines of vanilla JavaScript that build
//! the DOM with `textContent` only.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use fragstat::core::model::{Dialect, Text};
use maud::{html, Markup, DOCTYPE};
use serde::{Deserialize, Serialize};

use crate::metrics::Metrics;
use crate::round::now_ms;
use crate::store::{HistoryPoint, PlayerRow, ServerFilter, ServerRow, Sort, Store, StoreError};

/// The OpenAPI 3.1 description of the JSON API, served at `/api/openapi.json`.
pub const OPENAPI: &str = include_str!("openapi.json");

/// What the handlers share.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The database.
    pub store: Store,
    /// The metrics.
    pub metrics: Arc<Metrics>,
    /// Seconds between the browser page's refreshes.
    pub refresh_secs: f64,
}

/// The router: every page and API.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(browser))
        .route("/server/{addr}", get(server_page))
        .route("/players", get(players_page))
        .route("/api/servers", get(api_servers))
        .route("/api/servers/{addr}", get(api_server))
        .route("/api/servers/{addr}/history", get(api_history))
        .route("/api/players", get(api_players))
        .route("/api/rounds", get(api_rounds))
        .route("/api/openapi.json", get(openapi))
        .route("/metrics", get(metrics))
        .with_state(state)
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
/// HTTP/1 only, header and request timeouts, a connection cap and a per-IP cap (`limits`),
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
    fragstat_http_guard::Server {
        listener,
        tls: None,
        limits,
        client_ip,
        stats: std::sync::Arc::default(),
    }
    .serve(router(state), stop)
    .await
}

/// Binds `addr` for [`serve`].
pub async fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr).await
}

/// A handler's failure: a database error becomes a 500 with the message as plain text.
struct WebError(StatusCode, String);

impl From<StoreError> for WebError {
    fn from(e: StoreError) -> Self {
        tracing::error!("web: {e}");
        WebError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string())
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        (
            self.0,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            self.1,
        )
            .into_response()
    }
}

/// One colour run of a name, as the API and the pages show it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct NameRun {
    /// `#rrggbb`, or `null` for the default colour.
    pub color: Option<String>,
    /// The text (for `textContent`, never markup).
    pub text: String,
}

/// A name's colour runs: Quake colour codes become colours; plain-dialect names are one run.
pub fn name_runs(t: &Text) -> Vec<NameRun> {
    match t.dialect() {
        Dialect::Plain => vec![NameRun {
            color: None,
            text: t.display(),
        }],
        _ => fragstat::core::text::runs(t.as_bytes())
            .into_iter()
            .map(|r| NameRun {
                color: r.color.map(|[r, g, b]| format!("#{r:02x}{g:02x}{b:02x}")),
                text: r.text,
            })
            .collect(),
    }
}

/// A name as HTML: escaped text in coloured spans.
fn name_html(t: &Text) -> Markup {
    let runs = name_runs(t);
    html! {
        span.name {
            @for r in &runs {
                @if let Some(c) = &r.color { span style={ "color:" (c) } { (r.text) } }
                @else { span { (r.text) } }
            }
        }
    }
}

/// `2026-11-23T18:00:00Z` for a Unix-ms time.
pub fn time_text(ms: i64) -> String {
    // humantime writes years 1970 to 9999 (its Display fails past that).
    let ms = ms.clamp(0, 253_402_300_799_000);
    let t = UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_seconds(t).to_string()
}

/// An address as one URL path segment.
fn addr_segment(addr: &str) -> String {
    url::form_urlencoded::byte_serialize(addr.as_bytes()).collect()
}

/// A server as the API writes it.
#[derive(Debug, Serialize)]
struct ApiServer<'a> {
    addr: &'a str,
    game: &'a str,
    status: &'a str,
    error: Option<&'a str>,
    name: Option<String>,
    name_raw: Option<String>,
    name_runs: Vec<NameRun>,
    dialect: Option<&'a str>,
    map: Option<&'a str>,
    gametype: Option<&'a str>,
    num_players: Option<i64>,
    max_players: Option<i64>,
    num_bots: Option<i64>,
    rtt_ms: Option<f64>,
    first_seen: i64,
    last_seen: i64,
    last_online: Option<i64>,
}

fn api_server_of(s: &ServerRow) -> ApiServer<'_> {
    let text = s.name_raw.as_ref().map(|_| s.name_text());
    ApiServer {
        addr: &s.addr,
        game: &s.game,
        status: &s.status,
        error: s.error.as_deref(),
        name: text.as_ref().map(Text::display),
        name_raw: text.as_ref().map(Text::raw),
        name_runs: text.as_ref().map(name_runs).unwrap_or_default(),
        dialect: s.dialect.as_deref(),
        map: s.map.as_deref(),
        gametype: s.gametype.as_deref(),
        num_players: s.num_players,
        max_players: s.max_players,
        num_bots: s.num_bots,
        rtt_ms: s.rtt_ms,
        first_seen: s.first_seen,
        last_seen: s.last_seen,
        last_online: s.last_online,
    }
}

/// A player as the API writes it.
#[derive(Debug, Serialize)]
struct ApiPlayer<'a> {
    addr: &'a str,
    seen: i64,
    name: String,
    name_raw: String,
    name_runs: Vec<NameRun>,
    score: Option<i64>,
    ping: Option<i64>,
    team: Option<i64>,
    is_bot: Option<bool>,
}

fn api_player_of(p: &PlayerRow) -> ApiPlayer<'_> {
    let t = p.name_text();
    ApiPlayer {
        addr: &p.addr,
        seen: p.at,
        name: t.display(),
        name_raw: t.raw(),
        name_runs: name_runs(&t),
        score: p.score,
        ping: p.ping,
        team: p.team,
        is_bot: p.is_bot,
    }
}

/// The browser's query string.
#[derive(Debug, Default, Deserialize)]
pub struct BrowseQuery {
    /// Game id.
    pub game: Option<String>,
    /// Map contains.
    pub map: Option<String>,
    /// Name contains.
    pub name: Option<String>,
    /// `players`, `ping` or `name`.
    pub sort: Option<String>,
    /// `1`: only servers that answered.
    pub online: Option<String>,
    /// Most rows.
    pub limit: Option<i64>,
}

impl BrowseQuery {
    fn filter(&self) -> Result<ServerFilter, WebError> {
        let sort = match self.sort.as_deref().filter(|s| !s.is_empty()) {
            Some(s) => s
                .parse::<Sort>()
                .map_err(|e| WebError(StatusCode::BAD_REQUEST, e))?,
            None => Sort::Players,
        };
        Ok(ServerFilter {
            game: self.game.clone(),
            map: self.map.clone(),
            name: self.name.clone(),
            online_only: matches!(self.online.as_deref(), Some("1" | "true" | "on")),
            sort,
            limit: Some(self.limit.unwrap_or(10_000).clamp(0, 100_000)),
        })
    }
}

const STYLE: &str = "
body{font-family:system-ui,sans-serif;background:#2b2e36;color:#e6e6e6;margin:1.5em}
a{color:#8cc8ff}table{border-collapse:collapse;margin-top:1em}
th,td{padding:.25em .7em;text-align:left;border-bottom:1px solid #444}
th{background:#383c46}tr.timeout td,tr.error td{color:#999}
form input,form select{margin-right:.6em}
.num{text-align:right}svg{background:#20232a;margin-top:1em}
svg .players{fill:none;stroke:#6fd36f;stroke-width:2}
svg .slots{fill:none;stroke:#888;stroke-dasharray:4 3}
svg text{fill:#ccc;font-size:11px}svg .down{fill:#d65a5a}
nav a{margin-right:1em}
";

fn page(title: &str, refresh: Option<f64>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { (title) " — fragstat track" }
                style { (maud::PreEscaped(STYLE)) }
            }
            body data-refresh=[refresh] {
                nav {
                    a href="/" { "Servers" }
                    a href="/players" { "Find a player" }
                    a href="/api/servers" { "API" }
                    a href="/api/openapi.json" { "OpenAPI" }
                    a href="/metrics" { "Metrics" }
                }
                (body)
            }
        }
    }
}

const BROWSER_JS: &str = r#"
(function () {
  const form = document.getElementById('filters');
  const rows = document.getElementById('rows');
  const every = Number(document.body.dataset.refresh || '10') * 1000;
  function cell(tr, text, cls) {
    const td = document.createElement('td');
    if (cls) td.className = cls;
    td.textContent = text;
    tr.appendChild(td);
    return td;
  }
  function name(td, runs) {
    const outer = document.createElement('span');
    outer.className = 'name';
    for (const r of runs) {
      const s = document.createElement('span');
      if (r.color) s.style.color = r.color;
      s.textContent = r.text;
      outer.appendChild(s);
    }
    td.appendChild(outer);
  }
  async function load() {
    const params = new URLSearchParams(new FormData(form));
    let data;
    try {
      const res = await fetch('/api/servers?' + params.toString());
      if (!res.ok) return;
      data = await res.json();
    } catch (e) { return; }
    const body = document.createElement('tbody');
    body.id = 'rows';
    let players = 0, online = 0;
    for (const s of data.servers) {
      const tr = document.createElement('tr');
      tr.className = 'server ' + s.status;
      tr.dataset.addr = s.addr;
      const a = document.createElement('a');
      a.href = '/server/' + encodeURIComponent(s.addr);
      a.textContent = s.addr;
      cell(tr, '').appendChild(a);
      cell(tr, s.status);
      name(cell(tr, ''), s.name_runs);
      cell(tr, s.map || '-');
      cell(tr, s.game);
      cell(tr, s.status === 'online' ? s.num_players + '/' + s.max_players : '-', 'num players');
      cell(tr, s.rtt_ms == null ? '-' : s.rtt_ms.toFixed(1), 'num ping');
      body.appendChild(tr);
      if (s.status === 'online') { online += 1; players += s.num_players; }
    }
    document.getElementById('rows').replaceWith(body);
    document.getElementById('summary').textContent =
      online + ' of ' + data.servers.length + ' servers online, ' + players + ' players';
    document.getElementById('updated').textContent = 'updated ' + new Date().toISOString();
  }
  form.addEventListener('input', function () {
    history.replaceState(null, '', '?' + new URLSearchParams(new FormData(form)).toString());
    load();
  });
  form.addEventListener('submit', function (e) { e.preventDefault(); load(); });
  setInterval(load, every);
  load();
})();
"#;

fn server_rows(servers: &[ServerRow]) -> Markup {
    html! {
        tbody #rows {
            @for s in servers {
                tr class={ "server " (s.status) } data-addr=(s.addr) {
                    td { a href={ "/server/" (addr_segment(&s.addr)) } { (s.addr) } }
                    td { (s.status) }
                    td { (name_html(&s.name_text())) }
                    td { (s.map.as_deref().unwrap_or("-")) }
                    td { (s.game) }
                    td.num.players {
                        @if s.status == "online" {
                            (s.num_players.unwrap_or(0)) "/" (s.max_players.unwrap_or(0))
                        } @else { "-" }
                    }
                    td.num.ping {
                        @if let Some(r) = s.rtt_ms { (format!("{r:.1}")) } @else { "-" }
                    }
                }
            }
        }
    }
}

async fn browser(
    State(st): State<AppState>,
    Query(q): Query<BrowseQuery>,
) -> Result<Html<String>, WebError> {
    let filter = q.filter()?;
    let servers = st.store.servers(&filter).await?;
    let games = st.store.games().await?;
    let online: Vec<&ServerRow> = servers.iter().filter(|s| s.status == "online").collect();
    let players: i64 = online.iter().filter_map(|s| s.num_players).sum();
    let sort = q.sort.as_deref().unwrap_or("players");
    let body = html! {
        h1 { "Servers" }
        form #filters method="get" action="/" {
            label { "Game " select name="game" {
                option value="" { "any" }
                @for g in &games {
                    option value=(g) selected[q.game.as_deref() == Some(g.as_str())] { (g) }
                }
            } }
            label { "Map " input type="search" name="map" value=[q.map.as_deref()]; }
            label { "Name " input type="search" name="name" value=[q.name.as_deref()]; }
            label { "Sort " select name="sort" {
                option value="players" selected[sort == "players"] { "players" }
                option value="ping" selected[sort == "ping"] { "ping" }
                option value="name" selected[sort == "name"] { "name" }
            } }
            button type="submit" { "Filter" }
        }
        p {
            span #summary { (online.len()) " of " (servers.len()) " servers online, " (players) " players" }
            " · " span #updated { "rendered " (time_text(now_ms())) }
        }
        table #servers {
            thead { tr {
                th { "Address" } th { "Status" } th { "Name" } th { "Map" } th { "Game" }
                th { "Players" } th { "Ping" }
            } }
            (server_rows(&servers))
        }
        script { (maud::PreEscaped(BROWSER_JS)) }
    };
    Ok(Html(
        page("Servers", Some(st.refresh_secs), body).into_string(),
    ))
}

/// The chart's size.
const CHART_W: f64 = 800.0;
const CHART_H: f64 = 220.0;
const PAD: f64 = 36.0;

/// The player-count chart: one polyline per stretch of rounds the server answered, the slot
/// count dashed, rounds it did not answer as red marks on the axis.
pub fn chart(points: &[HistoryPoint]) -> Markup {
    let t0 = points.first().map_or(0, |p| p.at);
    let t1 = points.last().map_or(1, |p| p.at).max(t0.saturating_add(1));
    let top = points
        .iter()
        .flat_map(|p| [p.num_players, p.max_players])
        .flatten()
        .max()
        .unwrap_or(1)
        .max(1);
    let span = t1.saturating_sub(t0).max(1) as f64;
    let x = |at: i64| PAD + at.saturating_sub(t0) as f64 / span * (CHART_W - 2.0 * PAD);
    let y = |n: i64| CHART_H - PAD - n as f64 / top as f64 * (CHART_H - 2.0 * PAD);
    let mut lines: Vec<String> = Vec::new();
    let mut slots: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut current_slots = String::new();
    let mut down = Vec::new();
    for p in points {
        match (p.status.as_str(), p.num_players) {
            ("online", Some(n)) => {
                current.push_str(&format!("{:.1},{:.1} ", x(p.at), y(n)));
                if let Some(m) = p.max_players {
                    current_slots.push_str(&format!("{:.1},{:.1} ", x(p.at), y(m)));
                }
            }
            _ => {
                down.push(x(p.at));
                if !current.is_empty() {
                    lines.push(std::mem::take(&mut current));
                    slots.push(std::mem::take(&mut current_slots));
                }
            }
        }
    }
    if !current.is_empty() {
        lines.push(current);
        slots.push(current_slots);
    }
    html! {
        svg #chart xmlns="http://www.w3.org/2000/svg" width=(CHART_W) height=(CHART_H)
            viewBox={ "0 0 " (CHART_W) " " (CHART_H) } role="img" data-points=(points.len()) {
            title { "Players over time" }
            line x1=(PAD) y1=(CHART_H - PAD) x2=(CHART_W - PAD) y2=(CHART_H - PAD) stroke="#777" {}
            line x1=(PAD) y1=(PAD) x2=(PAD) y2=(CHART_H - PAD) stroke="#777" {}
            text x="4" y=(PAD + 4.0) { (top) }
            text x="4" y=(CHART_H - PAD + 4.0) { "0" }
            line x1=(CHART_W - 230.0) y1="14" x2=(CHART_W - 210.0) y2="14" class="players" {}
            text x=(CHART_W - 205.0) y="18" { "players" }
            line x1=(CHART_W - 140.0) y1="14" x2=(CHART_W - 120.0) y2="14" class="slots" {}
            text x=(CHART_W - 115.0) y="18" { "slots" }
            rect.down x=(CHART_W - 75.0) y="11" width="3" height="6" {}
            text x=(CHART_W - 68.0) y="18" { "no answer" }
            @if !points.is_empty() {
                text x=(PAD) y=(CHART_H - 10.0) { (time_text(t0)) }
                text x=(CHART_W - PAD) y=(CHART_H - 10.0) text-anchor="end" { (time_text(t1)) }
            }
            @for s in &slots { polyline.slots points=(s.trim_end()) {} }
            @for l in &lines { polyline.players points=(l.trim_end()) {} }
            @for d in &down { rect.down x=(format!("{:.1}", d - 1.5)) y=(CHART_H - PAD - 3.0) width="3" height="6" {} }
        }
    }
}

/// The server page's query string.
#[derive(Debug, Default, Deserialize)]
pub struct HistoryQuery {
    /// From this Unix-ms time.
    pub since: Option<i64>,
    /// The last this many hours (default 24), when `since` is not given.
    pub hours: Option<f64>,
}

impl HistoryQuery {
    fn since(&self) -> i64 {
        self.since.unwrap_or_else(|| {
            let h = self
                .hours
                .filter(|h| h.is_finite() && *h > 0.0)
                .unwrap_or(24.0);
            now_ms().saturating_sub((h.min(1e6) * 3_600_000.0) as i64)
        })
    }
}

fn not_found(what: &str) -> WebError {
    WebError(StatusCode::NOT_FOUND, format!("no such {what}"))
}

async fn server_page(
    State(st): State<AppState>,
    Path(addr): Path<String>,
    Query(q): Query<HistoryQuery>,
) -> Result<Html<String>, WebError> {
    let Some(s) = st.store.server(&addr).await? else {
        return Err(not_found("server"));
    };
    let history = st.store.history(&addr, q.since()).await?;
    let players = st.store.players_on(&addr).await?;
    let name = s.name_text();
    let body = html! {
        h1 { (name_html(&name)) }
        table #info {
            tr { th { "Address" } td { (s.addr) } }
            tr { th { "Game" } td { (s.game) } }
            tr { th { "Status" } td #status { (s.status) @if let Some(e) = &s.error { " (" (e) ")" } } }
            tr { th { "Map" } td { (s.map.as_deref().unwrap_or("-")) } }
            tr { th { "Game type" } td { (s.gametype.as_deref().unwrap_or("-")) } }
            tr { th { "Players" } td { (s.num_players.unwrap_or(0)) " / " (s.max_players.unwrap_or(0)) } }
            tr { th { "Ping" } td { @if let Some(r) = s.rtt_ms { (format!("{r:.1} ms")) } @else { "-" } } }
            tr { th { "First seen" } td { (time_text(s.first_seen)) } }
            tr { th { "Last answered" } td { @if let Some(t) = s.last_online { (time_text(t)) } @else { "never" } } }
        }
        h2 { "Players over time" }
        (chart(&history))
        p { a href={ "/api/servers/" (addr_segment(&s.addr)) "/history" } { "history as JSON" } }
        h2 { "Players now" }
        table #players {
            thead { tr { th { "Name" } th { "Score" } th { "Ping" } th { "Bot" } } }
            tbody {
                @for p in &players {
                    tr.player {
                        td { (name_html(&p.name_text())) }
                        td.num { (p.score.map_or("-".into(), |v| v.to_string())) }
                        td.num { (p.ping.map_or("-".into(), |v| v.to_string())) }
                        td { (match p.is_bot { Some(true) => "yes", Some(false) => "no", None => "-" }) }
                    }
                }
            }
        }
    };
    Ok(Html(page(&name.display(), None, body).into_string()))
}

/// The player search's query string.
#[derive(Debug, Default, Deserialize)]
pub struct PlayerQuery {
    /// Name contains (colours stripped, case-insensitive).
    pub q: Option<String>,
    /// Most rows (default 100).
    pub limit: Option<i64>,
    /// Sightings in the last this many hours (default 1: the search scans the rows of the
    /// rounds it covers; docs/tracker.md).
    pub hours: Option<f64>,
}

impl PlayerQuery {
    fn since(&self) -> i64 {
        let h = self
            .hours
            .filter(|h| h.is_finite() && *h > 0.0)
            .unwrap_or(1.0);
        now_ms().saturating_sub((h.min(1e6) * 3_600_000.0) as i64)
    }

    /// The sightings this query asks for (none for an empty name): what the page and the API
    /// both show.
    async fn hits(&self, store: &Store) -> Result<Vec<PlayerRow>, WebError> {
        let text = self.q.as_deref().unwrap_or_default();
        if text.is_empty() {
            return Ok(Vec::new());
        }
        Ok(store
            .find_players(text, self.since(), self.limit.unwrap_or(100).clamp(0, 1000))
            .await?)
    }
}

async fn players_page(
    State(st): State<AppState>,
    Query(q): Query<PlayerQuery>,
) -> Result<Html<String>, WebError> {
    let text = q.q.clone().unwrap_or_default();
    let hits = q.hits(&st.store).await?;
    let mut rows = Vec::new();
    for h in &hits {
        let server = st.store.server(&h.addr).await?;
        rows.push((h, server));
    }
    let body = html! {
        h1 { "Where is … playing?" }
        form method="get" action="/players" {
            input type="search" name="q" value=(text) placeholder="player name";
            button type="submit" { "Find" }
        }
        @if !text.is_empty() {
            p #found { (hits.len()) " sightings" }
            table #hits {
                thead { tr { th { "Player" } th { "Server" } th { "Map" } th { "Score" } th { "Seen" } } }
                tbody {
                    @for (h, s) in &rows {
                        tr.hit {
                            td { (name_html(&h.name_text())) }
                            td { a href={ "/server/" (addr_segment(&h.addr)) } {
                                @if let Some(s) = s { (name_html(&s.name_text())) } @else { (h.addr) }
                            } }
                            td { (s.as_ref().and_then(|s| s.map.as_deref()).unwrap_or("-")) }
                            td.num { (h.score.map_or("-".into(), |v| v.to_string())) }
                            td { (time_text(h.at)) }
                        }
                    }
                }
            }
        }
    };
    Ok(Html(page("Players", None, body).into_string()))
}

async fn api_servers(
    State(st): State<AppState>,
    Query(q): Query<BrowseQuery>,
) -> Result<Response, WebError> {
    let servers = st.store.servers(&q.filter()?).await?;
    let last = st.store.rounds(1).await?;
    let list: Vec<ApiServer<'_>> = servers.iter().map(api_server_of).collect();
    Ok(Json(serde_json::json!({
        "last_round": last.first(),
        "servers": list,
    }))
    .into_response())
}

async fn api_server(
    State(st): State<AppState>,
    Path(addr): Path<String>,
) -> Result<Response, WebError> {
    let Some(s) = st.store.server(&addr).await? else {
        return Err(not_found("server"));
    };
    let record: serde_json::Value = match st.store.server_record(&addr).await? {
        Some(r) => serde_json::from_str(&r)
            .map_err(|e| WebError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?,
        None => serde_json::Value::Null,
    };
    let players = st.store.players_on(&addr).await?;
    let players: Vec<ApiPlayer<'_>> = players.iter().map(api_player_of).collect();
    Ok(Json(serde_json::json!({
        "server": api_server_of(&s),
        "players": players,
        "record": record,
    }))
    .into_response())
}

async fn api_history(
    State(st): State<AppState>,
    Path(addr): Path<String>,
    Query(q): Query<HistoryQuery>,
) -> Result<Response, WebError> {
    if st.store.server(&addr).await?.is_none() {
        return Err(not_found("server"));
    }
    let history = st.store.history(&addr, q.since()).await?;
    Ok(Json(serde_json::json!({ "addr": addr, "history": history })).into_response())
}

async fn api_players(
    State(st): State<AppState>,
    Query(q): Query<PlayerQuery>,
) -> Result<Response, WebError> {
    let hits = q.hits(&st.store).await?;
    let list: Vec<ApiPlayer<'_>> = hits.iter().map(api_player_of).collect();
    Ok(Json(serde_json::json!({ "players": list })).into_response())
}

/// `/api/rounds`' query string.
#[derive(Debug, Default, Deserialize)]
pub struct RoundsQuery {
    /// Most rounds (default 60).
    pub limit: Option<i64>,
}

async fn api_rounds(
    State(st): State<AppState>,
    Query(q): Query<RoundsQuery>,
) -> Result<Response, WebError> {
    let rounds = st
        .store
        .rounds(q.limit.unwrap_or(60).clamp(0, 10_000))
        .await?;
    Ok(Json(serde_json::json!({ "rounds": rounds })).into_response())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_names_render_inert() {
        let t = Text::new(
            b"^1<script>alert(1)</script>^7'; DROP TABLE servers;--".to_vec(),
            Dialect::Quake,
        );
        let h = name_html(&t).into_string();
        assert!(!h.contains("<script>"), "{h}");
        assert!(h.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{h}");
        assert!(h.contains("color:#ff0000"), "{h}");
        let plain = Text::new(b"a^1<b>".to_vec(), Dialect::Plain);
        assert_eq!(
            name_runs(&plain),
            vec![NameRun {
                color: None,
                text: "a^1<b>".into()
            }]
        );
    }

    #[test]
    fn chart_breaks_on_downtime() {
        let p = |at, status: &str, n| HistoryPoint {
            at,
            status: status.into(),
            num_players: n,
            max_players: n.map(|_| 8),
            rtt_ms: None,
            map: None,
        };
        let svg = chart(&[
            p(0, "online", Some(1)),
            p(10, "online", Some(3)),
            p(20, "timeout", None),
            p(30, "online", Some(8)),
        ])
        .into_string();
        assert_eq!(
            svg.matches("<polyline class=\"players\"").count(),
            2,
            "{svg}"
        );
        assert_eq!(svg.matches("class=\"down\"").count(), 2, "{svg}"); // and the legend's
        assert!(chart(&[]).into_string().contains("<svg"));
        // Stored values out of any sensible range draw, they do not panic.
        let odd = chart(&[p(i64::MIN, "online", Some(1)), p(i64::MAX, "online", None)]);
        assert!(odd.into_string().contains("<svg"));
        assert_eq!(time_text(i64::MAX), "9999-12-31T23:59:59Z");
        assert_eq!(time_text(-5), "1970-01-01T00:00:00Z");
    }
}
