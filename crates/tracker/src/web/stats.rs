//! The stats pages and their API: players over time for the site or a game with the 24-hour
//! peak and the record (`/stats`, `/api/stats`), top players by time played per game or per
//! server in this week or month (`/top`, `/api/top`), and the maps with their servers,
//! players and time played (`/maps`, `/api/maps`). Every read is cached per round
//! ([`Store::cached`](crate::store::Store::cached)) and every list is paged.

use std::sync::Arc;

use axum::extract::{Query, State};
use axum::response::{Html, IntoResponse, Response};
use axum::Json;
use maud::{html, Markup};
use serde::{Deserialize, Serialize};

use super::api::{
    bad_request, game_title, hours_param, int_param, name_runs, pages, window_cap, NameRun,
};
use super::chart::{caption, chart, stats_points, time_label, window_links, Chart};
use super::format::duration_text;
use super::pages::{addr_segment, name_html, page, time_html};
use super::{AppState, WebError};
use crate::round::now_ms;
use crate::store::{GameStats, MapStats, Period, StatsPoint, TopPage, MAX_RANKED};

/// Points a stats chart has at most (the window divided into as many steps).
const CHART_STEPS: i64 = 240;
/// Longest stats window, in hours (also bounded by the history kept).
pub const MAX_STATS_HOURS: f64 = 30.0 * 24.0;
/// Rows a top or maps page shows unless `per_page` says otherwise.
const PER_PAGE: i64 = 50;
/// Most rows such a page shows.
const MAX_PER_PAGE: i64 = 200;
/// Players each game's list on `/top` shows.
const TOP_EACH: i64 = 10;

/// A `game` parameter: a registry id or alias, as the id; `None` when absent or empty.
fn game_param(v: Option<&str>) -> Result<Option<String>, WebError> {
    match v.filter(|g| !g.is_empty()) {
        None => Ok(None),
        Some(g) => Ok(Some(
            fragstat::game(g)
                .ok_or_else(|| {
                    bad_request(format!("game={g:?}: not a game id (see `fragstat games`)"))
                })?
                .id()
                .to_string(),
        )),
    }
}

/// A `period` parameter (default: week).
fn period_param(v: Option<&str>) -> Result<Period, WebError> {
    match v.filter(|p| !p.is_empty()) {
        None => Ok(Period::Week),
        Some(p) => {
            Period::parse(p).ok_or_else(|| bad_request(format!("period={p:?}: week or month")))
        }
    }
}

/// `page` and `per_page`: (page from 1, rows a page), the ranks within [`MAX_RANKED`].
fn paging(page: Option<&str>, per_page: Option<&str>) -> Result<(i64, i64), WebError> {
    let per = int_param("per_page", per_page, 1, MAX_PER_PAGE)?.unwrap_or(PER_PAGE);
    let page = int_param("page", page, 1, MAX_RANKED / per)?.unwrap_or(1);
    Ok((page, per))
}

fn game_name(g: &str) -> String {
    if g == "*" {
        "All games".into()
    } else {
        game_title(g).unwrap_or_else(|| g.to_string())
    }
}

/// `/stats` and `/api/stats`' query string.
#[derive(Debug, Default, Deserialize)]
pub struct StatsQuery {
    /// A game id (default: every game).
    pub game: Option<String>,
    /// The chart's window in hours (default 24; at most 30 days and the history kept).
    pub hours: Option<String>,
}

/// What `/api/stats` answers and `/stats` shows.
#[derive(Debug, Serialize)]
pub struct StatsAnswer {
    game: Option<String>,
    hours: f64,
    since: i64,
    until: i64,
    step_ms: i64,
    games: Vec<GameStats>,
    points: Vec<StatsPoint>,
}

async fn stats_of(st: &AppState, q: &StatsQuery) -> Result<Arc<StatsAnswer>, WebError> {
    let game = game_param(q.game.as_deref())?;
    let hours = hours_param(
        q.hours.as_deref(),
        window_cap(st.site.retention_hours, MAX_STATS_HOURS),
    )?
    .unwrap_or(24.0f64.min(window_cap(st.site.retention_hours, MAX_STATS_HOURS)));
    let key = format!("stats {game:?} {hours}");
    let store = st.store.clone();
    Ok(st
        .store
        .cached(&key, async move {
            let until = now_ms();
            let span = (hours * 3_600_000.0) as i64;
            let since = until.saturating_sub(span);
            let step = (span / CHART_STEPS).max(60_000);
            let points = store
                .players_over_time(game.as_deref(), since, step)
                .await?;
            let games = store.game_stats(until).await?;
            Ok(StatsAnswer {
                game,
                hours,
                since,
                until,
                step_ms: step,
                games,
                points,
            })
        })
        .await?)
}

pub(super) async fn api_stats(
    State(st): State<AppState>,
    Query(q): Query<StatsQuery>,
) -> Result<Response, WebError> {
    let a = stats_of(&st, &q).await?;
    Ok(Json(&*a).into_response())
}

/// "12 (2 h ago)" for a peak; in a table cell the time only on wide screens.
fn peak_html(p: Option<&crate::store::Peak>, now: i64) -> Markup {
    html! {
        @if let Some(p) = p { (p.humans) span.when.opt { " (" (time_html(p.at, now)) ")" } } @else { "-" }
    }
}

/// A period's start in words (UTC; the pages' script writes it in local time).
fn since_html(t: i64) -> Markup {
    html! { span data-t=(t) data-f="full" title=(super::time_text(t)) { (time_label(t)) " UTC" } }
}

pub(super) async fn stats_page(
    State(st): State<AppState>,
    Query(q): Query<StatsQuery>,
) -> Result<Html<String>, WebError> {
    let a = stats_of(&st, &q).await?;
    let now = now_ms();
    let scope = a.game.clone().unwrap_or_else(|| "*".into());
    let this = a.games.iter().find(|g| g.game == scope);
    let path = match &a.game {
        Some(g) => st.site.url(&format!("/stats?game={g}")),
        None => st.site.url("/stats"),
    };
    let title = format!("Players online: {}", game_name(&scope));
    let body = html! {
        h1 { (title) }
        p.games {
            @if a.game.is_some() { a href=(st.site.url("/stats")) { "All games" } } @else { strong { "All games" } }
            @for g in a.games.iter().filter(|g| g.game != "*") {
                " · "
                @if a.game.as_deref() == Some(g.game.as_str()) { strong { (game_name(&g.game)) } }
                @else { a href=(st.site.url(&format!("/stats?game={}", g.game))) { (game_name(&g.game)) } }
            }
        }
        @if let Some(g) = this {
            p #headline {
                strong #humans-now { (g.humans) } " humans online now (+" (g.bots) " bots) on " (g.servers_online) " servers · "
                "24 h peak " strong #peak { (peak_html(g.peak_24h.as_ref(), now)) } " · "
                "record " strong #record { (peak_html(g.record.as_ref(), now)) }
            }
        } @else {
            p #headline { "No server of this game answers now." }
        }
        h2 { "Players over time" }
        (window_links(&path, a.hours, window_cap(st.site.retention_hours, MAX_STATS_HOURS)))
        (chart(&Chart {
            from: a.since,
            to: a.until,
            points: stats_points(&a.points),
            marks: Vec::new(),
            title: format!("{title}, the last {} h", a.hours),
        }))
        (caption(a.since, a.until))
        p { a href=(st.site.url(&format!("/api/stats{}", path.split_once('?').map_or(String::new(), |(_, q)| format!("?{q}"))))) { "as JSON" } }
        h2 { "Games" }
        table #games {
            thead { tr { th { "Game" } th.num.opt { "Servers" } th.num { "Humans" } th.num.opt { "Bots" } th.num { "24 h peak" } th.num { "Record" } } }
            tbody {
                @for g in &a.games {
                    tr.game {
                        td { @if g.game == "*" { (game_name(&g.game)) } @else { a href=(st.site.url(&format!("/stats?game={}", g.game))) { (game_name(&g.game)) } } }
                        td.num.opt { (g.servers_online) }
                        td.num { (g.humans) }
                        td.num.opt { (g.bots) }
                        td.num { (peak_html(g.peak_24h.as_ref(), now)) }
                        td.num { (peak_html(g.record.as_ref(), now)) }
                    }
                }
            }
        }
        p {
            a href=(st.site.url(&format!("/top{}", a.game.as_ref().map_or(String::new(), |g| format!("?game={g}"))))) { "Top players" }
            " · "
            a href=(st.site.url(&format!("/maps{}", a.game.as_ref().map_or(String::new(), |g| format!("?game={g}"))))) { "Maps" }
        }
    };
    Ok(Html(page(&st.site, &title, None, body).into_string()))
}

/// `/top` and `/api/top`'s query string.
#[derive(Debug, Default, Deserialize)]
pub struct TopQuery {
    /// A game id.
    pub game: Option<String>,
    /// A server's address (instead of a game).
    pub server: Option<String>,
    /// `week` (default) or `month`.
    pub period: Option<String>,
    /// Page, from 1.
    pub page: Option<String>,
    /// Rows a page, 1 to 200 (default 50).
    pub per_page: Option<String>,
}

/// A ranked player as the API writes it.
#[derive(Debug, Serialize)]
struct ApiTopPlayer {
    rank: i64,
    player_id: i64,
    name: String,
    name_raw: String,
    name_runs: Vec<NameRun>,
    seconds: i64,
}

/// A checked top query: whose list, which period, which page.
struct Top {
    game: Option<String>,
    server: Option<String>,
    period: Period,
    page: i64,
    per_page: i64,
}

impl TopQuery {
    fn check(&self) -> Result<Top, WebError> {
        let game = game_param(self.game.as_deref())?;
        let server = self.server.clone().filter(|s| !s.is_empty());
        if server.as_ref().is_some_and(|s| s.len() > 300) {
            return Err(bad_request("server: at most 300 bytes".into()));
        }
        if game.is_some() && server.is_some() {
            return Err(bad_request("game and server: give one of them".into()));
        }
        let (page, per_page) = paging(self.page.as_deref(), self.per_page.as_deref())?;
        Ok(Top {
            game,
            server,
            period: period_param(self.period.as_deref())?,
            page,
            per_page,
        })
    }
}

/// The page of the list `t` asks for (`None`: no such server).
async fn top_of(st: &AppState, t: &Top) -> Result<Option<Arc<TopPage>>, WebError> {
    let offset = (t.page - 1) * t.per_page;
    let key = format!(
        "top {:?} {:?} {} {} {}",
        t.game,
        t.server,
        t.period.key(),
        offset,
        t.per_page
    );
    let store = st.store.clone();
    let (game, server, period, per) = (t.game.clone(), t.server.clone(), t.period, t.per_page);
    let page = st
        .store
        .cached(&key, async move {
            let now = now_ms();
            match (game, server) {
                (_, Some(addr)) => {
                    store
                        .server_top_players(&addr, period, now, offset, per)
                        .await
                }
                (Some(g), None) => store
                    .top_players(&g, period, now, offset, per)
                    .await
                    .map(Some),
                (None, None) => Ok(None),
            }
        })
        .await?;
    Ok(page.as_ref().clone().map(Arc::new))
}

/// The rankings `t` asks for: its game's or server's, or each game's (`None`: no such
/// server).
async fn rankings(
    st: &AppState,
    t: &Top,
) -> Result<Option<Vec<(Option<String>, Arc<TopPage>)>>, WebError> {
    if t.game.is_some() || t.server.is_some() {
        return Ok(top_of(st, t).await?.map(|p| vec![(t.game.clone(), p)]));
    }
    let mut lists = Vec::new();
    for g in st.store.games().await? {
        let each = Top {
            game: Some(g.clone()),
            server: None,
            period: t.period,
            page: t.page,
            per_page: t.per_page,
        };
        if let Some(p) = top_of(st, &each).await? {
            lists.push((Some(g), p));
        }
    }
    Ok(Some(lists))
}

pub(super) async fn api_top(
    State(st): State<AppState>,
    Query(q): Query<TopQuery>,
) -> Result<Response, WebError> {
    let t = q.check()?;
    let Some(lists) = rankings(&st, &t).await? else {
        return Err(super::not_found("server"));
    };
    let rankings: Vec<serde_json::Value> = lists
        .iter()
        .map(|(game, p)| {
            let players: Vec<ApiTopPlayer> = p
                .players
                .iter()
                .map(|r| {
                    let n = r.name_text();
                    ApiTopPlayer {
                        rank: r.rank,
                        player_id: r.player_id,
                        name: n.display(),
                        name_raw: n.raw(),
                        name_runs: name_runs(&n),
                        seconds: r.seconds,
                    }
                })
                .collect();
            serde_json::json!({
                "game": game,
                "server": t.server,
                "since": p.since,
                "total": p.total,
                "pages": pages(p.total, t.per_page),
                "players": players,
            })
        })
        .collect();
    Ok(Json(serde_json::json!({
        "period": t.period,
        "page": t.page,
        "per_page": t.per_page,
        "rankings": rankings,
    }))
    .into_response())
}

/// Links to the other period of a list at `path` (with its own query string, without
/// `period`).
fn period_links(path: &str, current: Period) -> Markup {
    let sep = if path.contains('?') { '&' } else { '?' };
    html! {
        nav.periods aria-label="period" {
            @for p in Period::ALL {
                @let label = if p == Period::Week { "this week" } else { "this month" };
                @if p == current { strong aria-current="page" { (label) } }
                @else { a href={ (path) (sep) "period=" (p.key()) } { (label) } }
                " "
            }
        }
    }
}

fn top_table(st: &AppState, p: &TopPage) -> Markup {
    html! {
        @if p.players.is_empty() {
            p.empty { "No ended sessions in this period yet." }
        } @else {
            table.top {
                thead { tr { th.num { "#" } th { "Player" } th.num { "Time played" } } }
                tbody {
                    @for r in &p.players {
                        tr.ranked {
                            td.num { (r.rank) }
                            td { a href=(st.site.url(&format!("/player/{}", r.player_id))) { (name_html(&r.name_text())) } }
                            td.num { (duration_text(r.seconds)) }
                        }
                    }
                }
            }
        }
    }
}

/// Previous/next links of a paged list at `path` (its query string kept).
fn page_links(path: &str, page: i64, last: i64) -> Markup {
    let sep = if path.contains('?') { '&' } else { '?' };
    html! {
        nav #pages aria-label="pages" {
            @if page > 1 { a rel="prev" href={ (path) (sep) "page=" (page - 1) } { "← previous" } " " }
            span { "page " (page) " of " (last) }
            @if page < last { " " a rel="next" href={ (path) (sep) "page=" (page + 1) } { "next →" } }
        }
    }
}

pub(super) async fn top_page(
    State(st): State<AppState>,
    Query(q): Query<TopQuery>,
) -> Result<Html<String>, WebError> {
    let mut t = q.check()?;
    if t.game.is_none() && t.server.is_none() {
        // Each game's first ten.
        (t.page, t.per_page) = (1, TOP_EACH);
    }
    let now = now_ms();
    let Some(lists) = rankings(&st, &t).await? else {
        return Err(super::not_found("server"));
    };
    let (title, base) = match (&t.game, &t.server) {
        (Some(g), _) => (
            format!("Top players: {}", game_name(g)),
            st.site.url(&format!("/top?game={g}")),
        ),
        (None, Some(s)) => (
            format!("Top players on {s}"),
            st.site.url(&format!("/top?server={}", addr_segment(s))),
        ),
        (None, None) => ("Top players".to_string(), st.site.url("/top")),
    };
    let with_period = {
        let sep = if base.contains('?') { '&' } else { '?' };
        format!("{base}{sep}period={}", t.period.key())
    };
    let body = html! {
        h1 { (title) }
        (period_links(&base, t.period))
        p.note {
            "Time played in sessions that ended since "
            (since_html(lists.first().map_or(t.period.start(now), |(_, p)| p.since)))
            " (" (if t.period == Period::Week { "weeks start on Monday" } else { "months start on the 1st" }) ", 00:00 UTC); bots are not ranked."
        }
        @if lists.is_empty() { p.empty { "No games yet." } }
        @for (g, p) in &lists {
            @if t.game.is_none() && t.server.is_none() {
                h2 { a href=(st.site.url(&format!("/top?game={}&period={}", g.as_deref().unwrap_or(""), t.period.key()))) { (game_name(g.as_deref().unwrap_or(""))) } }
            }
            (top_table(&st, p))
            @if t.game.is_some() || t.server.is_some() {
                (page_links(&with_period, t.page, pages(p.total, t.per_page)))
            }
        }
        @if let Some(s) = &t.server {
            p { a href=(st.site.url(&format!("/server/{}", addr_segment(s)))) { "the server's page" } }
        }
    };
    Ok(Html(page(&st.site, &title, None, body).into_string()))
}

/// `/maps` and `/api/maps`' query string.
#[derive(Debug, Default, Deserialize)]
pub struct MapsQuery {
    /// A game id (default: every game).
    pub game: Option<String>,
    /// `week` (default) or `month`.
    pub period: Option<String>,
    /// Page, from 1.
    pub page: Option<String>,
    /// Rows a page, 1 to 200 (default 50).
    pub per_page: Option<String>,
}

/// A page of maps.
struct Maps {
    game: Option<String>,
    period: Period,
    page: i64,
    per_page: i64,
    since: i64,
    total: i64,
    maps: Vec<MapStats>,
}

async fn maps_of(st: &AppState, q: &MapsQuery) -> Result<Maps, WebError> {
    let game = game_param(q.game.as_deref())?;
    let period = period_param(q.period.as_deref())?;
    let (page, per_page) = paging(q.page.as_deref(), q.per_page.as_deref())?;
    let store = st.store.clone();
    let g = game.clone();
    let all = st
        .store
        .cached(&format!("maps {game:?} {}", period.key()), async move {
            store.maps(g.as_deref(), period, now_ms()).await
        })
        .await?;
    let from = usize::try_from((page - 1) * per_page).unwrap_or(usize::MAX);
    let per = usize::try_from(per_page).unwrap_or(0);
    Ok(Maps {
        game,
        period,
        page,
        per_page,
        since: period.start(now_ms()),
        total: i64::try_from(all.len()).unwrap_or(i64::MAX),
        maps: all.iter().skip(from).take(per).cloned().collect(),
    })
}

pub(super) async fn api_maps(
    State(st): State<AppState>,
    Query(q): Query<MapsQuery>,
) -> Result<Response, WebError> {
    let m = maps_of(&st, &q).await?;
    Ok(Json(serde_json::json!({
        "game": m.game,
        "period": m.period,
        "since": m.since,
        "total": m.total,
        "page": m.page,
        "per_page": m.per_page,
        "pages": pages(m.total, m.per_page),
        "maps": m.maps,
    }))
    .into_response())
}

/// "3 h 20 min" of player time, "-" for none.
fn hours_text(secs: i64) -> String {
    if secs <= 0 {
        "-".into()
    } else {
        duration_text(secs)
    }
}

pub(super) async fn maps_page(
    State(st): State<AppState>,
    Query(q): Query<MapsQuery>,
) -> Result<Html<String>, WebError> {
    let m = maps_of(&st, &q).await?;
    let base = match &m.game {
        Some(g) => st.site.url(&format!("/maps?game={g}")),
        None => st.site.url("/maps"),
    };
    let with_period = {
        let sep = if base.contains('?') { '&' } else { '?' };
        format!("{base}{sep}period={}", m.period.key())
    };
    let games = st.store.games().await?;
    let body = html! {
        h1 { "Maps" @if let Some(g) = &m.game { ": " (game_name(g)) } }
        p.games {
            @if m.game.is_some() { a href=(st.site.url(&format!("/maps?period={}", m.period.key()))) { "All games" } } @else { strong { "All games" } }
            @for g in &games {
                " · "
                @if m.game.as_deref() == Some(g.as_str()) { strong { (game_name(g)) } }
                @else { a href=(st.site.url(&format!("/maps?game={g}&period={}", m.period.key()))) { (game_name(g)) } }
            }
        }
        (period_links(&base, m.period))
        p.note { "Servers and humans on each map now; time played (humans × time) and the servers' time on it since " (since_html(m.since)) "." }
        @if m.maps.is_empty() {
            p.empty { "No maps yet." }
        } @else {
            table #maplist {
                thead { tr { th { "Map" } th.opt { "Game" } th.num { "Servers" } th.num { "Humans" } th.num { "Time played" } th.num.opt { "Server time" } } }
                tbody {
                    @for r in &m.maps {
                        tr.map {
                            td { a href=(st.site.url(&format!("/?game={}&map={}", r.game, url_part(&r.map)))) { (r.map) } }
                            td.opt { (game_name(&r.game)) }
                            td.num { (r.servers) }
                            td.num { (r.humans) }
                            td.num { (hours_text(r.player_seconds)) }
                            td.num.opt { (hours_text(r.server_seconds)) }
                        }
                    }
                }
            }
        }
        (page_links(&with_period, m.page, pages(m.total, m.per_page)))
    };
    Ok(Html(page(&st.site, "Maps", None, body).into_string()))
}

/// `s` as a query-string value.
fn url_part(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}
