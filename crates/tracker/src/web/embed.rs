//! What other sites embed of a server: its banner (`/server/{addr}/banner.svg` and
//! `banner.png`, [`super::banner`]) and a widget (`/server/{addr}/widget`, a small page with
//! its live numbers for an `<iframe>`), and the snippets the server page offers to copy.
//!
//! Every answer is made once per round: it is cached under the server, the kind, the size
//! and the colours, with the round it shows, and served from there (with an ETag, so a
//! repeat ask gets 304) until the server's next round. The cache holds at most
//! [`CACHE_ROOM`] answers (emptied whole when full: a flood of sizes or servers only costs
//! renders, which the rate below bounds).
//!
//! They have their own request rate ([`HOST_RATE`] per client host, [`NET_RATE`] per
//! network, [`fragstat::core::fair::RateTable`]), under the web guard's, which the Atom
//! feeds (`feeds.rs`, routed here) share: a page that embeds a banner makes every visitor ask
//! for it, and one host or network flooding them is answered 429 with `Retry-After` while
//! every other is served.
//!
//! The widget is the one answer other sites may frame: its own Content-Security-Policy
//! (`frame-ancestors *`, no script at all, no request anywhere but its links) and no
//! `X-Frame-Options`; it refreshes itself with `<meta http-equiv="refresh">`, no script.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use fragstat::core::fair::{Rate, RateTable};
use maud::{html, Markup, PreEscaped, DOCTYPE};
use serde::Deserialize;

use super::banner::{self, Facts};
use super::pages::{addr_segment, name_html, players_text};
use super::{not_found, AppState, Site, WebError};
use crate::store::ServerRow;

/// Banner and widget requests per client host (IPv4 address, IPv6 /64).
pub const HOST_RATE: Rate = Rate {
    per_sec: 5,
    burst: 40,
};

/// Banner and widget requests per network (IPv4 /24, IPv6 /48).
pub const NET_RATE: Rate = Rate {
    per_sec: 20,
    burst: 120,
};

/// Answers the cache holds at most.
pub const CACHE_ROOM: usize = 4096;

/// Players the widget lists at most.
const WIDGET_PLAYERS: usize = 8;

/// The widget's Content-Security-Policy: any site may frame it; it loads nothing.
pub const WIDGET_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' \
     data:; base-uri 'none'; form-action 'none'; frame-ancestors *";

/// What an answer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Svg,
    Png,
    Widget,
}

/// An answer made for a round.
#[derive(Debug, Clone)]
struct Cached {
    round: i64,
    etag: String,
    body: Bytes,
}

type Key = (String, Kind, (u32, u32), bool);

/// The embeds' rate table and cache (one per router).
#[derive(Debug)]
pub struct Embeds {
    rates: Mutex<RateTable>,
    cache: Mutex<HashMap<Key, Cached>>,
}

impl Embeds {
    fn new() -> Self {
        Embeds {
            rates: Mutex::new(RateTable::new(HOST_RATE, NET_RATE, Instant::now())),
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// Takes a request of `ip`, or says how many seconds until one would be taken.
    fn admit(&self, ip: IpAddr) -> Result<(), u64> {
        let mut t = self.rates.lock().unwrap_or_else(|e| e.into_inner());
        t.check(ip, Instant::now())
            .map_err(|d| d.as_secs() + u64::from(d.subsec_nanos() > 0))
    }

    fn get(&self, key: &Key, round: i64) -> Option<Cached> {
        let c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        c.get(key).filter(|c| c.round == round).cloned()
    }

    fn put(&self, key: Key, value: Cached) {
        let mut c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if c.len() >= CACHE_ROOM && !c.contains_key(&key) {
            c.clear();
        }
        c.insert(key, value);
    }
}

/// The embeds' routes under the base path `b`.
pub(super) fn routes(b: &str) -> Router<AppState> {
    Router::new()
        .route(
            &format!("{b}/server/{{addr}}/banner.svg"),
            get(|st, e, c, p, q, h| embed(Kind::Svg, st, e, c, p, q, h)),
        )
        .route(
            &format!("{b}/server/{{addr}}/banner.png"),
            get(|st, e, c, p, q, h| embed(Kind::Png, st, e, c, p, q, h)),
        )
        .route(
            &format!("{b}/server/{{addr}}/widget"),
            get(|st, e, c, p, q, h| embed(Kind::Widget, st, e, c, p, q, h)),
        )
        .route(
            &format!("{b}/server/{{addr}}/feed.atom"),
            get(super::feeds::server_feed_atom),
        )
        .route(
            &format!("{b}/player/{{id}}/feed.atom"),
            get(super::feeds::player_feed_atom),
        )
        .layer(Extension(Arc::new(Embeds::new())))
}

/// Takes a request of `client` at the embeds' rate (the feeds' too); its 429 if refused.
pub(super) fn refused(embeds: &Embeds, client: Client) -> Option<Response> {
    let ip = client.map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |Extension(c)| c.0.ip());
    embeds.admit(ip).err().map(|secs| too_many(secs.max(1)))
}

/// `?size=468x60&colors=0`.
#[derive(Debug, Default, Deserialize)]
pub struct EmbedQuery {
    /// `WIDTHxHEIGHT`, one of [`banner::SIZES`] (banners only).
    pub size: Option<String>,
    /// `0` for a name without its colours.
    pub colors: Option<String>,
}

impl EmbedQuery {
    fn check(&self) -> Result<((u32, u32), bool), WebError> {
        let size = match self.size.as_deref().filter(|s| !s.is_empty()) {
            None => banner::SIZES[0],
            Some(s) => banner::parse_size(s).ok_or_else(|| {
                let sizes: Vec<String> = banner::SIZES
                    .iter()
                    .map(|(w, h)| format!("{w}x{h}"))
                    .collect();
                WebError(
                    StatusCode::BAD_REQUEST,
                    format!("size must be one of {}", sizes.join(", ")),
                )
            })?,
        };
        let colours = match self.colors.as_deref() {
            None | Some("" | "1") => true,
            Some("0") => false,
            Some(_) => {
                let e = "colors must be 0 or 1".to_string();
                return Err(WebError(StatusCode::BAD_REQUEST, e));
            }
        };
        Ok((size, colours))
    }
}

/// The client's address, from the web guard.
pub(super) type Client = Option<Extension<fragstat_http_guard::ClientAddr>>;

async fn embed(
    kind: Kind,
    State(st): State<AppState>,
    Extension(embeds): Extension<Arc<Embeds>>,
    client: Client,
    Path(addr): Path<String>,
    Query(q): Query<EmbedQuery>,
    headers: HeaderMap,
) -> Response {
    match answer(kind, &st, &embeds, client, &addr, &q, &headers).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn answer(
    kind: Kind,
    st: &AppState,
    embeds: &Embeds,
    client: Client,
    addr: &str,
    q: &EmbedQuery,
    headers: &HeaderMap,
) -> Result<Response, WebError> {
    if let Some(r) = refused(embeds, client) {
        return Ok(r);
    }
    let (size, colours) = q.check()?;
    let size = if kind == Kind::Widget { (0, 0) } else { size };
    let Some(s) = st.store.server(addr).await? else {
        return Err(not_found("server"));
    };
    let key = (s.addr.clone(), kind, size, colours);
    let cached = match embeds.get(&key, s.last_seen) {
        Some(c) => c,
        None => {
            let body = make(kind, st, &s, size, colours).await?;
            let c = Cached {
                round: s.last_seen,
                // Weak: the compression layer may encode the body on its way out.
                etag: format!("W/{}", super::etag_of(&body)),
                body: Bytes::from(body),
            };
            embeds.put(key, c.clone());
            c
        }
    };
    Ok(respond(kind, &cached, headers, st.site.interval_secs))
}

fn too_many(secs: u64) -> Response {
    let mut r = (
        StatusCode::TOO_MANY_REQUESTS,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        "too many banner, widget or feed requests from your network; try again later\n",
    )
        .into_response();
    if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// The cached answer, or 304 where the client has it.
fn respond(kind: Kind, c: &Cached, headers: &HeaderMap, interval_secs: f64) -> Response {
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|h| {
            h.split(',')
                .map(str::trim)
                .any(|t| t == "*" || t.trim_start_matches("W/") == c.etag.trim_start_matches("W/"))
        });
    let content_type = match kind {
        Kind::Svg => "image/svg+xml",
        Kind::Png => "image/png",
        Kind::Widget => "text/html; charset=utf-8",
    };
    let mut r = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, content_type)], c.body.clone()).into_response()
    };
    let h = r.headers_mut();
    for (name, value) in [
        (header::ETAG, c.etag.clone()),
        (
            header::CACHE_CONTROL,
            format!("public, max-age={}", super::max_age(interval_secs)),
        ),
    ] {
        if let Ok(v) = HeaderValue::from_str(&value) {
            h.insert(name, v);
        }
    }
    if kind == Kind::Widget {
        h.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(WIDGET_CSP),
        );
    }
    r
}

/// What a banner shows of `s`.
fn facts(st: &AppState, s: &ServerRow) -> Facts {
    let online = s.status == "online";
    Facts {
        name: s.name_raw.as_ref().map(|_| s.name_text()),
        addr: s.addr.clone(),
        online,
        players: if online {
            players_text(s)
        } else {
            s.status.clone()
        },
        map: s.map.clone().filter(|_| online),
        game: super::api::game_title(&s.game).unwrap_or_else(|| s.game.clone()),
        site: st.site.title.clone(),
    }
}

async fn make(
    kind: Kind,
    st: &AppState,
    s: &ServerRow,
    size: (u32, u32),
    colours: bool,
) -> Result<Vec<u8>, WebError> {
    let f = facts(st, s);
    let fault = |e: banner::RenderError| WebError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string());
    Ok(match kind {
        Kind::Svg => banner::svg(&f, size, colours).into_bytes(),
        Kind::Png => banner::png(&banner::svg(&f, size, colours)).map_err(fault)?,
        Kind::Widget => {
            let players = st.store.players_on(&s.addr).await?;
            widget(st, s, &f, &players).into_string().into_bytes()
        }
    })
}

/// The widget's page.
fn widget(st: &AppState, s: &ServerRow, f: &Facts, players: &[crate::store::PlayerRow]) -> Markup {
    let page = st.site.url(&format!("/server/{}", addr_segment(&s.addr)));
    let refresh = st.site.interval_secs.clamp(10.0, 300.0).round();
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta http-equiv="refresh" content=(refresh);
                meta name="robots" content="noindex";
                title { (f.name.as_ref().map_or(s.addr.clone(), |n| n.display())) }
                style { (PreEscaped(WIDGET_STYLE)) }
            }
            body.widget {
                @let dot = if f.online { "dot up" } else { "dot down" };
                a.title href=(page) target="_blank" rel="noopener" {
                    span class=(dot) {}
                    @if let Some(n) = &f.name { (name_html(n)) } @else { (s.addr) }
                }
                p.numbers {
                    strong #players { (f.players) }
                    @if let Some(m) = &f.map { " · " span #map { (m) } }
                    " · " (f.game)
                }
                @if f.online && !players.is_empty() {
                    ul.players {
                        @for p in players.iter().take(WIDGET_PLAYERS) {
                            li {
                                (name_html(&p.name_text()))
                                @if p.is_bot == Some(true) { " " span.bot { "bot" } }
                            }
                        }
                        @if players.len() > WIDGET_PLAYERS {
                            li.more { "and " (players.len() - WIDGET_PLAYERS) " more" }
                        }
                    }
                }
                p.foot {
                    code { (s.addr) }
                    " · " a href=(st.site.url("/")) target="_blank" rel="noopener" { (st.site.title) }
                }
            }
        }
    }
}

/// The widget's style sheet: both themes, no fonts or images to fetch.
const WIDGET_STYLE: &str = "\
:root{color-scheme:dark light;--bg:#2b2e36;--fg:#e6e6e6;--dim:#a8a8a8;--link:#8cc8ff}\
@media (prefers-color-scheme:light){:root{--bg:#fafafa;--fg:#1d1f24;--dim:#5f6368;--link:#0b57b0}\
.name span[style]{color:var(--light)!important}}\
body{margin:0;padding:.6em .8em;font:14px/1.35 system-ui,sans-serif;background:var(--bg);color:var(--fg)}\
a{color:var(--link)}a.title{font-weight:bold;font-size:1.1em;text-decoration:none;word-break:break-word}\
.dot{display:inline-block;width:.6em;height:.6em;border-radius:50%;margin-right:.4em}\
.dot.up{background:#4caf50}.dot.down{background:#d65a5a}\
p{margin:.35em 0}.players{margin:.3em 0;padding-left:1.1em;columns:2;font-size:.9em}\
.more,.foot,.bot{color:var(--dim);font-size:.85em}code{font-size:.95em}";

/// The server page's block: the banner and the widget, with HTML, BBCode and Markdown to
/// copy, and the server's Atom feed. The snippets name this site's paths; the page's script
/// puts the site's address (`location.origin`) before them, which only the browser knows
/// for sure behind a proxy.
pub(super) fn snippets(site: &Site, addr: &str) -> Markup {
    let seg = addr_segment(addr);
    let banner = site.url(&format!("/server/{seg}/banner.png"));
    let svg = site.url(&format!("/server/{seg}/banner.svg"));
    let widget = site.url(&format!("/server/{seg}/widget"));
    let feed = site.url(&format!("/server/{seg}/feed.atom"));
    let page = site.url(&format!("/server/{seg}"));
    let items = [
        (
            "HTML",
            format!("<a href=\"{page}\"><img src=\"{banner}\" width=\"468\" height=\"60\" alt=\"{addr}\"></a>"),
        ),
        ("BBCode", format!("[url={page}][img]{banner}[/img][/url]")),
        ("Markdown", format!("[![{addr}]({banner})]({page})")),
        (
            "Widget (iframe)",
            format!("<iframe src=\"{widget}\" width=\"300\" height=\"220\" style=\"border:0\" title=\"{addr}\"></iframe>"),
        ),
    ];
    html! {
        details.embed #embed open {
            summary { h2 { "Banner, widget and feed" } }
            p { img src=(banner) width="468" height="60" alt="this server's banner"; }
            p {
                "Sizes: "
                @for (i, (w, h)) in banner::SIZES.iter().enumerate() {
                    @if i > 0 { ", " }
                    a href={ (banner) "?size=" (w) "x" (h) } { (w) "×" (h) }
                }
                " (PNG), or " a href=(svg) { "SVG" } "; " code { "colors=0" } " for the name without its colours. "
                a href=(widget) { "The widget" } " shows the live numbers in a frame. "
                a href=(feed) type="application/atom+xml" { "Watch this server" } " (Atom: up and down, maps, joins and leaves)."
            }
            @for (label, text) in &items {
                label { (label) textarea readonly rows="2" { (text) } }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_checked() {
        let q = |size: Option<&str>, colors: Option<&str>| EmbedQuery {
            size: size.map(str::to_string),
            colors: colors.map(str::to_string),
        };
        assert_eq!(q(None, None).check().ok(), Some(((468, 60), true)));
        assert_eq!(
            q(Some("350x20"), Some("0")).check().ok(),
            Some(((350, 20), false))
        );
        assert!(q(Some("10000x10000"), None).check().is_err());
        assert!(q(Some("468x60"), Some("yes")).check().is_err());
    }

    /// An answer is served for its round only, and the cache never holds more than its room.
    #[test]
    fn the_cache_is_per_round_and_bounded() {
        let e = Embeds::new();
        let key = |i: usize| (format!("127.0.0.1:{i}"), Kind::Svg, (468, 60), true);
        let made = |round| Cached {
            round,
            etag: "W/\"x\"".into(),
            body: Bytes::from_static(b"<svg/>"),
        };
        e.put(key(0), made(10));
        assert!(e.get(&key(0), 10).is_some());
        assert!(e.get(&key(0), 11).is_none(), "the next round makes it anew");
        for i in 0..CACHE_ROOM * 2 + 1 {
            e.put(key(i), made(10));
            let held = e.cache.lock().unwrap().len();
            assert!(held <= CACHE_ROOM, "{held}");
        }
    }

    /// A host past its burst waits; another network is served meanwhile.
    #[test]
    fn a_flooding_host_waits_and_another_network_is_served() {
        let e = Embeds::new();
        let flood: IpAddr = "192.0.2.7".parse().unwrap();
        let other: IpAddr = "198.51.100.9".parse().unwrap();
        let taken = (0..1000).filter(|_| e.admit(flood).is_ok()).count();
        assert!(taken >= HOST_RATE.burst as usize && taken < 60, "{taken}");
        assert!(e.admit(flood).is_err());
        assert!(e.admit(other).is_ok());
    }
}
