//! The stats' reads: players over time, each game's numbers and peaks, the rankings, the
//! maps; and the cache of the latest round's answers.

use std::collections::HashMap;
use std::sync::Arc;

use sqlx::Row;

use super::{
    GameStats, MapStats, Peak, Period, StatsPoint, TopPage, TopPlayer, CACHE_ENTRIES, DAY,
    MAX_RANKED,
};
use crate::store::{ms, Store, StoreError};

impl Store {
    /// The latest round (Unix ms), what the cache is of.
    async fn latest_round(&self) -> Result<Option<i64>, StoreError> {
        let r = self
            .fetch_all(sqlx::query("SELECT MAX(at) AS at FROM rounds"))
            .await?;
        Ok(match r.first() {
            Some(r) => r.try_get("at")?,
            None => None,
        })
    }

    /// `key`'s value as of the latest round: cached, or made by `make` and cached.
    pub async fn cached<T, F>(&self, key: &str, make: F) -> Result<Arc<T>, StoreError>
    where
        T: Send + Sync + 'static,
        F: std::future::Future<Output = Result<T, StoreError>>,
    {
        let round = self.latest_round().await?;
        if let Ok(c) = self.stats_cache.lock() {
            if c.round == round {
                if let Some(v) = c.entries.get(key).cloned() {
                    if let Ok(v) = v.downcast::<T>() {
                        return Ok(v);
                    }
                }
            }
        }
        let v = Arc::new(make.await?);
        if let Ok(mut c) = self.stats_cache.lock() {
            if c.round != round || c.entries.len() >= CACHE_ENTRIES {
                c.entries.clear();
                c.round = round;
            }
            c.entries.insert(key.to_string(), v.clone());
        }
        Ok(v)
    }

    /// Entries in the stats' cache now (at most 512: for tests and tools).
    pub fn stats_cache_len(&self) -> usize {
        self.stats_cache.lock().map_or(0, |c| c.entries.len())
    }

    /// Players online over time from `since` (Unix ms) for `game` (all games: `None`), a
    /// point per `step` ms, oldest first: from each game's totals (per round for the last
    /// `raw_hours`, per bucket before).
    pub async fn players_over_time(
        &self,
        game: Option<&str>,
        since: i64,
        step: i64,
    ) -> Result<Vec<StatsPoint>, StoreError> {
        let step = step.max(1);
        let rows = match game {
            Some(g) => {
                self.fetch_all(
                    sqlx::query(
                        "SELECT at, rounds, online, players, bots, humans_max FROM game_series \
                         WHERE game = $1 AND at >= $2 ORDER BY at",
                    )
                    .bind(g)
                    .bind(since),
                )
                .await?
            }
            None => {
                self.fetch_all(
                    sqlx::query(
                        "SELECT at, MAX(rounds) AS rounds, CAST(SUM(online) AS BIGINT) AS online, \
                         CAST(SUM(players) AS BIGINT) AS players, CAST(SUM(bots) AS BIGINT) AS bots, \
                         CAST(SUM(humans_max) AS BIGINT) AS humans_max FROM game_series \
                         WHERE at >= $1 GROUP BY at ORDER BY at",
                    )
                    .bind(since),
                )
                .await?
            }
        };
        let mut out: Vec<StatsPoint> = Vec::new();
        let mut sums = (0i64, 0i64, 0i64);
        for r in &rows {
            let at: i64 = r.try_get("at")?;
            let rounds: i64 = r.try_get("rounds")?;
            let online: i64 = r.try_get("online")?;
            let players: i64 = r.try_get("players")?;
            let bots: i64 = r.try_get("bots")?;
            let hmax: i64 = r.try_get("humans_max")?;
            let start = since + (at - since).div_euclid(step) * step;
            if out.last().is_none_or(|p| p.at != start) {
                finish(out.last_mut(), sums);
                sums = (0, 0, 0);
                out.push(StatsPoint {
                    at: start,
                    rounds: 0,
                    humans: 0.0,
                    bots: 0.0,
                    humans_max: 0,
                    servers_online: 0.0,
                });
            }
            if let Some(p) = out.last_mut() {
                p.rounds += rounds.max(1);
                p.humans_max = p.humans_max.max(hmax);
                sums.0 += players;
                sums.1 += bots;
                sums.2 += online;
            }
        }
        finish(out.last_mut(), sums);
        Ok(out)
    }

    /// Each game's numbers now, its 24-hour peak and record (`*` first: every game).
    pub async fn game_stats(&self, now: i64) -> Result<Vec<GameStats>, StoreError> {
        let now_rows = self
            .fetch_all(sqlx::query(&format!(
                "SELECT game, COUNT(*) AS servers, \
                 CAST(SUM(COALESCE(num_players, 0) - COALESCE(num_bots, 0)) AS BIGINT) AS humans, \
                 CAST(SUM(COALESCE(num_bots, 0)) AS BIGINT) AS bots FROM {} \
                 WHERE status = 'online' GROUP BY game ORDER BY game",
                crate::store::read::SERVERS_NOW
            )))
            .await?;
        let mut out = vec![GameStats {
            game: "*".into(),
            servers_online: 0,
            humans: 0,
            bots: 0,
            peak_24h: None,
            record: None,
        }];
        for r in &now_rows {
            let g = GameStats {
                game: r.try_get("game")?,
                servers_online: r.try_get("servers")?,
                humans: r.try_get::<Option<i64>, _>("humans")?.unwrap_or(0).max(0),
                bots: r.try_get::<Option<i64>, _>("bots")?.unwrap_or(0),
                peak_24h: None,
                record: None,
            };
            out[0].servers_online += g.servers_online;
            out[0].humans += g.humans;
            out[0].bots += g.bots;
            out.push(g);
        }
        let since = now.saturating_sub(DAY);
        let peaks = self
            .fetch_all(
                sqlx::query(
                    "SELECT game, at, humans_max FROM game_series WHERE at >= $1 \
                     ORDER BY humans_max DESC, at",
                )
                .bind(since),
            )
            .await?;
        let mut site: HashMap<i64, i64> = HashMap::new();
        let mut game_peaks: HashMap<String, Peak> = HashMap::new();
        for r in &peaks {
            let (game, at, humans): (String, i64, i64) = (
                r.try_get("game")?,
                r.try_get("at")?,
                r.try_get("humans_max")?,
            );
            *site.entry(at).or_insert(0) += humans;
            game_peaks.entry(game).or_insert(Peak { humans, at });
        }
        let site_peak = site
            .into_iter()
            .map(|(at, humans)| Peak { humans, at })
            .max_by_key(|p| (p.humans, -p.at));
        let records = self
            .fetch_all(sqlx::query("SELECT scope, humans, at FROM stats_records"))
            .await?;
        let mut recs: HashMap<String, Peak> = HashMap::new();
        for r in &records {
            recs.insert(
                r.try_get("scope")?,
                Peak {
                    humans: r.try_get("humans")?,
                    at: r.try_get("at")?,
                },
            );
        }
        for g in &mut out {
            g.peak_24h = if g.game == "*" {
                site_peak
            } else {
                game_peaks.get(&g.game).copied()
            };
            g.record = recs.get(&g.game).copied();
        }
        Ok(out)
    }

    /// A game's players by time played in `period` (the one holding `now`), most first:
    /// `limit` from `offset`.
    pub async fn top_players(
        &self,
        game: &str,
        period: Period,
        now: i64,
        offset: i64,
        limit: i64,
    ) -> Result<TopPage, StoreError> {
        let start = period.start(now);
        let total = self
            .fetch_all(
                sqlx::query(
                    "SELECT COUNT(*) AS n FROM (SELECT 1 FROM play_time \
                     WHERE span = $1 AND period = $2 AND game = $3 LIMIT $4) AS t",
                )
                .bind(period.span())
                .bind(start)
                .bind(game)
                .bind(MAX_RANKED),
            )
            .await?;
        let total: i64 = total.first().map_or(Ok(0), |r| r.try_get("n"))?;
        let rows = self
            .fetch_all(
                sqlx::query(
                    "SELECT t.player_id, t.ms, p.name_raw, p.dialect FROM play_time t \
                     JOIN players p ON p.id = t.player_id \
                     WHERE t.span = $1 AND t.period = $2 AND t.game = $3 \
                     ORDER BY t.ms DESC, t.player_id LIMIT $4 OFFSET $5",
                )
                .bind(period.span())
                .bind(start)
                .bind(game)
                .bind(limit.clamp(0, MAX_RANKED))
                .bind(offset.clamp(0, MAX_RANKED)),
            )
            .await?;
        Ok(TopPage {
            since: start,
            total,
            players: top_rows(&rows, offset)?,
        })
    }

    /// A server's players by time played in `period` (the one holding `now`), most first,
    /// from its sessions that ended since the period began (or since the oldest kept).
    pub async fn server_top_players(
        &self,
        addr: &str,
        period: Period,
        now: i64,
        offset: i64,
        limit: i64,
    ) -> Result<Option<TopPage>, StoreError> {
        let Some(id) = self.server_id(addr).await? else {
            return Ok(None);
        };
        let mut since = period.start(now);
        if let Some(kept) = self.history.sessions {
            since = since.max(now.saturating_sub(ms(kept)));
        }
        const PER_PLAYER: &str =
            "SELECT s.player_id, CAST(SUM(s.left_at - CASE WHEN s.joined > $2 \
             THEN s.joined ELSE $2 END) AS BIGINT) AS ms FROM sessions s \
             WHERE s.server_id = $1 AND s.left_at >= $2 AND (s.is_bot IS NULL OR s.is_bot = 0) \
             GROUP BY s.player_id";
        let total = self
            .fetch_all(
                sqlx::query(&format!(
                    "SELECT COUNT(*) AS n FROM ({PER_PLAYER} LIMIT $3) AS t"
                ))
                .bind(id)
                .bind(since)
                .bind(MAX_RANKED),
            )
            .await?;
        let total: i64 = total.first().map_or(Ok(0), |r| r.try_get("n"))?;
        let rows = self
            .fetch_all(
                sqlx::query(&format!(
                    "SELECT t.player_id, t.ms, p.name_raw, p.dialect FROM ({PER_PLAYER}) AS t \
                     JOIN players p ON p.id = t.player_id \
                     ORDER BY t.ms DESC, t.player_id LIMIT $3 OFFSET $4"
                ))
                .bind(id)
                .bind(since)
                .bind(limit.clamp(0, MAX_RANKED))
                .bind(offset.clamp(0, MAX_RANKED)),
            )
            .await?;
        Ok(Some(TopPage {
            since,
            total,
            players: top_rows(&rows, offset)?,
        }))
    }

    /// The maps of `game` (every game: `None`) in `period` (the one holding `now`): those
    /// run in it or now, by time played (then servers now), most first.
    pub async fn maps(
        &self,
        game: Option<&str>,
        period: Period,
        now: i64,
    ) -> Result<Vec<MapStats>, StoreError> {
        let timed = self
            .fetch_all(
                sqlx::query(
                    "SELECT game, map, server_ms, player_ms FROM map_time \
                     WHERE span = $1 AND period = $2 AND ($3 = '' OR game = $3)",
                )
                .bind(period.span())
                .bind(period.start(now))
                .bind(game.unwrap_or("")),
            )
            .await?;
        let live = self
            .fetch_all(
                sqlx::query(&format!(
                    "SELECT game, map, COUNT(*) AS servers, \
                     CAST(SUM(COALESCE(num_players, 0) - COALESCE(num_bots, 0)) AS BIGINT) AS humans \
                     FROM {} WHERE status = 'online' AND map IS NOT NULL AND ($1 = '' OR game = $1) \
                     GROUP BY game, map",
                    crate::store::read::SERVERS_NOW
                ))
                .bind(game.unwrap_or("")),
            )
            .await?;
        let mut maps: HashMap<(String, String), MapStats> = HashMap::new();
        for r in &timed {
            let key: (String, String) = (r.try_get("game")?, r.try_get("map")?);
            let m = maps.entry(key.clone()).or_insert_with(|| empty_map(key));
            m.server_seconds = r.try_get::<i64, _>("server_ms")? / 1000;
            m.player_seconds = r.try_get::<i64, _>("player_ms")? / 1000;
        }
        for r in &live {
            let key: (String, String) = (r.try_get("game")?, r.try_get("map")?);
            let m = maps.entry(key.clone()).or_insert_with(|| empty_map(key));
            m.servers = r.try_get("servers")?;
            m.humans = r.try_get::<Option<i64>, _>("humans")?.unwrap_or(0).max(0);
        }
        let mut out: Vec<MapStats> = maps.into_values().collect();
        out.sort_by(|a, b| {
            (b.player_seconds, b.servers, b.server_seconds)
                .cmp(&(a.player_seconds, a.servers, a.server_seconds))
                .then_with(|| (&a.game, &a.map).cmp(&(&b.game, &b.map)))
        });
        Ok(out)
    }
}

fn empty_map((game, map): (String, String)) -> MapStats {
    MapStats {
        game,
        map,
        servers: 0,
        humans: 0,
        server_seconds: 0,
        player_seconds: 0,
    }
}

/// A chart point's averages from its sums (players, bots, servers online).
fn finish(p: Option<&mut StatsPoint>, (players, bots, online): (i64, i64, i64)) {
    if let Some(p) = p {
        let n = p.rounds.max(1) as f64;
        p.bots = bots as f64 / n;
        p.humans = ((players - bots) as f64 / n).max(0.0);
        p.servers_online = online as f64 / n;
    }
}

fn top_rows(rows: &[sqlx::any::AnyRow], offset: i64) -> Result<Vec<TopPlayer>, sqlx::Error> {
    let mut out = Vec::with_capacity(rows.len());
    for (i, r) in rows.iter().enumerate() {
        out.push(TopPlayer {
            rank: offset.max(0) + i as i64 + 1,
            player_id: r.try_get("player_id")?,
            name_raw: r.try_get("name_raw")?,
            dialect: r.try_get("dialect")?,
            seconds: r.try_get::<i64, _>("ms")? / 1000,
        });
    }
    Ok(out)
}
