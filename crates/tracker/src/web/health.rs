//! `/healthz`, for a load balancer, a proxy's health check or a monitor: 200 with a small
//! JSON when this tracker is well, 503 when the database cannot be read or (for the writer)
//! the last round written is older than [`STALE_INTERVALS`] intervals.
//!
//! ```json
//! {"status":"ok","role":"writer","writer":true,"database":"reachable",
//!  "last_round_at":"2026-11-28T02:00:00Z","last_round_at_ms":1795831200000,
//!  "last_round_age_secs":12.5,"interval_secs":60.0}
//! ```
//!
//! A standby or a web-only tracker does not write, so an old round does not make it
//! unwell (the writer's own `/healthz` says that); its answer still gives the age.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::engine::RoleKind;

use super::AppState;

/// Intervals past which the writer's last round is too old.
pub const STALE_INTERVALS: f64 = 3.0;

/// What `/healthz` answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Health {
    /// `ok` or `unhealthy`.
    pub status: &'static str,
    /// `writer`, `standby` or `web-only`.
    pub role: RoleKind,
    /// Whether this tracker writes the rounds.
    pub writer: bool,
    /// `reachable` or `unreachable`.
    pub database: &'static str,
    /// When the last round written (by any tracker on the database) started, RFC 3339.
    pub last_round_at: Option<String>,
    /// The same in Unix ms.
    pub last_round_at_ms: Option<i64>,
    /// Its age in seconds.
    pub last_round_age_secs: Option<f64>,
    /// Seconds between rounds.
    pub interval_secs: f64,
    /// Why it is unhealthy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Health {
    /// Whether it is well (200) or not (503).
    pub fn ok(&self) -> bool {
        self.status == "ok"
    }
}

/// The health at `now` (Unix ms): `last_round` is the latest round's start as the
/// database said (`Err` when it could not be read), `role` this tracker's since
/// `role_since`.
pub fn assess(
    now: i64,
    last_round: Result<Option<i64>, String>,
    role: RoleKind,
    role_since: i64,
    interval_secs: f64,
) -> Health {
    let writer = role == RoleKind::Writer;
    let (database, last, mut reason) = match last_round {
        Ok(last) => ("reachable", last, None),
        Err(e) => (
            "unreachable",
            None,
            Some(format!("database unreachable: {e}")),
        ),
    };
    let stale_ms = (interval_secs * STALE_INTERVALS * 1000.0) as i64;
    if writer && reason.is_none() {
        // A writer that has just taken over is given its intervals from then.
        let since = last.unwrap_or(i64::MIN).max(role_since);
        if now.saturating_sub(since) > stale_ms {
            reason = Some(format!(
                "the last round is older than {STALE_INTERVALS} intervals ({interval_secs} s)"
            ));
        }
    }
    Health {
        status: if reason.is_none() { "ok" } else { "unhealthy" },
        role,
        writer,
        database,
        last_round_at: last.map(super::time_text),
        last_round_at_ms: last,
        last_round_age_secs: last.map(|at| now.saturating_sub(at) as f64 / 1000.0),
        interval_secs,
        reason,
    }
}

/// `GET /healthz`.
pub(super) async fn healthz(State(st): State<AppState>) -> Response {
    let last = match st.store.rounds(1).await {
        Ok(rows) => Ok(rows.first().map(|r| r.at)),
        Err(e) => {
            tracing::warn!("healthz: {e}");
            // The cause stays in the log: a web client is told only that it failed.
            Err("the latest round could not be read".to_string())
        }
    };
    let h = assess(
        crate::round::now_ms(),
        last,
        st.role.kind(),
        st.role.since(),
        st.site.interval_secs,
    );
    let status = if h.ok() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        serde_json::to_string(&h).unwrap_or_default(),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000;

    #[test]
    fn a_writer_is_unwell_past_three_intervals() {
        let now = 100 * MIN;
        let h = assess(now, Ok(Some(now - 2 * MIN)), RoleKind::Writer, 0, 60.0);
        assert!(h.ok(), "{h:?}");
        assert_eq!(h.last_round_age_secs, Some(120.0));
        assert!(h.writer);
        let h = assess(now, Ok(Some(now - 3 * MIN - 1)), RoleKind::Writer, 0, 60.0);
        assert!(!h.ok());
        assert!(h.reason.unwrap().contains("older than 3 intervals"));
        // No round at all, writer for an hour: unwell; writer for a minute: well.
        assert!(!assess(now, Ok(None), RoleKind::Writer, now - 60 * MIN, 60.0).ok());
        assert!(assess(now, Ok(None), RoleKind::Writer, now - MIN, 60.0).ok());
        // Just taken over after a long gap: given its intervals from then.
        assert!(assess(
            now,
            Ok(Some(now - 60 * MIN)),
            RoleKind::Writer,
            now - MIN,
            60.0
        )
        .ok());
    }

    #[test]
    fn a_standby_or_web_only_tracker_is_well_with_old_rounds() {
        let now = 100 * MIN;
        for role in [RoleKind::Standby, RoleKind::WebOnly] {
            let h = assess(now, Ok(Some(now - 60 * MIN)), role, 0, 60.0);
            assert!(h.ok(), "{h:?}");
            assert!(!h.writer);
            assert_eq!(h.last_round_age_secs, Some(3600.0));
        }
    }

    #[test]
    fn an_unreachable_database_is_unwell_for_everyone() {
        for role in [RoleKind::Writer, RoleKind::Standby, RoleKind::WebOnly] {
            let h = assess(MIN, Err("x".into()), role, 0, 60.0);
            assert!(!h.ok());
            assert_eq!(h.database, "unreachable");
            assert_eq!(h.last_round_at, None);
        }
    }
}
