//! A database's schema as sorted lines, to compare a repaired database with a fresh one.

use sqlx::Row;

/// SQLite: every table, index, trigger and view with its SQL text. PostgreSQL: every column
/// (position, type, nullability, default, identity), index, constraint, trigger, relation
/// (kind and storage options) and function of the current schema.
const SQLITE: &str = "SELECT type || ' ' || name || ' on ' || tbl_name || ': ' || \
    COALESCE(sql, '') FROM sqlite_master";

const POSTGRES: &str = "\
    SELECT 'column ' || table_name || '.' || column_name || ' #' || ordinal_position || ' ' \
        || data_type || ' null=' || is_nullable || ' default=' || COALESCE(column_default, '') \
        || ' identity=' || is_identity || ' ' || COALESCE(identity_generation, '') \
    FROM information_schema.columns WHERE table_schema = current_schema() \
    UNION ALL SELECT 'index ' || indexname::text || ': ' || indexdef \
    FROM pg_indexes WHERE schemaname = current_schema() \
    UNION ALL SELECT 'constraint ' || conrelid::regclass::text || ' ' || conname::text || ': ' \
        || pg_get_constraintdef(oid) \
    FROM pg_constraint WHERE connamespace = current_schema()::regnamespace \
    UNION ALL SELECT 'trigger ' || tgname::text || ': ' || pg_get_triggerdef(oid) \
    FROM pg_trigger WHERE NOT tgisinternal \
    UNION ALL SELECT 'relation ' || relname::text || ' ' || relkind::text || ' ' \
        || COALESCE(array_to_string(reloptions, ','), '') \
    FROM pg_class WHERE relnamespace = current_schema()::regnamespace \
    UNION ALL SELECT 'function ' || proname::text || ': ' || prosrc \
    FROM pg_proc p WHERE pronamespace = current_schema()::regnamespace \
        AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')";

/// The schema of the database at `url`, one sorted line per object.
pub async fn dump(url: &str, backend: &str) -> Vec<String> {
    let pool = super::pool(url).await;
    let sql = if backend == "sqlite" {
        SQLITE
    } else {
        POSTGRES
    };
    let mut lines: Vec<String> = sqlx::query(sql)
        .fetch_all(&pool)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .iter()
        .map(|r| r.try_get::<String, _>(0).unwrap())
        .collect();
    pool.close().await;
    lines.sort();
    assert!(lines.len() > 20, "{lines:?}");
    lines
}

/// Fails naming each line only one of them has.
pub fn assert_same(got: &[String], want: &[String], what: &str) {
    let missing: Vec<_> = want.iter().filter(|l| !got.contains(l)).collect();
    let extra: Vec<_> = got.iter().filter(|l| !want.contains(l)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "{what}: the repaired schema differs from a fresh database's\n\
         missing: {missing:#?}\nextra: {extra:#?}"
    );
}
