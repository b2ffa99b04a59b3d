//! The stats' part of each round's upkeep: the rounds' totals per game, the records, the
//! maps' time, the downsampling of the totals, the ended sessions into the players' time.

use std::collections::HashMap;

use sqlx::Row;

use super::{Period, KEEP_PERIODS};
use crate::store::{ms, History};

type Tx<'c> = sqlx::Transaction<'c, sqlx::Any>;

/// Rounds the upkeep totals at most at once (catching up after a pause).
const ROUNDS_AT_ONCE: i64 = 30;

/// Ended sessions the upkeep adds at most at once (catching up after an upgrade).
const SESSIONS_AT_ONCE: i64 = 20_000;

/// The longest time between rounds counted as played on a map (a longer pause is the
/// tracker's, not the players').
const MAX_ROUND_GAP: i64 = 10 * 60_000;

/// What the upkeep remembers (`stats_state`).
async fn state(tx: &mut Tx<'_>, name: &str) -> Result<Option<i64>, sqlx::Error> {
    let row = sqlx::query("SELECT value FROM stats_state WHERE name = $1")
        .bind(name)
        .fetch_optional(&mut **tx)
        .await?;
    row.map(|r| r.try_get("value")).transpose()
}

async fn set_state(tx: &mut Tx<'_>, name: &str, value: i64) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO stats_state (name, value) VALUES ($1, $2) \
         ON CONFLICT (name) DO UPDATE SET value = excluded.value",
    )
    .bind(name)
    .bind(value)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// The stats' part of a round's upkeep at `now`: the rounds not yet totalled (each game's
/// totals, the records, the maps' time), the per-round totals older than `cutoff`
/// downsampled into `bucket`s, the sessions that ended since the last upkeep into the
/// players' time, and the periods and totals past retention deleted.
pub(in crate::store) async fn upkeep(
    tx: &mut Tx<'_>,
    now: i64,
    history: &History,
    cutoff: i64,
    bucket: i64,
) -> Result<u64, sqlx::Error> {
    let mut n = total_rounds(tx, now).await?;
    n += downsample(tx, cutoff, bucket).await?;
    n += credit_sessions(tx, now, history).await?;
    let keep = now.saturating_sub(KEEP_PERIODS);
    // By span, then period: a range of each table's key (`period` alone would scan it).
    for table in ["play_time", "map_time"] {
        for p in Period::ALL {
            n += sqlx::query(&format!(
                "DELETE FROM {table} WHERE span = $1 AND period < $2"
            ))
            .bind(p.span())
            .bind(keep)
            .execute(&mut **tx)
            .await?
            .rows_affected();
        }
    }
    if let Some(series) = history.series {
        n += sqlx::query("DELETE FROM game_series WHERE at < $1")
            .bind(now.saturating_sub(ms(series)))
            .execute(&mut **tx)
            .await?
            .rows_affected();
    }
    Ok(n)
}

/// Totals the rounds after the last one totalled (at most [`ROUNDS_AT_ONCE`]).
async fn total_rounds(tx: &mut Tx<'_>, now: i64) -> Result<u64, sqlx::Error> {
    let last = match state(tx, "rounds").await? {
        Some(l) => l,
        // After the upgrade: from the totals it wrote.
        None => sqlx::query("SELECT MAX(at) AS at FROM game_series WHERE rounds = 1")
            .fetch_one(&mut **tx)
            .await?
            .try_get::<Option<i64>, _>("at")?
            .unwrap_or(i64::MIN),
    };
    let rounds: Vec<i64> =
        sqlx::query("SELECT at FROM rounds WHERE at > $1 AND at <= $2 ORDER BY at LIMIT $3")
            .bind(last)
            .bind(now)
            .bind(ROUNDS_AT_ONCE)
            .fetch_all(&mut **tx)
            .await?
            .iter()
            .map(|r| r.try_get("at"))
            .collect::<Result<_, _>>()?;
    if state(tx, "records").await?.is_none() {
        init_records(tx).await?;
        set_state(tx, "records", 1).await?;
    }
    let mut n = 0;
    for &at in &rounds {
        n += total_round(tx, at).await?;
        set_state(tx, "rounds", at).await?;
    }
    Ok(n)
}

/// The records from the totals the upgrade wrote.
async fn init_records(tx: &mut Tx<'_>) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO stats_records (scope, humans, at) \
         SELECT g.game, g.humans_max, MIN(g.at) FROM game_series g \
         WHERE g.humans_max = (SELECT MAX(h.humans_max) FROM game_series h WHERE h.game = g.game) \
         GROUP BY g.game, g.humans_max ON CONFLICT (scope) DO NOTHING",
    )
    .execute(&mut **tx)
    .await?;
    let site = sqlx::query(
        "SELECT at, CAST(SUM(humans_max) AS BIGINT) AS humans FROM game_series \
         GROUP BY at ORDER BY humans DESC, at LIMIT 1",
    )
    .fetch_optional(&mut **tx)
    .await?;
    if let Some(r) = site {
        record(tx, "*", r.try_get("humans")?, r.try_get("at")?).await?;
    }
    Ok(())
}

/// Keeps `humans` at `at` as `scope`'s record if it beats it.
async fn record(tx: &mut Tx<'_>, scope: &str, humans: i64, at: i64) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO stats_records (scope, humans, at) VALUES ($1, $2, $3) \
         ON CONFLICT (scope) DO UPDATE SET humans = excluded.humans, at = excluded.at \
         WHERE excluded.humans > stats_records.humans",
    )
    .bind(scope)
    .bind(humans)
    .bind(at)
    .execute(&mut **tx)
    .await?;
    Ok(())
}

/// One round's totals: each game's (from the round's series rows), the records, the maps'
/// time (the time since the round before, at most [`MAX_ROUND_GAP`]).
async fn total_round(tx: &mut Tx<'_>, at: i64) -> Result<u64, sqlx::Error> {
    let n = sqlx::query(
        "INSERT INTO game_series (at, game, rounds, servers, online, players, bots, humans_max) \
         SELECT $1, v.game, 1, COUNT(*), SUM(CASE WHEN x.status = 0 THEN 1 ELSE 0 END), \
         SUM(CASE WHEN x.status = 0 THEN COALESCE(x.players, 0) ELSE 0 END), \
         SUM(CASE WHEN x.status = 0 THEN COALESCE(x.bots, 0) ELSE 0 END), \
         SUM(CASE WHEN x.status = 0 THEN COALESCE(x.players, 0) - COALESCE(x.bots, 0) ELSE 0 END) \
         FROM series x JOIN servers v ON v.id = x.server_id WHERE x.at = $1 GROUP BY v.game \
         ON CONFLICT (at, game) DO NOTHING",
    )
    .bind(at)
    .execute(&mut **tx)
    .await?
    .rows_affected();
    let games = sqlx::query("SELECT game, humans_max FROM game_series WHERE at = $1")
        .bind(at)
        .fetch_all(&mut **tx)
        .await?;
    let mut site = 0i64;
    for g in &games {
        let humans: i64 = g.try_get("humans_max")?;
        site = site.saturating_add(humans);
        record(tx, &g.try_get::<String, _>("game")?, humans, at).await?;
    }
    if !games.is_empty() {
        record(tx, "*", site, at).await?;
    }
    let before: Option<i64> = sqlx::query("SELECT MAX(at) AS at FROM rounds WHERE at < $1")
        .bind(at)
        .fetch_one(&mut **tx)
        .await?
        .try_get("at")?;
    let dt = before.map_or(0, |b| at.saturating_sub(b).clamp(0, MAX_ROUND_GAP));
    if dt == 0 {
        return Ok(n);
    }
    for p in Period::ALL {
        // The map each server has now: the upkeep runs right after its round.
        sqlx::query(
            "INSERT INTO map_time (span, period, game, map, server_ms, player_ms) \
             SELECT $2, $3, v.game, v.map, COUNT(*) * $4, \
             CAST(SUM(COALESCE(x.players, 0) - COALESCE(x.bots, 0)) AS BIGINT) * $4 \
             FROM series x JOIN servers v ON v.id = x.server_id \
             WHERE x.at = $1 AND x.status = 0 AND v.map IS NOT NULL GROUP BY v.game, v.map \
             ON CONFLICT (span, period, game, map) DO UPDATE SET \
             server_ms = map_time.server_ms + excluded.server_ms, \
             player_ms = map_time.player_ms + excluded.player_ms",
        )
        .bind(at)
        .bind(p.span())
        .bind(p.start(at))
        .bind(dt)
        .execute(&mut **tx)
        .await?;
    }
    Ok(n)
}

/// Folds the per-round totals older than `cutoff` into a row per game per bucket.
async fn downsample(tx: &mut Tx<'_>, cutoff: i64, bucket: i64) -> Result<u64, sqlx::Error> {
    let from = match state(tx, "downsampled").await? {
        Some(f) => f,
        // After the upgrade: its per-round totals are those of the per-round series.
        None => sqlx::query("SELECT MIN(at) AS at FROM game_series WHERE rounds = 1")
            .fetch_one(&mut **tx)
            .await?
            .try_get::<Option<i64>, _>("at")?
            .map_or(cutoff, |a| a - a.rem_euclid(bucket)),
    };
    if from >= cutoff {
        if state(tx, "downsampled").await?.is_none() {
            set_state(tx, "downsampled", cutoff).await?;
        }
        return Ok(0);
    }
    // `bucket` is a number this code computed, written in as a literal.
    let rows = sqlx::query(&format!(
        "SELECT at - at % {bucket} AS b, game, CAST(SUM(rounds) AS BIGINT) AS rounds, \
         CAST(SUM(servers) AS BIGINT) AS servers, CAST(SUM(online) AS BIGINT) AS online, \
         CAST(SUM(players) AS BIGINT) AS players, CAST(SUM(bots) AS BIGINT) AS bots, \
         MAX(humans_max) AS humans_max FROM game_series WHERE at >= $1 AND at < $2 \
         GROUP BY at - at % {bucket}, game"
    ))
    .bind(from)
    .bind(cutoff)
    .fetch_all(&mut **tx)
    .await?;
    let n = sqlx::query("DELETE FROM game_series WHERE at >= $1 AND at < $2")
        .bind(from)
        .bind(cutoff)
        .execute(&mut **tx)
        .await?
        .rows_affected();
    for r in &rows {
        sqlx::query(
            "INSERT INTO game_series (at, game, rounds, servers, online, players, bots, \
             humans_max) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(r.try_get::<i64, _>("b")?)
        .bind(r.try_get::<String, _>("game")?)
        .bind(r.try_get::<i64, _>("rounds")?)
        .bind(r.try_get::<i64, _>("servers")?)
        .bind(r.try_get::<i64, _>("online")?)
        .bind(r.try_get::<i64, _>("players")?)
        .bind(r.try_get::<i64, _>("bots")?)
        .bind(r.try_get::<i64, _>("humans_max")?)
        .execute(&mut **tx)
        .await?;
    }
    set_state(tx, "downsampled", cutoff).await?;
    Ok(n)
}

/// Adds the sessions (not bots') that ended since the last upkeep to their players' time.
/// A session that ends is written with the round that saw it gone, or, when its server fell
/// silent, with the last round it was seen in (at most `session_gap` and a round before):
/// the sessions that ended up to that far back are taken.
async fn credit_sessions(tx: &mut Tx<'_>, now: i64, h: &History) -> Result<u64, sqlx::Error> {
    let last_round: Option<i64> = sqlx::query("SELECT MAX(at) AS at FROM rounds WHERE at < $1")
        .bind(now)
        .fetch_one(&mut **tx)
        .await?
        .try_get("at")?;
    let round_gap = last_round.map_or(MAX_ROUND_GAP, |r| {
        now.saturating_sub(r).clamp(0, MAX_ROUND_GAP)
    });
    let upto = now
        .saturating_sub(ms(h.session_gap))
        .saturating_sub(2 * round_gap);
    let from = match state(tx, "sessions").await? {
        Some(f) => f,
        // After the upgrade: the sessions of the periods that hold now.
        None => Period::Week.start(now).min(Period::Month.start(now)) - 1,
    };
    if upto <= from {
        return Ok(0);
    }
    let rows = sqlx::query(
        "SELECT s.player_id, v.game, s.joined, s.left_at FROM sessions s \
         JOIN servers v ON v.id = s.server_id \
         WHERE s.left_at > $1 AND s.left_at <= $2 AND (s.is_bot IS NULL OR s.is_bot = 0) \
         ORDER BY s.left_at LIMIT $3",
    )
    .bind(from)
    .bind(upto)
    .bind(SESSIONS_AT_ONCE + 1)
    .fetch_all(&mut **tx)
    .await?;
    let mut sessions: Vec<(i64, String, i64, i64)> = Vec::with_capacity(rows.len());
    for r in &rows {
        sessions.push((
            r.try_get("player_id")?,
            r.try_get("game")?,
            r.try_get("joined")?,
            r.try_get("left_at")?,
        ));
    }
    let mut done = upto;
    if sessions.len() as i64 > SESSIONS_AT_ONCE {
        // A full batch: up to the last time it holds whole (the next upkeep goes on from
        // there), or the whole batch when it is all one time.
        let last = sessions.last().map_or(upto, |s| s.3);
        let whole: Vec<_> = sessions.iter().filter(|s| s.3 < last).cloned().collect();
        if whole.is_empty() {
            done = last;
        } else {
            done = whole.last().map_or(last, |s| s.3);
            sessions = whole;
        }
    }
    let keep = now.saturating_sub(KEEP_PERIODS);
    let mut add: HashMap<(i64, i64, String, i64), i64> = HashMap::new();
    for (player, game, joined, left) in &sessions {
        for p in Period::ALL {
            // The periods still kept only.
            let mut start = p.start((*joined).max(keep));
            while start < *left {
                let next = p.next(start);
                let part = (*left).min(next).saturating_sub((*joined).max(start));
                if part > 0 {
                    *add.entry((p.span(), start, game.clone(), *player))
                        .or_insert(0) += part;
                }
                if next <= start {
                    break;
                }
                start = next;
            }
        }
    }
    let rows: Vec<_> = add.into_iter().collect();
    for chunk in rows.chunks(400) {
        let mut sql =
            String::from("INSERT INTO play_time (span, period, game, player_id, ms) VALUES ");
        for i in 0..chunk.len() {
            let b = i * 5;
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!(
                "(${}, ${}, ${}, ${}, ${})",
                b + 1,
                b + 2,
                b + 3,
                b + 4,
                b + 5
            ));
        }
        sql.push_str(
            " ON CONFLICT (span, period, game, player_id) DO UPDATE SET ms = play_time.ms + excluded.ms",
        );
        let mut q = sqlx::query(&sql);
        for ((span, period, game, player), ms) in chunk {
            q = q
                .bind(*span)
                .bind(*period)
                .bind(game.as_str())
                .bind(*player)
                .bind(*ms);
        }
        q.execute(&mut **tx).await?;
    }
    set_state(tx, "sessions", done).await?;
    Ok(0)
}
