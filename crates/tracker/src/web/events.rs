//! `GET /api/events`: the rounds' events as Server-Sent Events (`id: BOOT-N`, `event: <kind>`,
//! `data:` the event's JSON), the stream opening with a `retry:` hint.
//!
//! Filters (each may be repeated or comma-separated, except `player`, repeated only; an event
//! passes when it matches one value of every filter given): `server=IP:PORT`, `game=ID` (a
//! registry id or alias), `kind=server_down,map_changed`, `player=NAME` (a player's
//! `player_joined`/`player_left` by its name, colours stripped, case-insensitive). Every
//! value is checked: an unknown game or kind, an address that is not `IP:PORT`, an empty
//! value is a 400 naming it.
//!
//! Resume: a client that sends `Last-Event-ID` (browsers' `EventSource` do when they
//! reconnect; `?last_event_id=` for the first connection) gets the events after it still kept
//! ([`crate::events::replay`]), then the live ones; when some are gone, or the id is not this
//! tracker's (it restarted), `event: lagged` with `{"missed": n}` (`null`: unknown) first.
//!
//! A client that falls more than [`crate::events::SSE_BUFFER`] events behind gets
//! `event: lagged` and goes on from the oldest event kept; at most `sse_max_clients` clients
//! at once, and per client `[web] sse_max_per_host` and `sse_max_per_network`: others are
//! answered 503. The client is the one the web guard names
//! ([`fragstat_http_guard::ClientAddr`]). Keep-alive comments every 15 s; the stream ends when
//! the tracker stops, and the web guard closes every connection after its `max_lifetime`
//! (EventSource clients reconnect by themselves, and resume).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use fragstat::events::EventKind;
use tokio::sync::broadcast::error::RecvError;

use super::{AppState, WebError};
use crate::events::Published;

/// The `retry:` hint: how long a browser waits before reconnecting.
pub const RETRY: Duration = Duration::from_secs(5);
/// Values a filter takes at most.
pub const MAX_VALUES: usize = 100;
/// The query parameters `/api/events` takes.
pub const PARAMETERS: [&str; 5] = ["server", "game", "kind", "player", "last_event_id"];

/// A checked filter: each list empty when not given.
#[derive(Debug, Default)]
struct Filter {
    servers: Vec<String>,
    games: Vec<String>,
    kinds: Vec<&'static str>,
    /// Lower-cased names.
    players: Vec<String>,
}

fn bad(msg: String) -> WebError {
    WebError(StatusCode::BAD_REQUEST, msg)
}

impl Filter {
    /// The filter and the `last_event_id` of a query string.
    fn parse(query: &str) -> Result<(Filter, Option<String>), WebError> {
        let mut f = Filter::default();
        let mut last = None;
        for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
            if v.is_empty() {
                return Err(bad(format!(
                    "{k}=: empty (leave the parameter out instead)"
                )));
            }
            let values: Vec<&str> = if k == "player" {
                vec![v.as_ref()]
            } else {
                v.split(',').collect()
            };
            for one in values {
                f.add(&k, one.trim(), &mut last)?;
            }
        }
        Ok((f, last))
    }

    fn add(&mut self, key: &str, v: &str, last: &mut Option<String>) -> Result<(), WebError> {
        let count = self.servers.len() + self.games.len() + self.kinds.len() + self.players.len();
        if count >= MAX_VALUES {
            return Err(bad(format!(
                "{key}: at most {MAX_VALUES} filter values in all"
            )));
        }
        match key {
            "server" => match v.parse::<std::net::SocketAddr>() {
                Ok(a) if a.port() != 0 => self.servers.push(a.to_string()),
                _ => return Err(bad(format!("server={v:?}: an IP:PORT ([v6]:port)"))),
            },
            "game" => match fragstat::game(v) {
                Some(g) => self.games.push(g.id().to_string()),
                None => {
                    return Err(bad(format!(
                        "game={v:?}: not a game id (see `fragstat games`)"
                    )))
                }
            },
            "kind" => match EventKind::NAMES.iter().copied().find(|n| *n == v) {
                Some(n) => self.kinds.push(n),
                None => {
                    return Err(bad(format!(
                        "kind={v:?}: one of {}",
                        EventKind::NAMES.join(", ")
                    )))
                }
            },
            "player" if v.len() <= 64 => self.players.push(v.to_lowercase()),
            "player" => return Err(bad("player: at most 64 bytes".into())),
            "last_event_id" => *last = Some(v.to_string()),
            other => {
                return Err(bad(format!(
                    "unknown parameter {other:?}: /api/events takes {}",
                    PARAMETERS.join(", ")
                )))
            }
        }
        Ok(())
    }

    fn passes(&self, p: &Published) -> bool {
        let e = &p.event;
        let player = match &e.kind {
            EventKind::PlayerJoined(pl) | EventKind::PlayerLeft(pl) => Some(pl),
            _ => None,
        };
        (self.servers.is_empty() || self.servers.contains(&e.server))
            && (self.games.is_empty() || self.games.contains(&e.game))
            && (self.kinds.is_empty() || self.kinds.contains(&e.kind.name()))
            && (self.players.is_empty()
                || player
                    .is_some_and(|pl| self.players.contains(&pl.name.display().to_lowercase())))
    }
}

/// The event number of a `Last-Event-ID` (`BOOT-N`): `Ok(n)` for this tracker's, `Err(())`
/// for another's (or a made-up one).
fn last_id(text: &str, boot: i64) -> Result<u64, ()> {
    let (b, n) = text.trim().split_once('-').ok_or(())?;
    if b.parse::<i64>() != Ok(boot) {
        return Err(());
    }
    n.parse().map_err(|_| ())
}

fn frame(p: &Published, boot: i64) -> SseEvent {
    SseEvent::default()
        .id(format!("{boot}-{}", p.id))
        .event(p.event.kind.name())
        .data(p.json.as_str())
}

fn lagged(missed: Option<u64>) -> SseEvent {
    let n = missed.map_or_else(|| "null".to_string(), |n| n.to_string());
    SseEvent::default()
        .event("lagged")
        .data(format!("{{\"missed\":{n}}}"))
}

/// `GET /api/events`.
pub(super) async fn api_events(
    State(st): State<AppState>,
    client: Option<axum::Extension<fragstat_http_guard::ClientAddr>>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let (filter, query_last) = match Filter::parse(uri.query().unwrap_or_default()) {
        Ok(f) => f,
        Err(e) => return e.into_response(),
    };
    // The header (a browser reconnecting) is newer than the URL it was opened with.
    let last = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or(query_last);
    let ip = client.map(|axum::Extension(c)| c.0.ip());
    let Some(place) = st.events.client(ip) else {
        let mut r = WebError(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many event streams open; try again later".into(),
        )
        .into_response();
        r.headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("30"));
        return r;
    };
    let hub = st.events.clone();
    let boot = hub.boot();
    let mut first = vec![SseEvent::default().retry(RETRY)];
    let (backlog, rx, skip_to) = match last.as_deref().map(|l| last_id(l, boot)) {
        None => (Vec::new(), hub.subscribe(), 0),
        Some(parsed) => {
            let resume = hub.resume(parsed.unwrap_or(0));
            let missed = if parsed.is_ok() { resume.missed } else { None };
            if missed != Some(0) {
                first.push(lagged(missed));
            }
            let end = resume.backlog.last().map_or(0, |p| p.id);
            (resume.backlog, resume.live, end)
        }
    };
    first.extend(
        backlog
            .iter()
            .filter(|p| filter.passes(p))
            .map(|p| frame(p, boot)),
    );
    let stopped = Box::pin(hub.stopped());
    let filter = Arc::new(filter);
    let head = futures_util::stream::iter(first.into_iter().map(Ok::<_, Infallible>));
    // The place is held by the stream: dropped with it when the client goes.
    let live = futures_util::stream::unfold(
        (rx, stopped, place, hub, filter),
        move |(mut rx, mut stopped, place, hub, filter)| async move {
            loop {
                let r = tokio::select! {
                    r = rx.recv() => r,
                    () = &mut stopped => return None,
                };
                let ev = match r {
                    Ok(p) if p.id > skip_to && filter.passes(&p) => frame(&p, boot),
                    Ok(_) => continue,
                    Err(RecvError::Lagged(n)) => {
                        hub.lagged(n);
                        lagged(Some(n))
                    }
                    Err(RecvError::Closed) => return None,
                };
                return Some((Ok::<_, Infallible>(ev), (rx, stopped, place, hub, filter)));
            }
        },
    );
    use futures_util::StreamExt as _;
    Sse::new(head.chain(live))
        .keep_alive(KeepAlive::default())
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_are_checked_and_ids_parsed() {
        let ok = |q: &str| Filter::parse(q).map(|(f, l)| (format!("{f:?}"), l));
        let (f, last) = ok("server=127.0.0.1:27960,[::1]:27960&game=q3a&kind=map_changed&player=Foo%2C+Bar&last_event_id=5-3").unwrap();
        assert!(f.contains("\"127.0.0.1:27960\", \"[::1]:27960\""), "{f}");
        assert!(
            f.contains("games: [\"q3\"]"),
            "an alias read as its id: {f}"
        );
        assert!(f.contains("\"foo, bar\""), "{f}");
        assert_eq!(last.as_deref(), Some("5-3"));
        for (q, says) in [
            ("kind=", "kind"),
            ("kind=nope", "kind"),
            ("server=notanaddr", "server"),
            ("server=127.0.0.1:99999", "server"),
            ("server=127.0.0.1:0", "server"),
            ("game=nosuch", "game"),
            ("gmae=q3", "gmae"),
        ] {
            let e = Filter::parse(q).unwrap_err();
            assert_eq!(e.0, StatusCode::BAD_REQUEST);
            assert!(e.1.contains(says), "{q}: {}", e.1);
        }
        let many = vec!["kind=server_up"; MAX_VALUES + 1].join("&");
        assert!(Filter::parse(&many).is_err());
        assert_eq!(last_id("17-42", 17), Ok(42));
        assert_eq!(last_id("18-42", 17), Err(()));
        assert_eq!(last_id("42", 17), Err(()));
        assert_eq!(last_id("17-x", 17), Err(()));
    }
}
