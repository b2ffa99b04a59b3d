//! Migrations frozen: every shipped migration's checksum pinned (`migrations/checksums.txt`),
//! and a database migrated by any earlier build (each earlier shipped form of 0001 and 0002,
//! `tests/fixtures/migrations`) opens, is repaired to the current schema with its data kept,
//! and takes the next round. In SQLite and in a real PostgreSQL server started by the test.

use std::path::{Path, PathBuf};

use fragstat::core::model::{Dialect, Text};
use fragstat::core::record::Record;
use fragstat::{Player, ServerInfo};
use fragstat_tracker::store::{database_url, RoundData, Store, StoreError};
use sha2::{Digest, Sha384};
use sqlx::any::AnyPoolOptions;
use sqlx::{AnyPool, Row};

#[path = "migrations/schema.rs"]
mod schema;

const A: &str = "192.0.2.10:27960";
const B: &str = "192.0.2.11:27960";
const C: &str = "192.0.2.12:27960";

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Every `*.sql` under `migrations/{sqlite,postgres}`, as `backend/file`, sorted.
fn migration_files() -> Vec<String> {
    let mut out = Vec::new();
    for backend in ["sqlite", "postgres"] {
        for e in std::fs::read_dir(manifest().join("migrations").join(backend)).unwrap() {
            let name = e.unwrap().file_name().into_string().unwrap();
            if name.ends_with(".sql") {
                out.push(format!("{backend}/{name}"));
            }
        }
    }
    out.sort();
    out
}

/// A shipped migration edited, removed, or added without its pin fails here.
#[test]
fn shipped_migrations_are_pinned() {
    let pins = std::fs::read_to_string(manifest().join("migrations/checksums.txt")).unwrap();
    let pins: Vec<(&str, &str)> = pins
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (sum, file) = l.split_once("  ").expect("`SHA384  backend/file` lines");
            (file, sum)
        })
        .collect();
    let files = migration_files();
    for (file, sum) in &pins {
        let text = std::fs::read(manifest().join("migrations").join(file)).unwrap_or_else(|_| {
            panic!("{file} is pinned but gone: a shipped migration is never removed")
        });
        assert_eq!(
            hex(&Sha384::digest(&text)),
            *sum,
            "{file} changed after it shipped: every database it migrated would refuse to open. \
             Undo the edit and put the change in a new migration (docs/tracker.md \"Migrations\")"
        );
    }
    for file in &files {
        assert!(
            pins.iter().any(|(f, _)| f == file),
            "{file} is not pinned in migrations/checksums.txt: once shipped, add its \
             `sha384sum` line there (docs/tracker.md \"Migrations\")"
        );
    }
    // Both backends have the same migrations.
    let names = |b: &str| -> Vec<String> {
        files
            .iter()
            .filter_map(|f| f.strip_prefix(&format!("{b}/")).map(str::to_owned))
            .collect()
    };
    assert_eq!(names("sqlite"), names("postgres"));
}

/// The earlier forms kept as fixtures: (version, commit, path), oldest version first.
fn fixtures(backend: &str) -> Vec<(u32, String, PathBuf)> {
    let dir = manifest().join("tests/fixtures/migrations").join(backend);
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sql"))
        .map(|p| {
            let stem = p.file_stem().unwrap().to_str().unwrap().to_owned();
            let (v, commit) = stem.split_once('-').unwrap();
            (v.parse().unwrap(), commit.to_owned(), p)
        })
        .collect();
    out.sort();
    assert!(out.len() >= 5, "{out:?}");
    out
}

/// The current migration file of `version`.
fn current(backend: &str, version: u32) -> PathBuf {
    let prefix = format!("{version:04}_");
    std::fs::read_dir(manifest().join("migrations").join(backend))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .starts_with(&prefix)
        })
        .unwrap()
}

async fn pool(url: &str) -> AnyPool {
    sqlx::any::install_default_drivers();
    AnyPoolOptions::new()
        .max_connections(1)
        .connect(&database_url(url))
        .await
        .unwrap()
}

/// Migrates `url` as the build that shipped `form` did: migrations 1 (and 2, when `form` is
/// a 0002) from their files, under their shipped names, by sqlx itself.
async fn migrate_as_shipped(url: &str, backend: &str, version: u32, form: &Path) {
    let dir = tempfile::tempdir().unwrap();
    let one = dir.path().join("0001_schema.sql");
    let two = dir.path().join("0002_compact_history.sql");
    if version == 1 {
        std::fs::copy(form, one).unwrap();
    } else {
        std::fs::copy(current(backend, 1), one).unwrap();
        std::fs::copy(form, two).unwrap();
    }
    let pool = pool(url).await;
    sqlx::migrate::Migrator::new(dir.path())
        .await
        .unwrap()
        .run(&pool)
        .await
        .unwrap();
    if version == 1 {
        seed_v1(&pool).await;
    } else {
        seed_v2(&pool, backend).await;
    }
    pool.close().await;
}

async fn exec(pool: &AnyPool, sql: &str) {
    sqlx::raw_sql(sql)
        .execute(pool)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// Schema 1: one round, one server, one player.
async fn seed_v1(pool: &AnyPool) {
    exec(pool, "INSERT INTO rounds VALUES (1000, 1000, 1, 1, 1)").await;
    sqlx::query(
        "INSERT INTO servers (addr, game, first_seen, last_seen, last_online, status, name_raw, \
         name, dialect, map, num_players, max_players, record) \
         VALUES ($1, 'q3', 1000, 1000, 1000, 'online', $2, 'a', 'quake', 'm1', 1, 16, '{}')",
    )
    .bind(A)
    .bind(b"^1A".to_vec())
    .execute(pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO snapshots (addr, at, status, num_players, max_players, rtt_ms, map, record) \
         VALUES ($1, 1000, 'online', 1, 16, 12.5, 'm1', '{}')",
    )
    .bind(A)
    .execute(pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO player_snapshots (addr, at, idx, name_raw, name, dialect, score) \
         VALUES ($1, 1000, 0, $2, 'alice', 'plain', 3)",
    )
    .bind(A)
    .bind(b"alice".to_vec())
    .execute(pool)
    .await
    .unwrap();
}

/// Schema 2 (any form): rows in every table, as that build's writer kept them: two rounds,
/// A online with alice and bob, B online then timed out with carol, a downsampled bucket.
async fn seed_v2(pool: &AnyPool, backend: &str) {
    exec(
        pool,
        "INSERT INTO rounds (at, finished, servers, online, players) VALUES \
         (1000, 1000, 2, 2, 3), (2000, 2000, 2, 1, 2)",
    )
    .await;
    for (id, addr, name, status, up, down) in [
        (1i64, A, &b"^1A"[..], "online", Some(1000i64), None),
        (2, B, b"B", "timeout", None, Some(2000i64)),
    ] {
        sqlx::query(
            "INSERT INTO servers (id, addr, game, first_seen, last_seen, last_online, status, \
             name_raw, name, dialect, map, gametype, num_players, max_players, num_bots, \
             rtt_ms, password, country, up_since, down_since, record) \
             VALUES ($1, $2, 'q3', 1000, 2000, $3, $4, $5, 'a', 'quake', 'm1', 'ffa', 2, 16, 0, \
             13.0, 0, 'DE', $6, $7, '{}')",
        )
        .bind(id)
        .bind(addr)
        .bind(if id == 1 { 2000i64 } else { 1000 })
        .bind(status)
        .bind(name.to_vec())
        .bind(up)
        .bind(down)
        .execute(pool)
        .await
        .unwrap();
    }
    exec(
        pool,
        "INSERT INTO series (at, server_id, status, players, bots, rtt) VALUES \
         (1000, 1, 0, 2, 0, 125), (1000, 2, 0, 1, 0, 300), (2000, 1, 0, 2, 0, 130), \
         (2000, 2, 1, NULL, NULL, NULL)",
    )
    .await;
    exec(
        pool,
        "INSERT INTO series_agg (at, server_id, rounds, online, players_min, players_avg, \
         players_max, bots_avg, rtt_avg) VALUES (0, 1, 4, 4, 1, 1.5, 2, 0.0, 120.0)",
    )
    .await;
    let has_latest = sqlx::query("SELECT 1 FROM server_latest")
        .fetch_optional(pool)
        .await
        .is_ok();
    if has_latest {
        exec(
            pool,
            "INSERT INTO server_latest (server_id, at, status, players, bots, rtt) VALUES \
             (1, 2000, 0, 2, 0, 130), (2, 2000, 1, NULL, NULL, NULL)",
        )
        .await;
    }
    for (server, at, online, name, map) in [
        (1i64, 1000i64, 1i64, Some(&b"^1A"[..]), Some("m1")),
        (2, 1000, 1, Some(b"B"), Some("x")),
        (2, 2000, 0, None, None),
    ] {
        sqlx::query(
            "INSERT INTO server_changes (server_id, at, online, name_raw, dialect, map, \
             gametype, max_players, password) VALUES ($1, $2, $3, $4, 'quake', $5, 'ffa', 16, 0)",
        )
        .bind(server)
        .bind(at)
        .bind(online)
        .bind(name.map(<[u8]>::to_vec))
        .bind(map)
        .execute(pool)
        .await
        .unwrap();
    }
    seed_v2_players(pool, backend).await;
}

/// Schema 2's players and sessions: alice and bob on A, carol's session on B closed.
async fn seed_v2_players(pool: &AnyPool, backend: &str) {
    for (id, name, last, server) in [
        (1i64, "alice", 2000i64, 1i64),
        (2, "bob", 2000, 1),
        (3, "carol", 1000, 2),
    ] {
        sqlx::query(
            "INSERT INTO players (id, name_raw, dialect, name, first_seen, last_seen, \
             last_server_id) VALUES ($1, $2, 'plain', $3, 1000, $4, $5)",
        )
        .bind(id)
        .bind(name.as_bytes().to_vec())
        .bind(name)
        .bind(last)
        .bind(server)
        .execute(pool)
        .await
        .unwrap();
    }
    exec(
        pool,
        "INSERT INTO sessions (id, player_id, server_id, nth, joined, last_seen, left_at, \
         last_score, team, is_bot) VALUES \
         (1, 1, 1, 0, 1000, 2000, NULL, 5, NULL, 0), (2, 2, 1, 0, 1000, 2000, NULL, 9, NULL, 0), \
         (3, 3, 2, 0, 1000, 1000, 2000, 1, NULL, 0)",
    )
    .await;
    if backend == "postgres" {
        // The rows above came with their ids: the identities go on after them, as the
        // writer's own inserts would have left them.
        for (table, max) in [("servers", 2), ("players", 3), ("sessions", 3)] {
            exec(
                pool,
                &format!("SELECT setval(pg_get_serial_sequence('{table}', 'id'), {max})"),
            )
            .await;
        }
    }
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

/// After the repair: the seeded rows read back through the store's API, and a round written.
async fn check_v2_data(store: &Store, form: &str) {
    let c = store.counts().await.unwrap();
    assert_eq!(
        (c.rounds, c.servers, c.series, c.series_agg, c.changes),
        (2, 2, 4, 1, 3),
        "{form}: {c:?}"
    );
    assert_eq!(
        (c.players, c.sessions, c.open_sessions),
        (3, 3, 2),
        "{form}"
    );
    assert_eq!(store.rounds(10).await.unwrap().len(), 2, "{form}");
    let a = store.server(A).await.unwrap().expect("server A");
    assert_eq!(
        (a.id, a.name_raw.as_deref()),
        (1, Some(&b"^1A"[..])),
        "{form}"
    );
    assert_eq!((a.up_since, a.num_players), (Some(1000), Some(2)), "{form}");
    let b = store.server(B).await.unwrap().expect("server B");
    assert_eq!(
        (b.status.as_str(), b.down_since),
        ("timeout", Some(2000)),
        "{form}"
    );
    let history = store.history(A, 0).await.unwrap();
    let rtts: Vec<_> = history.iter().map(|h| (h.at, h.rtt_ms)).collect();
    let want = [(0, Some(12.0)), (1000, Some(12.5)), (2000, Some(13.0))];
    assert_eq!(rtts, want, "{form}: the bucket, then the rounds");
    assert_eq!(
        store.uptime(B, 0).await.unwrap().fraction,
        Some(0.5),
        "{form}"
    );
    let maps = store.map_history(B, 0, 10).await.unwrap();
    assert_eq!(maps[0].map, "x", "{form}: {maps:?}");
    let alice = store.find_players("alice", 0, 10).await.unwrap();
    assert_eq!(alice.len(), 1, "{form}: {alice:?}");
    assert_eq!((alice[0].addr.as_deref(), alice[0].online), (Some(A), true));
    let carol = store.find_players("car", 0, 10).await.unwrap();
    assert!(!carol[0].online, "{form}");
    let on: Vec<String> = store
        .players_on(A)
        .await
        .unwrap()
        .iter()
        .map(|p| p.name_text().display())
        .collect();
    assert_eq!(on, ["bob", "alice"], "{form}: highest score first");

    // The next round: alice stays (her session continues), bob left, a new server C.
    store
        .write_round(&RoundData {
            at: 3000,
            finished: 3000,
            records: vec![online(A, &["alice"]), online(C, &["dave"])],
            ..RoundData::default()
        })
        .await
        .unwrap_or_else(|e| panic!("{form}: a round after the repair: {e}"));
    let alice = store.player(alice[0].player_id, 10).await.unwrap().unwrap();
    assert_eq!(alice.sessions.len(), 1, "{form}: one session, continued");
    assert_eq!(
        (alice.sessions[0].joined, alice.sessions[0].left),
        (1000, None)
    );
    let c = store.server(C).await.unwrap().expect("server C");
    assert!(
        c.id > 2,
        "{form}: a new id ({}), above every id in use",
        c.id
    );
    assert_eq!(store.find_players("dave", 0, 10).await.unwrap().len(), 1);
    let n = store.counts().await.unwrap();
    assert_eq!((n.rounds, n.servers, n.open_sessions), (3, 3, 2), "{form}");
}

/// After the repair of a schema-1 database: upgraded to schema 2 by the migrator.
async fn check_v1_data(store: &Store, form: &str) {
    let c = store.counts().await.unwrap();
    assert_eq!(
        (c.rounds, c.servers, c.series, c.players, c.sessions),
        (1, 1, 1, 1, 1),
        "{form}: {c:?}"
    );
    let alice = store.find_players("alice", 0, 10).await.unwrap();
    assert_eq!(alice[0].addr.as_deref(), Some(A), "{form}");
    store
        .write_round(&RoundData {
            at: 2000,
            finished: 2000,
            records: vec![online(A, &["alice"])],
            ..RoundData::default()
        })
        .await
        .unwrap();
    assert_eq!(store.counts().await.unwrap().sessions, 1, "{form}");
}

/// One earlier form at `url`: built as shipped, opened (repaired and migrated), compared
/// with `fresh`'s schema, its data read and a round written.
async fn upgrades(url: &str, backend: &str, version: u32, commit: &str, form: &Path, fresh: &str) {
    let name = format!("{backend} {version:04}@{commit}");
    migrate_as_shipped(url, backend, version, form).await;
    let store = Store::open(url)
        .await
        .unwrap_or_else(|e| panic!("{name}: opening a database of that build: {e}"));
    let versions = store.migrations().await.unwrap();
    let shipped = migration_files().len() / 2;
    assert_eq!(versions.len(), shipped, "{name}: {versions:?}");
    let got = schema::dump(url, backend).await;
    let want = schema::dump(fresh, backend).await;
    schema::assert_same(&got, &want, &name);
    if version == 1 {
        check_v1_data(&store, &name).await;
    } else {
        check_v2_data(&store, &name).await;
    }
    store.close().await;
    // Opened again: nothing left to repair.
    Store::open(url).await.unwrap().close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_every_earlier_form_opens_and_upgrades() {
    let dir = tempfile::tempdir().unwrap();
    let fresh = dir.path().join("fresh.db").display().to_string();
    Store::open(&fresh).await.unwrap().close().await;
    for (version, commit, form) in fixtures("sqlite") {
        let url = dir.path().join(format!("{version}-{commit}.db"));
        upgrades(
            &url.display().to_string(),
            "sqlite",
            version,
            &commit,
            &form,
            &fresh,
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_every_earlier_form_opens_and_upgrades() {
    let Some(pg) = fragstat_testkit::postgres::Postgres::start() else {
        return;
    };
    let admin = pool(&pg.url).await;
    let url_of = |db: &str| format!("{}/{db}", pg.url.rsplit_once('/').unwrap().0);
    exec(&admin, "CREATE DATABASE fresh").await;
    Store::open(&url_of("fresh")).await.unwrap().close().await;
    for (version, commit, form) in fixtures("postgres") {
        let db = format!("v{version}_{commit}");
        exec(&admin, &format!("CREATE DATABASE {db}")).await;
        upgrades(
            &url_of(&db),
            "postgres",
            version,
            &commit,
            &form,
            &url_of("fresh"),
        )
        .await;
    }
    // Two trackers opening one old database at once: one repairs, the other waits for it.
    let (_, commit, form) = fixtures("postgres").into_iter().nth(1).unwrap();
    exec(&admin, "CREATE DATABASE twice").await;
    migrate_as_shipped(&url_of("twice"), "postgres", 2, &form).await;
    let twice = url_of("twice");
    let (one, two) = tokio::join!(Store::open(&twice), Store::open(&twice));
    for store in [one, two] {
        let store = store.unwrap_or_else(|e| panic!("0002@{commit} opened twice at once: {e}"));
        assert_eq!(store.counts().await.unwrap().sessions, 3);
        store.close().await;
    }
    // A checksum of no shipped form: refused, the database left as it was.
    let fresh = pool(&url_of("fresh")).await;
    exec(
        &fresh,
        "UPDATE _sqlx_migrations SET checksum = '\\x00112233' WHERE version = 1",
    )
    .await;
    let before = schema::dump(&url_of("fresh"), "postgres").await;
    let Err(err) = Store::open(&url_of("fresh")).await else {
        panic!("a database with an unknown migration opened");
    };
    assert!(matches!(err, StoreError::UnknownMigration(_)), "{err:?}");
    assert!(err.to_string().contains("migration 1 (schema)"), "{err}");
    assert_eq!(schema::dump(&url_of("fresh"), "postgres").await, before);
    fresh.close().await;
    admin.close().await;
}

/// A checksum of no shipped form: the database is left alone and the error names the
/// migration and says what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_unknown_form_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let url = dir.path().join("edited.db").display().to_string();
    Store::open(&url).await.unwrap().close().await;
    let pool = pool(&url).await;
    exec(
        &pool,
        "UPDATE _sqlx_migrations SET checksum = X'00112233' WHERE version = 2",
    )
    .await;
    let before = schema::dump(&url, "sqlite").await;
    let Err(err) = Store::open(&url).await else {
        panic!("a database with an unknown migration opened");
    };
    let text = err.to_string();
    assert!(matches!(err, StoreError::UnknownMigration(_)), "{err:?}");
    for part in [
        "migration 2 (compact history)",
        "00112233",
        "open it with that build",
    ] {
        assert!(text.contains(part), "{part:?} not in {text}");
    }
    assert_eq!(schema::dump(&url, "sqlite").await, before, "left as it was");
    let sum: Vec<u8> = sqlx::query("SELECT checksum FROM _sqlx_migrations WHERE version = 2")
        .fetch_one(&pool)
        .await
        .unwrap()
        .try_get(0)
        .unwrap();
    assert_eq!(sum, [0x00, 0x11, 0x22, 0x33]);
    pool.close().await;
}
