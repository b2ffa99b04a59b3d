//! `cargo xtask bench track`: the tracker's storage under a churn model (docs/tracker.md,
//! "Scale"). Writes rounds of a modelled ecosystem through the real `Store` into a temp
//! SQLite file (or the PostgreSQL database given with `--postgres URL`), measures the bytes
//! each table grows by per round, the write time of each round, the downsampling, and then a
//! 30-day player search over a players table filled in bulk at the model's rate.
//!
//! ```text
//! track_bench [--servers 10000] [--players 30000] [--rounds 60] [--warmup 5] [--seed 23]
//!             [--search-days 30] [--prefill-hours 24] [--prefill-days 7] [--postgres URL]
//! ```
//!
//! The rounds are measured in a steady state, not on an empty database: after the first
//! warm-up round, the database is filled in bulk with what a day of running leaves (the per-round
//! series of the last `--prefill-hours` for every server, `--prefill-days` of closed
//! sessions and of the downsampled series, the players of `--search-days`), and the site
//! keeps the default week of history (the series per round for 24 h, then per 10 minutes)
//! and its players for `--search-days`, so each round's upkeep downsamples and deletes as
//! it does on a site that has run for a while. Then the stats pages' queries are timed over
//! that history (the stats' tables filled from the prefill as the upkeep would have). The allocator is the
//! `fragstat` binary's (jemalloc).
//!
//! The model (seeded, so every run writes the same rounds):
//! - `--servers` servers; each has a popularity drawn log-normally (σ = 1.5) so that the
//!   expected players add up to `--players` (most servers nearly empty, a few full), slots
//!   8–32, a base round-trip time of 15–200 ms with ±5 % jitter per round.
//! - Sessions: each round a player leaves with probability 1/30 (sessions last 30 minutes on
//!   average, geometrically distributed, so the model is in steady state from the first
//!   round); arrivals per server are Poisson with the rate that keeps its mean (refused when
//!   full). An arrival is a new player with probability 2 %, otherwise a returning one drawn
//!   from everyone seen so far (an initial population of 10 × `--players`). Names are 1–3
//!   syllables with digits and Quake colour codes in a third of them.
//! - Scores change every round (each player +0–3), pings jitter.
//! - Maps change with probability 1/20 per round (every 20 minutes on average) from 30 maps.
//! - Servers go down with probability 1/1000 per round and come back with probability 1/30
//!   (about 3 % down at any time); a down server is a timeout record.
//! - 10 % of servers run 4 bots each (`is_bot`, `num_bots`).
//! - Each record carries 20 server variables like a Quake III `getinfo`/`getstatus`.

use std::time::{Duration, Instant};

/// The `fragstat` binary's allocator, so the write is measured as `fragstat track` runs it.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

use fragstat::core::model::{Dialect, Text};
use fragstat::core::record::{Record, Status};
use fragstat::{Player, ServerInfo};
use fragstat_tracker::store::{History, RoundData, Store};
use sqlx::Row;

/// The stats' part: their tables filled for the prefilled history, their queries timed.
#[path = "track_bench/stats.rs"]
mod stats;

const SYLLABLES: &[&str] = &[
    "dark", "kill", "er", "sla", "yer", "nova", "ze", "ro", "ghost", "frag", "mas", "ter", "ax",
    "el", "pro", "noob", "shad", "ow", "vex", "lux", "rail", "gun", "quad", "dam", "age", "ki",
    "ra", "tor", "ment", "vi", "per", "zen", "bolt", "ice", "fire", "storm", "wolf", "fox", "hawk",
    "byte", "neo", "max", "rex", "sky", "blu", "red", "sun", "moon", "star", "void",
];
const MAPS: usize = 30;

struct Args {
    servers: usize,
    players: usize,
    rounds: usize,
    warmup: usize,
    seed: u64,
    search_days: i64,
    prefill_hours: i64,
    prefill_days: i64,
    postgres: Option<String>,
}

fn args() -> Args {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let get = |name: &str| {
        argv.iter()
            .position(|a| a == name)
            .and_then(|i| argv.get(i + 1))
            .cloned()
    };
    let num = |name: &str, d: usize| get(name).and_then(|v| v.parse().ok()).unwrap_or(d);
    Args {
        servers: num("--servers", 10_000),
        players: num("--players", 30_000),
        rounds: num("--rounds", 60),
        warmup: num("--warmup", 5),
        seed: num("--seed", 23) as u64,
        search_days: num("--search-days", 30) as i64,
        prefill_hours: num("--prefill-hours", 24) as i64,
        prefill_days: num("--prefill-days", 7) as i64,
        postgres: get("--postgres"),
    }
}

fn name(rng: &mut fastrand::Rng) -> Vec<u8> {
    let mut s = String::new();
    for i in 0..rng.usize(1..=3) {
        if rng.u8(..) < 85 {
            s.push('^');
            s.push(char::from(b'0' + rng.u8(1..8)));
        }
        let syl = SYLLABLES[rng.usize(..SYLLABLES.len())];
        if i == 0 && rng.bool() {
            let mut c = syl.chars();
            if let Some(f) = c.next() {
                s.extend(f.to_uppercase());
                s.push_str(c.as_str());
            }
        } else {
            s.push_str(syl);
        }
    }
    if rng.u8(..) < 100 {
        s.push_str(&rng.u16(..1000).to_string());
    }
    s.into_bytes()
}

/// A Poisson sample (Knuth; the rates here are small).
fn poisson(rng: &mut fastrand::Rng, lambda: f64) -> usize {
    let l = (-lambda).exp();
    let (mut k, mut p) = (0, 1.0);
    loop {
        p *= rng.f64();
        if p <= l {
            return k;
        }
        k += 1;
    }
}

/// A standard normal sample (Box–Muller).
fn normal(rng: &mut fastrand::Rng) -> f64 {
    let (u, v) = (rng.f64().max(1e-12), rng.f64());
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

struct Sim {
    name: usize,
    score: i32,
    ping: i32,
}

struct Server {
    addr: String,
    name: Vec<u8>,
    slots: usize,
    mean: f64,
    rtt: f64,
    map: usize,
    up: bool,
    bots: bool,
    players: Vec<Sim>,
}

struct Model {
    rng: fastrand::Rng,
    names: Vec<Vec<u8>>,
    servers: Vec<Server>,
    arrivals: u64,
    new_names: u64,
}

const LEAVE: f64 = 1.0 / 30.0;
const NEW_PLAYER: f64 = 0.02;

impl Model {
    fn new(a: &Args) -> Model {
        let mut rng = fastrand::Rng::with_seed(a.seed);
        let names: Vec<Vec<u8>> = (0..a.players * 10).map(|_| name(&mut rng)).collect();
        let weights: Vec<f64> = (0..a.servers)
            .map(|_| (1.5 * normal(&mut rng)).exp())
            .collect();
        let total: f64 = weights.iter().sum();
        let mut servers = Vec::with_capacity(a.servers);
        for (i, w) in weights.iter().enumerate() {
            let slots = [8, 12, 16, 24, 32][rng.usize(..5)];
            let mean = (a.players as f64 * w / total).min(slots as f64 * 0.9);
            let mut s = Server {
                addr: format!("198.18.{}.{}:{}", i / 250, i % 250, 27960 + (i % 7)),
                name: name(&mut rng),
                slots,
                mean,
                rtt: rng.f64() * 185.0 + 15.0,
                map: rng.usize(..MAPS),
                up: rng.f64() > 0.03,
                bots: rng.u8(..) < 26,
                players: Vec::new(),
            };
            for _ in 0..poisson(&mut rng, mean).min(slots) {
                s.players.push(Sim {
                    name: rng.usize(..names.len()),
                    score: rng.i32(0..50),
                    ping: rng.i32(20..150),
                });
            }
            servers.push(s);
        }
        Model {
            rng,
            names,
            servers,
            arrivals: 0,
            new_names: 0,
        }
    }

    /// Advances one round and returns its records.
    fn round(&mut self) -> Vec<Record> {
        let mut out = Vec::with_capacity(self.servers.len());
        for i in 0..self.servers.len() {
            let rng = &mut self.rng;
            let s = &mut self.servers[i];
            if s.up && rng.f64() < 0.001 {
                s.up = false;
            } else if !s.up && rng.f64() < 1.0 / 30.0 {
                s.up = true;
            }
            if rng.f64() < 1.0 / 20.0 {
                s.map = rng.usize(..MAPS);
            }
            s.players.retain(|_| rng.f64() >= LEAVE);
            for p in &mut s.players {
                p.score += rng.i32(0..=3);
                p.ping = (p.ping + rng.i32(-3..=3)).clamp(5, 400);
            }
            let arrivals = poisson(rng, s.mean * LEAVE);
            for _ in 0..arrivals {
                if s.players.len() >= s.slots {
                    break;
                }
                self.arrivals += 1;
                let name = if rng.f64() < NEW_PLAYER {
                    self.new_names += 1;
                    self.names.push(name(rng));
                    self.names.len() - 1
                } else {
                    rng.usize(..self.names.len())
                };
                s.players.push(Sim {
                    name,
                    score: 0,
                    ping: rng.i32(20..150),
                });
            }
            if !s.up {
                out.push(Record::failed(
                    Some(s.addr.clone()),
                    "q3",
                    Status::Timeout,
                    "no reply".into(),
                ));
                continue;
            }
            let mut info = ServerInfo::default();
            info.name = Text::new(s.name.clone(), Dialect::Ioq3);
            info.map = Text::new(format!("q3dm{}", s.map + 1).into_bytes(), Dialect::Plain);
            info.gametype = Some("ffa".into());
            info.max_players = s.slots as u32;
            let mut players: Vec<Player> = s
                .players
                .iter()
                .map(|p| {
                    let mut pl = Player::default();
                    pl.name = Text::new(self.names[p.name].clone(), Dialect::Ioq3);
                    pl.score = Some(p.score);
                    pl.ping = Some(p.ping);
                    pl.is_bot = Some(false);
                    pl
                })
                .collect();
            if s.bots {
                for b in ["Sarge", "Grunt", "Major", "Visor"] {
                    let mut pl = Player::default();
                    pl.name = Text::new(b.as_bytes().to_vec(), Dialect::Ioq3);
                    pl.score = Some(rng.i32(0..30));
                    pl.ping = Some(0);
                    pl.is_bot = Some(true);
                    players.push(pl);
                }
                info.num_bots = Some(4);
            }
            info.num_players = players.len() as u32;
            info.password = Some(false);
            info.rules = [
                ("sv_hostname", String::from_utf8_lossy(&s.name).into_owned()),
                ("mapname", format!("q3dm{}", s.map + 1)),
                ("g_gametype", "0".into()),
                ("sv_maxclients", s.slots.to_string()),
                (
                    "version",
                    "ioq3 1.36_GIT_a5e6b3a-2024-07-14 linux-x86_64".into(),
                ),
                ("protocol", "68".into()),
                ("fraglimit", "20".into()),
                ("timelimit", "15".into()),
                ("sv_floodProtect", "1".into()),
                ("sv_maxPing", "0".into()),
                ("sv_minPing", "0".into()),
                ("sv_maxRate", "25000".into()),
                ("sv_allowDownload", "0".into()),
                ("g_needpass", "0".into()),
                ("capturelimit", "8".into()),
                ("sv_privateClients", "0".into()),
                ("dmflags", "0".into()),
                ("bot_minplayers", if s.bots { "4" } else { "0" }.into()),
                ("sv_dlURL", "http://example.org/q3".into()),
                ("gamename", "baseq3".into()),
            ]
            .into_iter()
            .collect();
            info.players = Some(players);
            let rtt = s.rtt * (1.0 + (rng.f64() - 0.5) * 0.1);
            out.push(Record::online(
                Some(s.addr.clone()),
                "q3",
                info,
                Some(Duration::from_secs_f64(rtt / 1000.0)),
            ));
        }
        out
    }
}

/// Bytes of every table and index (SQLite `dbstat`), by the table it belongs to.
async fn sizes(
    conn: &mut sqlx::SqliteConnection,
) -> Result<std::collections::BTreeMap<String, i64>, sqlx::Error> {
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&mut *conn)
        .await?;
    let rows = sqlx::query(
        "SELECT COALESCE(m.tbl_name, d.name), SUM(d.pgsize) FROM dbstat d \
         LEFT JOIN sqlite_master m ON m.name = d.name GROUP BY 1",
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut out = std::collections::BTreeMap::new();
    for r in rows {
        let name: String = r.try_get(0)?;
        // The FTS5 shadow tables belong to the search.
        let name = if name.starts_with("players_search") {
            "players_search".to_string()
        } else {
            name
        };
        *out.entry(name).or_insert(0) += r.try_get::<i64, _>(1)?;
    }
    Ok(out)
}

fn gb(bytes: f64) -> f64 {
    bytes / 1e9
}

/// The writes of a day of history the measured rounds run on top of: the per-round series
/// of the `--prefill-hours` before the first round (every server, every round, with its
/// numbers of the first round), their rounds, `--prefill-days` of closed sessions at the
/// model's rate, and the players a `--search-days` window holds (the model's names and the
/// new names of those days). Written in bulk, SQL-side; not measured.
async fn prefill(
    conn: &mut sqlx::AnyConnection,
    pg: bool,
    a: &Args,
    model: &Model,
    t0: i64,
    arrivals_a_round: f64,
) -> Result<(), Box<dyn std::error::Error>> {
    let t = Instant::now();
    let from = t0 - a.prefill_hours * 3_600_000;
    sqlx::query("BEGIN").execute(&mut *conn).await?;
    if a.prefill_hours > 0 {
        sqlx::query(
            "INSERT INTO rounds (at, finished, servers, online, players) \
             WITH RECURSIVE r(at) AS (SELECT CAST($1 AS BIGINT) UNION ALL \
             SELECT at + 60000 FROM r WHERE at + 60000 < $2) \
             SELECT at, at + 500, $3, $3, $4 FROM r",
        )
        .bind(from)
        .bind(t0)
        .bind(a.servers as i64)
        .bind(a.players as i64)
        .execute(&mut *conn)
        .await?;
        sqlx::query(
            "INSERT INTO series (server_id, at, status, players, bots, rtt) \
             SELECT s.id, r.at, CASE WHEN s.status = 'online' THEN 0 ELSE 1 END, \
             s.num_players, s.num_bots, CAST(s.rtt_ms * 10 AS BIGINT) \
             FROM rounds r CROSS JOIN servers s WHERE r.at >= $1 AND r.at < $2",
        )
        .bind(from)
        .bind(t0)
        .execute(&mut *conn)
        .await?;
    }
    // The downsampled series of the days before, kept as long as the sessions.
    let agg_from = t0 - a.prefill_days * 86_400_000;
    if a.prefill_days > 0 && agg_from < from {
        sqlx::query(
            "INSERT INTO series_agg (server_id, at, rounds, online, players_min, players_avg, \
             players_max, bots_avg, rtt_avg) \
             WITH RECURSIVE b(at) AS (SELECT CAST($1 AS BIGINT) UNION ALL \
             SELECT at + 600000 FROM b WHERE at + 600000 < $2) \
             SELECT s.id, b.at, 10, CASE WHEN s.status = 'online' THEN 10 ELSE 0 END, \
             s.num_players, CAST(s.num_players AS DOUBLE PRECISION), s.num_players, \
             CAST(s.num_bots AS DOUBLE PRECISION), s.rtt_ms * 10 \
             FROM b CROSS JOIN servers s",
        )
        .bind(agg_from)
        .bind(from - from % 600_000)
        .execute(&mut *conn)
        .await?;
    }
    // Players: the model's names (seen before), then new ones up to what `--search-days`
    // of arrivals add.
    let mut rng = fastrand::Rng::with_seed(a.seed ^ 0x5eed);
    let span = a.search_days.max(1) * 86_400_000;
    let extra = (arrivals_a_round * 1440.0 * NEW_PLAYER * a.search_days as f64) as usize;
    let mut names: Vec<Vec<u8>> = model.names.clone();
    names.extend((0..extra).map(|_| name(&mut rng)));
    for chunk in names.chunks(1000) {
        let mut sql = String::from(
            "INSERT INTO players (name_raw, dialect, name, first_seen, last_seen, \
             last_server_id) VALUES ",
        );
        for (i, _) in chunk.iter().enumerate() {
            let last = t0 - rng.i64(0..span);
            let first = last - rng.i64(0..span);
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!(
                "(${}, 'ioq3', ${}, {first}, {last}, {})",
                2 * i + 1,
                2 * i + 2,
                rng.i64(1..=a.servers as i64)
            ));
        }
        sql.push_str(" ON CONFLICT (name_raw, dialect) DO NOTHING");
        let mut q = sqlx::query(&sql);
        for raw in chunk {
            let shown = Text::new(raw.clone(), Dialect::Ioq3)
                .display()
                .to_lowercase();
            q = q.bind(raw.clone()).bind(shown);
        }
        q.execute(&mut *conn).await?;
    }
    // Closed sessions of `--prefill-days` at the model's rate, oldest first.
    let sessions = (arrivals_a_round * 1440.0 * a.prefill_days as f64) as i64;
    if sessions > 0 {
        let span = a.prefill_days * 86_400_000;
        let step = (span / sessions).max(1);
        let start = t0 - span;
        let players: i64 = sqlx::query("SELECT MAX(id) FROM players")
            .fetch_one(&mut *conn)
            .await?
            .try_get(0)?;
        let (rows, rand) = if pg {
            (
                format!(
                    "(SELECT i FROM generate_series(0, {}) AS g(i))",
                    sessions - 1
                ),
                "CAST(floor(random() * 2147483647) AS BIGINT)",
            )
        } else {
            (
                format!(
                    "(WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n \
                     WHERE i < {}) SELECT i FROM n)",
                    sessions - 1
                ),
                "(random() & 2147483647)",
            )
        };
        // Sessions of 2 to 60 minutes; left when the next round saw them gone.
        sqlx::query(&format!(
            "INSERT INTO sessions (player_id, server_id, nth, joined, last_seen, left_at, \
             last_score, team, is_bot) \
             SELECT 1 + {rand} % {players}, 1 + {rand} % {servers}, 0, j, j + d, j + d + 60000, \
             {rand} % 100, NULL, 0 \
             FROM (SELECT {start} + i * {step} AS j, 60000 * (2 + {rand} % 59) AS d FROM {rows} AS q) AS x",
            servers = a.servers,
        ))
        .execute(&mut *conn)
        .await?;
    }
    stats::prefill(conn, t0).await?;
    sqlx::query("COMMIT").execute(&mut *conn).await?;
    if !pg {
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&mut *conn)
            .await?;
    } else {
        sqlx::query("VACUUM ANALYZE").execute(&mut *conn).await?;
    }
    println!(
        "prefill: {} h of per-round series ({} rows), {} days of sessions ({sessions} closed) and of the downsampled series, {} players in {:.0} s",
        a.prefill_hours,
        a.prefill_hours * 60 * a.servers as i64,
        a.prefill_days,
        names.len(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The tables' sizes and growth, and the projected storage a day (SQLite).
async fn storage(
    conn: &mut sqlx::SqliteConnection,
    a: &Args,
    counts: &fragstat_tracker::store::Counts,
    before: Option<std::collections::BTreeMap<String, i64>>,
) -> Result<(), Box<dyn std::error::Error>> {
    let rounds = a.rounds as f64;
    let before = before.unwrap_or_default();
    let after = sizes(conn).await?;
    let mut per_round = std::collections::BTreeMap::new();
    for (table, bytes) in &after {
        let grew = (bytes - before.get(table).copied().unwrap_or(0)) as f64 / rounds;
        per_round.insert(table.clone(), grew);
        println!("  {table}: {bytes} bytes, {grew:.0} bytes a round");
    }
    // The series' bytes a round: its rows a round at its bytes a row (the downsampling
    // deletes as many old rows as a round adds, so its growth says nothing).
    let series_bytes = after.get("series").copied().unwrap_or(0) as f64;
    let series = series_bytes / counts.series.max(1) as f64 * a.servers as f64;
    let rest: f64 = per_round
        .iter()
        .filter(|(t, _)| !matches!(t.as_str(), "series" | "series_agg"))
        .map(|(_, b)| *b)
        .sum();
    let agg_rows = counts.series_agg;
    let agg_bytes = after.get("series_agg").copied().unwrap_or(0) as f64;
    let per_agg = if agg_rows > 0 {
        agg_bytes / agg_rows as f64
    } else {
        0.0
    };
    println!(
        "series: {:.1} bytes a per-round row, {per_agg:.1} bytes a downsampled row ({agg_rows} rows)",
        series_bytes / counts.series.max(1) as f64
    );
    // A day: 1,440 rounds (one a minute); the per-round series of the last raw_hours (24)
    // and one row per server per 10 minutes before.
    let rounds_a_day = 1440.0 * 10_000.0 / a.servers as f64;
    let window = series * rounds_a_day;
    let day_rest = rest * rounds_a_day;
    let day_agg = per_agg * 144.0 * 10_000.0;
    println!(
        "per day at 10,000 servers polled every minute: per-round series {:.2} GB (the last 24 h, kept once), \
         sessions/players/changes/servers/rounds {:.2} GB, downsampled series {:.3} GB",
        gb(window),
        gb(day_rest),
        gb(day_agg)
    );
    println!(
        "projected storage: {:.2} GB/day",
        gb(window + day_rest + day_agg)
    );
    println!("each further day kept: {:.2} GB", gb(day_rest + day_agg));

    Ok(())
}

fn median_max(v: &mut [f64]) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (
        v.get(v.len() / 2).copied().unwrap_or_default(),
        v.last().copied().unwrap_or_default(),
    )
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a = args();
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("bench.db");
    let database = a
        .postgres
        .clone()
        .unwrap_or_else(|| path.display().to_string());
    let sqlite = a.postgres.is_none();
    // A site keeping a week of history (the default; the series per round for 24 h, then per
    // 10 minutes) and its players as long as a `--search-days` search needs.
    let history = History {
        players: Some(Duration::from_secs(a.search_days.max(1) as u64 * 86_400)),
        ..History::default()
    };
    let store = Store::open(&database).await?.with_history(history);
    let mut model = Model::new(&a);
    let mut conn = if sqlite {
        Some(
            <sqlx::SqliteConnection as sqlx::Connection>::connect(&format!(
                "sqlite://{}",
                path.display()
            ))
            .await?,
        )
    } else {
        None
    };
    let t0: i64 = 1_800_000_000_000;
    let mut at = t0;
    let mut writes = Vec::new();
    let mut upkeeps = Vec::new();
    // The read before each round's probes: the servers seen within the session gap (5 min).
    let mut recents = Vec::new();
    let mut recent_n = 0usize;
    let mut before = None;
    let (mut players_seen, mut arrivals0) = (0u64, 0);
    for r in 0..a.warmup + a.rounds {
        // The bulk fill after the first round (its servers have ids then), so that the other
        // warm-up rounds run on it before any is measured (the first rounds after a bulk
        // load read cold pages, and PostgreSQL sets the new rows' hint bits).
        if r == 1.min(a.warmup) && (a.prefill_hours > 0 || a.prefill_days > 0 || a.search_days > 0)
        {
            let mut c = <sqlx::AnyConnection as sqlx::Connection>::connect(
                &fragstat_tracker::store::database_url(&database),
            )
            .await?;
            if sqlite {
                sqlx::query("PRAGMA cache_size = -1000000")
                    .execute(&mut c)
                    .await?;
            }
            let per_round = model.arrivals as f64 / r.max(1) as f64;
            prefill(&mut c, !sqlite, &a, &model, t0, per_round).await?;
            sqlx::Connection::close(c).await?;
        }
        if r == a.warmup {
            if let Some(c) = conn.as_mut() {
                before = Some(sizes(c).await?);
            }
            arrivals0 = model.arrivals;
        }
        let records = model.round();
        if r >= a.warmup {
            players_seen += records
                .iter()
                .filter_map(|r| r.info.as_ref())
                .map(|i| u64::from(i.num_players))
                .sum::<u64>();
        }
        let round = RoundData {
            at,
            finished: at + 500,
            records,
            ..RoundData::default()
        };
        let t = Instant::now();
        recent_n = store.recent_servers(at - 300_000).await?.len();
        let recent = t.elapsed();
        let t = Instant::now();
        store.write_round(&round).await?;
        let took = t.elapsed();
        let t = Instant::now();
        store.maintain(at).await?;
        if r >= a.warmup {
            writes.push(took.as_secs_f64());
            upkeeps.push(t.elapsed().as_secs_f64());
            recents.push(recent.as_secs_f64());
        }
        at += 60_000;
    }
    let rounds = a.rounds as f64;
    // The slowest round, counted from the first measured one.
    let slowest = writes
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map_or(0, |(i, _)| i + 1);
    let (median, max) = median_max(&mut writes);
    let p90 = writes
        .get((writes.len() * 9 / 10).min(writes.len().saturating_sub(1)))
        .copied()
        .unwrap_or_default();
    let (up_median, up_max) = median_max(&mut upkeeps);
    let (recent_median, recent_max) = median_max(&mut recents);
    println!(
        "model: {} servers, {:.0} players a round on average, {:.0} arrivals a round ({} rounds measured after {} warm-up rounds)",
        a.servers,
        players_seen as f64 / rounds,
        (model.arrivals - arrivals0) as f64 / rounds,
        a.rounds,
        a.warmup
    );
    println!(
        "round write: median {median:.3} s, 90th percentile {p90:.3} s, max {max:.3} s (round {slowest})"
    );
    println!(
        "servers seen lately, read before each round's probes: median {recent_median:.3} s, max {recent_max:.3} s ({recent_n} servers)"
    );
    println!(
        "upkeep after each round (downsampling every 10 minutes, retention): median {up_median:.3} s, max {up_max:.3} s"
    );

    let counts = store.counts().await?;
    println!("rows: {counts:?}");
    if let Some(conn) = conn.as_mut() {
        storage(conn, &a, &counts, before.take()).await?;
    } else {
        println!("(sizes are measured on SQLite only)");
    }

    let busiest = model
        .servers
        .iter()
        .max_by(|x, y| x.mean.total_cmp(&y.mean));
    stats::queries(&store, at, busiest.map_or("", |s| s.addr.as_str())).await?;

    if a.search_days <= 0 {
        store.close().await;
        return Ok(());
    }
    // The 30-day player search over the players the prefill wrote and the rounds added.
    let players = store.counts().await?.players;
    println!(
        "players table: {players} identities ({} days of the model's arrivals)",
        a.search_days
    );
    let since = at - a.search_days * 86_400_000;
    let mut times = Vec::new();
    for q in [
        "dark", "slayer", "ki", "a", "nova12", "zzq", "ghost", "er", "qz", "j",
    ] {
        // One warm query, then the timed ones; the slowest of them is the figure.
        store.find_players(q, since, 100).await?;
        let mut worst: f64 = 0.0;
        let mut hits = 0;
        for _ in 0..5 {
            let t = Instant::now();
            hits = store.find_players(q, since, 100).await?.len();
            worst = worst.max(t.elapsed().as_secs_f64() * 1000.0);
        }
        println!("  search {q:?}: {hits} hits, slowest of 5 in {worst:.1} ms");
        times.push(worst);
    }
    let (search_median, search_max) = median_max(&mut times);
    println!(
        "player search ({} days): {search_max:.1} ms (the slowest query; median {search_median:.1} ms)",
        a.search_days,
    );
    store.close().await;
    Ok(())
}
