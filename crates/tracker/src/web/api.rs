//! The JSON API: its handlers, what they read from the query string and what they write.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use fragstat::core::model::Text;
use serde::{Deserialize, Serialize};

use super::{not_found, AppState, WebError};
use crate::round::now_ms;
use crate::store::{PlayerHit, PlayerRow, ServerFilter, ServerRow, Sort, Store};

/// One colour run of a name, as the API and the pages show it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct NameRun {
    /// `#rrggbb`, or `null` for the default colour.
    pub color: Option<String>,
    /// The text (for `textContent`, never markup).
    pub text: String,
    /// Drawn at half alpha (DarkPlaces `^8`); left out when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub half_alpha: bool,
    /// An embedded icon's name (Quake 4 `^i`, Call of Duty materials), `text` empty; left
    /// out when the run is text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub icon: Option<String>,
}

/// A name's colour runs in its dialect ([`Text::runs`]); plain-dialect names are one run.
pub fn name_runs(t: &Text) -> Vec<NameRun> {
    t.runs()
        .into_iter()
        .map(|r| NameRun {
            color: r.color.map(|[r, g, b]| format!("#{r:02x}{g:02x}{b:02x}")),
            text: r.text,
            half_alpha: r.half_alpha,
            icon: r.icon,
        })
        .collect()
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

/// A player the search found, as the API writes it.
#[derive(Debug, Serialize)]
struct ApiHit<'a> {
    player_id: i64,
    name: String,
    name_raw: String,
    name_runs: Vec<NameRun>,
    last_seen: i64,
    addr: Option<&'a str>,
    online: bool,
}

fn api_hit_of(h: &PlayerHit) -> ApiHit<'_> {
    let t = h.name_text();
    ApiHit {
        player_id: h.player_id,
        name: t.display(),
        name_raw: t.raw(),
        name_runs: name_runs(&t),
        last_seen: h.last_seen,
        addr: h.addr.as_deref(),
        online: h.online,
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
    pub(super) fn filter(&self) -> Result<ServerFilter, WebError> {
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

/// The server page's query string.
#[derive(Debug, Default, Deserialize)]
pub struct HistoryQuery {
    /// From this Unix-ms time.
    pub since: Option<i64>,
    /// The last this many hours (default 24), when `since` is not given.
    pub hours: Option<f64>,
}

impl HistoryQuery {
    pub(super) fn since(&self) -> i64 {
        self.since.unwrap_or_else(|| {
            let h = self
                .hours
                .filter(|h| h.is_finite() && *h > 0.0)
                .unwrap_or(24.0);
            now_ms().saturating_sub((h.min(1e6) * 3_600_000.0) as i64)
        })
    }
}

/// The player search's query string.
#[derive(Debug, Default, Deserialize)]
pub struct PlayerQuery {
    /// Name contains (colours stripped, case-insensitive).
    pub q: Option<String>,
    /// Most rows (default 100).
    pub limit: Option<i64>,
    /// Players seen in the last this many hours (default 1).
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
    pub(super) async fn hits(&self, store: &Store) -> Result<Vec<PlayerHit>, WebError> {
        let text = self.q.as_deref().unwrap_or_default();
        if text.is_empty() {
            return Ok(Vec::new());
        }
        Ok(store
            .find_players(text, self.since(), self.limit.unwrap_or(100).clamp(0, 1000))
            .await?)
    }
}

pub(super) async fn api_servers(
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

pub(super) async fn api_server(
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

pub(super) async fn api_history(
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

pub(super) async fn api_players(
    State(st): State<AppState>,
    Query(q): Query<PlayerQuery>,
) -> Result<Response, WebError> {
    let hits = q.hits(&st.store).await?;
    let list: Vec<ApiHit<'_>> = hits.iter().map(api_hit_of).collect();
    Ok(Json(serde_json::json!({ "players": list })).into_response())
}

/// `/api/rounds`' query string.
#[derive(Debug, Default, Deserialize)]
pub struct RoundsQuery {
    /// Most rounds (default 60).
    pub limit: Option<i64>,
}

pub(super) async fn api_rounds(
    State(st): State<AppState>,
    Query(q): Query<RoundsQuery>,
) -> Result<Response, WebError> {
    let rounds = st
        .store
        .rounds(q.limit.unwrap_or(60).clamp(0, 10_000))
        .await?;
    Ok(Json(serde_json::json!({ "rounds": rounds })).into_response())
}
