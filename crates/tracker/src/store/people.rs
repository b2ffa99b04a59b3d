//! The players: the search, a player's page, which players are bots, and forgetting a
//! player (the opt-out, docs/tracker.md "Privacy").

use sqlx::Row;

use super::read::{bool_of, contains_pattern, fts_phrase, SESSION_END};
use super::{Backend, PlayerHit, PlayerProfile, SessionRow, Store, StoreError};

/// Most rows a search reads for its pages: `offset + limit` at most this.
pub const MAX_SEARCH_DEPTH: i64 = 5_000;

/// Most sessions a player's page lists.
const MAX_ROWS: i64 = 20_000;

/// Whether player `p` is a bot: at least one of its sessions kept is a bot's and none is a
/// human's or unknown (a name a bot and a human share is a person's).
pub const BOT_PLAYER: &str = "(EXISTS (SELECT 1 FROM sessions b WHERE b.player_id = p.id \
     AND b.is_bot = 1) AND NOT EXISTS (SELECT 1 FROM sessions h WHERE h.player_id = p.id \
     AND COALESCE(h.is_bot, 0) = 0))";

/// A player search ([`Store::search_players`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlayerSearch<'a> {
    /// Name contains (colours stripped, case-insensitive).
    pub text: &'a str,
    /// Seen since (Unix ms).
    pub since: i64,
    /// Most hits.
    pub limit: i64,
    /// Hits skipped (earlier pages').
    pub offset: i64,
    /// Bots too.
    pub bots: bool,
}

/// What forgetting a name deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Forgotten {
    /// Player identities (the name in every dialect it was seen in).
    pub players: u64,
    /// Their sessions.
    pub sessions: u64,
}

/// A name as the opt-out and the `players.name` column compare it: colours stripped, lower
/// case (and NUL as U+FFFD, as stored).
pub fn name_key(shown: &str) -> String {
    shown.to_lowercase().replace('\0', "\u{FFFD}")
}

impl Store {
    /// "Where is X playing": distinct players seen since `since` (Unix ms) whose name
    /// (colours stripped) contains `q`, case-insensitively; most recently seen first, at most
    /// `limit`. A search of the player identities, not of every sighting. The players are
    /// walked by last sighting, newest first (in SQLite reading the names from the
    /// `(last_seen, name)` index itself): for text of 3 characters or more only the newest
    /// 100,000 (PostgreSQL, which reads the rows: 20,000) — common text finds its hits there —
    /// then, when they hold fewer than `limit` hits, the trigram index gives every match
    /// (SQLite's FTS5 table, PostgreSQL's `pg_trgm` index of `players_search`). Shorter text,
    /// which no trigram index answers, walks the whole window in SQLite; in PostgreSQL it
    /// walks the newest 20,000, then scans the players.
    ///
    /// `bots`: also the players every kept session of which was a bot's ([`BOT_PLAYER`]),
    /// left out otherwise; `offset` hits skipped (a page's), at most [`MAX_SEARCH_DEPTH`]
    /// rows read in all.
    pub async fn search_players(&self, s: &PlayerSearch<'_>) -> Result<Vec<PlayerHit>, StoreError> {
        let q = s.text;
        let since = s.since;
        let offset = s.offset.clamp(0, MAX_SEARCH_DEPTH);
        let limit = s.limit.max(0).min(MAX_SEARCH_DEPTH - offset);
        // The rows read: the page's, after those of the pages before.
        let want = offset + limit;
        let bots = if s.bots {
            String::new()
        } else {
            format!(" AND NOT {BOT_PLAYER}")
        };
        let columns = format!(
            "p.id, p.name_raw, p.dialect, p.last_seen, s.addr, \
             EXISTS (SELECT 1 FROM sessions o WHERE o.player_id = p.id AND o.left_at IS NULL) \
             AS online, {BOT_PLAYER} AS bot"
        );
        // Text a trigram index can answer.
        let trigram = q.chars().count() >= 3;
        // Where the walk stops: the window's start, or for trigram text the last sighting of
        // the SEARCH_WALK-th newest player (all the players seen since, ties included).
        let mut from = since;
        // SQLite walks short text whole (names read from the index); PostgreSQL, which reads
        // the rows, walks the newest first for all text.
        if trigram || self.backend == Backend::Postgres {
            let cut = self
                .fetch_optional(
                    sqlx::query(
                        "SELECT last_seen FROM players WHERE last_seen >= $1 \
                         ORDER BY last_seen DESC LIMIT 1 OFFSET $2",
                    )
                    .bind(since)
                    .bind(self.search_walk),
                )
                .await?;
            if let Some(cut) = cut {
                from = from.max(cut.try_get("last_seen")?);
            }
        }
        let mut rows = self
            .fetch_all(
                sqlx::query(&format!(
                    "SELECT {columns} FROM players p LEFT JOIN servers s ON s.id = p.last_server_id \
                     WHERE p.last_seen >= $2 AND p.name LIKE $1 ESCAPE '\\'{bots} \
                     ORDER BY p.last_seen DESC, p.id LIMIT $3"
                ))
                .bind(contains_pattern(q))
                .bind(from)
                .bind(want),
            )
            .await?;
        // Fewer hits than asked among the newest: every match, by the trigram index, or for
        // short text in PostgreSQL by a scan of the players (a walk of the rest would read
        // them one by one, in the index's order).
        if (rows.len() as i64) < want && from > since {
            let (sql, text) = match (self.backend, trigram) {
                (Backend::Postgres, false) => (
                    format!(
                        "SELECT {columns} FROM players p \
                         LEFT JOIN servers s ON s.id = p.last_server_id \
                         WHERE p.last_seen >= $2 AND p.name LIKE $1 ESCAPE '\\'{bots} \
                         ORDER BY p.last_seen + 0 DESC, p.id LIMIT $3"
                    ),
                    contains_pattern(q),
                ),
                (Backend::Sqlite, _) => (
                    format!(
                        "SELECT {columns} FROM players_search f JOIN players p ON p.id = f.rowid \
                         LEFT JOIN servers s ON s.id = p.last_server_id \
                         WHERE players_search MATCH $1 AND p.last_seen >= $2{bots} \
                         ORDER BY p.last_seen DESC, p.id LIMIT $3"
                    ),
                    fts_phrase(q),
                ),
                (Backend::Postgres, true) => (
                    format!(
                        "SELECT {columns} FROM players_search f JOIN players p ON p.id = f.id \
                         LEFT JOIN servers s ON s.id = p.last_server_id \
                         WHERE f.name LIKE $1 ESCAPE '\\' AND p.last_seen >= $2{bots} \
                         ORDER BY p.last_seen DESC, p.id LIMIT $3"
                    ),
                    contains_pattern(q),
                ),
            };
            rows = self
                .fetch_all(sqlx::query(&sql).bind(text).bind(since).bind(want))
                .await?;
        }
        let mut out = Vec::with_capacity(rows.len());
        for r in rows.iter().skip(usize::try_from(offset).unwrap_or(0)) {
            out.push(PlayerHit {
                player_id: r.try_get("id")?,
                name_raw: r.try_get("name_raw")?,
                dialect: r.try_get("dialect")?,
                last_seen: r.try_get("last_seen")?,
                addr: r.try_get("addr")?,
                online: bool_of(r, "online")?,
                is_bot: bool_of(r, "bot")?,
            });
        }
        Ok(out)
    }

    /// A player: its name, first and last sighting, time played, and its latest `sessions`
    /// sessions (newest first).
    pub async fn player(
        &self,
        id: i64,
        sessions: i64,
    ) -> Result<Option<PlayerProfile>, StoreError> {
        let Some(p) = self
            .fetch_optional(
                sqlx::query(&format!(
                    "SELECT p.name_raw, p.dialect, p.first_seen, p.last_seen, {BOT_PLAYER} AS bot, \
                         CAST((SELECT SUM({SESSION_END} - s.joined) FROM sessions s \
                          WHERE s.player_id = p.id) AS BIGINT) AS played_ms FROM players p \
                          WHERE p.id = $1"
                ))
                .bind(id),
            )
            .await?
        else {
            return Ok(None);
        };
        let played_ms = p.try_get::<Option<i64>, _>("played_ms")?.unwrap_or(0);
        let rows = self
            .fetch_all(
                sqlx::query(&format!(
                    "SELECT v.addr, v.name_raw, v.dialect, s.joined, s.left_at, s.last_score, \
                         {SESSION_END} - s.joined AS played_ms, s.is_bot, {SESSION_END} AS ended \
                         FROM sessions s JOIN servers v ON v.id = s.server_id \
                         WHERE s.player_id = $1 ORDER BY s.joined DESC, s.id DESC LIMIT $2"
                ))
                .bind(id)
                .bind(sessions.clamp(0, MAX_ROWS)),
            )
            .await?;
        let mut list = Vec::with_capacity(rows.len());
        let mut last_seen: i64 = p.try_get("last_seen")?;
        for r in &rows {
            let ms: i64 = r.try_get("played_ms")?;
            last_seen = last_seen.max(r.try_get::<i64, _>("ended")?);
            let is_bot: Option<i64> = r.try_get("is_bot")?;
            list.push(SessionRow {
                addr: r.try_get("addr")?,
                server_name_raw: r.try_get("name_raw")?,
                server_dialect: r.try_get("dialect")?,
                joined: r.try_get("joined")?,
                left: r.try_get("left_at")?,
                last_score: r.try_get("last_score")?,
                seconds: ms / 1000,
                is_bot: is_bot.map(|b| b != 0),
            });
        }
        Ok(Some(PlayerProfile {
            player_id: id,
            name_raw: p.try_get("name_raw")?,
            dialect: p.try_get("dialect")?,
            first_seen: p.try_get("first_seen")?,
            last_seen,
            seconds_played: played_ms / 1000,
            is_bot: bool_of(&p, "bot")?,
            sessions: list,
        }))
    }

    /// [`Store::search_players`] of every player, bots included, from the first hit.
    pub async fn find_players(
        &self,
        q: &str,
        since: i64,
        limit: i64,
    ) -> Result<Vec<PlayerHit>, StoreError> {
        self.search_players(&PlayerSearch {
            text: q,
            since,
            limit,
            offset: 0,
            bots: true,
        })
        .await
    }

    /// Whether player `id` is a bot ([`BOT_PLAYER`]); `None` for no such player.
    pub async fn player_is_bot(&self, id: i64) -> Result<Option<bool>, StoreError> {
        let row = self
            .fetch_optional(
                sqlx::query(&format!(
                    "SELECT {BOT_PLAYER} AS bot FROM players p WHERE p.id = $1"
                ))
                .bind(id),
            )
            .await?;
        Ok(row.map(|r| bool_of(&r, "bot")).transpose()?)
    }

    /// The names forgotten by `fragstat track forget` ([`Store::forget`]), as keyed
    /// ([`name_key`]), at most `limit`.
    pub async fn forgotten(&self, limit: i64) -> Result<Vec<String>, StoreError> {
        let rows = self
            .fetch_all(
                sqlx::query("SELECT name FROM forgotten ORDER BY name LIMIT $1").bind(limit.max(0)),
            )
            .await?;
        Ok(rows
            .iter()
            .map(|r| r.try_get("name"))
            .collect::<Result<_, _>>()?)
    }

    /// Forgets the player named `name` (as the site shows it: compared colours stripped and
    /// case-insensitively, [`name_key`]) everywhere: its identities in every dialect, their
    /// sessions and their search entries are deleted, and the name is kept in `forgotten`,
    /// so the rounds never store it again (a running tracker drops it from its memory at its
    /// next round). In one transaction.
    pub async fn forget(&self, name: &str) -> Result<Forgotten, StoreError> {
        let key = name_key(name);
        let mut tx = self.pool.begin().await?;
        sqlx::query(
            "INSERT INTO forgotten (name, at) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
        )
        .bind(&key)
        .bind(crate::round::now_ms())
        .execute(&mut *tx)
        .await?;
        let done = delete_players(&mut tx, std::slice::from_ref(&key)).await?;
        tx.commit().await?;
        Ok(done)
    }
}

/// Deletes the players keyed `names` ([`name_key`]), their time in the rankings, their
/// sessions and (by the schema's trigger or foreign key) their search entries, in the
/// caller's transaction.
pub(super) async fn delete_players(
    conn: &mut sqlx::AnyConnection,
    names: &[String],
) -> Result<Forgotten, StoreError> {
    let mut done = Forgotten::default();
    for chunk in names.chunks(100) {
        let marks = (1..=chunk.len())
            .map(|i| format!("${i}"))
            .collect::<Vec<_>>()
            .join(", ");
        // Their time in the rankings (schema 4's play_time) goes too.
        let mut ranked = 0;
        for (sql, n) in [
            (
                format!(
                    "DELETE FROM play_time WHERE player_id IN \
                     (SELECT id FROM players WHERE name IN ({marks}))"
                ),
                &mut ranked,
            ),
            (
                format!(
                    "DELETE FROM sessions WHERE player_id IN \
                     (SELECT id FROM players WHERE name IN ({marks}))"
                ),
                &mut done.sessions,
            ),
            (
                format!("DELETE FROM players WHERE name IN ({marks})"),
                &mut done.players,
            ),
        ] {
            let mut q = sqlx::query(&sql);
            for name in chunk {
                q = q.bind(name.as_str());
            }
            *n += q.execute(&mut *conn).await?.rows_affected();
        }
    }
    Ok(done)
}
