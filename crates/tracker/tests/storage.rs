//! Storage: a database of schema 1 upgraded and read through schema 2's API; the per-record
//! caps (R8) flooded; a restart that continues or ends the open sessions; the upkeep's
//! downsampling and retention. In SQLite and in a real PostgreSQL server started by the test.

use fragstat::core::model::{Dialect, Text};
use fragstat::core::record::Record;
use fragstat::{Player, ServerInfo};
use fragstat_tracker::store::{RoundData, Store, MAX_PLAYERS, MAX_RECORD_BYTES, MAX_WARNINGS};
use sqlx::any::AnyPoolOptions;

const A: &str = "192.0.2.10:27960";
const B: &str = "192.0.2.11:27960";

/// Creates a schema-1 database at `url` (the first migration only, as a tracker of that
/// version did) with four rounds of rows.
async fn schema_1(url: &str, backend: &str) {
    sqlx::any::install_default_drivers();
    let dir = tempfile::tempdir().unwrap();
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("migrations")
        .join(backend)
        .join("0001_schema.sql");
    std::fs::copy(&src, dir.path().join("0001_schema.sql")).unwrap();
    let pool = AnyPoolOptions::new()
        .max_connections(1)
        .connect(&fragstat_tracker::store::database_url(url))
        .await
        .unwrap();
    sqlx::migrate::Migrator::new(dir.path())
        .await
        .unwrap()
        .run(&pool)
        .await
        .unwrap();
    for at in [1000i64, 2000, 3000, 4000] {
        sqlx::query("INSERT INTO rounds VALUES ($1, $1, 2, $2, 0)")
            .bind(at)
            .bind(if at == 3000 { 1i64 } else { 2 })
            .execute(&pool)
            .await
            .unwrap();
    }
    for (addr, name, map) in [(A, "^1A", "m2"), (B, "B", "x")] {
        sqlx::query(
            "INSERT INTO servers (addr, game, first_seen, last_seen, last_online, status, \
             name_raw, name, dialect, map, gametype, num_players, max_players, record) \
             VALUES ($1, 'q3', 1000, 4000, 4000, 'online', $2, lower($3), 'quake', $4, 'ffa', \
             2, 16, '{}')",
        )
        .bind(addr)
        .bind(name.as_bytes().to_vec())
        .bind(name.replace("^1", ""))
        .bind(map)
        .execute(&pool)
        .await
        .unwrap();
    }
    for (addr, at, status, n, map) in [
        (A, 1000i64, "online", Some(2i64), Some("m1")),
        (A, 2000, "online", Some(2), Some("m1")),
        (A, 3000, "online", Some(1), Some("m2")),
        (A, 4000, "online", Some(2), Some("m2")),
        (B, 1000, "online", Some(1), Some("x")),
        (B, 2000, "online", Some(1), Some("x")),
        (B, 3000, "timeout", None, None),
        (B, 4000, "online", Some(0), Some("x")),
    ] {
        sqlx::query(
            "INSERT INTO snapshots (addr, at, status, num_players, max_players, rtt_ms, map, \
             record) VALUES ($1, $2, $3, $4, 16, 12.5, $5, '{}')",
        )
        .bind(addr)
        .bind(at)
        .bind(status)
        .bind(n)
        .bind(map)
        .execute(&pool)
        .await
        .unwrap();
    }
    for (addr, idx, name, ats) in [
        (A, 0i64, "alice", &[1000i64, 2000, 4000][..]),
        (A, 1, "bob", &[1000, 2000, 3000, 4000][..]),
        (B, 0, "carol", &[1000, 2000][..]),
    ] {
        for at in ats {
            sqlx::query(
                "INSERT INTO player_snapshots (addr, at, idx, name_raw, name, dialect, score, \
                 ping, team, is_bot) VALUES ($1, $2, $3, $4, $5, 'plain', $6, 50, NULL, 0)",
            )
            .bind(addr)
            .bind(*at)
            .bind(idx)
            .bind(name.as_bytes().to_vec())
            .bind(name)
            .bind(*at / 100)
            .execute(&pool)
            .await
            .unwrap();
        }
    }
    pool.close().await;
}

fn online(addr: &str, players: &[&str]) -> Record {
    let mut info = ServerInfo::default();
    info.name = Text::new(b"A".to_vec(), Dialect::Quake);
    info.map = Text::new(b"m2".to_vec(), Dialect::Plain);
    info.max_players = 16;
    info.num_players = u32::try_from(players.len()).unwrap();
    info.players = Some(
        players
            .iter()
            .map(|n| {
                let mut p = Player::default();
                p.name = Text::new(n.as_bytes().to_vec(), Dialect::Plain);
                p.score = Some(7);
                p
            })
            .collect(),
    );
    Record::online(Some(addr.into()), "q3", info, None)
}

/// A schema-1 database upgrades: servers keep their rows, snapshots become the series and
/// state changes, player rows become players and sessions (gaps and islands); the new API
/// reads them, and the next round continues the open sessions.
async fn migrates_from_schema_1(url: &str, backend: &str) {
    schema_1(url, backend).await;
    let store = Store::open(url).await.expect("migrate");
    assert_eq!(store.migrations().await.unwrap(), vec![1, 2, 3, 4, 5]);
    let c = store.counts().await.unwrap();
    assert_eq!(
        (
            c.rounds,
            c.servers,
            c.series,
            c.changes,
            c.players,
            c.sessions,
            c.open_sessions
        ),
        (4, 2, 8, 5, 3, 4, 2),
        "{c:?}"
    );
    let a = store.server(A).await.unwrap().unwrap();
    assert!(a.id > 0);
    assert_eq!(a.name_raw.as_deref(), Some(&b"^1A"[..]));
    assert_eq!((a.up_since, a.down_since), (Some(4000), None));
    let maps = store.map_history(A, 0, 10).await.unwrap();
    let maps: Vec<_> = maps
        .iter()
        .map(|m| (m.map.as_str(), m.from, m.to))
        .collect();
    assert_eq!(maps, [("m2", 3000, None), ("m1", 1000, Some(3000))]);
    let up = store.uptime(B, 0).await.unwrap();
    assert_eq!(up.fraction, Some(0.75));
    let history = store.history(A, 0).await.unwrap();
    assert_eq!(history.len(), 4);
    assert_eq!(history[0].map.as_deref(), Some("m1"));
    assert_eq!(history[3].map.as_deref(), Some("m2"));
    assert_eq!(history[0].rtt_ms, Some(12.5));
    let found = store.find_players("ALI", 0, 10).await.unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0].addr.as_deref(), found[0].online), (Some(A), true));
    let alice = store.player(found[0].player_id, 10).await.unwrap().unwrap();
    let sessions: Vec<_> = alice
        .sessions
        .iter()
        .map(|s| (s.addr.as_str(), s.joined, s.left, s.last_score))
        .collect();
    assert_eq!(
        sessions,
        [(A, 4000, None, Some(40)), (A, 1000, Some(2000), Some(20))]
    );
    assert_eq!(alice.seconds_played, 1);
    let on: Vec<String> = store
        .players_on(A)
        .await
        .unwrap()
        .iter()
        .map(|p| p.name_text().display())
        .collect();
    assert_eq!(on, ["bob", "alice"], "highest score first");
    assert!(!store.find_players("carol", 0, 10).await.unwrap()[0].online);

    // The next round (within the session gap): bob stays, alice left.
    store
        .write_round(&RoundData {
            at: 5000,
            finished: 5000,
            records: vec![online(A, &["bob"])],
            ..RoundData::default()
        })
        .await
        .unwrap();
    let alice = store.player(found[0].player_id, 10).await.unwrap().unwrap();
    assert_eq!(alice.sessions[0].left, Some(5000));
    let bob = store.find_players("bob", 0, 10).await.unwrap();
    let bob = store.player(bob[0].player_id, 10).await.unwrap().unwrap();
    assert_eq!(bob.sessions.len(), 1, "one session, continued: {bob:?}");
    assert_eq!(bob.sessions[0].joined, 1000);
    assert_eq!(store.counts().await.unwrap().open_sessions, 1);
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_migrates_from_schema_1() {
    let dir = tempfile::tempdir().unwrap();
    migrates_from_schema_1(&dir.path().join("v1.db").display().to_string(), "sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_migrates_from_schema_1() {
    let Some(pg) = fragstat_testkit::postgres::Postgres::start() else {
        return;
    };
    migrates_from_schema_1(&pg.url, "postgres").await;
}

/// R8: a record with 9,000 players and one with 65,000 warnings and 100,000 rules are
/// stored with at most 1,024 players, 32 warnings (and one saying how many more) and 64 KiB
/// of JSON.
async fn caps(url: &str) {
    // The churn budget (tested in tests/churn.rs) as high as the cap, so the cap is what counts.
    let store = Store::open(url)
        .await
        .unwrap()
        .with_history(fragstat_tracker::store::History {
            new_players_per_round: MAX_PLAYERS,
            ..fragstat_tracker::store::History::default()
        });
    let names: Vec<String> = (0..9000).map(|i| format!("p{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let many = online(A, &names);
    let mut noisy = online(B, &["x"]);
    if let Some(info) = noisy.info.as_mut() {
        info.warnings = (0..65_000).map(|i| format!("skipped line {i}")).collect();
        info.rules = (0..100_000)
            .map(|i| (format!("key{i}"), "v".repeat(20)))
            .collect();
    }
    store
        .write_round(&RoundData {
            at: 1000,
            finished: 1000,
            records: vec![many, noisy],
            ..RoundData::default()
        })
        .await
        .unwrap();
    let c = store.counts().await.unwrap();
    assert_eq!(c.sessions, i64::try_from(MAX_PLAYERS).unwrap() + 1, "{c:?}");
    assert_eq!(store.players_on(A).await.unwrap().len(), MAX_PLAYERS);
    // The server's own count is kept as it said it.
    assert_eq!(
        store.server(A).await.unwrap().unwrap().num_players,
        Some(9000)
    );
    let record = store.server_record(A).await.unwrap().unwrap();
    let v: serde_json::Value = serde_json::from_str(&record).unwrap();
    let w = v["warnings"].as_array().unwrap();
    assert!(w
        .iter()
        .any(|w| w.as_str().unwrap().starts_with("7976 more players")));
    let record = store.server_record(B).await.unwrap().unwrap();
    assert!(record.len() <= MAX_RECORD_BYTES, "{}", record.len());
    let v: serde_json::Value = serde_json::from_str(&record).unwrap();
    let w: Vec<&str> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(w.len() <= MAX_WARNINGS + 2, "{}", w.len());
    assert!(w.contains(&"and 64968 more"), "{w:?}");
    assert!(w
        .iter()
        .any(|w| w.contains("rules and extra fields not stored")));
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_caps_per_record() {
    let dir = tempfile::tempdir().unwrap();
    caps(&dir.path().join("caps.db").display().to_string()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_caps_per_record() {
    let Some(pg) = fragstat_testkit::postgres::Postgres::start() else {
        return;
    };
    caps(&pg.url).await;
}

/// A restarted tracker continues the sessions open in the database when the pause was short,
/// and ends them at their last sighting when it was longer than the session gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_restart_continues_or_ends_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("r.db").display().to_string();
    let round = |at: i64, players: &[&str]| RoundData {
        at,
        finished: at,
        records: vec![online(A, players)],
        ..RoundData::default()
    };
    let store = Store::open(&db).await.unwrap();
    store
        .write_round(&round(1_000, &["ann", "ben"]))
        .await
        .unwrap();
    store.close().await;
    // 60 s later: continued.
    let store = Store::open(&db).await.unwrap();
    store
        .write_round(&round(61_000, &["ann", "ben"]))
        .await
        .unwrap();
    let c = store.counts().await.unwrap();
    assert_eq!((c.sessions, c.open_sessions), (2, 2), "{c:?}");
    store.close().await;
    // An hour later (the gap is 5 minutes): ended at their last sighting (61 s, as the
    // tracker wrote it when they joined or refreshed: at least their first round), new
    // sessions begin.
    let store = Store::open(&db).await.unwrap();
    store
        .write_round(&round(3_661_000, &["ann"]))
        .await
        .unwrap();
    let c = store.counts().await.unwrap();
    assert_eq!((c.sessions, c.open_sessions), (3, 1), "{c:?}");
    let ben = store.find_players("ben", 0, 1).await.unwrap();
    let ben = store.player(ben[0].player_id, 5).await.unwrap().unwrap();
    let left = ben.sessions[0].left.unwrap();
    assert!((1_000..=61_000).contains(&left), "{ben:?}");
    store.close().await;
}

/// A player still on a server has played until the server's last answer, though the writer
/// refreshes an open session only every `flush_rounds` rounds; a round the server does not
/// answer adds nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_open_session_time_runs_to_the_last_answer() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db").display().to_string();
    let store = Store::open(&db).await.unwrap();
    for at in [1_000i64, 61_000, 121_000] {
        let data = RoundData {
            at,
            finished: at,
            records: vec![online(A, &["ann"])],
            ..RoundData::default()
        };
        store.write_round(&data).await.unwrap();
    }
    let silent = RoundData {
        at: 181_000,
        finished: 181_000,
        records: vec![Record::failed(
            Some(A.into()),
            "q3",
            fragstat::core::record::Status::Timeout,
            "no answer".to_string(),
        )],
        ..RoundData::default()
    };
    store.write_round(&silent).await.unwrap();
    let ann = store.find_players("ann", 0, 1).await.unwrap();
    let ann = store.player(ann[0].player_id, 5).await.unwrap().unwrap();
    assert_eq!(ann.sessions[0].left, None, "{ann:?}");
    assert_eq!(
        (ann.seconds_played, ann.sessions[0].seconds, ann.last_seen),
        (120, 120, 121_000),
        "{ann:?}"
    );
    store.close().await;
}

/// A round whose player list is missing (a Quake III `getinfo` answered and its `getstatus`
/// was lost) leaves the sessions and the players shown as they were: the next round with the
/// list continues them rather than starting new ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_round_without_the_list_keeps_the_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("l.db").display().to_string();
    let store = Store::open(&db).await.unwrap();
    let round = |at: i64, rec: Record| RoundData {
        at,
        finished: at,
        records: vec![rec],
        ..RoundData::default()
    };
    store
        .write_round(&round(1_000, online(A, &["ann", "ben"])))
        .await
        .unwrap();
    let mut info_only = online(A, &["ann", "ben"]);
    if let Some(info) = info_only.info.as_mut() {
        info.players = None;
    }
    store.write_round(&round(61_000, info_only)).await.unwrap();
    let c = store.counts().await.unwrap();
    assert_eq!((c.sessions, c.open_sessions), (2, 2), "{c:?}");
    assert_eq!(store.players_on(A).await.unwrap().len(), 2);
    store
        .write_round(&round(121_000, online(A, &["ann", "ben"])))
        .await
        .unwrap();
    let c = store.counts().await.unwrap();
    assert_eq!((c.sessions, c.open_sessions), (2, 2), "{c:?}");
    store.close().await;
}

/// A server without a round-trip time (it did not answer) and then with one, in the same
/// place of the same statement: sqlx binds a NULL double to PostgreSQL as a `float4`, and a
/// statement prepared so refused every later double (a round failed).
async fn null_then_float(url: &str) {
    use fragstat::core::record::Status;
    let store = Store::open(url).await.unwrap();
    let mut answered = online(B, &["x"]);
    answered.rtt_ms = Some(12.25);
    store
        .write_round(&RoundData {
            at: 1000,
            finished: 1000,
            records: vec![
                Record::failed(Some(A.into()), "q3", Status::Timeout, "no reply".into()),
                answered.clone(),
            ],
            ..RoundData::default()
        })
        .await
        .unwrap();
    let mut back = online(A, &["y"]);
    back.rtt_ms = Some(40.5);
    if let Some(i) = answered.info.as_mut() {
        i.map = Text::new(b"other".to_vec(), Dialect::Plain);
    }
    store
        .write_round(&RoundData {
            at: 2000,
            finished: 2000,
            records: vec![back, answered],
            ..RoundData::default()
        })
        .await
        .expect("a double where a NULL was");
    assert_eq!(store.server(A).await.unwrap().unwrap().rtt_ms, Some(40.5));
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_null_then_float() {
    let dir = tempfile::tempdir().unwrap();
    null_then_float(&dir.path().join("f.db").display().to_string()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_null_then_float() {
    let Some(pg) = fragstat_testkit::postgres::Postgres::start() else {
        return;
    };
    null_then_float(&pg.url).await;
}

const C: &str = "192.0.2.12:27960";
const MINUTE: i64 = 60_000;
/// A start on a 10-minute boundary.
const T0: i64 = 1_800_000_000_000;

/// Rows of `table` whose server is not in `servers` (none after an upkeep: what a deleted
/// server had goes with it or ages out, never a new server's).
async fn orphans(url: &str, table: &str) -> i64 {
    sqlx::any::install_default_drivers();
    let pool = AnyPoolOptions::new()
        .max_connections(1)
        .connect(&fragstat_tracker::store::database_url(url))
        .await
        .unwrap();
    let n: i64 = sqlx::query_scalar(&format!(
        "SELECT COUNT(*) FROM {table} t WHERE NOT EXISTS \
         (SELECT 1 FROM servers s WHERE s.id = t.server_id)"
    ))
    .fetch_one(&pool)
    .await
    .unwrap();
    pool.close().await;
    n
}

/// The round `k` minutes after T0 of three servers: A always up (ann; bob from minute 60; map
/// m1, then m2 from minute 30), B down from minute 30 to 39 (cat), C listed until minute 19
/// (dan), then no longer probed.
fn upkeep_round(k: i64) -> RoundData {
    let at = T0 + k * MINUTE;
    let mut a = online(A, if k < 60 { &["ann"] } else { &["ann", "bob"] });
    if let Some(i) = a.info.as_mut() {
        i.map = Text::new(if k < 30 { b"m1" } else { b"m2" }.to_vec(), Dialect::Plain);
    }
    let mut records = vec![a];
    records.push(if (30..40).contains(&k) {
        Record::failed(
            Some(B.into()),
            "q3",
            fragstat::core::record::Status::Timeout,
            "no reply".into(),
        )
    } else {
        online(B, &["cat"])
    });
    if k < 20 {
        records.push(online(C, &["dan"]));
    }
    RoundData {
        at,
        finished: at,
        records,
        ..RoundData::default()
    }
}

/// The upkeep after each round: per-round series rows older than `raw` become one row per
/// server per bucket (rounds, answers, players' minimum, average and maximum), which the
/// history, the uptime and the counts read as they read the rounds; then each table's
/// retention: old rounds, buckets, changes, ended sessions and players unseen go, and a
/// server no longer probed goes with its latest numbers and changes once its sessions have.
async fn upkeep(url: &str, wal: Option<&std::path::Path>) {
    use std::time::Duration;
    let hours = |h: u64| Some(Duration::from_secs(h * 3600));
    let history = fragstat_tracker::store::History {
        raw: Duration::from_secs(3600),
        bucket: Duration::from_secs(600),
        series: hours(3),
        changes: hours(3),
        sessions: hours(3),
        players: hours(3),
        rounds: hours(3),
        ..fragstat_tracker::store::History::default()
    };
    let store = Store::open(url).await.unwrap().with_history(history);
    for k in 0..120 {
        let round = upkeep_round(k);
        store.write_round(&round).await.unwrap();
        store.maintain(round.at).await.unwrap();
    }
    // At minute 119 the per-round rows from minute 50 on are kept (the cut: the bucket of
    // an hour ago); before, buckets: A's and B's 0–40, C's 0 and 10.
    let c = store.counts().await.unwrap();
    assert_eq!((c.series, c.series_agg), (140, 12), "{c:?}");
    let b = store.history(B, T0).await.unwrap();
    assert_eq!(b.len(), 5 + 70, "{b:?}");
    assert!(b.windows(2).all(|w| w[0].at < w[1].at), "{b:?}");
    assert_eq!(b.iter().map(|p| p.rounds).sum::<i64>(), 120);
    let bucket = |at: i64| b.iter().find(|p| p.at == at).unwrap();
    let down = bucket(T0 + 30 * MINUTE);
    assert_eq!((down.rounds, down.online_rounds), (10, 0), "{down:?}");
    assert_eq!(down.status, "timeout");
    let up = bucket(T0 + 20 * MINUTE);
    assert_eq!(
        (
            up.rounds,
            up.online_rounds,
            up.players_min,
            up.num_players,
            up.players_max
        ),
        (10, 10, Some(1), Some(1), Some(1)),
        "{up:?}"
    );
    // Per round after the cut.
    let raw = bucket(T0 + 50 * MINUTE);
    assert_eq!((raw.rounds, raw.num_players), (1, Some(1)), "{raw:?}");
    // A's maps as its changes say, at every point of either kind.
    let a = store.history(A, T0).await.unwrap();
    assert_eq!(a.first().unwrap().rounds, 10);
    assert_eq!(a.last().unwrap().num_players, Some(2));
    assert_eq!(a.last().unwrap().map.as_deref(), Some("m2"));
    // B answered 110 of its 120 rounds, read from buckets and rounds alike.
    let u = store.uptime(B, T0).await.unwrap();
    assert!((u.fraction.unwrap() - 110.0 / 120.0).abs() < 1e-9, "{u:?}");
    let u = store.uptime(A, T0 + 45 * MINUTE).await.unwrap();
    assert_eq!(u.fraction, Some(1.0), "{u:?}");
    // C's last round was minute 19: dan's session ended there.
    let dan = store.find_players("dan", T0, 5).await.unwrap();
    assert_eq!(dan.len(), 1, "{dan:?}");
    let dan = store.player(dan[0].player_id, 5).await.unwrap().unwrap();
    assert_eq!(dan.sessions[0].left, Some(T0 + 19 * MINUTE), "{dan:?}");

    // Three hours on (A and B probed every minute): everything older than three hours goes,
    // C (not probed for that long, its sessions gone) with it.
    for k in 120..300 {
        let round = upkeep_round(k);
        store.write_round(&round).await.unwrap();
        store.maintain(round.at).await.unwrap();
    }
    let cut = T0 + 299 * MINUTE - 3 * 60 * MINUTE;
    let c = store.counts().await.unwrap();
    assert_eq!(c.servers, 2, "{c:?}");
    assert_eq!(c.rounds, 181, "{c:?}");
    assert!(store.server(C).await.unwrap().is_none());
    assert!(store.find_players("dan", 0, 5).await.unwrap().is_empty());
    assert_eq!(store.find_players("ann", 0, 5).await.unwrap().len(), 1);
    let b = store.history(B, 0).await.unwrap();
    assert!(
        b.iter().all(|p| p.at >= cut - 10 * MINUTE),
        "{:?}",
        b.first()
    );
    assert_eq!(b.last().unwrap().at, T0 + 299 * MINUTE);
    // cat's first session (it ended when B went down) is gone; the one since is open.
    let cat = store.find_players("cat", 0, 1).await.unwrap();
    let cat = store.player(cat[0].player_id, 10).await.unwrap().unwrap();
    assert_eq!(cat.sessions.len(), 1, "{cat:?}");
    assert_eq!(cat.sessions[0].left, None);
    for table in [
        "series",
        "series_agg",
        "server_latest",
        "server_changes",
        "sessions",
    ] {
        assert_eq!(orphans(url, table).await, 0, "{table}");
    }
    // SQLite: the upkeep copies the log into the database every round, so it stays the size
    // of a round's pages where 300 rounds' would be megabytes (a commit checkpoints only
    // past 64 MB). Read before the store closes (the last connection removes the file).
    if let Some(wal) = wal {
        let size = std::fs::metadata(wal).map(|m| m.len()).unwrap();
        assert!(size < 512 * 1024, "write-ahead log of {size} bytes");
    }
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_upkeep_downsamples_and_keeps_each_table_its_time() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("u.db").display().to_string();
    upkeep(&db, Some(&dir.path().join("u.db-wal"))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_upkeep_downsamples_and_keeps_each_table_its_time() {
    let Some(pg) = fragstat_testkit::postgres::Postgres::start() else {
        return;
    };
    upkeep(&pg.url, None).await;
}
