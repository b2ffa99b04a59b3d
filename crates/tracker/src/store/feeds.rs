//! What the Atom feeds read (`web/feeds.rs`): a server's events since a time, newest first —
//! it came up or went down, its map changed (from `server_changes`, keyed by the server and
//! the time), players joined and left (from the latest [`SESSION_WINDOW`] sessions of the
//! whole site: an index range on the sessions' key, so a feed costs the same however long
//! the history is; a server's older joins are not in its feed).

use sqlx::Row;

use super::{Store, StoreError};

/// The latest sessions (site-wide, by id) a server's feed looks through for its joins and
/// leaves.
pub const SESSION_WINDOW: i64 = 50_000;

/// What happened.
#[derive(Debug, Clone, PartialEq)]
pub enum EventKind {
    /// It answered again (or for the first time in the window).
    Up,
    /// It stopped answering.
    Down,
    /// It changed map while up.
    Map {
        /// The new map.
        map: String,
        /// Its game type, where known.
        gametype: Option<String>,
    },
    /// A player joined.
    Join(Who),
    /// A player left.
    Leave(Who),
}

/// A player in an event.
#[derive(Debug, Clone, PartialEq)]
pub struct Who {
    /// The player's id.
    pub player_id: i64,
    /// The name's bytes, lossless.
    pub name_raw: Vec<u8>,
    /// How to show the name.
    pub dialect: String,
    /// Whether it is a bot, where known.
    pub is_bot: Option<bool>,
    /// When the session started (with `player_id`, what names the session).
    pub joined: i64,
}

impl Who {
    /// The name, for display.
    pub fn name_text(&self) -> fragstat::core::model::Text {
        super::text_of(self.name_raw.clone(), Some(&self.dialect))
    }
}

/// One event of a server.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerEvent {
    /// When (Unix ms): the round it was seen in.
    pub at: i64,
    /// What.
    pub kind: EventKind,
}

impl Store {
    /// The events of the server `id` since `since` (Unix ms), newest first, at most `limit`.
    pub async fn server_events(
        &self,
        id: i64,
        since: i64,
        limit: i64,
    ) -> Result<Vec<ServerEvent>, StoreError> {
        let limit = limit.clamp(0, 1000);
        let mut out = self.change_events(id, since, limit).await?;
        out.extend(self.session_events(id, since, limit).await?);
        out.sort_by_key(|e| std::cmp::Reverse(e.at));
        out.truncate(usize::try_from(limit).unwrap_or(0));
        Ok(out)
    }

    /// Up, down and map events from the server's changes: each change against the one
    /// before it (the oldest change read is only the baseline).
    async fn change_events(
        &self,
        id: i64,
        since: i64,
        limit: i64,
    ) -> Result<Vec<ServerEvent>, StoreError> {
        let rows = self
            .fetch_all(
                sqlx::query(
                    "SELECT at, online, map, gametype FROM server_changes \
                     WHERE server_id = $1 AND at >= $2 ORDER BY at DESC LIMIT $3",
                )
                .bind(id)
                .bind(since)
                .bind(limit + 1),
            )
            .await?;
        let mut changes = Vec::with_capacity(rows.len());
        for r in &rows {
            let at: i64 = r.try_get("at")?;
            let online: i64 = r.try_get("online")?;
            let map: Option<String> = r.try_get("map")?;
            let gametype: Option<String> = r.try_get("gametype")?;
            changes.push((at, online != 0, map, gametype));
        }
        changes.reverse();
        let mut out = Vec::new();
        for pair in changes.windows(2) {
            let [(_, was_up, was_map, _), (at, up, map, gametype)] = pair else {
                continue;
            };
            let kind = match (*was_up, *up) {
                (false, true) => EventKind::Up,
                (true, false) => EventKind::Down,
                (true, true) if map != was_map => EventKind::Map {
                    map: map.clone().unwrap_or_default(),
                    gametype: gametype.clone(),
                },
                _ => continue,
            };
            out.push(ServerEvent { at: *at, kind });
        }
        Ok(out)
    }

    /// Joins and leaves of the server's sessions among the site's latest
    /// [`SESSION_WINDOW`].
    async fn session_events(
        &self,
        id: i64,
        since: i64,
        limit: i64,
    ) -> Result<Vec<ServerEvent>, StoreError> {
        let rows = self
            .fetch_all(
                sqlx::query(
                    "SELECT s.player_id, s.joined, s.left_at, s.is_bot, p.name_raw, p.dialect \
                     FROM sessions s JOIN players p ON p.id = s.player_id \
                     WHERE s.id IN (SELECT id FROM sessions ORDER BY id DESC LIMIT $3) \
                     AND s.server_id = $1 AND (s.joined >= $2 OR s.left_at >= $2) \
                     ORDER BY s.id DESC LIMIT $4",
                )
                .bind(id)
                .bind(since)
                .bind(SESSION_WINDOW)
                .bind(limit),
            )
            .await?;
        let mut out = Vec::with_capacity(rows.len() * 2);
        for r in &rows {
            let is_bot: Option<i64> = r.try_get("is_bot")?;
            let who = Who {
                player_id: r.try_get("player_id")?,
                name_raw: r.try_get("name_raw")?,
                dialect: r.try_get("dialect")?,
                is_bot: is_bot.map(|b| b != 0),
                joined: r.try_get("joined")?,
            };
            let left: Option<i64> = r.try_get("left_at")?;
            if let Some(l) = left.filter(|l| *l >= since) {
                out.push(ServerEvent {
                    at: l,
                    kind: EventKind::Leave(who.clone()),
                });
            }
            if who.joined >= since {
                out.push(ServerEvent {
                    at: who.joined,
                    kind: EventKind::Join(who),
                });
            }
        }
        Ok(out)
    }
}
