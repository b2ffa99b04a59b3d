//! Reading: the browser's, the server and player pages' and the API's queries. Every query
//! is an index range with a `LIMIT` or a time window, and runs within [`READ_TIMEOUT`].

use std::future::Future;

use sqlx::Row;

use super::write::code_status;
use super::{
    Counts, HistoryPoint, MapSpan, PlayerRow, RoundRow, ServerFilter, ServerRow, Store, StoreError,
    Uptime, READ_TIMEOUT,
};

/// Players a search of 3 characters or more walks, newest first, before it asks the trigram
/// index: in SQLite about 10 ms of the `(last_seen, name)` index.
pub(super) const SEARCH_WALK: i64 = 100_000;

/// The same in PostgreSQL, whose walk reads the rows.
pub(super) const SEARCH_WALK_PG: i64 = 20_000;

/// Most rows a server's history, map history or a player's sessions return.
const MAX_ROWS: i64 = 20_000;

/// The CTE `t(at)`: the distinct times (rounds, or buckets) of `table` from `$2` on, oldest
/// first, an index seek each (the series tables are keyed by the time first). A server's
/// rows are then `t` joined to `table` on its whole key: a seek per time, where filtering
/// the time range by server would read every server's rows.
fn times_of(table: &str) -> String {
    format!(
        "WITH RECURSIVE t(at) AS (SELECT MIN(at) FROM {table} WHERE at >= $2 \
         UNION ALL SELECT (SELECT MIN(y.at) FROM {table} y WHERE y.at > t.at) FROM t \
         WHERE t.at IS NOT NULL)"
    )
}

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

/// An FTS5 query for `s` as one phrase (`"…"`, quotes doubled): with the trigram tokenizer,
/// the names that contain `s`.
pub(super) fn fts_phrase(s: &str) -> String {
    format!("\"{}\"", s.to_lowercase().replace('"', "\"\""))
}

/// When session `s` ended: when it was left, or, while it is open, the last round its server
/// answered in (the writer refreshes an open session's `last_seen` only every
/// `flush_rounds` rounds): its latest round while it answers, else the server row's
/// `last_online` (rewritten when it stopped answering).
pub(super) const SESSION_END: &str = "CASE WHEN s.left_at IS NOT NULL THEN s.left_at ELSE \
     COALESCE((SELECT CASE WHEN l.status = 0 AND l.at > s.last_seen THEN l.at \
     WHEN l.status <> 0 AND v.last_online > s.last_seen THEN v.last_online \
     ELSE s.last_seen END FROM servers v LEFT JOIN server_latest l ON l.server_id = v.id \
     WHERE v.id = s.server_id), s.last_seen) END";

pub(super) const SERVER_COLUMNS: &str =
    "addr, game, status, error, name_raw, dialect, map, gametype, \
     num_players, max_players, num_bots, rtt_ms, first_seen, last_seen, last_online, id, \
     country, password, down_since, up_since, unlisted_since";

/// The servers with their numbers now: the row's state, and the players, bots, ping and last
/// round from its `server_latest` row (the row has them as of its last change).
pub(super) const SERVERS_NOW: &str =
    "(SELECT s.addr, s.game, s.status, s.error, s.name_raw, s.name, \
     s.dialect, s.map, s.gametype, \
     CASE WHEN x.at IS NULL THEN s.num_players ELSE x.players END AS num_players, \
     s.max_players, CASE WHEN x.at IS NULL THEN s.num_bots ELSE x.bots END AS num_bots, \
     CASE WHEN x.at IS NULL THEN s.rtt_ms ELSE CAST(x.rtt AS DOUBLE PRECISION) / 10 END \
     AS rtt_ms, s.first_seen, COALESCE(x.at, s.last_seen) AS last_seen, \
     CASE WHEN s.status = 'online' THEN COALESCE(x.at, s.last_online) ELSE s.last_online END \
     AS last_online, s.id, s.country, s.password, s.down_since, s.up_since, \
     s.unlisted_since FROM servers s LEFT JOIN server_latest x ON x.server_id = s.id) v";

/// A server's row as [`SERVER_COLUMNS`] select it, read by name.
#[derive(sqlx::FromRow)]
struct ServerSelect {
    addr: String,
    game: String,
    status: String,
    error: Option<String>,
    name_raw: Option<Vec<u8>>,
    dialect: Option<String>,
    map: Option<String>,
    gametype: Option<String>,
    num_players: Option<i64>,
    max_players: Option<i64>,
    num_bots: Option<i64>,
    rtt_ms: Option<f64>,
    first_seen: i64,
    last_seen: i64,
    last_online: Option<i64>,
    id: i64,
    country: Option<String>,
    password: Option<i64>,
    down_since: Option<i64>,
    up_since: Option<i64>,
    unlisted_since: Option<i64>,
}

pub(super) fn server_row(r: &sqlx::any::AnyRow) -> Result<ServerRow, sqlx::Error> {
    let s: ServerSelect = sqlx::FromRow::from_row(r)?;
    Ok(ServerRow {
        addr: s.addr,
        game: s.game,
        status: s.status,
        error: s.error,
        name_raw: s.name_raw,
        dialect: s.dialect,
        map: s.map,
        gametype: s.gametype,
        num_players: s.num_players,
        max_players: s.max_players,
        num_bots: s.num_bots,
        rtt_ms: s.rtt_ms,
        first_seen: s.first_seen,
        last_seen: s.last_seen,
        last_online: s.last_online,
        id: s.id,
        country: s.country,
        password: s.password.map(|p| p != 0),
        down_since: s.down_since,
        up_since: s.up_since,
        unlisted_since: s.unlisted_since,
    })
}

/// The browser's query: `SELECT what FROM servers WHERE <the filter>`, ordered and paged when
/// `paged`; with its bound values.
fn server_query(what: &str, f: &ServerFilter, paged: bool) -> (String, Vec<String>) {
    let mut sql = format!("SELECT {what} FROM {SERVERS_NOW} WHERE 1 = 1");
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
    // The live list: a server no master lists any more that does not answer either is gone.
    if !f.include_unlisted {
        sql.push_str(" AND (unlisted_since IS NULL OR status = 'online')");
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
        let (sql, binds) = server_query("COUNT(*) AS n", &unpaged, false);
        let mut q = sqlx::query(&sql);
        for b in &binds {
            q = q.bind(b.as_str());
        }
        let row = self.bounded(q.fetch_one(&self.pool)).await?;
        Ok(row.try_get("n")?)
    }

    /// Runs a reader's query within [`READ_TIMEOUT`].
    async fn bounded<T>(
        &self,
        f: impl Future<Output = Result<T, sqlx::Error>>,
    ) -> Result<T, StoreError> {
        match tokio::time::timeout(READ_TIMEOUT, f).await {
            Ok(r) => Ok(r?),
            Err(_) => Err(StoreError::Timeout),
        }
    }

    pub(super) async fn fetch_all<'q>(
        &'q self,
        q: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    ) -> Result<Vec<sqlx::any::AnyRow>, StoreError> {
        self.bounded(q.fetch_all(&self.pool)).await
    }

    pub(super) async fn fetch_optional<'q>(
        &'q self,
        q: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    ) -> Result<Option<sqlx::any::AnyRow>, StoreError> {
        self.bounded(q.fetch_optional(&self.pool)).await
    }

    /// The browser's rows: every known server's latest state, filtered and sorted.
    pub async fn servers(&self, f: &ServerFilter) -> Result<Vec<ServerRow>, StoreError> {
        let (sql, binds) = server_query(SERVER_COLUMNS, f, true);
        let mut q = sqlx::query(&sql);
        for b in &binds {
            q = q.bind(b.as_str());
        }
        let rows = self.fetch_all(q).await?;
        Ok(rows.iter().map(server_row).collect::<Result<_, _>>()?)
    }

    /// One server's latest state.
    pub async fn server(&self, addr: &str) -> Result<Option<ServerRow>, StoreError> {
        let sql = format!("SELECT {SERVER_COLUMNS} FROM {SERVERS_NOW} WHERE addr = $1");
        let row = self.fetch_optional(sqlx::query(&sql).bind(addr)).await?;
        Ok(row.as_ref().map(server_row).transpose()?)
    }

    pub(super) async fn server_id(&self, addr: &str) -> Result<Option<i64>, StoreError> {
        let row = self
            .fetch_optional(sqlx::query("SELECT id FROM servers WHERE addr = $1").bind(addr))
            .await?;
        Ok(row.map(|r| r.try_get("id")).transpose()?)
    }

    /// The JSON record of a server's latest state, as stored ([`super::stored_record`]:
    /// players, ping and player counts left out; they are the row's and the sessions').
    pub async fn server_record(&self, addr: &str) -> Result<Option<String>, StoreError> {
        let row = self
            .fetch_optional(sqlx::query("SELECT record FROM servers WHERE addr = $1").bind(addr))
            .await?;
        Ok(row.map(|r| r.try_get("record")).transpose()?)
    }

    /// A server's history since `since` (Unix ms), oldest first: a point per round for the
    /// rounds not yet downsampled, a point per bucket before (`rounds` > 1: the players
    /// averaged, with their minimum and maximum); the map and slots of the state in effect
    /// then. At most 20,000 points of each kind.
    pub async fn history(&self, addr: &str, since: i64) -> Result<Vec<HistoryPoint>, StoreError> {
        let Some(id) = self.server_id(addr).await? else {
            return Ok(Vec::new());
        };
        let agg = self
            .fetch_all(
                sqlx::query(&format!(
                    "{} SELECT a.at, a.rounds, a.online, a.players_min, a.players_avg, \
                     a.players_max, a.bots_avg, a.rtt_avg FROM t JOIN series_agg a \
                     ON a.at = t.at AND a.server_id = $1 ORDER BY a.at LIMIT $3",
                    times_of("series_agg")
                ))
                .bind(id)
                .bind(since)
                .bind(MAX_ROWS),
            )
            .await?;
        let raw = self
            .fetch_all(
                sqlx::query(&format!(
                    "{} SELECT x.at, x.status, x.players, x.bots, x.rtt FROM t \
                     JOIN series x ON x.at = t.at AND x.server_id = $1 ORDER BY x.at LIMIT $3",
                    times_of("series")
                ))
                .bind(id)
                .bind(since)
                .bind(MAX_ROWS),
            )
            .await?;
        let changes = self.changes(id, since).await?;
        let mut out = Vec::with_capacity(agg.len() + raw.len());
        for r in &agg {
            let rounds: i64 = r.try_get("rounds")?;
            let online: i64 = r.try_get("online")?;
            let avg: Option<f64> = r.try_get("players_avg")?;
            let rtt: Option<f64> = r.try_get("rtt_avg")?;
            out.push(HistoryPoint {
                at: r.try_get("at")?,
                status: if online > 0 { "online" } else { "timeout" }.into(),
                num_players: avg.map(|a| a.round() as i64),
                max_players: None,
                rtt_ms: rtt.map(|t| t / 10.0),
                map: None,
                num_bots: r.try_get("bots_avg")?,
                rounds,
                online_rounds: online,
                players_min: r.try_get("players_min")?,
                players_max: r.try_get("players_max")?,
            });
        }
        for r in &raw {
            let status: i64 = r.try_get("status")?;
            let bots: Option<i64> = r.try_get("bots")?;
            let rtt: Option<i64> = r.try_get("rtt")?;
            out.push(HistoryPoint {
                at: r.try_get("at")?,
                status: code_status(status).into(),
                num_players: r.try_get("players")?,
                max_players: None,
                rtt_ms: rtt.map(|t| t as f64 / 10.0),
                map: None,
                num_bots: bots.map(|b| b as f64),
                rounds: 1,
                online_rounds: i64::from(status == 0),
                players_min: None,
                players_max: None,
            });
        }
        out.sort_by_key(|p| p.at);
        // The state in effect at each point.
        let mut c = 0;
        for p in &mut out {
            while changes.get(c + 1).is_some_and(|ch| ch.at <= p.at) {
                c += 1;
            }
            if let Some(ch) = changes.get(c).filter(|ch| ch.at <= p.at && ch.online) {
                if p.online_rounds > 0 {
                    p.max_players = ch.max_players;
                    p.map.clone_from(&ch.map);
                }
            }
        }
        Ok(out)
    }

    /// A server's state changes from the one in effect at `since` on, oldest first.
    async fn changes(&self, id: i64, since: i64) -> Result<Vec<Change>, StoreError> {
        let rows = self
            .fetch_all(
                sqlx::query(
                    "SELECT at, online, map, gametype, max_players FROM server_changes \
                     WHERE server_id = $1 AND at >= COALESCE((SELECT MAX(at) FROM server_changes \
                     WHERE server_id = $1 AND at <= $2), $2) ORDER BY at LIMIT $3",
                )
                .bind(id)
                .bind(since)
                .bind(MAX_ROWS),
            )
            .await?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            let online: i64 = r.try_get("online")?;
            out.push(Change {
                at: r.try_get("at")?,
                online: online != 0,
                map: r.try_get("map")?,
                gametype: r.try_get("gametype")?,
                max_players: r.try_get("max_players")?,
            });
        }
        Ok(out)
    }

    /// The maps a server ran since `since` (Unix ms), newest first, at most `limit`: a span
    /// from a change to the next change of map (or the server going down).
    pub async fn map_history(
        &self,
        addr: &str,
        since: i64,
        limit: i64,
    ) -> Result<Vec<MapSpan>, StoreError> {
        let Some(id) = self.server_id(addr).await? else {
            return Ok(Vec::new());
        };
        let changes = self.changes(id, since).await?;
        let mut spans: Vec<MapSpan> = Vec::new();
        for ch in &changes {
            let same = spans.last().is_some_and(|s| {
                s.to.is_none() && ch.online && ch.map.as_deref() == Some(s.map.as_str())
            });
            if same {
                continue;
            }
            if let Some(last) = spans.last_mut().filter(|s| s.to.is_none()) {
                last.to = Some(ch.at);
            }
            if let (true, Some(map)) = (ch.online, ch.map.clone()) {
                spans.push(MapSpan {
                    map,
                    gametype: ch.gametype.clone(),
                    from: ch.at,
                    to: None,
                });
            }
        }
        spans.reverse();
        spans.truncate(usize::try_from(limit.max(0)).unwrap_or(usize::MAX));
        Ok(spans)
    }

    /// How much of the time since `since` (Unix ms) a server answered: rounds online over
    /// rounds probed, from the series (per round and downsampled).
    pub async fn uptime(&self, addr: &str, since: i64) -> Result<Uptime, StoreError> {
        let row = self
            .fetch_optional(
                sqlx::query("SELECT id, down_since, up_since FROM servers WHERE addr = $1")
                    .bind(addr),
            )
            .await?;
        let Some(r) = row else {
            return Ok(Uptime {
                since,
                fraction: None,
                down_since: None,
                up_since: None,
            });
        };
        let id: i64 = r.try_get("id")?;
        let mut probed = 0;
        let mut online = 0;
        // Per round, then downsampled: (rounds probed, of them answered).
        for sql in [
            format!(
                "{} SELECT CAST(COUNT(*) AS BIGINT) AS probed, \
                 CAST(SUM(CASE WHEN x.status = 0 THEN 1 ELSE 0 END) AS BIGINT) AS answered \
                 FROM t JOIN series x ON x.at = t.at AND x.server_id = $1",
                times_of("series")
            ),
            format!(
                "{} SELECT CAST(SUM(a.rounds) AS BIGINT) AS probed, \
                 CAST(SUM(a.online) AS BIGINT) AS answered FROM t JOIN series_agg a ON a.at = t.at AND a.server_id = $1",
                times_of("series_agg")
            ),
        ] {
            let n = self
                .fetch_optional(sqlx::query(&sql).bind(id).bind(since))
                .await?;
            if let Some(n) = n {
                probed += n.try_get::<Option<i64>, _>("probed")?.unwrap_or(0);
                online += n.try_get::<Option<i64>, _>("answered")?.unwrap_or(0);
            }
        }
        Ok(Uptime {
            since,
            fraction: (probed > 0).then(|| online as f64 / probed as f64),
            down_since: r.try_get("down_since")?,
            up_since: r.try_get("up_since")?,
        })
    }

    /// The players on a server now, highest score first: in this process, the writer's last
    /// round (scores and pings as the server sent them); otherwise its open sessions (scores
    /// as last written, no ping).
    pub async fn players_on(&self, addr: &str) -> Result<Vec<PlayerRow>, StoreError> {
        if let Some(list) = self.live_players(addr) {
            return Ok(list);
        }
        let rows = self
            .fetch_all(
                sqlx::query(
                    "SELECT s.player_id, v.addr, s.last_seen, s.joined, s.clan_raw, p.name_raw, \
                     p.dialect, s.last_score, s.team, s.is_bot FROM servers v \
                     JOIN sessions s ON s.server_id = v.id AND s.left_at IS NULL \
                     JOIN players p ON p.id = s.player_id WHERE v.addr = $1 \
                     ORDER BY COALESCE(s.last_score, -2147483648) DESC, s.joined, s.player_id \
                     LIMIT $2",
                )
                .bind(addr)
                .bind(i64::try_from(super::MAX_PLAYERS).unwrap_or(1024)),
            )
            .await?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            let is_bot: Option<i64> = r.try_get("is_bot")?;
            out.push(PlayerRow {
                player_id: r.try_get("player_id")?,
                addr: r.try_get("addr")?,
                at: r.try_get("last_seen")?,
                joined: r.try_get("joined")?,
                clan_raw: r.try_get("clan_raw")?,
                name_raw: r.try_get("name_raw")?,
                dialect: r.try_get("dialect")?,
                score: r.try_get("last_score")?,
                ping: None,
                team: r.try_get("team")?,
                is_bot: is_bot.map(|b| b != 0),
            });
        }
        Ok(out)
    }

    /// The latest rounds, newest first.
    pub async fn rounds(&self, limit: i64) -> Result<Vec<RoundRow>, StoreError> {
        let rows = self
            .fetch_all(
                sqlx::query(
                    "SELECT at, finished, servers, online, players FROM rounds \
                     ORDER BY at DESC LIMIT $1",
                )
                .bind(limit.max(0)),
            )
            .await?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            out.push(RoundRow {
                at: r.try_get("at")?,
                finished: r.try_get("finished")?,
                servers: r.try_get("servers")?,
                online: r.try_get("online")?,
                players: r.try_get("players")?,
            });
        }
        Ok(out)
    }

    /// Rows in every table (counts whole tables: for tests and tools, not for pages).
    pub async fn counts(&self) -> Result<Counts, StoreError> {
        let mut n = [0i64; 9];
        for (slot, sql) in n.iter_mut().zip([
            "SELECT COUNT(*) AS n FROM rounds",
            "SELECT COUNT(*) AS n FROM servers",
            "SELECT COUNT(*) AS n FROM series",
            "SELECT CAST(COALESCE(SUM(players), 0) AS BIGINT) AS n FROM series",
            "SELECT COUNT(*) AS n FROM series_agg",
            "SELECT COUNT(*) AS n FROM server_changes",
            "SELECT COUNT(*) AS n FROM players",
            "SELECT COUNT(*) AS n FROM sessions",
            "SELECT COUNT(*) AS n FROM sessions WHERE left_at IS NULL",
        ]) {
            let row = self.bounded(sqlx::query(sql).fetch_one(&self.pool)).await?;
            *slot = row.try_get("n")?;
        }
        Ok(Counts {
            rounds: n[0],
            servers: n[1],
            series: n[2],
            series_players: n[3],
            series_agg: n[4],
            changes: n[5],
            players: n[6],
            sessions: n[7],
            open_sessions: n[8],
        })
    }

    /// The games that have servers, sorted.
    pub async fn games(&self) -> Result<Vec<String>, StoreError> {
        let rows = self
            .fetch_all(sqlx::query(
                "SELECT DISTINCT game FROM servers ORDER BY game",
            ))
            .await?;
        Ok(rows
            .iter()
            .map(|r| r.try_get("game"))
            .collect::<Result<_, _>>()?)
    }
}

/// A boolean column: SQLite gives 0/1 integers, PostgreSQL booleans.
pub(super) fn bool_of(r: &sqlx::any::AnyRow, name: &str) -> Result<bool, sqlx::Error> {
    match r.try_get::<bool, _>(name) {
        Ok(b) => Ok(b),
        Err(_) => Ok(r.try_get::<i64, _>(name)? != 0),
    }
}

/// A server's state from `at` on (a `server_changes` row).
#[derive(Debug)]
struct Change {
    at: i64,
    online: bool,
    map: Option<String>,
    gametype: Option<String>,
    max_players: Option<i64>,
}
