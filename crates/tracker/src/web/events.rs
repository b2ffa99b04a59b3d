//! `GET /api/events`: the rounds' events as Server-Sent Events (`event: <kind>`, `data:` the
//! event's JSON), optionally filtered by `?server=`, `?game=` and `?kind=` (kinds
//! comma-separated). Keep-alive comments every 15 s. A client that falls more than
//! [`crate::events::SSE_BUFFER`] events behind gets `event: lagged` with `{"missed": n}` and
//! goes on from the oldest event kept; at most `sse_max_clients` clients at once, and per
//! client `[web] sse_max_per_host` (IPv4 address, IPv6 /64) and `sse_max_per_network`
//! (IPv4 /24 and /16, IPv6 /56, /48 and /32): others are answered 503. The client is the one
//! the web guard names ([`fragstat_http_guard::ClientAddr`]: behind a trusted proxy, the
//! address its header gives). The stream ends when the tracker stops; the web guard closes every
//! connection after its `max_lifetime` (EventSource clients reconnect by themselves).

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{header, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use fragstat::events::EventKind;
use serde::Deserialize;
use tokio::sync::broadcast::error::RecvError;

use super::AppState;
use crate::events::Published;

/// `/api/events` filters.
#[derive(Debug, Deserialize, Default)]
pub struct EventsQuery {
    /// Only this server's events (`ip:port`).
    pub server: Option<String>,
    /// Only this game's events (registry id).
    pub game: Option<String>,
    /// Only these kinds, comma-separated (`server_down,map_changed`).
    pub kind: Option<String>,
}

/// A checked filter.
struct Filter {
    server: Option<String>,
    game: Option<String>,
    kinds: Option<Vec<&'static str>>,
}

impl Filter {
    fn new(q: EventsQuery) -> Result<Filter, String> {
        let kinds = match &q.kind {
            None => None,
            Some(k) => Some(
                k.split(',')
                    .filter(|k| !k.is_empty())
                    .map(|k| {
                        EventKind::NAMES
                            .iter()
                            .copied()
                            .find(|n| *n == k)
                            .ok_or_else(|| {
                                format!(
                                    "unknown kind {k:?}: one of {}",
                                    EventKind::NAMES.join(", ")
                                )
                            })
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        };
        Ok(Filter {
            server: q.server,
            game: q.game,
            kinds,
        })
    }

    fn passes(&self, p: &Published) -> bool {
        self.server.as_deref().is_none_or(|s| s == p.event.server)
            && self.game.as_deref().is_none_or(|g| g == p.event.game)
            && self
                .kinds
                .as_ref()
                .is_none_or(|k| k.contains(&p.event.kind.name()))
    }
}

fn text(code: StatusCode, msg: String) -> Response {
    (
        code,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        msg,
    )
        .into_response()
}

/// `GET /api/events`.
pub(super) async fn api_events(
    State(st): State<AppState>,
    client: Option<axum::Extension<fragstat_http_guard::ClientAddr>>,
    Query(q): Query<EventsQuery>,
) -> Response {
    let filter = match Filter::new(q) {
        Ok(f) => f,
        Err(e) => return text(StatusCode::BAD_REQUEST, e),
    };
    let ip = client.map(|axum::Extension(c)| c.0.ip());
    let Some(place) = st.events.client(ip) else {
        let mut r = text(
            StatusCode::SERVICE_UNAVAILABLE,
            "too many event streams open; try again later\n".into(),
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from_static("30"));
        return r;
    };
    let rx = st.events.subscribe();
    let stopped = Box::pin(st.events.stopped());
    let hub = st.events.clone();
    let filter = Arc::new(filter);
    // The place is held by the stream: dropped with it when the client goes.
    let stream = futures_util::stream::unfold(
        (rx, stopped, place, hub, filter),
        |(mut rx, mut stopped, place, hub, filter)| async move {
            loop {
                let r = tokio::select! {
                    r = rx.recv() => r,
                    () = &mut stopped => return None,
                };
                let ev = match r {
                    Ok(p) if filter.passes(&p) => SseEvent::default()
                        .event(p.event.kind.name())
                        .data(p.json.as_str()),
                    Ok(_) => continue,
                    Err(RecvError::Lagged(n)) => {
                        hub.lagged(n);
                        SseEvent::default()
                            .event("lagged")
                            .data(format!("{{\"missed\":{n}}}"))
                    }
                    Err(RecvError::Closed) => return None,
                };
                return Some((Ok::<_, Infallible>(ev), (rx, stopped, place, hub, filter)));
            }
        },
    );
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}
