//! What keeps the live list true (issue 31): the servers to probe again although no master
//! lists them now (seen within `session_gap_secs`, or still marked online), and the masters'
//! answers, written with each round and read by the pages, the API and `/metrics`.

use sqlx::Row;

use super::{MasterRow, Store, StoreError};

/// Writes this round's masters (`up_since`/`down_since` carried on from their rows), and
/// forgets the masters no longer configured (not asked this round).
pub(super) async fn write_masters(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    at: i64,
    masters: &[MasterRow],
) -> Result<(), sqlx::Error> {
    if masters.is_empty() {
        return Ok(());
    }
    for m in masters {
        sqlx::query(
            "INSERT INTO masters (game, master, up, listed, dropped, error, checked_at, \
             up_since, down_since) VALUES ($1, $2, $3, $4, $5, $6, $7, \
             CASE WHEN $3 = 1 THEN $7 END, CASE WHEN $3 = 0 THEN $7 END) \
             ON CONFLICT (game, master) DO UPDATE SET up = excluded.up, \
             listed = excluded.listed, dropped = excluded.dropped, error = excluded.error, \
             checked_at = excluded.checked_at, \
             up_since = CASE WHEN excluded.up = 0 THEN NULL \
             ELSE COALESCE(masters.up_since, excluded.checked_at) END, \
             down_since = CASE WHEN excluded.up = 1 THEN NULL \
             ELSE COALESCE(masters.down_since, excluded.checked_at) END",
        )
        .bind(m.game.as_str())
        .bind(m.master.as_str())
        .bind(i64::from(m.up))
        .bind(m.listed)
        .bind(m.dropped)
        .bind(m.error.as_deref())
        .bind(at)
        .execute(&mut **tx)
        .await?;
    }
    sqlx::query("DELETE FROM masters WHERE checked_at < $1")
        .bind(at)
        .execute(&mut **tx)
        .await?;
    Ok(())
}

impl Store {
    /// The servers a round probes whether or not a master still lists them, as
    /// `(game, addr)`: those marked online, and those listed or answering at or after `since`
    /// (Unix ms; the round's start less `session_gap_secs`). A server that leaves its
    /// master's list is so seen going down, or still up.
    pub async fn recent_servers(&self, since: i64) -> Result<Vec<(String, String)>, StoreError> {
        // On the writer's connection: only the writer polls, and its connection lives with
        // the rounds (not a pool connection made on the rounds' runtime).
        let mut w = self.writer.lock().await;
        let mut held = None;
        let conn = w.connection(&self.pool, &mut held).await?;
        let rows = sqlx::query(
            "SELECT s.game, s.addr FROM servers s \
             LEFT JOIN server_latest l ON l.server_id = s.id \
             WHERE s.status = 'online' OR s.last_online >= $1 \
             OR (l.status = 0 AND l.at >= $1) OR s.unlisted_since >= $1 \
             OR (s.unlisted_since IS NULL AND COALESCE(l.at, s.last_seen) >= $1)",
        )
        .bind(since)
        .fetch_all(&mut *conn)
        .await?;
        rows.iter()
            .map(|r| Ok((r.try_get("game")?, r.try_get("addr")?)))
            .collect()
    }

    /// Every configured master's answer in the latest round, by game and master.
    pub async fn masters(&self) -> Result<Vec<MasterRow>, StoreError> {
        let rows = self
            .fetch_all(sqlx::query(
                "SELECT game, master, up, listed, dropped, error, checked_at, up_since, \
                 down_since FROM masters ORDER BY game, master",
            ))
            .await?;
        rows.iter()
            .map(|r| {
                let up: i64 = r.try_get("up")?;
                Ok(MasterRow {
                    game: r.try_get("game")?,
                    master: r.try_get("master")?,
                    up: up != 0,
                    listed: r.try_get("listed")?,
                    dropped: r.try_get("dropped")?,
                    error: r.try_get("error")?,
                    checked_at: r.try_get("checked_at")?,
                    up_since: r.try_get("up_since")?,
                    down_since: r.try_get("down_since")?,
                })
            })
            .collect()
    }
}
