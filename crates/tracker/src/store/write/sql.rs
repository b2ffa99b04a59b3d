//! The statements a round is written with: bound rows in statements of at most
//! [`MAX_BINDS`] values, number rows as SQL literals, the transaction.

use std::fmt::Write as _;

use sqlx::Connection as _;

use crate::store::Backend;

use super::*;

/// Rows of literal values in one statement.
pub(super) const LITERAL_ROWS: usize = 500;

/// One value of a row to insert with bound parameters.
pub(super) enum Val {
    I(Option<i64>),
    F(Option<f64>),
    S(Option<String>),
    B(Option<Vec<u8>>),
}

/// Most bound values in one statement. SQLite allows 32,766 and PostgreSQL 65,535, but
/// binding costs grow faster than linearly with a statement's parameters in sqlx's SQLite
/// path (docs/tracker.md), and PostgreSQL is as fast with 250.
pub(super) const MAX_BINDS: usize = 250;

pub(super) type Tx<'c> = sqlx::Transaction<'c, sqlx::Any>;

/// Inserts `rows` (all of one width) as `head (…), (…) … tail` statements of up to
/// [`MAX_BINDS`] values, numbered `$1…`; returns the rows the statements return.
pub(super) async fn insert_rows(
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
pub(super) fn push_lit(out: &mut String, v: Option<i64>) {
    match v {
        Some(v) => {
            let _ = write!(out, "{v}");
        }
        None => out.push_str("CAST(NULL AS BIGINT)"),
    }
}

/// A column of numbers: its value in a row.
pub(super) type Column<'a, T> = &'a dyn Fn(&T) -> Option<i64>;

/// Writes rows of numbers in bulk, `columns` of each of `rows`; `sql` says where they go, with
/// `ROWS` in the place of a table of them, `v`, whose columns are `column1`, `column2`…:
///
/// - SQLite: `(VALUES (…), (…)…) AS v`, the numbers written in as literals, [`LITERAL_ROWS`] rows
///   a statement (binding 6 values a row costs more than parsing them);
/// - PostgreSQL: `unnest($1::bigint[], $2::bigint[], …) AS v(column1, column2, …)`, a bound
///   array of each column, all rows in one statement.
///
/// The numbers are `i64`s written by Rust: nothing in them can change the statement.
pub(super) async fn number_rows<T>(
    tx: &mut Tx<'_>,
    backend: Backend,
    sql: &str,
    rows: &[T],
    columns: &[Column<'_, T>],
) -> Result<(), sqlx::Error> {
    if rows.is_empty() {
        return Ok(());
    }
    match backend {
        Backend::Sqlite => {
            let mut values = String::new();
            for chunk in rows.chunks(LITERAL_ROWS) {
                values.clear();
                values.push_str("(VALUES ");
                for (i, r) in chunk.iter().enumerate() {
                    values.push_str(if i > 0 { ", (" } else { "(" });
                    for (j, c) in columns.iter().enumerate() {
                        if j > 0 {
                            values.push_str(", ");
                        }
                        push_lit(&mut values, c(r));
                    }
                    values.push(')');
                }
                values.push_str(") AS v");
                // Not prepared and cached: each of these statements is new text.
                sqlx::query(&sql.replace("ROWS", &values))
                    .persistent(false)
                    .execute(&mut **tx)
                    .await?;
            }
        }
        Backend::Postgres => {
            let arrays = (1..=columns.len())
                .map(|i| format!("${i}::bigint[]"))
                .collect::<Vec<_>>()
                .join(", ");
            let names = (1..=columns.len())
                .map(|i| format!("column{i}"))
                .collect::<Vec<_>>()
                .join(", ");
            let sql = sql.replace("ROWS", &format!("unnest({arrays}) AS v({names})"));
            let mut q = sqlx::query(&sql);
            for c in columns {
                // An array literal, `{1,NULL,3}`.
                let mut a = String::with_capacity(rows.len() * 8 + 2);
                a.push('{');
                for (i, r) in rows.iter().enumerate() {
                    if i > 0 {
                        a.push(',');
                    }
                    match c(r) {
                        Some(v) => {
                            let _ = write!(a, "{v}");
                        }
                        None => a.push_str("NULL"),
                    }
                }
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
