//! "Watch this server" and "watch this player" as Atom feeds (RFC 4287), written with
//! `atom_syndication` (which escapes every text): `/server/{addr}/feed.atom`, the server's
//! events of the last week or the history kept (up and down, map changes, joins and leaves:
//! [`crate::store::ServerEvent`]), and `/player/{id}/feed.atom`, the player's latest
//! sessions. Both are linked from their pages (`<link rel="alternate">`), and share the
//! embeds' request rate (`embed.rs`).
//!
//! Entry ids are stable: a `urn:uuid:` made from what the entry is (the server, the kind,
//! the time, the player and the session's start), so a reader never sees an entry twice.
//! Names are shown without their colours; every text has the characters XML cannot hold
//! removed ([`super::banner::xml_text`]).

use atom_syndication::{Entry, Feed, FixedDateTime, Link, Person, Text as AtomText};
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Extension;
use maud::{html, Markup};
use sha2::{Digest, Sha256};

use super::api::window_since;
use super::banner::xml_text;
use super::embed::{refused, Client, Embeds};
use super::format::duration_text;
use super::pages::addr_segment;
use super::{not_found, AppState, Site, WebError};
use crate::store::{EventKind, ServerEvent};

/// Entries a feed holds at most.
pub const FEED_ENTRIES: i64 = 50;

/// The media type of the feeds.
pub const ATOM: &str = "application/atom+xml";

/// A server's feed's path.
pub fn server_feed(site: &Site, addr: &str) -> String {
    site.url(&format!("/server/{}/feed.atom", addr_segment(addr)))
}

/// A player's feed's path.
pub fn player_feed(site: &Site, id: i64) -> String {
    site.url(&format!("/player/{id}/feed.atom"))
}

/// The `<link rel="alternate">` a server's page names its feed with (in its head).
pub(super) fn server_head(site: &Site, addr: &str) -> Markup {
    alternate(&server_feed(site, addr), "this server's events")
}

/// The `<link rel="alternate">` a player's page names its feed with.
pub(super) fn player_head(site: &Site, id: i64) -> Markup {
    alternate(&player_feed(site, id), "this player's sessions")
}

fn alternate(href: &str, title: &str) -> Markup {
    html! { link rel="alternate" type=(ATOM) href=(href) title=(title); }
}

/// A stable entry id: a UUID (version 8, RFC 9562) of the SHA-256 of `key`.
fn urn(key: &str) -> String {
    let d = Sha256::digest(key.as_bytes());
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "urn:uuid:{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// A Unix-ms time as Atom's date.
fn date(ms: i64) -> FixedDateTime {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .fixed_offset()
}

fn link(href: String, rel: &str) -> Link {
    Link {
        href,
        rel: rel.into(),
        mime_type: (rel == "self").then(|| ATOM.to_string()),
        ..Link::default()
    }
}

fn entry(id: String, title: String, at: i64, href: String) -> Entry {
    Entry {
        id,
        title: AtomText::plain(title),
        updated: date(at),
        links: vec![link(href, "alternate")],
        ..Entry::default()
    }
}

fn feed(st: &AppState, id: String, title: String, page: String, own: String) -> Feed {
    Feed {
        id,
        title: AtomText::plain(title),
        authors: vec![Person {
            name: xml_text(&st.site.title),
            ..Person::default()
        }],
        links: vec![link(page, "alternate"), link(own, "self")],
        ..Feed::default()
    }
}

fn atom(mut f: Feed, entries: Vec<Entry>, fallback: i64) -> Response {
    f.updated = entries
        .iter()
        .map(|e| e.updated)
        .max()
        .unwrap_or_else(|| date(fallback));
    f.entries = entries;
    (
        [(header::CONTENT_TYPE, "application/atom+xml; charset=utf-8")],
        f.to_string(),
    )
        .into_response()
}

/// What an event says, for a server called `server`.
fn event_title(server: &str, e: &ServerEvent) -> String {
    let who = |w: &crate::store::Who| {
        let bot = if w.is_bot == Some(true) { " (bot)" } else { "" };
        format!("{}{bot}", xml_text(&w.name_text().display()))
    };
    match &e.kind {
        EventKind::Up => format!("{server} is up"),
        EventKind::Down => format!("{server} is down"),
        EventKind::Map { map, gametype } => match gametype {
            Some(g) => format!("{server}: map {} ({})", xml_text(map), xml_text(g)),
            None => format!("{server}: map {}", xml_text(map)),
        },
        EventKind::Join(w) => format!("{} joined {server}", who(w)),
        EventKind::Leave(w) => format!("{} left {server}", who(w)),
    }
}

/// `GET /server/{addr}/feed.atom`.
pub(super) async fn server_feed_atom(
    State(st): State<AppState>,
    Extension(embeds): Extension<Arc<Embeds>>,
    client: Client,
    Path(addr): Path<String>,
) -> Result<Response, WebError> {
    if let Some(r) = refused(&embeds, client) {
        return Ok(r);
    }
    let Some(s) = st.store.server(&addr).await? else {
        return Err(not_found("server"));
    };
    let since = window_since(st.site.retention_hours, 24.0 * 7.0);
    let events = st.store.server_events(s.id, since, FEED_ENTRIES).await?;
    let name = match &s.name_raw {
        Some(_) => xml_text(&s.name_text().display()),
        None => s.addr.clone(),
    };
    let page = st.site.url(&format!("/server/{}", addr_segment(&s.addr)));
    let entries = events
        .iter()
        .map(|e| {
            let (kind, who) = match &e.kind {
                EventKind::Up => ("up", None),
                EventKind::Down => ("down", None),
                EventKind::Map { .. } => ("map", None),
                EventKind::Join(w) => ("join", Some(w)),
                EventKind::Leave(w) => ("leave", Some(w)),
            };
            let key = match who {
                Some(w) => format!(
                    "server/{}/{kind}/{}/{}/{}",
                    s.addr, e.at, w.player_id, w.joined
                ),
                None => format!("server/{}/{kind}/{}", s.addr, e.at),
            };
            entry(urn(&key), event_title(&name, e), e.at, page.clone())
        })
        .collect();
    let f = feed(
        &st,
        urn(&format!("server/{}", s.addr)),
        format!("{name} — {}", xml_text(&st.site.title)),
        page,
        server_feed(&st.site, &s.addr),
    );
    Ok(atom(f, entries, s.first_seen))
}

/// `GET /player/{id}/feed.atom`.
pub(super) async fn player_feed_atom(
    State(st): State<AppState>,
    Extension(embeds): Extension<Arc<Embeds>>,
    client: Client,
    Path(id): Path<String>,
) -> Result<Response, WebError> {
    if let Some(r) = refused(&embeds, client) {
        return Ok(r);
    }
    let id: i64 = id.parse().map_err(|_| not_found("player"))?;
    let Some(p) = st.store.player(id, FEED_ENTRIES).await? else {
        return Err(not_found("player"));
    };
    // A bot has no player page, and so no feed to watch (its page needs `bots=1`).
    if p.is_bot {
        return Err(not_found("player"));
    }
    let name = xml_text(&p.name_text().display());
    let entries = p
        .sessions
        .iter()
        .map(|s| {
            let server = match s.server_name_text() {
                Some(t) => xml_text(&t.display()),
                None => s.addr.clone(),
            };
            let (title, at) = match s.left {
                Some(l) => (
                    format!("{name} played on {server} for {}", duration_text(s.seconds)),
                    l,
                ),
                None => (format!("{name} is playing on {server}"), s.joined),
            };
            // The same session keeps its id when it closes; its title and time change.
            let key = format!("player/{id}/session/{}/{}", s.addr, s.joined);
            let href = st.site.url(&format!("/server/{}", addr_segment(&s.addr)));
            entry(urn(&key), title, at, href)
        })
        .collect();
    let f = feed(
        &st,
        urn(&format!("player/{id}")),
        format!("{name} — {}", xml_text(&st.site.title)),
        st.site.url(&format!("/player/{id}")),
        player_feed(&st.site, id),
    );
    Ok(atom(f, entries, p.first_seen))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_uuids() {
        let a = urn("server/127.0.0.1:27960/up/1");
        assert_eq!(a, urn("server/127.0.0.1:27960/up/1"));
        assert_ne!(a, urn("server/127.0.0.1:27960/up/2"));
        assert_eq!(a.len(), "urn:uuid:".len() + 36);
        assert_eq!(&a[9 + 14..9 + 15], "8", "{a}");
    }
}
