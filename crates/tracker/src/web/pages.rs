//! The HTML pages: the server browser, a server's page and the player search.

use axum::extract::{Path, Query, State};
use axum::response::Html;
use fragstat::core::model::Text;
use maud::{html, Markup, PreEscaped, DOCTYPE};

use super::api::{BrowseQuery, HistoryQuery, PlayerQuery};
use super::{chart, not_found, time_text, AppState, WebError};
use crate::round::now_ms;
use crate::store::ServerRow;

/// A name as HTML: escaped text in coloured spans, from the name's dialect
/// ([`Text::html`]: core's one HTML renderer, which escapes every run's text).
fn name_html(t: &Text) -> Markup {
    html! {
        span.name { (PreEscaped(t.html())) }
    }
}

/// An address as one URL path segment.
fn addr_segment(addr: &str) -> String {
    url::form_urlencoded::byte_serialize(addr.as_bytes()).collect()
}

/// The pages' style sheet (`assets/style.css`), after a line break.
const STYLE: &str = concat!("\n", include_str!("../../assets/style.css"));

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

/// The browser page's script (`assets/app.js`), after a line break.
const BROWSER_JS: &str = concat!("\n", include_str!("../../assets/app.js"));

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

pub(super) async fn browser(
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

pub(super) async fn server_page(
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

pub(super) async fn players_page(
    State(st): State<AppState>,
    Query(q): Query<PlayerQuery>,
) -> Result<Html<String>, WebError> {
    let text = q.q.clone().unwrap_or_default();
    let hits = q.hits(&st.store).await?;
    let mut rows = Vec::new();
    for h in &hits {
        let server = match h.addr.as_deref() {
            Some(a) => st.store.server(a).await?,
            None => None,
        };
        rows.push((h, server));
    }
    let body = html! {
        h1 { "Where is … playing?" }
        form method="get" action="/players" {
            input type="search" name="q" value=(text) placeholder="player name";
            button type="submit" { "Find" }
        }
        @if !text.is_empty() {
            p #found { (hits.len()) " players" }
            table #hits {
                thead { tr { th { "Player" } th { "Server" } th { "Map" } th { "Online" } th { "Seen" } } }
                tbody {
                    @for (h, s) in &rows {
                        tr.hit {
                            td { (name_html(&h.name_text())) }
                            td { @if let Some(a) = h.addr.as_deref() {
                                a href={ "/server/" (addr_segment(a)) } {
                                    @if let Some(s) = s { (name_html(&s.name_text())) } @else { (a) }
                                }
                            } @else { "-" } }
                            td { (s.as_ref().and_then(|s| s.map.as_deref()).unwrap_or("-")) }
                            td { (if h.online { "yes" } else { "no" }) }
                            td { (time_text(h.last_seen)) }
                        }
                    }
                }
            }
        }
    };
    Ok(Html(page("Players", None, body).into_string()))
}

#[cfg(test)]
mod tests {
    use fragstat::core::model::Dialect;

    use super::*;
    use crate::web::{name_runs, NameRun};

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
        assert!(h.starts_with("<span class=\"name\"><span"), "{h}");
        let plain = Text::new(b"a^1<b>".to_vec(), Dialect::Plain);
        assert_eq!(
            name_runs(&plain),
            vec![NameRun {
                color: None,
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
}
