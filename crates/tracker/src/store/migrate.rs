//! Databases migrated by an earlier build, repaired before the migrator runs.
//!
//! sqlx records the checksum (SHA-384 of the text) of every migration it applies and refuses a
//! database whose recorded checksum differs from the build's (`VersionMismatch`). Two shipped
//! migrations were edited after they shipped: 0001 once (fe2dce7 → a8fa7cd) and 0002 five
//! times (064cbc8 → db518fe → 76f3081 → e10cce9 → 2198ecf → 6c3d955). Each earlier form is
//! known here by its checksum with the steps that bring its schema to the current one, derived
//! from the diffs between the forms (`repair/<backend>/*.sql`). [`repair`] applies them, keeps
//! the data and records the current checksum, all in one transaction; a checksum that is no
//! shipped form is an error that says so. Shipped migrations are frozen since (docs/tracker.md
//! "Migrations", `tests/migrations.rs` pins their checksums), so this list only ever shrinks.

use sqlx::migrate::Migrator;
use sqlx::{AnyConnection, Connection, Row};

use super::{Backend, StoreError};

/// One earlier shipped form of a migration.
struct Form {
    backend: Backend,
    /// The migration's version.
    version: i64,
    /// The commit that shipped this text last.
    commit: &'static str,
    /// SHA-384 of its text, in hex: what sqlx recorded.
    checksum: &'static str,
    /// Statements, in order, that bring its schema to the current migration's.
    steps: &'static [&'static str],
}

macro_rules! step {
    ($path:literal) => {
        include_str!(concat!("repair/", $path))
    };
}

const SQLITE_0001_RECORD_NULL: &str = step!("sqlite/0001-record-null.sql");
const SQLITE_RECORD_HASH: &str = step!("sqlite/0002-record-hash.sql");
const SQLITE_ROUND_FIRST: &str = step!("sqlite/0002-round-first.sql");
const SQLITE_LAST_SEEN_NAME: &str = step!("sqlite/0002-last-seen-name.sql");
const PG_0001_RECORD_NULL: &str = step!("postgres/0001-record-null.sql");
const PG_RECORD_HASH: &str = step!("postgres/0002-record-hash.sql");
const PG_ROUND_FIRST: &str = step!("postgres/0002-round-first.sql");
const PG_LAST_SEEN_NAME: &str = step!("postgres/0002-last-seen-name.sql");
const PG_SEARCH_TABLE: &str = step!("postgres/0002-search-table.sql");
const PG_LAST_SEEN: &str = step!("postgres/0002-last-seen.sql");

/// Every earlier shipped form (`tests/fixtures/migrations` holds their texts).
const FORMS: &[Form] = &[
    Form {
        backend: Backend::Sqlite,
        version: 1,
        commit: "fe2dce7",
        checksum: "a23cdc5e7d512684e20bdc45e414beff8563f751e95ef0b6f5d5f812e29f37558f5e3394eacfd74b0f794051e91bdb1c",
        steps: &[SQLITE_0001_RECORD_NULL],
    },
    Form {
        backend: Backend::Sqlite,
        version: 2,
        commit: "064cbc8",
        checksum: "39c3727154a9f9a3b2d091ed81187e2470dbe6855b5907779d7b1f630ec2bb8aeb8db2a9f254f674f7ee18547393eeff",
        steps: &[SQLITE_RECORD_HASH, SQLITE_ROUND_FIRST, SQLITE_LAST_SEEN_NAME],
    },
    Form {
        backend: Backend::Sqlite,
        version: 2,
        commit: "db518fe",
        checksum: "1f8ac524512249e2aaa0e4d3f938c382398975e21179acb6f5ae3c84af8adbab43e72a4d81e5e7216f5d3afb19c96540",
        steps: &[SQLITE_ROUND_FIRST, SQLITE_LAST_SEEN_NAME],
    },
    Form {
        backend: Backend::Sqlite,
        version: 2,
        commit: "76f3081",
        checksum: "2831fd3a3df4022aee7fda4fd5982595ce9363df60e2036a7ea84aeeef41874750276704f47d3b5793c49fccefe8de01",
        steps: &[SQLITE_LAST_SEEN_NAME],
    },
    // Also 2198ecf's: that commit left SQLite's text as it was. 6c3d955 changed comments only.
    Form {
        backend: Backend::Sqlite,
        version: 2,
        commit: "e10cce9",
        checksum: "214ea30aef8e7850ffcf66cb1196270327b5f7e59fab337285eeda3bb26f9918d9ab31a201f3e6d76a9e6d2d202a4bb8",
        steps: &[],
    },
    Form {
        backend: Backend::Postgres,
        version: 1,
        commit: "fe2dce7",
        checksum: "d97beac7ea8217722f9384e0e03539c28051681cafd87b70782bad0108c02a1d743e432e22e1be29798831fea15464c6",
        steps: &[PG_0001_RECORD_NULL],
    },
    Form {
        backend: Backend::Postgres,
        version: 2,
        commit: "064cbc8",
        checksum: "62c1dc62739ccd8e423d896e6fbb100a9af332c9d016fa0f4c60a739d4dd3ddc014988b5b94a3c62f5f1fd705aa17b80",
        steps: &[
            PG_RECORD_HASH,
            PG_ROUND_FIRST,
            PG_LAST_SEEN_NAME,
            PG_SEARCH_TABLE,
            PG_LAST_SEEN,
        ],
    },
    Form {
        backend: Backend::Postgres,
        version: 2,
        commit: "db518fe",
        checksum: "81909784e4bb3bd846d34e426c060e5a02b2713daf007e6e72eccf3c63439de6d8f7774dae35421716235a7cc12b6583",
        steps: &[PG_ROUND_FIRST, PG_LAST_SEEN_NAME, PG_SEARCH_TABLE, PG_LAST_SEEN],
    },
    Form {
        backend: Backend::Postgres,
        version: 2,
        commit: "76f3081",
        checksum: "91770100afbb9387178c521d46063500b37975a685928f7c060835b21553422224e3897ceea551cc4055380e5f63e9c7",
        steps: &[PG_LAST_SEEN_NAME, PG_SEARCH_TABLE, PG_LAST_SEEN],
    },
    Form {
        backend: Backend::Postgres,
        version: 2,
        commit: "e10cce9",
        checksum: "394d95a072fec589c0aae9d5e30a396d35a32ba6c170623304fd248767e373bb1088257740a6c463edde9cdbab6ab9f2",
        steps: &[PG_SEARCH_TABLE, PG_LAST_SEEN],
    },
    Form {
        backend: Backend::Postgres,
        version: 2,
        commit: "2198ecf",
        checksum: "d4728cd904cbe5d83860f833852271cd5f9cb5f863bb87f2b3369ab12150a3035dc8f5d525ff6482e479eeda9b845bb8",
        steps: &[PG_LAST_SEEN],
    },
];

/// A migration recorded in the database with a text this build does not know.
#[derive(Debug, thiserror::Error)]
#[error(
    "migration {version} ({description}) was applied to this database from a text that is \
     neither this build's nor any released build's (recorded checksum {checksum}…): the \
     database was migrated by a modified or unreleased build of fragstat track. It was left \
     as it was: open it with that build, or restore a backup made by a released one"
)]
pub struct UnknownMigration {
    /// The migration's version.
    pub version: i64,
    /// Its description (from its file name).
    pub description: String,
    /// The first 16 hex digits of the recorded checksum.
    pub checksum: String,
}

/// Lower-case hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Whether sqlx's bookkeeping table exists (a new database has none yet).
async fn has_migrations_table(
    conn: &mut AnyConnection,
    backend: Backend,
) -> Result<bool, StoreError> {
    let sql = match backend {
        Backend::Sqlite => {
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'"
        }
        Backend::Postgres => {
            "SELECT COUNT(*) FROM pg_catalog.pg_tables \
             WHERE tablename = '_sqlx_migrations' AND schemaname = current_schema()"
        }
    };
    let n: i64 = sqlx::query(sql).fetch_one(&mut *conn).await?.try_get(0)?;
    Ok(n > 0)
}

/// Brings every migration applied from an earlier shipped form to the current one: its
/// repair steps, then the current checksum in `_sqlx_migrations`, in one transaction. A
/// migration recorded with a checksum of no shipped form is [`UnknownMigration`]; migrations
/// this build does not have, and failed ones, are left to the migrator to report.
pub(super) async fn repair(
    conn: &mut AnyConnection,
    backend: Backend,
    migrator: &Migrator,
) -> Result<(), StoreError> {
    if !has_migrations_table(conn, backend).await? {
        return Ok(());
    }
    let mut tx = conn.begin().await?;
    if backend == Backend::Postgres {
        // Two trackers opening one database at once: the second waits, then finds it repaired.
        sqlx::query("LOCK TABLE _sqlx_migrations IN EXCLUSIVE MODE")
            .execute(&mut *tx)
            .await?;
    }
    let applied = sqlx::query(
        "SELECT version, checksum FROM _sqlx_migrations WHERE success ORDER BY version",
    )
    .fetch_all(&mut *tx)
    .await?;
    for row in applied {
        let version: i64 = row.try_get(0)?;
        let checksum: Vec<u8> = row.try_get(1)?;
        let Some(current) = migrator.iter().find(|m| m.version == version) else {
            continue;
        };
        if *current.checksum == *checksum {
            continue;
        }
        let recorded = hex(&checksum);
        let Some(form) = FORMS
            .iter()
            .find(|f| f.backend == backend && f.version == version && f.checksum == recorded)
        else {
            return Err(StoreError::UnknownMigration(UnknownMigration {
                version,
                description: current.description.to_string(),
                checksum: recorded.chars().take(16).collect(),
            }));
        };
        for step in form.steps {
            sqlx::raw_sql(step).execute(&mut *tx).await?;
        }
        sqlx::query("UPDATE _sqlx_migrations SET checksum = $1 WHERE version = $2")
            .bind(current.checksum.to_vec())
            .bind(version)
            .execute(&mut *tx)
            .await?;
        tracing::info!(
            "migration {version} ({}) of {}: repaired from its form of {} to the current one",
            current.description,
            backend.name(),
            form.commit
        );
    }
    tx.commit().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_are_distinct_and_none_is_current() {
        for (i, f) in FORMS.iter().enumerate() {
            assert_eq!(f.checksum.len(), 96, "{} {}", f.version, f.commit);
            assert!(FORMS[..i].iter().all(|g| g.checksum != f.checksum));
            let migrator = match f.backend {
                Backend::Sqlite => &super::super::SQLITE,
                Backend::Postgres => &super::super::POSTGRES,
            };
            let current = migrator.iter().find(|m| m.version == f.version).unwrap();
            assert_ne!(hex(&current.checksum), f.checksum, "{}", f.commit);
        }
    }
}
