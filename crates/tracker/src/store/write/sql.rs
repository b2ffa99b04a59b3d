//! The statements a round is written with: bound rows in statements of at most
//! [`MAX_BINDS`] values, number rows as SQL literals, the transaction.

use std::fmt::Write as _;

use sqlx::Connection as _;

use crate::store::Backend;

use super::*;

/// Rows of literal values in one statement.
pub(in crate::store) const LITERAL_ROWS: usize = 500;

/// One value of a row to insert with bound parameters.
pub(in crate::store) enum Val {
    I(Option<i64>),
    F(Option<f64>),
    S(Option<String>),
    B(Option<Vec<u8>>),
}

/// Most bound values in one statement. SQLite allows 32,766 and PostgreSQL 65,535, but
/// binding costs grow faster than linearly with a statement's parameters in sqlx's SQLite
/// path (docs/tracker.md), and PostgreSQL is as fast with 250.
pub(in crate::store) const MAX_BINDS: usize = 250;

pub(in crate::store) type Tx<'c> = sqlx::Transaction<'c, sqlx::Any>;

/// Inserts `rows` (all of one width) as `head (…), (…) … tail` statements of up to
/// [`MAX_BINDS`] values, numbered `$1…`; returns the rows the statements return.
pub(in crate::store) async fn insert_rows(
    tx: &mut Tx<'_>,
    head: &str,
    tail: &str,
    rows: Vec<Vec<Val>>,
) -> Result<Vec<sqlx::any::AnyRow>, sqlx::Error> {
    let mut out = Vec::new();
    let Some(width) = rows.first().map(Vec::len).filter(|w| *w > 0) else {
        return Ok(out);
    };
    let per = (MAX_BINDS / width).max(1);
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        let chunk: Vec<Vec<Val>> = rows.by_ref().take(per).collect();
        let mut sql = String::from(head);
        let mut n = 0usize;
        let mut literal = false;
        for (i, row) in chunk.iter().enumerate() {
            sql.push_str(if i > 0 { ", (" } else { "(" });
            for (j, v) in row.iter().enumerate() {
                if j > 0 {
                    sql.push_str(", ");
                }
                // Floats go in as literals: sqlx 0.8's `Any` binds a NULL double to
                // PostgreSQL as a `float4`, so a statement first prepared with a NULL there
                // refuses every 8-byte double bound to it later ("incorrect binary data
                // format in bind parameter").
                if let Val::F(f) = v {
                    literal = true;
                    match f.filter(|f| f.is_finite()) {
                        Some(f) => {
                            let _ = write!(sql, "CAST({f:?} AS DOUBLE PRECISION)");
                        }
                        None => sql.push_str("CAST(NULL AS DOUBLE PRECISION)"),
                    }
                    continue;
                }
                n += 1;
                let _ = write!(sql, "${n}");
            }
            sql.push(')');
        }
        sql.push_str(tail);
        // A statement with literals is new text each time: not prepared and cached.
        let mut q = sqlx::query(&sql).persistent(!literal);
        for v in chunk.into_iter().flatten() {
            q = match v {
                Val::I(x) => q.bind(x),
                Val::F(_) => q,
                Val::S(x) => q.bind(x.map(no_nul)),
                Val::B(x) => q.bind(x),
            };
        }
        out.extend(q.fetch_all(&mut **tx).await?);
    }
    Ok(out)
}

/// Writes a number as an SQL literal into `out`: `NULL` typed as `BIGINT` (PostgreSQL types
/// an untyped `NULL` in `VALUES` as text).
pub(in crate::store) fn push_lit(out: &mut String, v: Option<i64>) {
    match v {
        Some(v) => {
            let _ = write!(out, "{v}");
        }
        None => out.push_str("CAST(NULL AS BIGINT)"),
    }
}

/// Inserts typed `rows` into `table` ([`insert_rows`]): `INSERT INTO table (T's columns)
/// VALUES … tail`.
pub(in crate::store) async fn insert<T: Bound>(
    tx: &mut Tx<'_>,
    table: &str,
    tail: &str,
    rows: &[T],
    ids: &Ids,
) -> Result<Vec<sqlx::any::AnyRow>, sqlx::Error> {
    let head = format!("INSERT INTO {table} ({}) VALUES ", T::COLUMNS.join(", "));
    let rows = rows.iter().map(|r| r.values(ids)).collect();
    insert_rows(tx, &head, tail, rows).await
}

/// Writes rows of numbers in bulk; `sql` says where they go, with `ROWS` in the place of a
/// table of them, `v`, whose columns are named as `T`'s ([`Numbers::COLUMNS`]):
///
/// - SQLite: `(SELECT column1 AS id, … FROM (VALUES (…), (…)…)) AS v`, the numbers written
///   in as literals, [`LITERAL_ROWS`] rows a statement (binding 6 values a row costs more
///   than parsing them);
/// - PostgreSQL: `unnest($1::bigint[], $2::bigint[], …) AS v(id, …)`, a bound array of each
///   column, all rows in one statement.
///
/// The numbers are `i64`s written by Rust: nothing in them can change the statement.
pub(in crate::store) async fn number_rows<T: Numbers>(
    tx: &mut Tx<'_>,
    backend: Backend,
    sql: &str,
    rows: &[T],
    ids: &Ids,
) -> Result<(), sqlx::Error> {
    if rows.is_empty() {
        return Ok(());
    }
    match backend {
        Backend::Sqlite => {
            let names = T::COLUMNS
                .iter()
                .enumerate()
                .map(|(i, c)| format!("column{} AS {c}", i + 1))
                .collect::<Vec<_>>()
                .join(", ");
            let mut values = String::new();
            for chunk in rows.chunks(LITERAL_ROWS) {
                values.clear();
                values.push_str("(SELECT ");
                values.push_str(&names);
                values.push_str(" FROM (VALUES ");
                for (i, r) in chunk.iter().enumerate() {
                    values.push_str(if i > 0 { ", (" } else { "(" });
                    let mut first = true;
                    r.numbers(ids, &mut |v| {
                        if !first {
                            values.push_str(", ");
                        }
                        first = false;
                        push_lit(&mut values, v);
                    });
                    values.push(')');
                }
                values.push_str(")) AS v");
                // Not prepared and cached: each of these statements is new text.
                sqlx::query(&sql.replace("ROWS", &values))
                    .persistent(false)
                    .execute(&mut **tx)
                    .await?;
            }
        }
        Backend::Postgres => {
            let arrays = (1..=T::COLUMNS.len())
                .map(|i| format!("${i}::bigint[]"))
                .collect::<Vec<_>>()
                .join(", ");
            let names = T::COLUMNS.join(", ");
            let sql = sql.replace("ROWS", &format!("unnest({arrays}) AS v({names})"));
            // Each column an array literal, `{1,NULL,3}`.
            let mut cols: Vec<String> = vec![String::from("{"); T::COLUMNS.len()];
            for (i, r) in rows.iter().enumerate() {
                let mut j = 0;
                r.numbers(ids, &mut |v| {
                    let a = &mut cols[j];
                    if i > 0 {
                        a.push(',');
                    }
                    match v {
                        Some(v) => {
                            let _ = write!(a, "{v}");
                        }
                        None => a.push_str("NULL"),
                    }
                    j += 1;
                });
            }
            let mut q = sqlx::query(&sql);
            for mut a in cols {
                a.push('}');
                q = q.bind(a);
            }
            q.execute(&mut **tx).await?;
        }
    }
    Ok(())
}

/// Opens `sqlx::Connection::begin` on the writer's connection.
pub(in crate::store) async fn begin(conn: &mut sqlx::AnyConnection) -> Result<Tx<'_>, sqlx::Error> {
    conn.begin().await
}
