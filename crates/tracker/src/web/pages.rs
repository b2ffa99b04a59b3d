//! The HTML pages: the server browser, a server's page and the player search.
//!
//! Every link, form action and script URL is made with [`Site::url`], so the site works
//! under a base path behind a reverse proxy. Names are shown with their games' colours,
//! lightened where they would not read on the page's background ([`super::colour`]).

use std::collections::HashSet;

use axum::extract::{Path, Query, State};
use axum::response::Html;
use fragstat::core::model::{ScoreKind, Text};
use maud::{html, Markup, PreEscaped, DOCTYPE};

use super::api::{
    clan_text, game_title, humans, pages, server_country, server_password, window_since,
    BrowseQuery, HistoryQuery, MAP_HISTORY,
};
use super::colour::themed_html;
use super::format::ago;
use super::{join, not_found, server_chart, time_text, AppState, Site, WebError};
use crate::geoip::flag;
use crate::round::now_ms;
use crate::store::{ServerRow, Sort};

/// A name as HTML: escaped text in coloured spans, from the name's dialect, each colour made
/// readable on both themes' backgrounds ([`themed_html`]).
pub(super) fn name_html(t: &Text) -> Markup {
    html! {
        span.name { (themed_html(&t.runs())) }
    }
}

/// An address as one URL path segment.
pub(super) fn addr_segment(addr: &str) -> String {
    url::form_urlencoded::byte_serialize(addr.as_bytes()).collect()
}

/// A time as "3 min ago" in a `<time>` with the absolute time as its `datetime` and title
/// (the refresh script keeps the text current).
pub(super) fn time_html(ms: i64, now: i64) -> Markup {
    let abs = time_text(ms);
    html! { time datetime=(abs) title=(abs) { (ago(ms, now)) } }
}

/// A country's flag (regional-indicator symbols: an emoji flag, no image) with its code; "-"
/// for none.
fn flag_html(code: Option<&str>) -> Markup {
    html! {
        @if let Some((c, f)) = code.and_then(|c| Some((c, flag(c)?))) {
            // The letters too: not every system draws flag emoji.
            span.flag role="img" aria-label=(c) title=(c) { (f) } span.cc { (c) }
        } @else {
            "-"
        }
    }
}

/// Whether a server asks for a password, as a cell: a lock where it does, nothing to see where
/// it does not ("no" for screen readers), "-" where its game does not say.
fn password_html(password: Option<bool>) -> Markup {
    html! {
        @match password {
            Some(true) => span.lock role="img" aria-label="password" title="password" { "🔒" },
            Some(false) => span.sr { "no" },
            None => span title="the game does not say" { "-" },
        }
    }
}

/// The address as text, with a join link where the game has a URL scheme and a copy button
/// (shown by the script; without it the address is still there to select).
fn address_html(game: &str, addr: &str) -> Markup {
    html! {
        span.addr {
            code { (addr) }
            " "
            @if let Some(u) = join::join_url(game, addr) {
                a.join href=(u) title="join with the game's client" { "join" }
                " "
            }
            button.copy type="button" data-copy=(addr) hidden title="copy the address" { "copy" }
        }
    }
}

/// The pages' style sheet (`assets/style.css`), after a line break.
const STYLE: &str = concat!("\n", include_str!("../../assets/style.css"));

pub(super) fn page(site: &Site, title: &str, refresh: Option<f64>, body: Markup) -> Markup {
    page_with(site, title, refresh, html! {}, body)
}

/// A page with more in its head (a feed's `<link rel="alternate">`).
pub(super) fn page_with(
    site: &Site,
    title: &str,
    refresh: Option<f64>,
    head: Markup,
    body: Markup,
) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " — " (site.title) }
                link rel="icon" type="image/svg+xml" href=(site.url("/favicon.svg"));
                (head)
                style { (PreEscaped(STYLE)) }
            }
            body data-refresh=[refresh] data-base=(site.base) {
                header {
                    a.site href=(site.url("/")) { (site.title) }
                    nav {
                        a href=(site.url("/")) { "Servers" }
                        a href=(site.url("/players")) { "Find a player" }
                        a href=(site.url("/stats")) { "Stats" }
                        a href=(site.url("/top")) { "Top" }
                        a href=(site.url("/maps")) { "Maps" }
                        a href=(site.url("/api/servers")) { "API" }
                        a href=(site.url("/api/openapi.json")) { "OpenAPI" }
                        a href=(site.url("/metrics")) { "Metrics" }
                        a href=(site.url("/about")) { "About" }
                    }
                }
                main { (body) }
                script { (PreEscaped(BROWSER_JS)) }
            }
        }
    }
}

/// The pages' script (`assets/app.js`), after a line break: the browser's refresh, copy
/// buttons, relative times.
pub(super) const BROWSER_JS: &str = concat!("\n", include_str!("../../assets/app.js"));

/// "3 (+2 bots)/16": humans, bots where there are any, slots.
pub(super) fn players_text(s: &ServerRow) -> String {
    if s.status != "online" {
        return "-".into();
    }
    let slots = s.max_players.unwrap_or(0);
    match (humans(s), s.num_bots.filter(|b| *b > 0)) {
        (Some(h), Some(b)) => format!("{h} (+{b} bots)/{slots}"),
        (Some(h), None) => format!("{h}/{slots}"),
        _ => format!("-/{slots}"),
    }
}

/// A server's row in the browser; `app.js` builds the same from the API.
fn server_row(s: &ServerRow, st: &AppState, now: i64) -> Markup {
    let country = server_country(s, st);
    let name = s.name_text();
    html! {
        tr class={ "server " (s.status) } data-addr=(s.addr) {
            td.name {
                a href=(st.site.url(&format!("/server/{}", addr_segment(&s.addr)))) {
                    @if s.name_raw.is_some() { (name_html(&name)) } @else { (s.addr) }
                }
                @if s.status != "online" {
                    " " span.status { (s.status) @if let Some(t) = s.last_online { ", answered " (time_html(t, now)) } }
                }
                @if let Some(t) = s.unlisted_since {
                    " " span.status.unlisted { "not listed since " (time_html(t, now)) }
                }
            }
            td.country { (flag_html(country.as_deref())) }
            td.password { (password_html(server_password(s))) }
            td.game.opt { (game_title(&s.game).unwrap_or_else(|| s.game.clone())) }
            td.gametype.opt { (s.gametype.as_deref().unwrap_or("")) }
            td.map { (s.map.as_deref().unwrap_or("-")) }
            td.num.players { (players_text(s)) }
            td.num.ping.opt {
                @if let Some(r) = s.rtt_ms { (format!("{r:.0}")) } @else { "-" }
            }
            td.address.opt { (address_html(&s.game, &s.addr)) }
        }
    }
}

/// The browser's columns: header text, the symbol a phone shows instead (the text is still
/// there for screen readers), sort key, and classes (`opt`: hidden on a phone).
const COLUMNS: [(&str, Option<&str>, Sort, &str); 9] = [
    ("Name", None, Sort::Name, "name"),
    ("Country", Some("🌐"), Sort::Country, "country"),
    ("Password", Some("🔒"), Sort::Password, "password"),
    ("Game", None, Sort::Game, "game opt"),
    ("Type", None, Sort::Gametype, "gametype opt"),
    ("Map", None, Sort::Map, "map"),
    ("Players", None, Sort::Players, "num players"),
    ("Ping", None, Sort::Ping, "num ping opt"),
    ("Address", None, Sort::Addr, "address opt"),
];

pub(super) async fn browser(
    State(st): State<AppState>,
    Query(q): Query<BrowseQuery>,
) -> Result<Html<String>, WebError> {
    let b = q.check()?;
    let servers = st.store.servers(&b.filter).await?;
    let total = st.store.count_servers(&b.filter).await?;
    let games = st.store.games().await?;
    let masters_down: Vec<_> = st
        .store
        .masters()
        .await?
        .into_iter()
        .filter(|m| !m.up)
        .collect();
    let now = now_ms();
    let humans_here: i64 = servers.iter().filter_map(humans).sum();
    let bots_here: i64 = servers
        .iter()
        .filter(|s| s.status == "online")
        .filter_map(|s| s.num_bots)
        .sum();
    let last_page = pages(total, b.per_page);
    let from = (b.page - 1) * b.per_page + 1;
    let to = from + i64::try_from(servers.len()).unwrap_or(0) - 1;
    let home = st.site.url("/");
    let body = html! {
        h1 { "Servers" }
        @if !masters_down.is_empty() {
            ul #masters-down {
                @for m in &masters_down {
                    li {
                        "Master " (m.master) " (" (game_title(&m.game).unwrap_or_else(|| m.game.clone())) ") is down"
                        @if let Some(d) = m.down_since { " since " (time_html(d, now)) }
                        @if let Some(e) = &m.error { ": " (e) }
                        "; the servers it listed lately are still probed."
                    }
                }
            }
        }
        form #filters method="get" action=(home) {
            label { "Game " select name="game" {
                option value="" { "any" }
                @for g in &games {
                    option value=(g) selected[b.filter.game.as_deref() == Some(g.as_str())] {
                        (game_title(g).unwrap_or_else(|| g.clone()))
                    }
                }
            } }
            label { "Map " input type="search" name="map" value=[q.map.as_deref()]; }
            label { "Name " input type="search" name="name" value=[q.name.as_deref()]; }
            label { input type="checkbox" name="online" value="1" checked[b.filter.online_only]; " online only" }
            input type="hidden" name="sort" value=(b.filter.sort.key());
            input type="hidden" name="order" value=(if b.desc { "desc" } else { "asc" });
            input type="hidden" name="per_page" value=(b.per_page);
            button type="submit" { "Filter" }
        }
        p {
            span #summary {
                (total) " servers"
                @if total > 0 { ", " (from) "–" (to) " shown" }
                "; " (humans_here) " humans (+" (bots_here) " bots) on this page"
            }
            " · " span #updated { "rendered " (time_text(now)) }
        }
        table #servers {
            thead { tr {
                @for (label, short, key, class) in COLUMNS {
                    @let active = b.filter.sort == key;
                    @let next_desc = if active { !b.desc } else { key.default_desc() };
                    @let href = format!("{home}{}", q.with(&[
                        ("sort", Some(key.key().to_string())),
                        ("order", Some((if next_desc { "desc" } else { "asc" }).to_string())),
                        ("page", None),
                    ]));
                    th class=(class) aria-sort=[active.then_some(if b.desc { "descending" } else { "ascending" })] {
                        a.sort href=(href) data-sort=(key.key()) title=[short.map(|_| label)] {
                            @if let Some(sh) = short {
                                span.long { (label) } span.short aria-hidden="true" { (sh) }
                            } @else {
                                (label)
                            }
                            @if active { (if b.desc { " ▼" } else { " ▲" }) }
                        }
                    }
                }
            } }
            tbody #rows {
                @for s in &servers { (server_row(s, &st, now)) }
            }
        }
        nav #pages aria-label="pages" {
            @if b.page > 1 {
                a rel="prev" href={ (home) (q.with(&[("page", Some((b.page - 1).to_string()))])) } { "← previous" }
                " "
            }
            span { "page " (b.page) " of " (last_page) }
            @if b.page < last_page {
                " "
                a rel="next" href={ (home) (q.with(&[("page", Some((b.page + 1).to_string()))])) } { "next →" }
            }
        }
    };
    Ok(Html(
        page(&st.site, "Servers", Some(st.refresh_secs), body).into_string(),
    ))
}

/// What the server page reads from a server's latest JSON record.
#[derive(Debug, Default)]
struct RecordFacts {
    rules: Vec<(String, String)>,
    password: Option<bool>,
    score_kind: Option<ScoreKind>,
    clans: Vec<Option<String>>,
}

fn record_facts(record: Option<&str>) -> RecordFacts {
    let Some(v) = record.and_then(|r| serde_json::from_str::<serde_json::Value>(r).ok()) else {
        return RecordFacts::default();
    };
    let info = v.get("info").unwrap_or(&v);
    let text = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    RecordFacts {
        rules: info
            .get("rules")
            .and_then(|r| r.as_object())
            .map(|o| o.iter().map(|(k, v)| (k.clone(), text(v))).collect())
            .unwrap_or_default(),
        password: info.get("password").and_then(serde_json::Value::as_bool),
        // Records stored before `score_kind` was the model's have it in their `extra`.
        score_kind: [info, info.get("extra").unwrap_or(&serde_json::Value::Null)]
            .iter()
            .find_map(|i| i.get("score_kind")?.as_str()?.parse().ok()),
        clans: info
            .get("players")
            .and_then(|p| p.as_array())
            .map(|ps| {
                ps.iter()
                    .map(|p| {
                        p.get("clan")
                            .and_then(|c| c.as_str())
                            .filter(|c| !c.is_empty())
                            .map(str::to_string)
                    })
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// Whether a server's scores are race times: as its record says
/// ([`ServerInfo::score_kind`](fragstat::core::model::ServerInfo::score_kind)), else by its
/// game's rule ([`GameMeta::scores_are_times`](fragstat::core::registry::GameMeta::scores_are_times));
/// a game the registry does not know counts points.
fn race_times(game: &str, gametype: Option<&str>, score_kind: Option<ScoreKind>) -> bool {
    match fragstat::game(game) {
        Some(g) => g.meta().scores_are_times(gametype, score_kind),
        None => score_kind == Some(ScoreKind::Time),
    }
}

/// Of the servers at `addrs`, those whose scores are race times ([`race_times`], as the
/// server page decides): their rows in one query, and the records of those whose game may
/// say how its scores count ([`GameMeta::declares_score_kind`]) in another.
///
/// [`GameMeta::declares_score_kind`]: fragstat::core::registry::GameMeta::declares_score_kind
pub(super) async fn race_servers(
    st: &AppState,
    addrs: &[&str],
) -> Result<HashSet<String>, WebError> {
    let servers = st.store.servers_at(addrs).await?;
    let declaring: Vec<String> = fragstat::games()
        .iter()
        .filter(|g| g.meta().declares_score_kind)
        .map(|g| g.id().to_string())
        .collect();
    let declaring: Vec<&str> = declaring.iter().map(String::as_str).collect();
    let said: Vec<&str> = servers
        .values()
        .filter(|s| declaring.contains(&s.game.as_str()))
        .map(|s| s.addr.as_str())
        .collect();
    let records = st.store.records_at(&said, &declaring).await?;
    Ok(servers
        .values()
        .filter(|s| {
            let facts = record_facts(records.get(&s.addr).map(String::as_str));
            race_times(&s.game, s.gametype.as_deref(), facts.score_kind)
        })
        .map(|s| s.addr.clone())
        .collect())
}

/// A race time score as `m:ss` (DDNet sends whole seconds, negated on 0.6); empty for
/// "no time" (−9999, or DDNet's `FinishTime::NOT_FINISHED_MILLIS` as seconds).
pub fn race_time(score: i64) -> String {
    if score == -9999 || score == i64::from(i32::MIN) || score.unsigned_abs() >= 10_000_000 {
        return String::new();
    }
    let s = score.unsigned_abs();
    format!("{}:{:02}", s / 60, s % 60)
}

pub(super) async fn server_page(
    State(st): State<AppState>,
    Path(addr): Path<String>,
    Query(q): Query<HistoryQuery>,
) -> Result<Html<String>, WebError> {
    let since = q.since(&st)?;
    let Some(s) = st.store.server(&addr).await? else {
        return Err(not_found("server"));
    };
    let chart = server_chart::block(&st, &s, &q, since).await?;
    let players = st.store.players_on(&addr).await?;
    let record = st.store.server_record(&addr).await?;
    let facts = record_facts(record.as_deref());
    // Uptime and map changes over the last week (or the history kept, if shorter).
    let week = window_since(st.site.retention_hours, 24.0 * 7.0);
    let uptime = st.store.uptime(&addr, week).await?;
    let maps = st.store.map_history(&addr, week, MAP_HISTORY).await?;
    let now = now_ms();
    let name = s.name_text();
    let title = if s.name_raw.is_some() {
        name.display()
    } else {
        s.addr.clone()
    };
    let online = s.status == "online";
    let times = race_times(&s.game, s.gametype.as_deref(), facts.score_kind);
    let country = server_country(&s, &st);
    let password = server_password(&s).or(facts.password);
    let body = html! {
        h1 {
            @if s.name_raw.is_some() { (name_html(&name)) } @else { (s.addr) }
            @if !online { " " span.badge.down { (s.status) } }
            @if s.unlisted_since.is_some() { " " span.badge.down { "not listed" } }
        }
        table #info {
            tr { th { "Address" } td { (address_html(&s.game, &s.addr)) } }
            tr { th { "Game" } td { (game_title(&s.game).unwrap_or_else(|| s.game.clone())) } }
            tr { th { "Status" } td #status {
                (s.status) @if let Some(e) = &s.error { " (" (e) ")" }
                @if let Some(d) = s.down_since { ", down since " (time_html(d, now)) }
                @if let (true, Some(u)) = (online, s.up_since) { ", up since " (time_html(u, now)) }
                @if let Some(u) = s.unlisted_since { "; not listed since " (time_html(u, now)) " (no master lists it)" }
            } }
            tr { th { "Uptime" } td #uptime {
                @if let Some(f) = uptime.fraction { (format!("{:.1} %", f * 100.0)) " since " (time_html(uptime.since.max(s.first_seen), now)) } @else { "-" }
            } }
            @if let Some(c) = &country {
                tr { th { "Country" } td { (flag_html(Some(c))) } }
            }
            tr { th { "Password" } td { (match password { Some(true) => "🔒 yes", Some(false) => "no", None => "-" }) } }
            tr { th { "Map" } td { (s.map.as_deref().unwrap_or("-")) } }
            tr { th { "Game type" } td { (s.gametype.as_deref().unwrap_or("-")) } }
            tr { th { "Players" } td {
                @if online { (players_text(&s)) } @else { "- (no answer in the last round)" }
            } }
            tr { th { "Ping" } td { @if let Some(r) = s.rtt_ms { (format!("{r:.1} ms")) } @else { "-" } } }
            tr { th { "First seen" } td { (time_html(s.first_seen, now)) } }
            tr { th { "Last answered" } td { @if let Some(t) = s.last_online { (time_html(t, now)) } @else { "never" } } }
        }
        (chart)
        h2 { @if online { "Players now" } @else { "Players when it last answered" } }
        @if players.is_empty() {
            p.empty { "No players." }
        } @else {
            table #players {
                thead { tr { th { "Name" } th { "Clan" } th.num { @if times { "Time" } @else { "Score" } } th.num { "Ping" } } }
                tbody {
                    @for (i, p) in players.iter().enumerate() {
                        @let t = p.name_text();
                        @let bot = p.is_bot == Some(true);
                        tr class={ "player" @if bot { " bot" } } {
                            td {
                                // Bots have no player page.
                                @if bot {
                                    (name_html(&t)) " " span.badge.bot title="a bot" { "bot" }
                                } @else {
                                    a href=(player_href(&st.site, p.player_id)) { (name_html(&t)) }
                                }
                            }
                            td { (clan_text(p).or_else(|| facts.clans.get(i).cloned().flatten()).unwrap_or_default()) }
                            td.num {
                                @match p.score {
                                    Some(v) if times => (race_time(v)),
                                    Some(v) => (v),
                                    None => "-",
                                }
                            }
                            td.num { (p.ping.map_or("-".into(), |v| v.to_string())) }
                        }
                    }
                }
            }
        }
        h2 { "Maps" }
        @if maps.is_empty() {
            p.empty { "No map changes kept." }
        } @else {
            table #maps {
                thead { tr { th { "Map" } th.opt { "Game type" } th { "From" } th { "To" } } }
                tbody {
                    @for m in &maps {
                        tr.map {
                            td { (m.map) }
                            td.opt { (m.gametype.as_deref().unwrap_or("-")) }
                            td { (time_html(m.from, now)) }
                            td { @if let Some(t) = m.to { (time_html(t, now)) } @else { "now" } }
                        }
                    }
                }
            }
        }
        (super::embed::snippets(&st.site, &s.addr))
        @if !facts.rules.is_empty() {
            details #rules open {
                summary { h2 { "Server variables" } }
                table.rules {
                    tbody {
                        @for (k, v) in &facts.rules { tr { th { (k) } td { (v) } } }
                    }
                }
            }
        }
    };
    let head = super::feeds::server_head(&st.site, &s.addr);
    Ok(Html(
        page_with(&st.site, &title, None, head, body).into_string(),
    ))
}

/// A link to a player's page.
pub(super) fn player_href(site: &Site, id: i64) -> String {
    site.url(&format!("/player/{id}"))
}

#[cfg(test)]
mod tests {
    use fragstat::core::model::Dialect;

    use super::*;
    use crate::web::{contrast_ratio, name_runs, NameRun, BACKGROUND};

    #[test]
    fn hostile_names_render_inert() {
        let t = Text::new(
            b"^1<script>alert(1)</script>^7'; DROP TABLE servers;--".to_vec(),
            Dialect::Quake,
        );
        let h = name_html(&t).into_string();
        assert!(!h.contains("<script>"), "{h}");
        assert!(h.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{h}");
        // Red reads on the page only lightened a little.
        assert!(h.contains("color:#ff"), "{h}");
        assert!(h.starts_with("<span class=\"name\"><span"), "{h}");
        let plain = Text::new(b"a^1<b>".to_vec(), Dialect::Plain);
        assert_eq!(
            name_runs(&plain),
            vec![NameRun {
                color: None,
                page_color: None,
                light_color: None,
                text: "a^1<b>".into(),
                half_alpha: false,
                icon: None,
            }]
        );
        // An icon's name is an attribute value: escaped too.
        let q4 = Text::new(b"^i\"<>x".to_vec(), Dialect::Quake4);
        let h = name_html(&q4).into_string();
        assert!(h.contains("title=\"&quot;&lt;&gt;\""), "{h}");
    }

    #[test]
    fn names_render_in_their_dialect() {
        // `^^1x`: DarkPlaces shows `^1x`, ioquake3 a caret and a red x, Doom 3 a black `1x`.
        let runs = |d| name_runs(&Text::new(b"^^1x".to_vec(), d));
        assert_eq!(runs(Dialect::DarkPlaces)[0].text, "^1x");
        assert_eq!(runs(Dialect::Ioq3)[1].color.as_deref(), Some("#ff0000"));
        assert_eq!(runs(Dialect::Idtech4)[0].color.as_deref(), Some("#000000"));
        let h = name_html(&Text::new(b"^8ghost".to_vec(), Dialect::DarkPlaces)).into_string();
        assert!(h.contains("opacity:.5"), "{h}");
    }

    /// `^4` and `^0` read on the page: their colours are lightened where the HTML is made,
    /// and the API says what the page shows beside the game's colour.
    #[test]
    fn dark_name_colours_are_made_readable() {
        let t = Text::new(b"^4blue^0black^2green".to_vec(), Dialect::Ioq3);
        let h = name_html(&t).into_string();
        // (The light theme's `--light:` colours: colour.rs's tests.)
        assert!(
            !h.contains("color:#0000ff") && !h.contains("color:#000"),
            "{h}"
        );
        for part in h.split("color:#").skip(1) {
            let hex = part.get(..6).unwrap();
            let c = [0, 2, 4].map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap());
            assert!(contrast_ratio(c, BACKGROUND) >= 4.5, "{hex} in {h}");
        }
        let runs = name_runs(&t);
        assert_eq!(runs[0].color.as_deref(), Some("#0000ff"));
        assert!(runs[0].page_color.is_some());
        assert_eq!(runs[2].page_color, None, "green reads as it is");
    }

    #[test]
    fn times_and_scores() {
        assert_eq!(ago(0, 5_000), "just now");
        assert_eq!(ago(0, 42_000), "42 s ago");
        assert_eq!(ago(0, 180_000), "3 min ago");
        assert_eq!(ago(0, 7_200_000), "2 h ago");
        assert_eq!(ago(0, 3 * 86_400_000), "3 d ago");
        assert_eq!(ago(10_000, 0), "just now");
        assert_eq!(race_time(-9999), "");
        assert_eq!(race_time(i64::from(i32::MIN)), "");
        assert_eq!(race_time(-95), "1:35");
        assert_eq!(race_time(20), "0:20");
        assert!(race_times("ddnet", Some("DDraceNetwork"), None));
        assert!(race_times("teeworlds", Some("Race"), None));
        assert!(!race_times("teeworlds", Some("DM"), None));
        let (points, time) = (Some(ScoreKind::Points), Some(ScoreKind::Time));
        assert!(!race_times("ddnet", Some("DDraceNetwork"), points));
        assert!(race_times("teeworlds07", Some("DM"), time));
        assert!(!race_times("q3", Some("race"), None));
        assert!(race_times("no-such-game", None, time));
    }

    /// A stored record says its score kind at the top (now) or in its `extra` (before).
    #[test]
    fn record_facts_read_the_score_kind_old_and_new() {
        let kind = |r: &str| record_facts(Some(r)).score_kind;
        let time = Some(ScoreKind::Time);
        assert_eq!(kind(r#"{"info": {"extra": {"score_kind": "time"}}}"#), time);
        assert_eq!(kind(r#"{"score_kind": "time", "extra": null}"#), time);
        let both = r#"{"score_kind": "points", "extra": {"score_kind": "time"}}"#;
        assert_eq!(kind(both), Some(ScoreKind::Points));
        assert_eq!(
            kind(r#"{"score_kind": null, "extra": {"score_kind": "laps"}}"#),
            None
        );
        assert_eq!(kind("not json"), None);
    }
}
