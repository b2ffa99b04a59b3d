//! The server page's chart block: its window links, the chart of the window (humans, bots,
//! slots, rounds without an answer, map changes) and links to its history as JSON and to
//! its top players.

use maud::{html, Markup};

use super::api::{hours_param, window_cap, HistoryQuery};
use super::chart::{caption, chart, server_points, window_links, Chart, Mark};
use super::pages::addr_segment;
use super::{AppState, WebError};
use crate::round::now_ms;
use crate::store::ServerRow;

/// Map changes the chart marks at most.
const MARKS: i64 = 200;

/// The block for server `s`, its window from `since` (checked by the page) to now.
pub(super) async fn block(
    st: &AppState,
    s: &ServerRow,
    q: &HistoryQuery,
    since: i64,
) -> Result<Markup, WebError> {
    let now = now_ms();
    let history = st.store.history(&s.addr, since).await?;
    let spans = st.store.map_history(&s.addr, since, MARKS).await?;
    // A mark where a map began within the window (not the one in effect at its start, nor
    // the one the server had when first seen).
    let first = history.first().map_or(since, |h| h.at.max(since));
    let mut marks: Vec<Mark> = spans
        .iter()
        .filter(|m| m.from > first)
        .map(|m| Mark {
            at: m.from,
            label: m.map.clone(),
        })
        .collect();
    marks.reverse();
    let max = window_cap(st.site.retention_hours, 100.0 * 366.0 * 24.0);
    let hours = if q.since.as_deref().is_some_and(|s| !s.is_empty()) {
        0.0
    } else {
        hours_param(q.hours.as_deref(), max)?.unwrap_or(24.0)
    };
    let seg = addr_segment(&s.addr);
    let path = st.site.url(&format!("/server/{seg}"));
    Ok(html! {
        h2 { "Players over time" }
        (window_links(&path, hours, window_cap(st.site.retention_hours, 720.0)))
        (chart(&Chart {
            from: since.min(now),
            to: now,
            points: server_points(&history),
            marks,
            title: "Players over time".into(),
        }))
        (caption(since.min(now), now))
        p {
            a href=(st.site.url(&format!("/api/servers/{seg}/history"))) { "history as JSON" }
            " · "
            a href=(st.site.url(&format!("/top?server={seg}"))) { "top players" }
        }
    })
}
