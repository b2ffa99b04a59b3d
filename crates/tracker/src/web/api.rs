//! The JSON API: its handlers, what they read from the query string and what they write.

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use fragstat::core::model::Text;
use serde::{Deserialize, Serialize};

use super::{not_found, AppState, WebError};
use crate::round::now_ms;
use crate::store::{PlayerHit, PlayerRow, ServerFilter, ServerRow, Sort};

/// One colour run of a name, as the API and the pages show it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct NameRun {
    /// `#rrggbb`, or `null` for the default colour.
    pub color: Option<String>,
    /// The colour the pages show instead, lightened for contrast on their dark background
    /// (WCAG 4.5:1); left out when it is `color` itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_color: Option<String>,
    /// The same on the pages' light theme (darkened for contrast on its background); left
    /// out when it is `color` itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub light_color: Option<String>,
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
            color: r.color.map(super::colour::hex),
            page_color: r.color.and_then(|c| {
                let shown = super::colour::readable(c, super::colour::BACKGROUND);
                (shown != c).then(|| super::colour::hex(shown))
            }),
            light_color: r.color.and_then(|c| {
                let shown = super::colour::light_variant(c);
                (shown != c).then(|| super::colour::hex(shown))
            }),
            text: r.text,
            half_alpha: r.half_alpha,
            icon: r.icon,
        })
        .collect()
}

/// A server as the API writes it.
#[derive(Debug, Serialize)]
pub(super) struct ApiServer<'a> {
    addr: &'a str,
    game: &'a str,
    game_title: Option<String>,
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
    num_humans: Option<i64>,
    password: Option<bool>,
    country: Option<String>,
    join_url: Option<String>,
    rtt_ms: Option<f64>,
    first_seen: i64,
    last_seen: i64,
    last_online: Option<i64>,
    unlisted_since: Option<i64>,
}

/// Players less bots, where the bots are known (`None` for a server that did not answer).
pub(super) fn humans(s: &ServerRow) -> Option<i64> {
    if s.status != "online" {
        return None;
    }
    let n = s.num_players?;
    Some(n.saturating_sub(s.num_bots.unwrap_or(0)).max(0))
}

/// The registry's title of a game id.
pub(super) fn game_title(id: &str) -> Option<String> {
    fragstat::game(id).map(|g| g.title().to_string())
}

pub(super) fn api_server_of<'a>(s: &'a ServerRow, st: &AppState) -> ApiServer<'a> {
    let text = s.name_raw.as_ref().map(|_| s.name_text());
    ApiServer {
        addr: &s.addr,
        game: &s.game,
        game_title: game_title(&s.game),
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
        num_humans: humans(s),
        password: server_password(s),
        country: server_country(s, st),
        join_url: super::join::join_url(&s.game, &s.addr),
        rtt_ms: s.rtt_ms,
        first_seen: s.first_seen,
        last_seen: s.last_seen,
        last_online: s.last_online,
        unlisted_since: s.unlisted_since,
    }
}

/// Whether a server asks for a password, where its game says (stored with the server).
pub(super) fn server_password(s: &ServerRow) -> Option<bool> {
    s.password
}

/// A server's country: as stored with it (declared or GeoIP when the round wrote it), else
/// GeoIP of its address now.
pub(super) fn server_country(s: &ServerRow, st: &AppState) -> Option<String> {
    s.country
        .clone()
        .or_else(|| st.countries.country_of_addr(&s.addr))
}

/// A player as the API writes it.
#[derive(Debug, Serialize)]
struct ApiPlayer<'a> {
    player_id: i64,
    addr: &'a str,
    seen: i64,
    joined: i64,
    name: String,
    name_raw: String,
    name_runs: Vec<NameRun>,
    clan: Option<String>,
    score: Option<i64>,
    ping: Option<i64>,
    team: Option<i64>,
    is_bot: Option<bool>,
}

/// A player's clan tag for display, where the game sends one (empty tags are none).
pub(super) fn clan_text(p: &PlayerRow) -> Option<String> {
    let raw = p.clan_raw.as_ref().filter(|c| !c.is_empty())?;
    Some(crate::store::text_of(raw.clone(), Some(&p.dialect)).display())
}

fn api_player_of(p: &PlayerRow) -> ApiPlayer<'_> {
    let t = p.name_text();
    ApiPlayer {
        player_id: p.player_id,
        addr: &p.addr,
        seen: p.at,
        joined: p.joined,
        name: t.display(),
        name_raw: t.raw(),
        name_runs: name_runs(&t),
        clan: clan_text(p),
        score: p.score,
        ping: p.ping,
        team: p.team,
        // As the round decided (crate::bots), the same as the pages and the events say.
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
    is_bot: bool,
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
        is_bot: h.is_bot,
    }
}

/// A 400 with a message saying which parameter and what it takes.
pub(super) fn bad_request(msg: String) -> WebError {
    WebError(StatusCode::BAD_REQUEST, msg)
}

/// An integer parameter within `min..=max`; `None` when absent or empty.
pub(super) fn int_param(
    name: &str,
    v: Option<&str>,
    min: i64,
    max: i64,
) -> Result<Option<i64>, WebError> {
    let Some(v) = v.filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    match v.parse::<i64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(Some(n)),
        _ => Err(bad_request(format!(
            "{name}={v:?}: an integer from {min} to {max}"
        ))),
    }
}

/// A number of hours, more than 0 and at most `max`; `None` when absent or empty.
pub(super) fn hours_param(v: Option<&str>, max: f64) -> Result<Option<f64>, WebError> {
    let Some(v) = v.filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    match v.parse::<f64>() {
        Ok(h) if h.is_finite() && h > 0.0 && h <= max => Ok(Some(h)),
        _ => Err(bad_request(format!(
            "hours={v:?}: a number of hours above 0 and at most {max} (the history kept and the search cap)"
        ))),
    }
}

/// `1`/`true` or `0`/`false`; `None` when absent or empty.
pub(super) fn bool_param(name: &str, v: Option<&str>) -> Result<Option<bool>, WebError> {
    match v.filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some("1" | "true") => Ok(Some(true)),
        Some("0" | "false") => Ok(Some(false)),
        Some(v) => Err(bad_request(format!("{name}={v:?}: 1, 0, true or false"))),
    }
}

/// Rows a page shows unless `per_page` says otherwise.
pub const PER_PAGE: i64 = 100;
/// Most rows a page shows.
pub const MAX_PER_PAGE: i64 = 500;
/// Longest player search window, in hours, where players are kept for ever (otherwise the
/// players' retention, `[history] players_hours`).
pub const MAX_SEARCH_HOURS: f64 = 100.0 * 366.0 * 24.0;
/// Most player search results a page.
pub const MAX_SEARCH_RESULTS: i64 = 500;

/// The browser's query string. Every value is checked: one out of range or unknown is a 400
/// saying what the parameter takes, never clamped or ignored.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrowseQuery {
    /// Game id (or an alias of one).
    pub game: Option<String>,
    /// Map contains.
    pub map: Option<String>,
    /// Name contains.
    pub name: Option<String>,
    /// One of [`Sort::KEYS`].
    pub sort: Option<String>,
    /// `asc` or `desc` (default: the sort's own, most first for counts).
    pub order: Option<String>,
    /// `1`/`true`: only servers that answered; `0`/`false`: all.
    pub online: Option<String>,
    /// `1`/`true`: also the servers no master lists that do not answer either (the live
    /// list leaves them out); `0`/`false` (the default): the live list.
    pub unlisted: Option<String>,
    /// Page, from 1.
    pub page: Option<String>,
    /// Rows a page, 1 to 500 (default 100).
    pub per_page: Option<String>,
    /// The same as `per_page` (the API's older name).
    pub limit: Option<String>,
}

/// A browser query, checked.
#[derive(Debug, Clone)]
pub(super) struct Browse {
    /// The store's filter (this page's rows).
    pub filter: ServerFilter,
    /// Page, from 1.
    pub page: i64,
    /// Rows a page.
    pub per_page: i64,
    /// Descending.
    pub desc: bool,
}

impl BrowseQuery {
    /// Checks every parameter.
    pub(super) fn check(&self) -> Result<Browse, WebError> {
        let sort = match self.sort.as_deref().filter(|s| !s.is_empty()) {
            Some(s) => s.parse::<Sort>().map_err(bad_request)?,
            None => Sort::Players,
        };
        let desc = match self.order.as_deref().filter(|s| !s.is_empty()) {
            None => sort.default_desc(),
            Some("asc") => false,
            Some("desc") => true,
            Some(o) => return Err(bad_request(format!("order={o:?}: asc or desc"))),
        };
        let game = match self.game.as_deref().filter(|g| !g.is_empty()) {
            None => None,
            Some(g) => Some(
                fragstat::game(g)
                    .ok_or_else(|| {
                        bad_request(format!("game={g:?}: not a game id (see `fragstat games`)"))
                    })?
                    .id()
                    .to_string(),
            ),
        };
        let online = bool_param("online", self.online.as_deref())?.unwrap_or(false);
        let unlisted = bool_param("unlisted", self.unlisted.as_deref())?.unwrap_or(false);
        let page = int_param("page", self.page.as_deref(), 1, 1_000_000)?.unwrap_or(1);
        let per_page = match int_param("per_page", self.per_page.as_deref(), 1, MAX_PER_PAGE)? {
            Some(n) => n,
            None => int_param("limit", self.limit.as_deref(), 1, MAX_PER_PAGE)?.unwrap_or(PER_PAGE),
        };
        for (k, v) in [("map", &self.map), ("name", &self.name)] {
            if v.as_ref().is_some_and(|v| v.len() > 200) {
                return Err(bad_request(format!("{k}: at most 200 bytes")));
            }
        }
        Ok(Browse {
            filter: ServerFilter {
                game,
                map: self.map.clone(),
                name: self.name.clone(),
                online_only: online,
                include_unlisted: unlisted,
                sort,
                desc: Some(desc),
                limit: Some(per_page),
                offset: (page - 1).saturating_mul(per_page),
            },
            page,
            per_page,
            desc,
        })
    }

    /// These parameters with some replaced (`None` removes one), as a query string
    /// (`?a=b&…`, or empty): the links of the sortable headers and the page links keep the
    /// rest.
    pub fn with(&self, changes: &[(&str, Option<String>)]) -> String {
        let mut pairs: Vec<(&str, String)> = [
            ("game", &self.game),
            ("map", &self.map),
            ("name", &self.name),
            ("online", &self.online),
            ("unlisted", &self.unlisted),
            ("sort", &self.sort),
            ("order", &self.order),
            ("per_page", &self.per_page),
            ("limit", &self.limit),
            ("page", &self.page),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k, v.clone().filter(|v| !v.is_empty())?)))
        .collect();
        for (k, v) in changes {
            pairs.retain(|(pk, _)| pk != k);
            if let Some(v) = v {
                pairs.push((k, v.clone()));
            }
        }
        if pairs.is_empty() {
            return String::new();
        }
        let mut out = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in &pairs {
            out.append_pair(k, v);
        }
        format!("?{}", out.finish())
    }
}

/// The server page's query string.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HistoryQuery {
    /// From this Unix-ms time.
    pub since: Option<String>,
    /// The last this many hours (default 24), when `since` is not given.
    pub hours: Option<String>,
}

/// The longest window a query may ask for: the history kept (`retention_hours`, 0 for
/// everything), at most `cap`.
pub(super) fn window_cap(retention_hours: f64, cap: f64) -> f64 {
    if retention_hours > 0.0 {
        retention_hours.min(cap)
    } else {
        cap
    }
}

impl HistoryQuery {
    pub(super) fn since(&self, st: &AppState) -> Result<i64, WebError> {
        if let Some(s) = int_param("since", self.since.as_deref(), 0, i64::MAX)? {
            return Ok(s);
        }
        let h = hours_param(
            self.hours.as_deref(),
            window_cap(st.site.retention_hours, 100.0 * 366.0 * 24.0),
        )?
        .unwrap_or(24.0);
        Ok(now_ms().saturating_sub((h * 3_600_000.0) as i64))
    }
}

/// The player search's query string.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlayerQuery {
    /// Name contains (colours stripped, case-insensitive).
    pub q: Option<String>,
    /// Most rows a page (default 100, at most 500).
    pub limit: Option<String>,
    /// Page, from 1 (the first 5,000 hits are paged).
    pub page: Option<String>,
    /// Players seen in the last this many hours (default: all the players kept, `[history]
    /// players_hours`).
    pub hours: Option<String>,
    /// `1`/`true`: bots too (players whose every session kept was a bot's); default: none.
    pub bots: Option<String>,
}

pub(super) async fn api_servers(
    State(st): State<AppState>,
    Query(q): Query<BrowseQuery>,
) -> Result<Response, WebError> {
    let b = q.check()?;
    let servers = st.store.servers(&b.filter).await?;
    let total = st.store.count_servers(&b.filter).await?;
    let last = st.store.rounds(1).await?;
    let list: Vec<ApiServer<'_>> = servers.iter().map(|s| api_server_of(s, &st)).collect();
    Ok(Json(serde_json::json!({
        "last_round": last.first(),
        "page": b.page,
        "per_page": b.per_page,
        "total": total,
        "pages": pages(total, b.per_page),
        "sort": b.filter.sort.key(),
        "order": if b.desc { "desc" } else { "asc" },
        "servers": list,
    }))
    .into_response())
}

/// Pages for `total` rows (at least 1).
pub(super) fn pages(total: i64, per_page: i64) -> i64 {
    ((total + per_page - 1) / per_page.max(1)).max(1)
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
    let since = window_since(st.site.retention_hours, 24.0 * 7.0);
    let maps = st.store.map_history(&addr, since, MAP_HISTORY).await?;
    let uptime = st.store.uptime(&addr, since).await?;
    Ok(Json(serde_json::json!({
        "server": api_server_of(&s, &st),
        "down_since": s.down_since,
        "up_since": s.up_since,
        "uptime": uptime,
        "map_history": maps,
        "players": players,
        "record": record,
    }))
    .into_response())
}

/// Map changes a server page and `/api/servers/{addr}` list.
pub const MAP_HISTORY: i64 = 50;

/// The start of the last `hours` (at most the history kept), Unix ms.
pub(super) fn window_since(retention_hours: f64, hours: f64) -> i64 {
    let h = window_cap(retention_hours, hours);
    now_ms().saturating_sub((h * 3_600_000.0) as i64)
}

/// A player as `/api/players/{id}` writes it.
#[derive(Debug, Serialize)]
struct ApiProfile {
    player_id: i64,
    name: String,
    name_raw: String,
    name_runs: Vec<NameRun>,
    first_seen: i64,
    last_seen: i64,
    seconds_played: i64,
    is_bot: bool,
    sessions: Vec<ApiSession>,
}

/// A session as `/api/players/{id}` writes it.
#[derive(Debug, Serialize)]
struct ApiSession {
    addr: String,
    server_name: Option<String>,
    server_name_runs: Vec<NameRun>,
    joined: i64,
    left: Option<i64>,
    seconds: i64,
    last_score: Option<i64>,
    is_bot: Option<bool>,
}

/// A player page's query string (`/player/{id}`, `/api/players/{id}`).
#[derive(Debug, Default, Deserialize)]
pub struct PlayerPageQuery {
    /// `1`/`true`: a bot's page too (bots have none by default: a 404).
    pub bots: Option<String>,
}

pub(super) async fn api_player(
    State(st): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<PlayerPageQuery>,
) -> Result<Response, WebError> {
    let id: i64 = id
        .parse()
        .map_err(|_| bad_request(format!("player id {id:?}: an integer")))?;
    let p = super::people::profile(&st, id, &q).await?;
    let t = p.name_text();
    let sessions = p
        .sessions
        .iter()
        .map(|s| {
            let name = s.server_name_text();
            ApiSession {
                addr: s.addr.clone(),
                server_name: name.as_ref().map(Text::display),
                server_name_runs: name.as_ref().map(name_runs).unwrap_or_default(),
                joined: s.joined,
                left: s.left,
                seconds: s.seconds,
                last_score: s.last_score,
                is_bot: s.is_bot,
            }
        })
        .collect();
    Ok(Json(ApiProfile {
        player_id: p.player_id,
        name: t.display(),
        name_raw: t.raw(),
        name_runs: name_runs(&t),
        first_seen: p.first_seen,
        last_seen: p.last_seen,
        seconds_played: p.seconds_played,
        is_bot: p.is_bot,
        sessions,
    })
    .into_response())
}

pub(super) async fn api_history(
    State(st): State<AppState>,
    Path(addr): Path<String>,
    Query(q): Query<HistoryQuery>,
) -> Result<Response, WebError> {
    let since = q.since(&st)?;
    if st.store.server(&addr).await?.is_none() {
        return Err(not_found("server"));
    }
    let history = st.store.history(&addr, since).await?;
    Ok(Json(serde_json::json!({ "addr": addr, "history": history })).into_response())
}

pub(super) async fn api_players(
    State(st): State<AppState>,
    Query(q): Query<PlayerQuery>,
) -> Result<Response, WebError> {
    let (s, found) = q.hits(&st).await?;
    let list: Vec<ApiHit<'_>> = found.hits.iter().map(api_hit_of).collect();
    Ok(Json(serde_json::json!({
        "players": list,
        "page": s.page,
        "limit": s.limit,
        "more": found.more,
        "hours": s.hours,
        "since": s.since,
        "bots": s.bots,
    }))
    .into_response())
}

/// `/api/rounds`' query string.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoundsQuery {
    /// Most rounds (default 60, at most 10,000).
    pub limit: Option<String>,
}

pub(super) async fn api_rounds(
    State(st): State<AppState>,
    Query(q): Query<RoundsQuery>,
) -> Result<Response, WebError> {
    let limit = int_param("limit", q.limit.as_deref(), 1, 10_000)?.unwrap_or(60);
    let rounds = st.store.rounds(limit).await?;
    Ok(Json(serde_json::json!({ "rounds": rounds })).into_response())
}

/// `/api/masters`: every configured master's answer in the latest round (a master down is
/// `"up": false` with `down_since`; its servers seen lately are still probed).
pub(super) async fn api_masters(State(st): State<AppState>) -> Result<Response, WebError> {
    let masters = st.store.masters().await?;
    Ok(Json(serde_json::json!({ "masters": masters })).into_response())
}
