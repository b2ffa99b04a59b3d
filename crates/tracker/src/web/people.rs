//! The players' pages: the search (`/players`: every player kept by default, newest first,
//! its window shown and settable, bots only when asked) and a player's page (`/player/{id}`;
//! none for a bot unless asked).

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::Html;
use maud::{html, Markup};

use super::api::{
    bad_request, bool_param, hours_param, int_param, window_cap, PlayerPageQuery, PlayerQuery,
    MAX_SEARCH_HOURS, MAX_SEARCH_RESULTS,
};
use super::format::duration_text;
use super::pages::{
    addr_segment, name_html, page, page_with, player_href, race_servers, race_time, time_html,
};
use super::{not_found, AppState, Site, WebError};
use crate::round::now_ms;
use crate::store::PlayerHit;

/// Sessions a player page lists.
pub const PLAYER_SESSIONS: i64 = 200;

/// A player search, checked: what the page and the API both show.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Search {
    /// The text (empty: no search).
    pub text: String,
    /// The window asked for, in hours (`None`: everything kept).
    pub hours: Option<f64>,
    /// The window's start (Unix ms; 0 for everything).
    pub since: i64,
    /// Hits a page.
    pub limit: i64,
    /// Page, from 1.
    pub page: i64,
    /// Bots too.
    pub bots: bool,
}

/// A page of a player search.
#[derive(Debug)]
pub(super) struct Found {
    /// The page's hits, newest first.
    pub hits: Vec<PlayerHit>,
    /// Whether another page follows.
    pub more: bool,
}

impl PlayerQuery {
    /// Checks every parameter.
    pub(super) fn check(&self, st: &AppState) -> Result<Search, WebError> {
        let cap = window_cap(st.site.players_hours, MAX_SEARCH_HOURS);
        let hours = hours_param(self.hours.as_deref(), cap)?;
        let limit =
            int_param("limit", self.limit.as_deref(), 1, MAX_SEARCH_RESULTS)?.unwrap_or(100);
        let pages = (crate::store::MAX_SEARCH_DEPTH / limit).max(1);
        let page = int_param("page", self.page.as_deref(), 1, pages)?.unwrap_or(1);
        let text = self.q.clone().unwrap_or_default();
        if text.len() > 64 {
            return Err(bad_request("q: at most 64 bytes".into()));
        }
        // No window asked: every player kept (the retention prunes the rest).
        let since = match hours {
            Some(h) => now_ms().saturating_sub((h * 3_600_000.0) as i64),
            None if st.site.players_hours > 0.0 => {
                now_ms().saturating_sub((st.site.players_hours * 3_600_000.0) as i64)
            }
            None => 0,
        };
        Ok(Search {
            text,
            hours,
            since,
            limit,
            page,
            bots: bool_param("bots", self.bots.as_deref())?.unwrap_or(false),
        })
    }

    /// The page of hits this query asks for (none for an empty name).
    pub(super) async fn hits(&self, st: &AppState) -> Result<(Search, Found), WebError> {
        let s = self.check(st)?;
        if s.text.is_empty() {
            let none = Found {
                hits: Vec::new(),
                more: false,
            };
            return Ok((s, none));
        }
        // One more than the page: whether another follows.
        let mut hits = st
            .store
            .search_players(&crate::store::PlayerSearch {
                text: &s.text,
                since: s.since,
                limit: s.limit + 1,
                offset: (s.page - 1) * s.limit,
                bots: s.bots,
            })
            .await?;
        let more = hits.len() as i64 > s.limit;
        hits.truncate(usize::try_from(s.limit).unwrap_or(0));
        Ok((s, Found { hits, more }))
    }
}

/// Player `id`'s profile, `None` for no such player, and a 404 for a bot unless
/// `q.bots` asks for bots.
pub(super) async fn profile(
    st: &AppState,
    id: i64,
    q: &PlayerPageQuery,
) -> Result<crate::store::PlayerProfile, WebError> {
    let bots = bool_param("bots", q.bots.as_deref())?.unwrap_or(false);
    let Some(p) = st.store.player(id, super::people::PLAYER_SESSIONS).await? else {
        return Err(not_found("player"));
    };
    if p.is_bot && !bots {
        return Err(WebError(
            StatusCode::NOT_FOUND,
            format!("player {id} is a bot: bots have no player page (bots=1 shows it)"),
        ));
    }
    Ok(p)
}

/// The windows the search's form offers, in hours, where the players are kept as long.
const WINDOWS: [(f64, &str); 4] = [
    (1.0, "the last hour"),
    (24.0, "the last 24 hours"),
    (168.0, "the last 7 days"),
    (720.0, "the last 30 days"),
];

/// "the last 36 hours", "the last 3 days".
pub fn window_text(hours: f64) -> String {
    if let Some((_, t)) = WINDOWS.iter().find(|(h, _)| (*h - hours).abs() < 1e-9) {
        return (*t).to_string();
    }
    if hours >= 48.0 && (hours / 24.0).fract() == 0.0 {
        format!("the last {} days", hours / 24.0)
    } else {
        format!("the last {} hours", fmt_number(hours))
    }
}

fn fmt_number(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

/// What the whole window is: "everything kept (7 days)", or "everything kept".
fn kept_text(site: &Site) -> String {
    if site.players_hours > 0.0 {
        format!(
            "all players kept ({})",
            window_text(site.players_hours).trim_start_matches("the ")
        )
    } else {
        "all players kept".to_string()
    }
}

/// The search's form: the text, the window (a select: the windows the players are kept for,
/// the one asked for, everything kept) and whether bots are shown.
fn search_form(site: &Site, s: &Search) -> Markup {
    let cap = site.players_hours;
    let mut windows: Vec<(f64, String)> = WINDOWS
        .iter()
        .filter(|(h, _)| cap <= 0.0 || *h < cap)
        .map(|(h, t)| (*h, (*t).to_string()))
        .collect();
    if let Some(h) = s.hours.filter(|h| !windows.iter().any(|(w, _)| w == h)) {
        windows.push((h, window_text(h)));
        windows.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    html! {
        form #search method="get" action=(site.url("/players")) {
            label { "Name " input type="search" name="q" value=(s.text) placeholder="player name"; }
            label { "Seen in "
                select name="hours" {
                    option value="" selected[s.hours.is_none()] { (kept_text(site)) }
                    @for (h, t) in &windows {
                        option value=(fmt_number(*h)) selected[s.hours == Some(*h)] { (t) }
                    }
                }
            }
            label { input type="checkbox" name="bots" value="1" checked[s.bots]; " bots too" }
            " "
            button type="submit" { "Find" }
        }
    }
}

/// The search's query string for page `page` (the same text, window and bots).
fn page_link(site: &Site, s: &Search, page: i64) -> String {
    let mut out = url::form_urlencoded::Serializer::new(String::new());
    out.append_pair("q", &s.text);
    if let Some(h) = s.hours {
        out.append_pair("hours", &fmt_number(h));
    }
    if s.bots {
        out.append_pair("bots", "1");
    }
    if s.limit != 100 {
        out.append_pair("limit", &s.limit.to_string());
    }
    out.append_pair("page", &page.to_string());
    site.url(&format!("/players?{}", out.finish()))
}

pub(super) async fn players_page(
    State(st): State<AppState>,
    Query(q): Query<PlayerQuery>,
) -> Result<Html<String>, WebError> {
    let (s, found) = q.hits(&st).await?;
    let hits = &found.hits;
    // The servers the hits were last seen on: one query for all of them.
    let addrs: Vec<&str> = hits.iter().filter_map(|h| h.addr.as_deref()).collect();
    let servers = st.store.servers_at(&addrs).await?;
    let now = now_ms();
    let window = match s.hours {
        Some(h) => format!("the players seen in {}", window_text(h)),
        None if st.site.players_hours > 0.0 => format!(
            "all the players kept (seen in {}: everything this site keeps)",
            window_text(st.site.players_hours)
        ),
        None => "all the players kept (this site keeps them for ever)".to_string(),
    };
    let body = html! {
        h1 { "Where is … playing?" }
        (search_form(&st.site, &s))
        p #window {
            "Searching " (window) ", newest first"
            @if !s.bots { "; bots left out" }
            "."
        }
        @if !s.text.is_empty() {
            p #found {
                (hits.len()) @if found.more { "+" } " players"
                @if s.page > 1 { " on page " (s.page) }
            }
            table #hits {
                thead { tr { th { "Player" } th { "Last server" } th.opt { "Map" } th { "Seen" } } }
                tbody {
                    @for h in hits {
                        @let srv = h.addr.as_deref().and_then(|a| servers.get(a));
                        tr class={ "hit" @if h.is_bot { " bot" } } {
                            td {
                                @if h.is_bot {
                                    a href={ (player_href(&st.site, h.player_id)) "?bots=1" } { (name_html(&h.name_text())) }
                                    " " span.badge.bot title="a bot" { "bot" }
                                } @else {
                                    a href=(player_href(&st.site, h.player_id)) { (name_html(&h.name_text())) }
                                }
                            }
                            td { @if let Some(a) = h.addr.as_deref() {
                                a href=(st.site.url(&format!("/server/{}", addr_segment(a)))) {
                                    @if let Some(v) = srv.filter(|v| v.name_raw.is_some()) { (name_html(&v.name_text())) } @else { (a) }
                                }
                            } @else { "-" } }
                            td.opt { (srv.and_then(|v| v.map.as_deref()).unwrap_or("-")) }
                            td { @if h.online { span.badge.online { "playing now" } } @else { (time_html(h.last_seen, now)) } }
                        }
                    }
                }
            }
            nav #pages aria-label="pages" {
                @if s.page > 1 {
                    a rel="prev" href=(page_link(&st.site, &s, s.page - 1)) { "← newer" } " "
                }
                span { "page " (s.page) }
                @if found.more {
                    " " a rel="next" href=(page_link(&st.site, &s, s.page + 1)) { "older →" }
                }
            }
        }
    };
    Ok(Html(page(&st.site, "Players", None, body).into_string()))
}

pub(super) async fn player_page(
    State(st): State<AppState>,
    Path(id): Path<String>,
    Query(q): Query<PlayerPageQuery>,
) -> Result<Html<String>, WebError> {
    let id: i64 = id.parse().map_err(|_| not_found("player"))?;
    let p = profile(&st, id, &q).await?;
    let addrs: Vec<&str> = p.sessions.iter().map(|s| s.addr.as_str()).collect();
    let races = race_servers(&st, &addrs).await?;
    let now = now_ms();
    let name = p.name_text();
    let body = html! {
        h1 { (name_html(&name)) @if p.is_bot { " " span.badge.bot title="a bot" { "bot" } } }
        table #info {
            tr { th { "First seen" } td { (time_html(p.first_seen, now)) } }
            tr { th { "Last seen" } td { (time_html(p.last_seen, now)) } }
            tr { th { "Time played" } td #played { (duration_text(p.seconds_played)) } }
        }
        h2 { "Where and when" }
        @if p.sessions.is_empty() {
            p.empty { "No sessions kept." }
        } @else {
            table #sessions {
                thead { tr { th { "Server" } th { "Joined" } th { "Left" } th.num { "Played" } th.num.opt { "Last score" } } }
                tbody {
                    @for s in &p.sessions {
                        tr.session {
                            td { a href=(st.site.url(&format!("/server/{}", addr_segment(&s.addr)))) {
                                @if let Some(t) = s.server_name_text() { (name_html(&t)) } @else { (s.addr) }
                            }
                            @if s.is_bot == Some(true) { " " span.badge.bot { "bot" } } }
                            td { (time_html(s.joined, now)) }
                            td { @if let Some(l) = s.left { (time_html(l, now)) } @else { span.badge.online { "playing now" } } }
                            td.num { (duration_text(s.seconds)) }
                            td.num.opt {
                                @match s.last_score {
                                    Some(v) if races.contains(&s.addr) => (race_time(v)),
                                    Some(v) => (v),
                                    None => "-",
                                }
                            }
                        }
                    }
                }
            }
        }
        p {
            a href=(st.site.url(&format!("/api/players/{id}{}", if p.is_bot { "?bots=1" } else { "" }))) { "as JSON" }
            @if !p.is_bot { " · " a href=(super::feeds::player_feed(&st.site, id)) { "watch (Atom)" } }
        }
    };
    let head = if p.is_bot {
        html! {}
    } else {
        super::feeds::player_head(&st.site, id)
    };
    Ok(Html(
        page_with(&st.site, &name.display(), None, head, body).into_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_read() {
        assert_eq!(window_text(1.0), "the last hour");
        assert_eq!(window_text(168.0), "the last 7 days");
        assert_eq!(window_text(72.0), "the last 3 days");
        assert_eq!(window_text(36.0), "the last 36 hours");
        assert_eq!(window_text(0.5), "the last 0.5 hours");
        let mut site = Site::default();
        assert_eq!(kept_text(&site), "all players kept (last 7 days)");
        site.players_hours = 0.0;
        assert_eq!(kept_text(&site), "all players kept");
    }
}
