//! `track_bench`'s stats: the stats' tables filled as the upkeep leaves them after the
//! prefilled history, and the stats pages' queries timed over it.

use std::time::Instant;

use fragstat_tracker::store::{Period, Store};

/// The stats' tables as the upkeep leaves them after the prefilled history: each game's
/// totals per round and per bucket (as schema 4's upgrade writes them from the series), and
/// the players' time this week and this month from the prefilled sessions (each session's
/// whole time in both: the rankings' size is what counts here).
pub async fn prefill(conn: &mut sqlx::AnyConnection, t0: i64) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO game_series (at, game, rounds, servers, online, players, bots, humans_max) \
         SELECT a.at, s.game, MAX(a.rounds), SUM(a.rounds), SUM(a.online), \
         CAST(ROUND(SUM(COALESCE(a.players_avg, 0) * a.rounds)) AS BIGINT), \
         CAST(ROUND(SUM(COALESCE(a.bots_avg, 0) * a.rounds)) AS BIGINT), \
         CAST(ROUND(SUM(COALESCE(a.players_avg, 0) - COALESCE(a.bots_avg, 0))) AS BIGINT) \
         FROM series_agg a JOIN servers s ON s.id = a.server_id GROUP BY a.at, s.game \
         ON CONFLICT (at, game) DO NOTHING",
    )
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "INSERT INTO game_series (at, game, rounds, servers, online, players, bots, humans_max) \
         SELECT x.at, s.game, 1, COUNT(*), SUM(CASE WHEN x.status = 0 THEN 1 ELSE 0 END), \
         SUM(CASE WHEN x.status = 0 THEN COALESCE(x.players, 0) ELSE 0 END), \
         SUM(CASE WHEN x.status = 0 THEN COALESCE(x.bots, 0) ELSE 0 END), \
         SUM(CASE WHEN x.status = 0 THEN COALESCE(x.players, 0) - COALESCE(x.bots, 0) ELSE 0 END) \
         FROM series x JOIN servers s ON s.id = x.server_id WHERE x.at < $1 GROUP BY x.at, s.game \
         ON CONFLICT (at, game) DO NOTHING",
    )
    .bind(t0)
    .execute(&mut *conn)
    .await?;
    for p in [Period::Week, Period::Month] {
        sqlx::query(
            "INSERT INTO play_time (span, period, game, player_id, ms) \
             SELECT $1, $2, 'q3', player_id, CAST(SUM(left_at - joined) AS BIGINT) FROM sessions \
             WHERE left_at IS NOT NULL GROUP BY player_id \
             ON CONFLICT (span, period, game, player_id) DO NOTHING",
        )
        .bind(if p == Period::Week { 7i64 } else { 30 })
        .bind(p.start(t0))
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// The slowest of five timed runs of `f` (after one to warm up), in ms.
async fn slowest<T, F, Fut>(f: F) -> Result<(f64, T), Box<dyn std::error::Error>>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<T, fragstat_tracker::store::StoreError>>,
{
    f().await?;
    let mut worst: f64 = 0.0;
    let mut last = None;
    for _ in 0..5 {
        let t = Instant::now();
        last = Some(f().await?);
        worst = worst.max(t.elapsed().as_secs_f64() * 1000.0);
    }
    Ok((worst, last.ok_or("no run")?))
}

/// The stats pages' queries at steady state (uncached: what each round's first visitor
/// costs), each the slowest of five.
pub async fn queries(
    store: &Store,
    now: i64,
    busiest: &str,
) -> Result<(), Box<dyn std::error::Error>> {
    const H: i64 = 3_600_000;
    let mut all = Vec::new();
    for (label, hours) in [("24 h", 24), ("7 d", 168), ("30 d", 720)] {
        let since = now - hours * H;
        let step = (hours * H / 240).max(60_000);
        for game in [None, Some("q3")] {
            let (ms, points) = slowest(|| store.players_over_time(game, since, step)).await?;
            println!(
                "  players over time, {label}, {}: {} points in {ms:.1} ms",
                game.unwrap_or("every game"),
                points.len()
            );
            all.push(ms);
        }
    }
    let (ms, games) = slowest(|| store.game_stats(now)).await?;
    println!(
        "  numbers now, 24 h peaks and records: {} rows in {ms:.1} ms",
        games.len()
    );
    all.push(ms);
    for period in [Period::Week, Period::Month] {
        for offset in [0, 9_950] {
            let (ms, page) = slowest(|| store.top_players("q3", period, now, offset, 50)).await?;
            println!(
                "  top players of q3, {}, ranks {}–{}: {} ranked, {ms:.1} ms",
                period.key(),
                offset + 1,
                offset + 50,
                page.total
            );
            all.push(ms);
        }
        let (ms, page) = slowest(|| store.server_top_players(busiest, period, now, 0, 50)).await?;
        println!(
            "  top players of the busiest server, {}: {} ranked, {ms:.1} ms",
            period.key(),
            page.map_or(0, |p| p.total)
        );
        all.push(ms);
        let (ms, maps) = slowest(|| store.maps(None, period, now)).await?;
        println!(
            "  maps, {}: {} maps in {ms:.1} ms",
            period.key(),
            maps.len()
        );
        all.push(ms);
    }
    let (median, max) = super::median_max(&mut all);
    println!("stats queries: {max:.1} ms (the slowest; median {median:.1} ms)");
    Ok(())
}
