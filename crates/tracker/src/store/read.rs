//! Reading: the browser's, the server pages' and the API's queries.

use sqlx::Row;

use super::{
    Counts, HistoryPoint, PlayerRow, RoundRow, ServerFilter, ServerRow, Store, StoreError,
};

/// A `LIKE` pattern matching `s` anywhere, lower case, with `\` escaping wildcards.
pub(super) fn contains_pattern(s: &str) -> String {
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

/// The browser's query: `SELECT what FROM servers WHERE <the filter>`, ordered and paged when
/// `paged`; with its bound values.
fn server_query(what: &str, f: &ServerFilter, paged: bool) -> (String, Vec<String>) {
    let mut sql = format!("SELECT {what} FROM servers WHERE 1 = 1");
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
    if paged {
        sql.push_str(&f.order_sql());
        if let Some(l) = f.limit {
            sql.push_str(&format!(" LIMIT {} OFFSET {}", l.max(0), f.offset.max(0)));
        }
    }
    (sql, binds)
}

impl Store {
    /// How many servers the browser's filter matches (for pagination; `limit`, `offset` and
    /// the order ignored).
    pub async fn count_servers(&self, f: &ServerFilter) -> Result<i64, StoreError> {
        let unpaged = ServerFilter {
            limit: None,
            offset: 0,
            ..f.clone()
        };
        // The same WHERE as `servers`, counted.
        let (sql, binds) = server_query("COUNT(*)", &unpaged, false);
        let mut q = sqlx::query(&sql);
        for b in &binds {
            q = q.bind(b.as_str());
        }
        let row = q.fetch_one(&self.pool).await?;
        Ok(row.try_get(0)?)
    }

    /// The browser's rows: every known server's latest state, filtered and sorted.
    pub async fn servers(&self, f: &ServerFilter) -> Result<Vec<ServerRow>, StoreError> {
        let (sql, binds) = server_query(SERVER_COLUMNS, f, true);
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
}
