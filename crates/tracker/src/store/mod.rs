//! Storage: one schema in SQLite (the default, an embedded file) or PostgreSQL (by URL), kept
//! by migrations (`migrations/sqlite`, `migrations/postgres`) and reached through sqlx's `Any`
//! driver, so every query below is written once, with `$N` placeholders both accept.
//!
//! A round is written in one transaction: a crash while writing loses that round only. Names
//! are stored as their bytes (`name_raw`) with the family's dialect; colour stripping and
//! HTML happen when they are shown.

use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::migrate::Migrator;
use sqlx::{AnyPool, Row};

mod read;
mod rows;
mod write;

#[cfg(test)]
mod tests;

pub use rows::{
    text_of, Counts, HistoryPoint, PlayerRow, RoundData, RoundRow, ServerFilter, ServerRow, Sort,
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

/// The database: a pool, migrated on open.
#[derive(Debug, Clone)]
pub struct Store {
    pool: AnyPool,
    backend: Backend,
    snapshot_records: bool,
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

    /// Closes the pool.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}
