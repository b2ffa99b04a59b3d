//! Writing: a round in one transaction, in multi-row statements; pruning old rows.

use fragstat::core::model::Dialect;
use fragstat::core::record::Status;

use super::{RoundData, Store, StoreError};

fn status_str(s: Status) -> &'static str {
    match s {
        Status::Online => "online",
        Status::Timeout => "timeout",
        Status::Down => "down",
        _ => "error",
    }
}

/// The dialect as stored: its id (`quake`, `plain`, `idq3`, `dp`…; `Dialect::id`).
fn dialect_str(d: Dialect) -> &'static str {
    d.id()
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

impl Store {
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
}
