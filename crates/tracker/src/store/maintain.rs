//! After a round: the series older than [`History::raw`] downsampled, and each table's rows
//! past its retention deleted; on the writer's connection, in one transaction.

use sqlx::Row;

use super::write::begin;
use super::{ms, Backend, History, Retention, Store, StoreError};

type Tx<'c> = sqlx::Transaction<'c, sqlx::Any>;

/// Aggregates the per-round series rows older than `cutoff` (a bucket boundary) into one row
/// per server per bucket and deletes them. Returns the rows aggregated.
async fn downsample(tx: &mut Tx<'_>, cutoff: i64, bucket: i64) -> Result<u64, sqlx::Error> {
    let oldest: Option<i64> = sqlx::query("SELECT MIN(at) AS oldest FROM series")
        .fetch_one(&mut **tx)
        .await?
        .try_get("oldest")?;
    if oldest.is_none_or(|o| o >= cutoff) {
        return Ok(0);
    }
    // `bucket` is a number this code computed, written in as a literal.
    sqlx::query(&format!(
        "INSERT INTO series_agg (server_id, at, rounds, online, players_min, players_avg, \
         players_max, bots_avg, rtt_avg) \
         SELECT server_id, at - at % {bucket}, COUNT(*), \
         SUM(CASE WHEN status = 0 THEN 1 ELSE 0 END), MIN(players), \
         CAST(AVG(players) AS DOUBLE PRECISION), MAX(players), \
         CAST(AVG(bots) AS DOUBLE PRECISION), CAST(AVG(rtt) AS DOUBLE PRECISION) \
         FROM series WHERE at < $1 \
         AND EXISTS (SELECT 1 FROM servers s WHERE s.id = series.server_id) \
         GROUP BY server_id, at - at % {bucket} \
         ON CONFLICT (at, server_id) DO NOTHING"
    ))
    .bind(cutoff)
    .execute(&mut **tx)
    .await?;
    Ok(sqlx::query("DELETE FROM series WHERE at < $1")
        .bind(cutoff)
        .execute(&mut **tx)
        .await?
        .rows_affected())
}

async fn run(tx: &mut Tx<'_>, sql: &str, before: Option<i64>) -> Result<u64, sqlx::Error> {
    let Some(before) = before else {
        return Ok(0);
    };
    Ok(sqlx::query(sql)
        .bind(before)
        .execute(&mut **tx)
        .await?
        .rows_affected())
}

/// Deletes what `r` says is past retention. Returns (rows deleted, servers deleted).
async fn prune(tx: &mut Tx<'_>, r: &Retention) -> Result<(u64, u64), sqlx::Error> {
    let mut n = 0;
    n += run(tx, "DELETE FROM rounds WHERE at < $1", r.rounds).await?;
    n += run(tx, "DELETE FROM series WHERE at < $1", r.series).await?;
    n += run(tx, "DELETE FROM series_agg WHERE at < $1", r.series).await?;
    // Each server's latest change stays: it is its state now.
    n += run(
        tx,
        "DELETE FROM server_changes WHERE at < $1 AND at < (SELECT MAX(c.at) FROM \
         server_changes c WHERE c.server_id = server_changes.server_id)",
        r.changes,
    )
    .await?;
    n += run(tx, "DELETE FROM sessions WHERE left_at < $1", r.sessions).await?;
    n += run(
        tx,
        "DELETE FROM players WHERE last_seen < $1 AND NOT EXISTS \
         (SELECT 1 FROM sessions s WHERE s.player_id = players.id)",
        r.players,
    )
    .await?;
    // Servers not probed since, with their latest numbers and changes; kept while their
    // players' sessions are (a session ends by its server's last answer, so once a server
    // has not been probed for the sessions' retention, the sessions deleted above were its
    // last; an open one, left by a tracker stopped meanwhile, keeps it). Their per-round
    // series rows, at most a bucket's, go with the next downsampling (which leaves rows of
    // deleted servers out) and their downsampled rows with the series' retention: ids are
    // never reused.
    let mut servers = 0;
    if let (Some(rounds), Some(sessions)) = (r.rounds, r.sessions) {
        let ids: Vec<i64> = sqlx::query(
            "DELETE FROM servers WHERE id IN (SELECT s.id FROM servers s \
             LEFT JOIN server_latest l ON l.server_id = s.id \
             WHERE COALESCE(l.at, s.last_seen) < $1 \
             AND NOT EXISTS (SELECT 1 FROM sessions x WHERE x.server_id = s.id \
             AND x.left_at IS NULL)) RETURNING id",
        )
        .bind(rounds.min(sessions))
        .fetch_all(&mut **tx)
        .await?
        .iter()
        .map(|row| row.try_get("id"))
        .collect::<Result<_, _>>()?;
        servers = ids.len() as u64;
        for chunk in ids.chunks(500) {
            // Ids from the database, written in as numbers.
            let list = chunk
                .iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ");
            for table in ["server_latest", "server_changes"] {
                n += sqlx::query(&format!("DELETE FROM {table} WHERE server_id IN ({list})"))
                    .execute(&mut **tx)
                    .await?
                    .rows_affected();
            }
        }
    }
    Ok((n + servers, servers))
}

impl Store {
    /// A round's upkeep at `now` (Unix ms): downsamples the series older than
    /// [`History::raw`] (whole buckets only) and deletes each table's rows past its
    /// retention ([`History`]), in one transaction on the writer's connection. Returns the
    /// rows deleted (the per-round series rows downsampled included).
    pub async fn maintain(&self, now: i64) -> Result<u64, StoreError> {
        let h: History = self.history;
        let bucket = ms(h.bucket).max(1000);
        let cutoff = (now.saturating_sub(ms(h.raw)) / bucket) * bucket;
        self.upkeep(Some((cutoff, bucket)), &Retention::at(now, &h), now)
            .await
    }

    /// Deletes what `r` says is past retention.
    pub(super) async fn prune_tables(&self, r: &Retention) -> Result<u64, StoreError> {
        self.upkeep(None, r, 0).await
    }

    async fn upkeep(
        &self,
        downsample_at: Option<(i64, i64)>,
        r: &Retention,
        now: i64,
    ) -> Result<u64, StoreError> {
        let history = self.history;
        let mut w = self.writer.lock().await;
        let result = async {
            let mut held = None;
            let checkpoint = w.backend == Backend::Sqlite && !w.shared;
            let conn = w.connection(&self.pool, &mut held).await?;
            let mut tx = begin(conn).await?;
            let mut n = 0;
            if let Some((cutoff, bucket)) = downsample_at {
                n += downsample(&mut tx, cutoff, bucket).await?;
                // The stats' totals (schema 4), from the rounds' series before they go.
                n += super::stats::upkeep(&mut tx, now, &history, cutoff, bucket).await?;
            }
            let (pruned, servers) = prune(&mut tx, r).await?;
            tx.commit().await?;
            if checkpoint {
                // The round's and this upkeep's pages, from the log into the database (readers
                // go on; what a reader still needs stays in the log until the next one).
                sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
                    .execute(&mut *conn)
                    .await?;
            }
            Ok::<_, StoreError>((n + pruned, servers))
        }
        .await;
        match result {
            Ok((n, servers)) => {
                if servers > 0 {
                    // The writer's memory still has them: reload.
                    w.state = None;
                }
                Ok(n)
            }
            Err(e) => {
                w.reset();
                Err(e)
            }
        }
    }
}
