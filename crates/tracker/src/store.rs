//! Storage: one schema in SQLite (the default, an embedded file) or PostgreSQL (by URL), kept
//! by migrations (`migrations/sqlite`, `migrations/postgres`) and reached through sqlx's `Any`
//! driver, so every query below is written once, with `$N` placeholders both accept.
//!
//! A round is written in one transaction: a crash while writing loses that round only. Names
//! are stored as their bytes (`name_raw`) with the family's dialect; colour stripping and
//! HTML happen when they are shown.

use std::str::FromStr;
use std::time::Duration;

use fragstat::core::model::{Dialect, Record, Status};
use serde::Serialize;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::migrate::Migrator;
use sqlx::{AnyPool, Row};

static SQLITE: Migrator = sqlx::migrate!("./migrations/sqlite");
static POSTGRES: Migrator = sqlx::migrate!("./migrations/postgres");

/// Why a storage operation failed. Each says its cause in its own message (no `source`, so a
/// report that prints the chain says it once).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The database URL names no backend this build has (the URL with its password hidden).
    #[error("unsupported database {0:?}: use a file path, sqlite://PATH or postgres://…")]
    Unsupported(String),
    /// The database could not be reached or opened.
    #[error("{target}: {cause}")]
    Connect {
        /// What was asked, in words (`PostgreSQL at HOST:PORT, database D, user U`), no
        /// password.
        target: String,
        /// Why not, in words.
        cause: String,
    },
    /// A database error.
    #[error("database: {0}")]
    Db(sqlx::Error),
    /// A migration failed.
    #[error("migrating the schema: {0}")]
    Migrate(sqlx::migrate::MigrateError),
    /// A record could not be written as JSON.
    #[error("encoding a record: {0}")]
    Json(serde_json::Error),
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        StoreError::Db(e)
    }
}

impl From<sqlx::migrate::MigrateError> for StoreError {
    fn from(e: sqlx::migrate::MigrateError) -> Self {
        StoreError::Migrate(e)
    }
}

impl From<serde_json::Error> for StoreError {
    fn from(e: serde_json::Error) -> Self {
        StoreError::Json(e)
    }
}

/// How long opening a database may take before the tracker says it cannot be reached.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// `database` (a path or URL) with any password replaced by `***`, for messages and logs.
pub fn redact(database: &str) -> String {
    let mut out = database.to_string();
    // postgres://user:PASSWORD@host…
    if let Some(scheme_end) = out.find("://") {
        let rest_start = scheme_end + 3;
        let authority_end = out[rest_start..]
            .find(['/', '?', '#'])
            .map_or(out.len(), |i| rest_start + i);
        if let Some(at) = out[rest_start..authority_end].rfind('@') {
            let userinfo = rest_start..rest_start + at;
            if let Some(colon) = out[userinfo.clone()].find(':') {
                out.replace_range(userinfo.start + colon + 1..userinfo.end, "***");
            }
        }
    }
    // …?password=PASSWORD&…
    let mut from = 0;
    while let Some(i) = out[from..].find("password=") {
        let start = from + i + "password=".len();
        let end = out[start..].find('&').map_or(out.len(), |j| start + j);
        out.replace_range(start..end, "***");
        from = start + 3;
    }
    out
}

/// The PostgreSQL server `url` names, in words, without its password; and its database and
/// user names.
fn postgres_target(url: &str) -> (String, Option<(String, String)>) {
    match sqlx::postgres::PgConnectOptions::from_str(url) {
        Ok(o) => {
            let user = o.get_username().to_string();
            let db = o.get_database().unwrap_or(&user).to_string();
            (
                format!(
                    "PostgreSQL at {}:{}, database {db:?}, user {user:?}",
                    o.get_host(),
                    o.get_port()
                ),
                Some((db, user)),
            )
        }
        Err(_) => (format!("PostgreSQL at {}", redact(url)), None),
    }
}

/// Why connecting failed, in words.
fn connect_cause(e: &sqlx::Error, names: Option<&(String, String)>) -> String {
    match e {
        sqlx::Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            "connection refused (is PostgreSQL running and listening on that address and port?)"
                .into()
        }
        sqlx::Error::Io(io) => io.to_string(),
        sqlx::Error::Database(db) => match (db.code().as_deref(), names) {
            (Some("3D000"), Some((name, _))) => format!("database {name:?} does not exist"),
            (Some("28P01" | "28000"), Some((_, user))) => {
                format!("authentication failed for user {user:?} ({})", db.message())
            }
            _ => db.message().to_string(),
        },
        sqlx::Error::Tls(t) => format!("TLS: {t}"),
        sqlx::Error::Configuration(c) => format!("the URL: {c}"),
        other => other.to_string(),
    }
}

impl Backend {
    /// Its name in words.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "SQLite",
            Backend::Postgres => "PostgreSQL",
        }
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Which database is behind a [`Store`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// An SQLite file.
    Sqlite,
    /// A PostgreSQL server.
    Postgres,
}

/// The database URL for `database` as given in a config: a plain path means an SQLite file
/// (created when missing).
pub fn database_url(database: &str) -> String {
    if database.contains("://") || database.starts_with("sqlite:") {
        database.to_string()
    } else {
        format!("sqlite://{database}?mode=rwc")
    }
}

/// What one round saw.
#[derive(Debug, Clone, Default)]
pub struct RoundData {
    /// When the round started (Unix ms): the key of its rows.
    pub at: i64,
    /// When it finished probing (Unix ms).
    pub finished: i64,
    /// Every server probed.
    pub records: Vec<Record>,
}

/// A server as the browser lists it (its latest state).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ServerRow {
    /// `ip:port`.
    pub addr: String,
    /// Registry id.
    pub game: String,
    /// `online`, `timeout` or `error`.
    pub status: String,
    /// Why not online.
    pub error: Option<String>,
    /// The name's bytes, lossless.
    #[serde(skip)]
    pub name_raw: Option<Vec<u8>>,
    /// How to show the name (`quake` or `plain`).
    pub dialect: Option<String>,
    /// Map.
    pub map: Option<String>,
    /// Game type.
    pub gametype: Option<String>,
    /// Players (bots included).
    pub num_players: Option<i64>,
    /// Slots.
    pub max_players: Option<i64>,
    /// Bots, where known.
    pub num_bots: Option<i64>,
    /// Round-trip time (ms) in the last round.
    pub rtt_ms: Option<f64>,
    /// First round it was seen in (Unix ms).
    pub first_seen: i64,
    /// Last round it was probed in.
    pub last_seen: i64,
    /// Last round it answered in.
    pub last_online: Option<i64>,
}

impl ServerRow {
    /// The name as stored, with its dialect, for display.
    pub fn name_text(&self) -> fragstat::core::model::Text {
        text_of(
            self.name_raw.clone().unwrap_or_default(),
            self.dialect.as_deref(),
        )
    }
}

/// Rebuilds a [`fragstat::core::model::Text`] from stored bytes and dialect.
pub fn text_of(bytes: Vec<u8>, dialect: Option<&str>) -> fragstat::core::model::Text {
    let d = if dialect == Some("plain") {
        Dialect::Plain
    } else {
        Dialect::Quake
    };
    fragstat::core::model::Text::new(bytes, d)
}

/// One point of a server's history.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HistoryPoint {
    /// The round (Unix ms).
    pub at: i64,
    /// `online`, `timeout` or `error`.
    pub status: String,
    /// Players, when online.
    pub num_players: Option<i64>,
    /// Slots, when online.
    pub max_players: Option<i64>,
    /// Round-trip time (ms), when online.
    pub rtt_ms: Option<f64>,
    /// Map, when online.
    pub map: Option<String>,
}

/// A player seen on a server in one round.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PlayerRow {
    /// The server.
    pub addr: String,
    /// The round it was seen in (Unix ms).
    pub at: i64,
    /// The name's bytes, lossless.
    #[serde(skip)]
    pub name_raw: Vec<u8>,
    /// How to show the name.
    pub dialect: String,
    /// Score, where sent.
    pub score: Option<i64>,
    /// Ping, where sent.
    pub ping: Option<i64>,
    /// Team, where sent.
    pub team: Option<i64>,
    /// A bot, where the game says.
    pub is_bot: Option<bool>,
}

impl PlayerRow {
    /// The name, for display.
    pub fn name_text(&self) -> fragstat::core::model::Text {
        text_of(self.name_raw.clone(), Some(&self.dialect))
    }
}

/// One round's totals.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RoundRow {
    /// When it started (Unix ms).
    pub at: i64,
    /// When it was written.
    pub finished: i64,
    /// Servers probed.
    pub servers: i64,
    /// Servers that answered.
    pub online: i64,
    /// Players seen.
    pub players: i64,
}

/// What the browser asks for.
#[derive(Debug, Clone, Default)]
pub struct ServerFilter {
    /// Only this game.
    pub game: Option<String>,
    /// Map contains this (case-insensitive).
    pub map: Option<String>,
    /// Name (colours stripped) contains this (case-insensitive).
    pub name: Option<String>,
    /// Only servers that answered in the last round they were probed in.
    pub online_only: bool,
    /// Order.
    pub sort: Sort,
    /// At most this many rows.
    pub limit: Option<i64>,
}

/// Row order of the browser.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Sort {
    /// Most players first.
    #[default]
    Players,
    /// Lowest ping first.
    Ping,
    /// By name.
    Name,
}

impl FromStr for Sort {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "players" => Ok(Sort::Players),
            "ping" => Ok(Sort::Ping),
            "name" => Ok(Sort::Name),
            _ => Err(format!("unknown sort {s:?}: players, ping or name")),
        }
    }
}

/// Row counts of every table (for metrics and tests).
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Counts {
    /// Rounds kept.
    pub rounds: i64,
    /// Servers known.
    pub servers: i64,
    /// Server snapshots kept.
    pub snapshots: i64,
    /// Player snapshots kept.
    pub player_snapshots: i64,
}

/// The database: a pool, migrated on open.
#[derive(Debug, Clone)]
pub struct Store {
    pool: AnyPool,
    backend: Backend,
    snapshot_records: bool,
}

/// A `LIKE` pattern matching `s` anywhere, lower case, with `\` escaping wildcards.
fn contains_pattern(s: &str) -> String {
    let mut p = String::from("%");
    for c in s.to_lowercase().chars() {
        if matches!(c, '%' | '_' | '\\') {
            p.push('\\');
        }
        p.push(c);
    }
    p.push('%');
    p
}

fn status_str(s: Status) -> &'static str {
    match s {
        Status::Online => "online",
        Status::Timeout => "timeout",
        Status::Down => "down",
        _ => "error",
    }
}

fn dialect_str(d: Dialect) -> &'static str {
    match d {
        Dialect::Plain => "plain",
        _ => "quake",
    }
}

fn opt_i64(v: Option<u32>) -> Option<i64> {
    v.map(i64::from)
}

fn opt_i32(v: Option<i32>) -> Option<i64> {
    v.map(i64::from)
}

/// One value of a row to insert.
enum Val {
    I(Option<i64>),
    F(Option<f64>),
    S(Option<String>),
    B(Option<Vec<u8>>),
}

/// PostgreSQL's `TEXT` cannot hold U+0000, which a server can send in a name or a map
/// (DDNet's JSON, a reply's fields): text columns get U+FFFD in its place. Nothing is lost —
/// `name_raw` keeps the bytes and `record` the JSON, where it is written `\u0000`.
fn no_nul(s: String) -> String {
    if s.contains('\0') {
        s.replace('\0', "\u{FFFD}")
    } else {
        s
    }
}

/// Most bound values in one statement. SQLite allows 32,766 and PostgreSQL 65,535, but
/// binding costs grow faster than linearly with a statement's parameters in the SQLite path
/// (10,000 servers and 30,000 players: 6 s a round with 8,000 values a statement, 1.2 s with
/// 250; docs/tracker.md), and PostgreSQL is as fast with 250.
const MAX_BINDS: usize = 250;

/// Inserts `rows` (all of one width) as `head (…), (…) … tail` statements of up to
/// [`MAX_BINDS`] values, numbered `$1…` (both backends accept that form).
async fn insert_rows(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    head: &str,
    tail: &str,
    rows: Vec<Vec<Val>>,
) -> Result<(), sqlx::Error> {
    let Some(width) = rows.first().map(Vec::len).filter(|w| *w > 0) else {
        return Ok(());
    };
    let per = (MAX_BINDS / width).max(1);
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        let chunk: Vec<Vec<Val>> = rows.by_ref().take(per).collect();
        let mut sql = String::from(head);
        let mut n = 0usize;
        for (i, row) in chunk.iter().enumerate() {
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push('(');
            for j in 0..row.len() {
                if j > 0 {
                    sql.push_str(", ");
                }
                n += 1;
                sql.push_str(&format!("${n}"));
            }
            sql.push(')');
        }
        sql.push_str(tail);
        let mut q = sqlx::query(&sql);
        for v in chunk.into_iter().flatten() {
            q = match v {
                Val::I(x) => q.bind(x),
                Val::F(x) => q.bind(x),
                Val::S(x) => q.bind(x.map(no_nul)),
                Val::B(x) => q.bind(x),
            };
        }
        q.execute(&mut **tx).await?;
    }
    Ok(())
}

const SERVER_COLUMNS: &str = "addr, game, status, error, name_raw, dialect, map, gametype, \
     num_players, max_players, num_bots, rtt_ms, first_seen, last_seen, last_online";

fn server_row(r: &sqlx::any::AnyRow) -> Result<ServerRow, sqlx::Error> {
    Ok(ServerRow {
        addr: r.try_get(0)?,
        game: r.try_get(1)?,
        status: r.try_get(2)?,
        error: r.try_get(3)?,
        name_raw: r.try_get(4)?,
        dialect: r.try_get(5)?,
        map: r.try_get(6)?,
        gametype: r.try_get(7)?,
        num_players: r.try_get(8)?,
        max_players: r.try_get(9)?,
        num_bots: r.try_get(10)?,
        rtt_ms: r.try_get(11)?,
        first_seen: r.try_get(12)?,
        last_seen: r.try_get(13)?,
        last_online: r.try_get(14)?,
    })
}

fn player_row(r: &sqlx::any::AnyRow) -> Result<PlayerRow, sqlx::Error> {
    let is_bot: Option<i64> = r.try_get(7)?;
    Ok(PlayerRow {
        addr: r.try_get(0)?,
        at: r.try_get(1)?,
        name_raw: r.try_get(2)?,
        dialect: r.try_get(3)?,
        score: r.try_get(4)?,
        ping: r.try_get(5)?,
        team: r.try_get(6)?,
        is_bot: is_bot.map(|b| b != 0),
    })
}

impl Store {
    /// Opens (creating an SQLite file when missing) and migrates the database at `database`:
    /// a file path, `sqlite://PATH[?mode=rwc]`, `sqlite::memory:` or `postgres://…`.
    pub async fn open(database: &str) -> Result<Store, StoreError> {
        sqlx::any::install_default_drivers();
        let url = database_url(database);
        let backend = if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Backend::Postgres
        } else {
            return Err(StoreError::Unsupported(redact(database)));
        };
        let (target, names) = match backend {
            Backend::Postgres => postgres_target(&url),
            Backend::Sqlite => (format!("SQLite database {}", redact(database)), None),
        };
        let connect_error = |cause: String| StoreError::Connect {
            target: target.clone(),
            cause,
        };
        let options = AnyConnectOptions::from_str(&url)
            .map_err(|e| connect_error(connect_cause(&e, names.as_ref())))?;
        let memory = url.contains(":memory:");
        // One connection first, within a short deadline, so an unreachable server or a wrong
        // name or password is said at once and in words (the pool would retry until its own
        // timeout and then say only that it timed out).
        match tokio::time::timeout(
            CONNECT_TIMEOUT,
            <sqlx::AnyConnection as sqlx::Connection>::connect_with(&options),
        )
        .await
        {
            Ok(Ok(c)) if !memory => {
                let _ = sqlx::Connection::close(c).await;
            }
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(connect_error(connect_cause(&e, names.as_ref()))),
            Err(_) => {
                return Err(connect_error(format!(
                    "no answer within {} s",
                    CONNECT_TIMEOUT.as_secs()
                )))
            }
        }
        let pool = AnyPoolOptions::new()
            // An in-memory SQLite database exists once per connection.
            .max_connections(if memory { 1 } else { 8 })
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(options)
            .await
            .map_err(|e| connect_error(connect_cause(&e, names.as_ref())))?;
        if backend == Backend::Sqlite && !memory {
            // Readers (the web pages) go on while a round is written; kept in the file.
            sqlx::query("PRAGMA journal_mode=WAL")
                .fetch_optional(&pool)
                .await?;
        }
        match backend {
            Backend::Sqlite => SQLITE.run(&pool).await?,
            Backend::Postgres => POSTGRES.run(&pool).await?,
        }
        Ok(Store {
            pool,
            backend,
            snapshot_records: true,
        })
    }

    /// Whether snapshots keep the whole JSON record (default) or only their columns.
    pub fn with_snapshot_records(mut self, keep: bool) -> Store {
        self.snapshot_records = keep;
        self
    }

    /// Which database this is.
    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// The migrations applied so far (version numbers), oldest first.
    pub async fn migrations(&self) -> Result<Vec<i64>, StoreError> {
        let rows = sqlx::query("SELECT version FROM _sqlx_migrations ORDER BY version")
            .fetch_all(&self.pool)
            .await?;
        Ok(rows
            .iter()
            .map(|r| r.try_get::<i64, _>(0))
            .collect::<Result<_, _>>()?)
    }

    /// Writes one round in one transaction: its totals, a snapshot per server, a row per
    /// player, and the servers' latest state. Rows go in multi-row statements of up to
    /// 250 values, so a round of 10,000 servers and 30,000 players is about 2,300
    /// statements, not 50,000.
    pub async fn write_round(&self, round: &RoundData) -> Result<(), StoreError> {
        let mut online = 0i64;
        let mut players = 0i64;
        let mut servers: Vec<Vec<Val>> = Vec::new();
        let mut snapshots: Vec<Vec<Val>> = Vec::new();
        let mut player_rows: Vec<Vec<Val>> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for rec in &round.records {
            let Some(addr) = rec.address.as_deref() else {
                continue;
            };
            // One row per address and round (a multi-row upsert may not name a key twice).
            if !seen.insert(addr) {
                continue;
            }
            let status = status_str(rec.status);
            let info = rec.info.as_ref();
            if rec.status == Status::Online {
                online += 1;
                players += info.map_or(0, |i| i64::from(i.num_players));
            }
            let json = serde_json::to_string(rec)?;
            // Players are stored below, row by row; the snapshot keeps the rest of the record.
            let snapshot_json = match info.and_then(|i| i.players.as_ref()) {
                _ if !self.snapshot_records => None,
                Some(_) => {
                    let mut v = serde_json::to_value(rec)?;
                    if let Some(o) = v.as_object_mut() {
                        o.remove("players");
                    }
                    Some(v.to_string())
                }
                None => Some(json.clone()),
            };
            let map = info.map(|i| i.map.display());
            let num_players = info.map(|i| i64::from(i.num_players));
            let max_players = info.map(|i| i64::from(i.max_players));
            servers.push(vec![
                Val::S(Some(addr.to_string())),
                Val::S(Some(rec.game.clone())),
                Val::I(Some(round.at)),
                Val::I(Some(round.at)),
                Val::I((rec.status == Status::Online).then_some(round.at)),
                Val::S(Some(status.to_string())),
                Val::S(rec.error.clone()),
                Val::B(info.map(|i| i.name.as_bytes().to_vec())),
                Val::S(info.map(|i| i.name.display().to_lowercase())),
                Val::S(info.map(|i| dialect_str(i.name.dialect()).to_string())),
                Val::S(map.clone()),
                Val::S(info.and_then(|i| i.gametype.clone())),
                Val::I(num_players),
                Val::I(max_players),
                Val::I(info.and_then(|i| opt_i64(i.num_bots))),
                Val::F(rec.rtt_ms),
                Val::S(Some(json)),
            ]);
            snapshots.push(vec![
                Val::S(Some(addr.to_string())),
                Val::I(Some(round.at)),
                Val::S(Some(status.to_string())),
                Val::I(num_players),
                Val::I(max_players),
                Val::F(rec.rtt_ms),
                Val::S(map),
                Val::S(snapshot_json),
            ]);
            let list = info.and_then(|i| i.players.as_deref()).unwrap_or_default();
            for (idx, p) in (0i64..).zip(list) {
                player_rows.push(vec![
                    Val::S(Some(addr.to_string())),
                    Val::I(Some(round.at)),
                    Val::I(Some(idx)),
                    Val::B(Some(p.name.as_bytes().to_vec())),
                    Val::S(Some(p.name.display().to_lowercase())),
                    Val::S(Some(dialect_str(p.name.dialect()).to_string())),
                    Val::I(opt_i32(p.score)),
                    Val::I(opt_i32(p.ping)),
                    Val::I(opt_i32(p.team)),
                    Val::I(p.is_bot.map(i64::from)),
                ]);
            }
        }
        let mut tx = self.pool.begin().await?;
        insert_rows(
            &mut tx,
            "INSERT INTO servers (addr, game, first_seen, last_seen, last_online, status, \
             error, name_raw, name, dialect, map, gametype, num_players, max_players, \
             num_bots, rtt_ms, record) VALUES ",
            " ON CONFLICT (addr) DO UPDATE SET game = excluded.game, \
             last_seen = excluded.last_seen, \
             last_online = COALESCE(excluded.last_online, servers.last_online), \
             status = excluded.status, error = excluded.error, \
             name_raw = COALESCE(excluded.name_raw, servers.name_raw), \
             name = COALESCE(excluded.name, servers.name), \
             dialect = COALESCE(excluded.dialect, servers.dialect), \
             map = COALESCE(excluded.map, servers.map), \
             gametype = COALESCE(excluded.gametype, servers.gametype), \
             num_players = excluded.num_players, \
             max_players = COALESCE(excluded.max_players, servers.max_players), \
             num_bots = excluded.num_bots, rtt_ms = excluded.rtt_ms, \
             record = excluded.record",
            servers,
        )
        .await?;
        insert_rows(
            &mut tx,
            "INSERT INTO snapshots (addr, at, status, num_players, max_players, rtt_ms, map, \
             record) VALUES ",
            " ON CONFLICT (addr, at) DO NOTHING",
            snapshots,
        )
        .await?;
        insert_rows(
            &mut tx,
            "INSERT INTO player_snapshots (addr, at, idx, name_raw, name, dialect, score, ping, \
             team, is_bot) VALUES ",
            " ON CONFLICT (addr, at, idx) DO NOTHING",
            player_rows,
        )
        .await?;
        sqlx::query(
            "INSERT INTO rounds (at, finished, servers, online, players) VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (at) DO NOTHING",
        )
        .bind(round.at)
        .bind(round.finished)
        .bind(i64::try_from(seen.len()).unwrap_or(i64::MAX))
        .bind(online)
        .bind(players)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Deletes rounds, snapshots and player rows older than `before` (Unix ms), and servers
    /// not seen since; in one transaction. Returns the rows deleted.
    pub async fn prune(&self, before: i64) -> Result<u64, StoreError> {
        let mut tx = self.pool.begin().await?;
        let mut n = 0;
        for table in ["player_snapshots", "snapshots", "rounds"] {
            n += sqlx::query(&format!("DELETE FROM {table} WHERE at < $1"))
                .bind(before)
                .execute(&mut *tx)
                .await?
                .rows_affected();
        }
        n += sqlx::query("DELETE FROM servers WHERE last_seen < $1")
            .bind(before)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        tx.commit().await?;
        Ok(n)
    }

    /// The browser's rows: every known server's latest state, filtered and sorted.
    pub async fn servers(&self, f: &ServerFilter) -> Result<Vec<ServerRow>, StoreError> {
        let mut sql = format!("SELECT {SERVER_COLUMNS} FROM servers WHERE 1 = 1");
        let mut binds: Vec<String> = Vec::new();
        if let Some(g) = f.game.as_deref().filter(|g| !g.is_empty()) {
            binds.push(g.to_string());
            sql.push_str(&format!(" AND game = ${}", binds.len()));
        }
        if let Some(m) = f.map.as_deref().filter(|m| !m.is_empty()) {
            binds.push(contains_pattern(m));
            sql.push_str(&format!(
                " AND lower(map) LIKE ${} ESCAPE '\\'",
                binds.len()
            ));
        }
        if let Some(n) = f.name.as_deref().filter(|n| !n.is_empty()) {
            binds.push(contains_pattern(n));
            sql.push_str(&format!(" AND name LIKE ${} ESCAPE '\\'", binds.len()));
        }
        if f.online_only {
            sql.push_str(" AND status = 'online'");
        }
        sql.push_str(match f.sort {
            Sort::Players => {
                " ORDER BY (status = 'online') DESC, COALESCE(num_players, -1) DESC, addr"
            }
            Sort::Ping => " ORDER BY (status = 'online') DESC, COALESCE(rtt_ms, 1e9), addr",
            Sort::Name => " ORDER BY (status = 'online') DESC, COALESCE(name, '~'), addr",
        });
        if let Some(l) = f.limit {
            sql.push_str(&format!(" LIMIT {}", l.max(0)));
        }
        let mut q = sqlx::query(&sql);
        for b in &binds {
            q = q.bind(b.as_str());
        }
        let rows = q.fetch_all(&self.pool).await?;
        Ok(rows.iter().map(server_row).collect::<Result<_, _>>()?)
    }

    /// One server's latest state.
    pub async fn server(&self, addr: &str) -> Result<Option<ServerRow>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {SERVER_COLUMNS} FROM servers WHERE addr = $1"
        ))
        .bind(addr)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.as_ref().map(server_row).transpose()?)
    }

    /// The JSON record of a server's latest round, as stored.
    pub async fn server_record(&self, addr: &str) -> Result<Option<String>, StoreError> {
        let row = sqlx::query("SELECT record FROM servers WHERE addr = $1")
            .bind(addr)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| r.try_get(0)).transpose()?)
    }

    /// The JSON record a snapshot kept (players left out); `None` when there is no such
    /// snapshot or it kept no record (`snapshot_records = false`).
    pub async fn snapshot_record(&self, addr: &str, at: i64) -> Result<Option<String>, StoreError> {
        let row = sqlx::query("SELECT record FROM snapshots WHERE addr = $1 AND at = $2")
            .bind(addr)
            .bind(at)
            .fetch_optional(&self.pool)
            .await?;
        Ok(match row {
            Some(r) => r.try_get(0)?,
            None => None,
        })
    }

    /// A server's snapshots since `since` (Unix ms), oldest first.
    pub async fn history(&self, addr: &str, since: i64) -> Result<Vec<HistoryPoint>, StoreError> {
        let rows = sqlx::query(
            "SELECT at, status, num_players, max_players, rtt_ms, map FROM snapshots \
             WHERE addr = $1 AND at >= $2 ORDER BY at",
        )
        .bind(addr)
        .bind(since)
        .fetch_all(&self.pool)
        .await?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            out.push(HistoryPoint {
                at: r.try_get(0)?,
                status: r.try_get(1)?,
                num_players: r.try_get(2)?,
                max_players: r.try_get(3)?,
                rtt_ms: r.try_get(4)?,
                map: r.try_get(5)?,
            });
        }
        Ok(out)
    }

    /// The players a server had in the last round it answered in, in its order.
    pub async fn players_on(&self, addr: &str) -> Result<Vec<PlayerRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT p.addr, p.at, p.name_raw, p.dialect, p.score, p.ping, p.team, p.is_bot \
             FROM player_snapshots p JOIN servers s ON s.addr = p.addr AND s.last_online = p.at \
             WHERE p.addr = $1 ORDER BY p.idx",
        )
        .bind(addr)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(player_row).collect::<Result<_, _>>()?)
    }

    /// "Where is X playing": players seen since `since` (Unix ms) whose name (colours
    /// stripped) contains `q`, case-insensitively; the latest sighting of each name on each
    /// server, newest first. The `at` index bounds the scan to the rounds asked for.
    pub async fn find_players(
        &self,
        q: &str,
        since: i64,
        limit: i64,
    ) -> Result<Vec<PlayerRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT p.addr, p.at, p.name_raw, p.dialect, p.score, p.ping, p.team, p.is_bot \
             FROM player_snapshots p JOIN ( \
               SELECT addr, name, MAX(at) AS at FROM player_snapshots \
               WHERE at >= $2 AND name LIKE $1 ESCAPE '\\' GROUP BY addr, name \
             ) latest ON latest.addr = p.addr AND latest.name = p.name AND latest.at = p.at \
             ORDER BY p.at DESC, p.addr, p.idx LIMIT $3",
        )
        .bind(contains_pattern(q))
        .bind(since)
        .bind(limit.max(0))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.iter().map(player_row).collect::<Result<_, _>>()?)
    }

    /// The latest rounds, newest first.
    pub async fn rounds(&self, limit: i64) -> Result<Vec<RoundRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT at, finished, servers, online, players FROM rounds ORDER BY at DESC LIMIT $1",
        )
        .bind(limit.max(0))
        .fetch_all(&self.pool)
        .await?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            out.push(RoundRow {
                at: r.try_get(0)?,
                finished: r.try_get(1)?,
                servers: r.try_get(2)?,
                online: r.try_get(3)?,
                players: r.try_get(4)?,
            });
        }
        Ok(out)
    }

    /// Rows in every table.
    pub async fn counts(&self) -> Result<Counts, StoreError> {
        let mut n = [0i64; 4];
        for (slot, table) in
            n.iter_mut()
                .zip(["rounds", "servers", "snapshots", "player_snapshots"])
        {
            let row = sqlx::query(&format!("SELECT COUNT(*) FROM {table}"))
                .fetch_one(&self.pool)
                .await?;
            *slot = row.try_get(0)?;
        }
        Ok(Counts {
            rounds: n[0],
            servers: n[1],
            snapshots: n[2],
            player_snapshots: n[3],
        })
    }

    /// The games that have servers, sorted.
    pub async fn games(&self) -> Result<Vec<String>, StoreError> {
        let rows = sqlx::query("SELECT DISTINCT game FROM servers ORDER BY game")
            .fetch_all(&self.pool)
            .await?;
        Ok(rows
            .iter()
            .map(|r| r.try_get(0))
            .collect::<Result<_, _>>()?)
    }

    /// Closes the pool.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden() {
        for (url, shown) in [
            ("postgres://u:pw@h:5432/db", "postgres://u:***@h:5432/db"),
            ("postgres://u:p@w@h/db", "postgres://u:***@h/db"),
            (
                "postgres://u@h/db?password=pw&sslmode=require",
                "postgres://u@h/db?password=***&sslmode=require",
            ),
            (
                "postgres://h/db?user=u&password=pw",
                "postgres://h/db?user=u&password=***",
            ),
            ("postgres://u@h/d:b@x", "postgres://u@h/d:b@x"),
            ("track.db", "track.db"),
        ] {
            assert_eq!(redact(url), shown, "{url}");
        }
    }

    /// The two backends' migrations are one schema: identical but for the byte-string type.
    #[test]
    fn migrations_are_the_same_schema() {
        let lite = SQLITE.iter().collect::<Vec<_>>();
        let pg = POSTGRES.iter().collect::<Vec<_>>();
        assert_eq!(lite.len(), pg.len());
        for (a, b) in lite.iter().zip(&pg) {
            assert_eq!(a.version, b.version);
            assert_eq!(a.description, b.description);
            // Comments aside, and BLOB spelled BYTEA.
            let code = |sql: &str| -> Vec<String> {
                sql.lines()
                    .map(|l| {
                        l.split("--")
                            .next()
                            .unwrap_or_default()
                            .trim_end()
                            .to_string()
                    })
                    .filter(|l| !l.is_empty())
                    .collect()
            };
            assert_eq!(code(&a.sql.replace("BLOB", "BYTEA")), code(&b.sql));
        }
    }

    #[test]
    fn like_patterns_escape_wildcards() {
        assert_eq!(contains_pattern("A_b%c\\"), "%a\\_b\\%c\\\\%");
        assert_eq!(database_url("x.db"), "sqlite://x.db?mode=rwc");
        assert_eq!(database_url("postgres://h/d"), "postgres://h/d");
    }
}
