//! One writer among several trackers on one database.
//!
//! Trackers that share a database all serve the web, but only one writes rounds: the one
//! that holds the writer's lease. [`Store::lead`] takes it, or says that another process
//! has it; the tracker asks before every round, so a standby takes over at its next round
//! after the writer stops (or is killed).
//!
//! - PostgreSQL: a session advisory lock (`pg_try_advisory_lock`) held on the writer's own
//!   connection, the one its rounds are written on. The server releases it when that
//!   connection ends, however the process ends (a `kill -9` closes the socket). A writer
//!   whose connection broke has lost the lock with it, and writes again only once it has
//!   taken the lock back on a new connection.
//! - An SQLite file: an exclusive `flock` on a lock file beside it (`PATH-writer.lock`),
//!   held while the process runs; the kernel releases it when the process ends.
//! - An in-memory SQLite database exists in one process only: always the writer.
//!
//! A writer that takes the lease reloads what it keeps in memory (every server's state and
//! open sessions) from the database before its first write, so the rounds and sessions of
//! the writer before it go on. Once [`Store::lead`] has been asked, the store refuses to
//! write without the lease ([`StoreError::NotWriter`]); a store never asked (a test, a
//! tool) writes as before.

use sqlx::Row;

use super::{Backend, Store, StoreError, Writer};

/// The advisory lock's key: the same for every tracker (PostgreSQL keeps advisory locks
/// per database, so two sites on one server do not meet). "fragtrk1".
pub const ADVISORY_LOCK_KEY: i64 = 0x6672_6167_7472_6b31;

/// The writer's lease as this process knows it.
#[derive(Debug, Default)]
pub(super) struct Lease {
    /// [`Store::lead`] was asked: from then on, writes need the lease.
    asked: bool,
    /// This process holds it.
    held: bool,
    /// [`Store::lead`] is connecting to take it.
    trying: bool,
    /// SQLite: the locked lock file.
    #[cfg_attr(not(unix), allow(dead_code))]
    file: Option<std::fs::File>,
}

impl Lease {
    /// Whether the writer may write (or connect to write).
    pub(super) fn may_write(&self) -> Result<(), StoreError> {
        if !self.asked || self.held || self.trying {
            Ok(())
        } else {
            Err(StoreError::NotWriter)
        }
    }

    /// The writer's connection is gone: a PostgreSQL lock went with it.
    pub(super) fn connection_lost(&mut self, backend: Backend) {
        if backend == Backend::Postgres {
            self.held = false;
        }
    }
}

impl Writer {
    /// Takes the advisory lock on the writer's connection (opened when missing), or keeps
    /// it. Whether it is held.
    async fn lead_postgres(&mut self, pool: &sqlx::AnyPool) -> Result<bool, StoreError> {
        self.lease.trying = true;
        let mut held_conn = None;
        let already = self.lease.held;
        let result = async {
            let conn = self.connection(pool, &mut held_conn).await?;
            if already {
                // Still the writer's connection: the lock is still held. A round trip tells a
                // connection the server has closed.
                sqlx::query("SELECT 1").execute(&mut *conn).await?;
                return Ok(true);
            }
            let row = sqlx::query("SELECT pg_try_advisory_lock($1)")
                .bind(ADVISORY_LOCK_KEY)
                .fetch_one(&mut *conn)
                .await?;
            Ok::<bool, StoreError>(row.try_get::<bool, _>(0)?)
        }
        .await;
        self.lease.trying = false;
        match result {
            Ok(held) => Ok(held),
            Err(e) => {
                self.reset();
                Err(e)
            }
        }
    }

    /// Locks the SQLite file's lock file (kept locked while this process runs). Whether it
    /// is held.
    #[cfg(unix)]
    fn lead_sqlite(&mut self) -> Result<bool, StoreError> {
        use rustix::fs::{flock, FlockOperation};
        if self.lease.file.is_some() {
            return Ok(true);
        }
        let Some(path) = lock_path(&self.options) else {
            return Ok(true);
        };
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| StoreError::Db(sqlx::Error::Io(e)))?;
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {
                self.lease.file = Some(file);
                Ok(true)
            }
            Err(e) if e == rustix::io::Errno::WOULDBLOCK => Ok(false),
            Err(e) => Err(StoreError::Db(sqlx::Error::Io(e.into()))),
        }
    }

    /// Without `flock`: every tracker on the file writes.
    #[cfg(not(unix))]
    fn lead_sqlite(&mut self) -> Result<bool, StoreError> {
        Ok(true)
    }
}

/// The lock file of the SQLite database `options` names: `PATH-writer.lock`.
fn lock_path(options: &sqlx::any::AnyConnectOptions) -> Option<std::path::PathBuf> {
    use sqlx::ConnectOptions;
    let o = sqlx::sqlite::SqliteConnectOptions::from_url(&options.database_url).ok()?;
    let file = o.get_filename();
    if file.as_os_str().is_empty() || file.to_string_lossy().contains(":memory:") {
        return None;
    }
    let mut name = file.as_os_str().to_owned();
    name.push("-writer.lock");
    Some(name.into())
}

impl Store {
    /// Takes the writer's lease, or keeps it: `true` when this store is (still) the one
    /// that writes rounds, `false` when another process holds it. Taking it over makes the
    /// next write reload the writer's memory from the database. An error (the database
    /// unreachable) leaves this store a standby until it is asked again.
    pub async fn lead(&self) -> Result<bool, StoreError> {
        let mut w = self.writer.lock().await;
        w.lease.asked = true;
        let was = w.lease.held;
        let held = match (w.backend, w.shared) {
            (_, true) => Ok(true),
            (Backend::Sqlite, false) => w.lead_sqlite(),
            (Backend::Postgres, false) => w.lead_postgres(&self.pool).await,
        };
        let now = *held.as_ref().unwrap_or(&false);
        w.lease.held = now;
        if now != was {
            // Taken over, or lost: what this process remembers is another writer's past.
            w.state = None;
            if let Ok(mut live) = self.live.write() {
                live.clear();
            }
        }
        held
    }

    /// Whether this store held the writer's lease when last asked ([`Store::lead`]).
    pub async fn is_writer(&self) -> bool {
        self.writer.lock().await.lease.held
    }

    /// Gives the writer's lease up at once (a standby takes over at its next round): closes
    /// the writer's connection (a PostgreSQL lock goes with it) and unlocks an SQLite lock
    /// file. The store is then as if [`Store::lead`] had never been asked.
    pub async fn release(&self) {
        let mut w = self.writer.lock().await;
        let unlock = w.backend == Backend::Postgres && w.lease.held;
        if let Some(mut c) = w.conn.take() {
            if unlock {
                // Unlocked before the connection closes: the server drops a closed session's
                // locks only when its backend has finished exiting, a moment after `close`
                // returns, and a standby asking in that moment would be refused.
                let _ = sqlx::query("SELECT pg_advisory_unlock($1)")
                    .bind(ADVISORY_LOCK_KEY)
                    .execute(&mut c)
                    .await;
            }
            let _ = sqlx::Connection::close(c).await;
        }
        w.state = None;
        w.lease = Lease::default();
    }
}
