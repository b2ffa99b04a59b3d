//! Storage: one schema in SQLite (the default, an embedded file) or PostgreSQL (by URL), kept
//! by migrations (`migrations/sqlite`, `migrations/postgres`) and reached through sqlx's `Any`
//! driver, so every query below is written once, with `$N` placeholders both accept.
//!
//! History is kept as what changed (schema 2, docs/tracker.md): servers and players have
//! integer ids; a player's time on a server is a session; a server's name, map, gametype,
//! slots and up/down are a row when they change; the per-round numbers (players, bots, ping)
//! are a narrow series, downsampled after [`History::raw`]; each table has its own retention.
//!
//! A round is written in one transaction on the writer's own connection (the web's readers
//! have a pool of their own, so no page load can hold up a round): a crash while writing loses
//! that round only. Readers are bounded: PostgreSQL cancels a reader's statement after
//! [`READ_TIMEOUT`] (`statement_timeout`); SQLite cannot be interrupted through sqlx's `Any`
//! driver, so there the queries are bounded by design (every one is an index range with a
//! `LIMIT` or a window) and a caller stops waiting after [`READ_TIMEOUT`] (the statement
//! itself runs to its end on its connection). Names are stored as their bytes (`name_raw`)
//! with the family's dialect; colour stripping and HTML happen when they are shown.

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::migrate::Migrator;
use sqlx::{AnyPool, Row};

mod feeds;
mod lease;
mod lookup;
mod maintain;
mod migrate;
mod people;
mod read;
mod rows;
mod stats;
mod truth;
mod write;

#[cfg(test)]
mod tests;

pub use feeds::{EventKind, ServerEvent, Who, SESSION_WINDOW};
pub use lease::ADVISORY_LOCK_KEY;
pub use migrate::UnknownMigration;
pub use people::{name_key, Forgotten, PlayerSearch, BOT_PLAYER, MAX_SEARCH_DEPTH};
pub use rows::{
    text_of, Counts, HistoryPoint, MapSpan, MasterRow, PlayerHit, PlayerProfile, PlayerRow,
    RoundData, RoundRow, ServerFilter, ServerRow, SessionRow, Sort, Uptime,
};
pub use stats::{GameStats, MapStats, Peak, Period, StatsPoint, TopPage, TopPlayer, MAX_RANKED};
pub use write::{
    cap_record, stored_record, RoundWritten, MAX_NAME_BYTES, MAX_PLAYERS, MAX_RECORD_BYTES,
    MAX_WARNINGS, NEW_PLAYERS_PER_ROUND,
};

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
    /// A migration was applied from a text no build of fragstat track shipped.
    #[error("migrating the schema: {0}")]
    UnknownMigration(migrate::UnknownMigration),
    /// A record could not be written as JSON.
    #[error("encoding a record: {0}")]
    Json(serde_json::Error),
    /// A reader's query, or its wait for a connection, took longer than [`READ_TIMEOUT`]:
    /// the database is busy.
    #[error("database busy: no answer within {} s", READ_TIMEOUT.as_secs())]
    Timeout,
    /// Another tracker holds the writer's lease ([`Store::lead`]): this one does not write.
    #[error("another tracker writes the rounds (this one is a standby)")]
    NotWriter,
}

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        match &e {
            // PostgreSQL cancelled the statement at `statement_timeout` (query_canceled).
            sqlx::Error::Database(db) if db.code().as_deref() == Some("57014") => {
                StoreError::Timeout
            }
            // Every reader's connection busy for as long.
            sqlx::Error::PoolTimedOut => StoreError::Timeout,
            _ => StoreError::Db(e),
        }
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

/// Pages (4 KiB) of SQLite's write-ahead log past which a commit checkpoints it itself; the
/// upkeep after each round checkpoints it long before.
const WAL_AUTOCHECKPOINT_PAGES: u32 = 16_384;

/// How long opening a database may take before the tracker says it cannot be reached.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// The longest a reader's query may take (a web page's or the API's): PostgreSQL cancels it
/// (`statement_timeout`), on SQLite the caller stops waiting for it.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// How long readers wait for a connection of their pool.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);

/// How history is kept: the series' resolution by age, each table's retention, and the
/// writer's session rules. `None` keeps a table for ever.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct History {
    /// Per-round series rows are kept this long, then downsampled into one row per server per
    /// [`History::bucket`].
    pub raw: Duration,
    /// The downsampled series' bucket.
    pub bucket: Duration,
    /// Downsampled series rows.
    pub series: Option<Duration>,
    /// Server state changes (each server's latest is kept whatever its age).
    pub changes: Option<Duration>,
    /// Closed player sessions (by when they ended).
    pub sessions: Option<Duration>,
    /// Player identities not seen since and with no session left.
    pub players: Option<Duration>,
    /// Rounds' rows, and servers not probed since.
    pub rounds: Option<Duration>,
    /// A server that does not answer for longer than this ends its players' sessions (at the
    /// last round each was seen in); shorter silences (a lost reply) do not.
    pub session_gap: Duration,
    /// Open sessions' scores and last-seen times are written every this many rounds (each
    /// round a different share of them), besides when they open and close.
    pub flush_rounds: u64,
    /// New players (identities new to the server: sessions opened) a server may bring in
    /// one round, the churn budget; the rest of them are not stored this round (and counted,
    /// `fragstat_tracker_players_churn_refused_total`).
    pub new_players_per_round: usize,
}

impl Default for History {
    fn default() -> Self {
        History::keeping(Some(Duration::from_secs(168 * 3600)))
    }
}

impl History {
    /// Every table kept for `retention` (`None`: for ever), the series per round for 24 h
    /// then per 10 minutes, a 5-minute session gap and a 10-round refresh.
    pub fn keeping(retention: Option<Duration>) -> History {
        History {
            raw: Duration::from_secs(24 * 3600),
            bucket: Duration::from_secs(600),
            series: retention,
            changes: retention,
            sessions: retention,
            players: retention,
            rounds: retention,
            session_gap: Duration::from_secs(300),
            flush_rounds: 10,
            new_players_per_round: write::NEW_PLAYERS_PER_ROUND,
        }
    }
}

fn ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// Each table's cut-off (Unix ms): rows older go.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Retention {
    series: Option<i64>,
    changes: Option<i64>,
    sessions: Option<i64>,
    players: Option<i64>,
    rounds: Option<i64>,
}

impl Retention {
    fn all(before: i64) -> Retention {
        Retention {
            series: Some(before),
            changes: Some(before),
            sessions: Some(before),
            players: Some(before),
            rounds: Some(before),
        }
    }

    fn at(now: i64, h: &History) -> Retention {
        let cut = |d: Option<Duration>| d.map(|d| now.saturating_sub(ms(d)));
        Retention {
            series: cut(h.series),
            changes: cut(h.changes),
            sessions: cut(h.sessions),
            players: cut(h.players),
            rounds: cut(h.rounds),
        }
    }
}

/// The round writer: its own connection (none for an in-memory database, which exists once
/// per connection: it writes through the pool) and what it knows of the database.
#[derive(Debug)]
struct Writer {
    options: AnyConnectOptions,
    backend: Backend,
    conn: Option<sqlx::AnyConnection>,
    shared: bool,
    state: Option<write::State>,
    /// Whether this process may write ([`Store::lead`]).
    lease: lease::Lease,
}

impl Writer {
    /// Forgets the connection's state after a failure: the next write reconnects and reloads.
    fn reset(&mut self) {
        self.state = None;
        self.conn = None;
        self.lease.connection_lost(self.backend);
    }

    async fn connection<'a>(
        &'a mut self,
        pool: &AnyPool,
        held: &'a mut Option<sqlx::pool::PoolConnection<sqlx::Any>>,
    ) -> Result<&'a mut sqlx::AnyConnection, StoreError> {
        self.lease.may_write()?;
        if self.shared {
            return Ok(&mut **held.insert(pool.acquire().await?));
        }
        if self.conn.is_none() {
            let mut c = tokio::time::timeout(
                CONNECT_TIMEOUT,
                <sqlx::AnyConnection as sqlx::Connection>::connect_with(&self.options),
            )
            .await
            .map_err(|_| sqlx::Error::PoolTimedOut)??;
            if self.backend == Backend::Sqlite {
                // WAL (set at open) with NORMAL: a process crash loses nothing committed; the
                // last transactions can be lost only with the machine itself.
                sqlx::query("PRAGMA synchronous = NORMAL")
                    .execute(&mut c)
                    .await?;
                // A round's statements keep their undo pages (statement journals) in memory,
                // not in temporary files, and its working set (the series' tail, the latest
                // numbers, the open sessions and the indexes they touch) stays cached
                // between rounds: 64 MiB, where the default is 2 MiB.
                sqlx::query("PRAGMA temp_store = MEMORY")
                    .execute(&mut c)
                    .await?;
                sqlx::query("PRAGMA cache_size = -65536")
                    .execute(&mut c)
                    .await?;
                // The write-ahead log is copied into the database by the upkeep after each
                // round (`Store::maintain`), not inside a round's commit (a round adds some
                // 15 MB to it at 10,000 servers); a commit checkpoints only when the log
                // passes 64 MB (a caller that never runs the upkeep).
                sqlx::query(&format!(
                    "PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}"
                ))
                .execute(&mut c)
                .await?;
            }
            self.conn = Some(c);
        }
        match self.conn.as_mut() {
            Some(c) => Ok(c),
            None => Err(StoreError::Db(sqlx::Error::PoolClosed)),
        }
    }

    async fn write(
        &mut self,
        round: &RoundData,
        params: write::WriteParams,
        opt_out: &Arc<crate::privacy::OptOut>,
        pool: &AnyPool,
    ) -> Result<((write::Live, Vec<String>), write::RoundWritten), StoreError> {
        let mut held = None;
        let mut state = self.state.take();
        let conn = self.connection(pool, &mut held).await?;
        let st = match state.as_mut() {
            Some(s) => s,
            None => state.insert(write::State::load(conn).await?),
        };
        // Names opted out since the last round: out of the memory now, out of the database in
        // this round's transaction (whatever a concurrent `forget` missed).
        let forget = st.opt_out(opt_out);
        // The plan (pure), written in one transaction; the memory follows once committed.
        let mut plan = write::plan(st, round, &params)?;
        let mut tx = write::begin(conn).await?;
        if !forget.is_empty() {
            people::delete_players(&mut tx, &forget).await?;
        }
        let ids = write::apply(&mut tx, &plan, params.backend).await?;
        tx.commit().await?;
        let live = write::live(&plan, &ids);
        let written = write::RoundWritten {
            events: std::mem::take(&mut plan.events),
            churn_refused: plan.refused,
        };
        st.commit(plan, &ids);
        self.state = state;
        Ok((live, written))
    }
}

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

/// The database: the readers' pool and the round writer's own connection, migrated on open.
#[derive(Debug, Clone)]
pub struct Store {
    pool: AnyPool,
    backend: Backend,
    writer: Arc<tokio::sync::Mutex<Writer>>,
    /// The players on each server that answered in this process's last written round.
    live: Arc<std::sync::RwLock<write::Live>>,
    history: History,
    /// Players a trigram search walks before it asks the index ([`read::SEARCH_WALK`],
    /// [`read::SEARCH_WALK_PG`]; less in tests).
    search_walk: i64,
    /// The stats' reads of the latest round ([`Store::cached`]).
    stats_cache: stats::SharedCache,
    /// The names whose players are never stored ([`Store::set_opt_out`]).
    opt_out: Arc<std::sync::RwLock<Arc<crate::privacy::OptOut>>>,
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
        let mut pool_options = AnyPoolOptions::new()
            // An in-memory SQLite database exists once per connection.
            .max_connections(if memory { 1 } else { 8 })
            .acquire_timeout(ACQUIRE_TIMEOUT);
        if backend == Backend::Postgres {
            pool_options = pool_options.after_connect(|conn, _| {
                Box::pin(async move {
                    sqlx::query(&format!(
                        "SET statement_timeout = {}",
                        READ_TIMEOUT.as_millis()
                    ))
                    .execute(conn)
                    .await?;
                    Ok(())
                })
            });
        }
        let pool = pool_options
            .connect_with(options.clone())
            .await
            .map_err(|e| connect_error(connect_cause(&e, names.as_ref())))?;
        if backend == Backend::Sqlite && !memory {
            // Readers (the web pages) go on while a round is written; kept in the file.
            sqlx::query("PRAGMA journal_mode=WAL")
                .fetch_optional(&pool)
                .await?;
        }
        let migrator = match backend {
            Backend::Sqlite => &SQLITE,
            Backend::Postgres => &POSTGRES,
        };
        if memory {
            migrate::repair(&mut *pool.acquire().await?, backend, migrator).await?;
            migrator.run(&pool).await?;
        } else {
            // On a connection of its own: the readers' `statement_timeout` must not cut short
            // an upgrade of a big database (schema 1's snapshots become the series).
            let mut conn = <sqlx::AnyConnection as sqlx::Connection>::connect_with(&options)
                .await
                .map_err(|e| connect_error(connect_cause(&e, names.as_ref())))?;
            let migrated = match migrate::repair(&mut conn, backend, migrator).await {
                Ok(()) => migrator.run(&mut conn).await.map_err(StoreError::from),
                Err(e) => Err(e),
            };
            let _ = sqlx::Connection::close(conn).await;
            migrated?;
        }
        Ok(Store {
            pool,
            backend,
            writer: Arc::new(tokio::sync::Mutex::new(Writer {
                options,
                backend,
                conn: None,
                shared: memory,
                state: None,
                lease: lease::Lease::default(),
            })),
            live: Arc::default(),
            history: History::default(),
            search_walk: match backend {
                Backend::Sqlite => read::SEARCH_WALK,
                Backend::Postgres => read::SEARCH_WALK_PG,
            },
            stats_cache: stats::SharedCache::default(),
            opt_out: Arc::default(),
        })
    }

    /// How history is kept from now on (the default: [`History::default`]).
    pub fn with_history(mut self, history: History) -> Store {
        self.history = history;
        self
    }

    /// The names whose players are never stored from the next round written on (the
    /// configuration's and the forgotten: [`crate::privacy`]). The round takes them out of
    /// its records ([`crate::privacy::OptOut::filter`]); the writer drops those it did not
    /// know from its memory and deletes their rows.
    pub fn set_opt_out(&self, opt: crate::privacy::OptOut) {
        if let Ok(mut o) = self.opt_out.write() {
            if **o != opt {
                *o = Arc::new(opt);
            }
        }
    }

    /// The names whose players are never stored, as last set.
    pub fn opt_out(&self) -> Arc<crate::privacy::OptOut> {
        self.opt_out
            .read()
            .map(|o| Arc::clone(&o))
            .unwrap_or_default()
    }

    /// How history is kept.
    pub fn history_policy(&self) -> History {
        self.history
    }

    /// The players the last round written by this process saw on `addr`, if it answered.
    fn live_players(&self, addr: &str) -> Option<Vec<PlayerRow>> {
        self.live.read().ok()?.get(addr).cloned()
    }

    fn write_params(&self) -> write::WriteParams {
        write::WriteParams {
            session_gap_ms: ms(self.history.session_gap),
            flush_rounds: self.history.flush_rounds.max(1),
            new_players: self.history.new_players_per_round,
            backend: self.backend,
        }
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

    /// Closes the pool and the writer's connection.
    pub async fn close(&self) {
        let mut w = self.writer.lock().await;
        if let Some(c) = w.conn.take() {
            let _ = sqlx::Connection::close(c).await;
        }
        w.state = None;
        self.pool.close().await;
    }
}
