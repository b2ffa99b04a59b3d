//! Writing: what changed in a round, on the writer's own connection, in one transaction.
//!
//! The writer keeps in memory what the database says now — every server's id, last state and
//! open player sessions — loaded from the database when it first writes (so a restarted
//! tracker continues where the last one stopped). A round then writes only:
//!
//! - one `series` row per server (its numbers this round), appended at the table's end (its
//!   key is the round first), and the same numbers as the server's `server_latest` row,
//! - a `server_changes` row and a `servers` upsert for each server whose state changed (name,
//!   map, gametype, slots, password, up/down, status, record, country); the browser's numbers
//!   (last seen, players, bots, ping) are read from `server_latest`, so an unchanged
//!   server's row is not written at all,
//! - the sessions that opened (and their players' identities) and closed,
//! - the scores and last-seen times of a rotating `1/flush_rounds` of the open sessions,
//! - the round's row.
//!
//! A round is planned first ([`plan`], pure: plan.rs and sessions.rs decide everything,
//! tested without a database), then its plan is written in the transaction ([`apply`]), and
//! once committed the writer's memory follows it ([`State::commit`]). Each row the plan holds
//! is a typed struct that owns its column names and values (rows.rs).
//!
//! Numbers go into the statements as SQL literals (an `i64` or a finite `f64` written by
//! Rust cannot inject anything), so a statement of 500 rows costs the parser, not 3,000
//! bound values through sqlx's `Any` layer; text and bytes are always bound.

use fragstat::events::Event;

use super::{PlayerRow, RoundData, Store, StoreError};

mod apply;
mod plan;
mod record;
mod rows;
mod sessions;
mod sql;
mod state;
#[cfg(test)]
mod tests;
pub(super) use apply::apply;
pub(super) use plan::*;
pub(super) use record::*;
pub use record::{
    cap_record, stored_record, MAX_NAME_BYTES, MAX_PLAYERS, MAX_RECORD_BYTES, MAX_WARNINGS,
};
pub(super) use rows::*;
pub(super) use sql::*;
pub(super) use state::*;

/// The default churn budget: new players a server may bring in one round
/// (`[history] new_players_per_round`).
pub const NEW_PLAYERS_PER_ROUND: usize = 32;

/// What a written round gives the rest of the tracker.
#[derive(Debug, Default)]
pub struct RoundWritten {
    /// The players' joins and leaves: exactly the sessions the round opened and closed, in
    /// the records' order, each server's leaves before its joins (none in the first round
    /// after the tracker starts: the baseline).
    pub events: Vec<Event>,
    /// Players not stored: new to their server past its churn budget this round.
    pub churn_refused: u64,
}

/// The players now, for the pages: each listed server's players (those with a session),
/// and the servers that answered without saying who plays (they keep the last list).
pub(super) fn live(plan: &RoundPlan<'_>, ids: &Ids) -> (Live, Vec<String>) {
    let at = plan.at;
    let mut live = Live::with_capacity(plan.live.len());
    for l in &plan.live {
        let Some(ps) = plan.servers.get(l.server.0) else {
            continue;
        };
        let Some(list) = ps.rec.info.as_ref().and_then(listed) else {
            continue;
        };
        let mut rows = Vec::with_capacity(l.slots.len());
        for (slot, pl) in l.slots.iter().zip(list) {
            let known = match *slot {
                Slot::Known {
                    player_id,
                    joined,
                    is_bot,
                    ..
                } => Some((player_id, joined, is_bot)),
                Slot::Opened(o) => plan
                    .opens
                    .get(o)
                    .and_then(|o| ids.players.get(o.player.0).copied().flatten())
                    .map(|id| (id, at, pl.is_bot)),
                Slot::Refused => None,
            };
            let Some((player_id, joined, is_bot)) = known else {
                continue;
            };
            rows.push(PlayerRow {
                player_id,
                addr: ps.addr.to_string(),
                at,
                joined,
                clan_raw: pl.clan.as_ref().map(|c| capped(c.as_bytes())),
                name_raw: capped(pl.name.as_bytes()),
                dialect: dialect_str(pl.name.dialect()).to_string(),
                score: pl.score.map(i64::from),
                ping: pl.ping.map(i64::from),
                team: pl.team.map(i64::from),
                is_bot,
            });
        }
        live.insert(ps.addr.to_string(), rows);
    }
    (live, plan.unlisted.clone())
}

impl Store {
    /// Writes one round in one transaction on the writer's own connection (never the
    /// readers' pool): what changed since the last round, and the round's series (module
    /// docs). Fails only when the database does; the next round then reloads what the
    /// database holds.
    pub async fn write_round(&self, round: &RoundData) -> Result<RoundWritten, StoreError> {
        let mut w = self.writer.lock().await;
        let params = self.write_params();
        let opt_out = self.opt_out();
        match w.write(round, params, &opt_out, &self.pool).await {
            Ok(((mut live, unlisted), written)) => {
                if let Ok(mut l) = self.live.write() {
                    // Servers whose players are unknown this round keep the last list seen
                    // (less the names opted out since).
                    for addr in unlisted {
                        if let Some(mut old) = l.remove(&addr) {
                            old.retain(|p| !opt_out.matches(&p.name_text()));
                            live.insert(addr, old);
                        }
                    }
                    *l = live;
                }
                Ok(written)
            }
            Err(e) => {
                w.reset();
                Err(e)
            }
        }
    }

    /// Deletes rounds, series, changes and sessions older than `before` (Unix ms), players and
    /// servers not seen since; in one transaction. Returns the rows deleted. (A round's
    /// maintenance, [`Store::maintain`], keeps each table for its own time.)
    pub async fn prune(&self, before: i64) -> Result<u64, StoreError> {
        self.prune_tables(&super::Retention::all(before)).await
    }
}
