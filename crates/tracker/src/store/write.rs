//! Writing: what changed in a round, on the writer's own connection, in one transaction.
//!
//! The writer keeps in memory what the database says now — every server's id, last state and
//! open player sessions — loaded from the database when it first writes (so a restarted
//! tracker continues where the last one stopped). A round then writes only:
//!
//! - one `series` row per server (its numbers this round), appended at the table's end (its
//!   key is the round first), and the same numbers as the server's `server_latest` row,
//! - a `server_changes` row and a `servers` upsert for each server whose state changed (name,
//!   map, gametype, slots, password, up/down, status, record, country); the browser's numbers
//!   (last seen, players, bots, ping) are read from `server_latest`, so an unchanged
//!   server's row is not written at all,
//! - the sessions that opened (and their players' identities) and closed,
//! - the scores and last-seen times of a rotating `1/flush_rounds` of the open sessions,
//! - the round's row.
//!
//! Numbers go into the statements as SQL literals (an `i64` or a finite `f64` written by
//! Rust cannot inject anything), so a statement of 500 rows costs the parser, not 3,000
//! bound values through sqlx's `Any` layer; text and bytes are always bound.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::hash::{BuildHasher, Hash, Hasher};

use fragstat::core::model::Dialect;
use fragstat::core::record::{Record, Status};
use sqlx::{Connection as _, Row};

use super::{Backend, PlayerRow, RoundData, Store, StoreError};

/// Most players of one server stored per round (R8): a hostile server can list ~9,000 in a
/// datagram.
pub const MAX_PLAYERS: usize = 1024;
/// Most warnings kept in a record (R8); the rest are counted in one more ("and N more").
pub const MAX_WARNINGS: usize = 32;
/// Most bytes of a server's stored JSON record (R8).
pub const MAX_RECORD_BYTES: usize = 64 * 1024;
/// Most bytes of a player's or clan's name stored (a name is an index key: PostgreSQL's
/// B-tree entries are limited to about 2.7 KB).
pub const MAX_NAME_BYTES: usize = 256;

/// Rows of literal values in one statement.
const LITERAL_ROWS: usize = 500;

fn status_str(s: Status) -> &'static str {
    match s {
        Status::Online => "online",
        Status::Timeout => "timeout",
        Status::Down => "down",
        _ => "error",
    }
}

/// The series' status code.
pub(super) fn status_code(s: &str) -> i64 {
    match s {
        "online" => 0,
        "timeout" => 1,
        "down" => 2,
        _ => 3,
    }
}

/// The status a series code stands for.
pub(super) fn code_status(c: i64) -> &'static str {
    match c {
        0 => "online",
        1 => "timeout",
        2 => "down",
        _ => "error",
    }
}

/// The dialect as stored: its id (`quake`, `plain`, `idq3`, `dp`…; `Dialect::id`).
fn dialect_str(d: Dialect) -> &'static str {
    d.id()
}

/// Caps what a server controls in a record (R8): at most [`MAX_PLAYERS`] players and
/// [`MAX_WARNINGS`] warnings (the rest said in one more warning). The round applies it to
/// every record as it arrives, so a round holds no more than that per server; the store
/// applies it again before writing.
pub fn cap_record(rec: &mut Record) {
    let Some(info) = rec.info.as_mut() else {
        return;
    };
    if let Some(players) = info.players.as_mut() {
        if players.len() > MAX_PLAYERS {
            let n = players.len() - MAX_PLAYERS;
            players.truncate(MAX_PLAYERS);
            info.warnings.push(format!(
                "{n} more players not stored (at most {MAX_PLAYERS})"
            ));
        }
    }
    if info.warnings.len() > MAX_WARNINGS {
        let n = info.warnings.len() - MAX_WARNINGS;
        info.warnings.truncate(MAX_WARNINGS);
        info.warnings.push(format!("and {n} more"));
    }
}

/// The JSON record stored on the server's row: players left out (they are sessions), and the
/// numbers that change every round (`rtt_ms`, `num_players`, `num_bots`, `num_spectators`:
/// they are the row's columns and the series), so the record is rewritten only when the
/// rest changes. At most [`MAX_RECORD_BYTES`]: a bigger one loses its rules and extra
/// fields, then everything but its address, game and status, and says so.
pub fn stored_record(rec: &Record) -> Result<String, StoreError> {
    let over = rec.info.as_ref().is_some_and(|i| {
        i.warnings.len() > MAX_WARNINGS || i.players.as_ref().is_some_and(|p| p.len() > MAX_PLAYERS)
    });
    let capped;
    let rec = if over {
        let mut r = rec.clone();
        cap_record(&mut r);
        capped = r;
        &capped
    } else {
        rec
    };
    let mut v = serde_json::to_value(rec)?;
    if let Some(o) = v.as_object_mut() {
        for k in [
            "players",
            "rtt_ms",
            "num_players",
            "num_bots",
            "num_spectators",
        ] {
            o.remove(k);
        }
    }
    let json = v.to_string();
    if json.len() <= MAX_RECORD_BYTES {
        return Ok(json);
    }
    let note = format!(
        "record of {} bytes over the store's {MAX_RECORD_BYTES}: rules and extra fields not stored",
        json.len()
    );
    if let Some(o) = v.as_object_mut() {
        o.insert("rules".into(), serde_json::json!({}));
        o.remove("extra");
        let warnings = o
            .entry("warnings")
            .or_insert_with(|| serde_json::Value::Array(Vec::new()));
        if let Some(w) = warnings.as_array_mut() {
            w.push(note.into());
        }
    }
    let json = v.to_string();
    if json.len() <= MAX_RECORD_BYTES {
        return Ok(json);
    }
    Ok(serde_json::json!({
        "address": rec.address,
        "game": rec.game,
        "status": rec.status,
        "warnings": [format!("record of {} bytes over the store's {MAX_RECORD_BYTES}: not stored", json.len())],
    })
    .to_string())
}

/// A hash of what [`stored_record`] keeps of a record, computed without writing the JSON (a
/// round writes the record only of the servers whose hash changed).
pub(super) fn record_hash(rec: &Record) -> u64 {
    let mut h = stable_hasher();
    (&rec.address, &rec.game, rec.status, &rec.error).hash(&mut h);
    if let Some(i) = &rec.info {
        (i.name.as_bytes(), i.name.dialect().id(), i.map.as_bytes()).hash(&mut h);
        (&i.gametype, &i.version, i.max_players, i.password).hash(&mut h);
        (&i.warnings, i.truncated, i.unverified, i.rules.len()).hash(&mut h);
        for pair in i.rules.pairs() {
            pair.hash(&mut h);
        }
        if let Some(e) = &i.extra {
            serde_json::to_vec(&**e).ok().hash(&mut h);
        }
    }
    h.finish()
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

fn capped(bytes: &[u8]) -> Vec<u8> {
    bytes.get(..MAX_NAME_BYTES).unwrap_or(bytes).to_vec()
}

/// One value of a row to insert with bound parameters.
enum Val {
    I(Option<i64>),
    F(Option<f64>),
    S(Option<String>),
    B(Option<Vec<u8>>),
}

/// Most bound values in one statement. SQLite allows 32,766 and PostgreSQL 65,535, but
/// binding costs grow faster than linearly with a statement's parameters in sqlx's SQLite
/// path (docs/tracker.md), and PostgreSQL is as fast with 250.
const MAX_BINDS: usize = 250;

type Tx<'c> = sqlx::Transaction<'c, sqlx::Any>;

/// Inserts `rows` (all of one width) as `head (…), (…) … tail` statements of up to
/// [`MAX_BINDS`] values, numbered `$1…`; returns the rows the statements return.
async fn insert_rows(
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
fn push_lit(out: &mut String, v: Option<i64>) {
    match v {
        Some(v) => {
            let _ = write!(out, "{v}");
        }
        None => out.push_str("CAST(NULL AS BIGINT)"),
    }
}

/// A column of numbers: its value in a row.
type Column<'a, T> = &'a dyn Fn(&T) -> Option<i64>;

/// Writes rows of numbers in bulk, `columns` of each of `rows`; `sql` says where they go, with
/// `ROWS` in the place of a table of them, `v`, whose columns are `column1`, `column2`…:
///
/// - SQLite: `(VALUES (…), (…)…) AS v`, the numbers written in as literals, [`LITERAL_ROWS`] rows
///   a statement (binding 6 values a row costs more than parsing them);
/// - PostgreSQL: `unnest($1::bigint[], $2::bigint[], …) AS v(column1, column2, …)`, a bound
///   array of each column, all rows in one statement.
///
/// The numbers are `i64`s written by Rust: nothing in them can change the statement.
async fn number_rows<T>(
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

/// The writer's in-memory maps: foldhash, not SipHash (a round looks up every server and
/// every player).
type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// A hasher that hashes alike in every process ([`record_hash`] is stored).
fn stable_hasher() -> impl Hasher {
    foldhash::quality::FixedState::with_seed(0x6672_6167).build_hasher()
}

/// A stable hash of `v` ([`stable_hasher`]).
fn hash_of(v: impl Hash) -> u64 {
    let mut h = stable_hasher();
    v.hash(&mut h);
    h.finish()
}

/// A player on a server: its name's bytes (at most [`MAX_NAME_BYTES`]), dialect, and which
/// of that name (0 for the first).
type PlayerKey = (Box<[u8]>, Dialect, i64);

/// An open session as the writer remembers it.
#[derive(Debug, Clone)]
struct Session {
    /// Its row's id (`sessions.id`).
    id: i64,
    player_id: i64,
    joined: i64,
    last_seen: i64,
    score: Option<i64>,
    team: Option<i64>,
    /// `last_seen` as written.
    written_seen: i64,
}

/// A server as the writer remembers it.
#[derive(Debug, Clone)]
struct ServerState {
    id: i64,
    status: &'static str,
    error: Option<String>,
    /// Hash of what a `server_changes` row holds.
    change: u64,
    /// Hash of the stored record.
    record: u64,
    country: Option<String>,
    last_online: Option<i64>,
    up_since: Option<i64>,
    down_since: Option<i64>,
    sessions: Map<PlayerKey, Session>,
}

impl ServerState {
    /// Ends every open session at the last round its player was seen in (the tracker did
    /// not see them leave), as updates for `closes`.
    fn end_sessions(&mut self, closes: &mut Vec<SessionUpdate>) {
        for (_, s) in self.sessions.drain() {
            closes.push(SessionUpdate {
                id: s.id,
                server_id: self.id,
                player_id: s.player_id,
                last_seen: s.last_seen,
                left: Some(s.last_seen),
                score: s.score,
                team: s.team,
            });
        }
    }
}

/// What the database holds now, as far as the writer needs it.
#[derive(Debug, Default)]
pub(super) struct State {
    servers: Map<String, ServerState>,
    last_round: Option<i64>,
    /// Sessions were loaded from the database, not yet checked against the gap.
    resumed: bool,
    rounds: u64,
}

/// Hash of a server's change-row state.
fn change_hash(
    online: bool,
    name: Option<&[u8]>,
    dialect: Option<&str>,
    map: Option<&str>,
    gametype: Option<&str>,
    max_players: Option<i64>,
    password: Option<bool>,
) -> u64 {
    if online {
        hash_of((true, name, dialect, map, gametype, max_players, password))
    } else {
        hash_of(false)
    }
}

/// A dialect as stored (an unknown id, which this writer never wrote, as the generic one).
fn dialect_of(id: &str) -> Dialect {
    id.parse().unwrap_or_default()
}

impl State {
    /// Loads the servers, the open sessions and the last round.
    pub(super) async fn load(conn: &mut sqlx::AnyConnection) -> Result<State, StoreError> {
        let mut st = State::default();
        let rows = sqlx::query(
            // `last_online` as of the latest numbers: an unchanged server's row is not
            // rewritten, so its column says when it last changed; an online server last
            // answered in its latest round (a server going down rewrites its row, with the
            // last round it answered in).
            "SELECT s.id, s.addr, s.status, s.error, s.country, COALESCE(CASE WHEN l.status = 0 \
             THEN l.at END, s.last_online), s.up_since, s.down_since, s.name_raw, s.dialect, \
             s.map, s.gametype, s.max_players, s.password, s.record_hash FROM servers s \
             LEFT JOIN server_latest l ON l.server_id = s.id",
        )
        .fetch_all(&mut *conn)
        .await?;
        let mut by_id = Map::default();
        for r in &rows {
            let addr: String = r.try_get(1)?;
            let status: String = r.try_get(2)?;
            let status = code_status(status_code(&status));
            let name: Option<Vec<u8>> = r.try_get(8)?;
            let dialect: Option<String> = r.try_get(9)?;
            let map: Option<String> = r.try_get(10)?;
            let gametype: Option<String> = r.try_get(11)?;
            let password: Option<i64> = r.try_get(13)?;
            let record: Option<i64> = r.try_get(14)?;
            let id: i64 = r.try_get(0)?;
            by_id.insert(id, addr.clone());
            st.servers.insert(
                addr,
                ServerState {
                    id,
                    change: change_hash(
                        status == "online",
                        name.as_deref(),
                        dialect.as_deref(),
                        map.as_deref(),
                        gametype.as_deref(),
                        r.try_get(12)?,
                        password.map(|p| p != 0),
                    ),
                    status,
                    error: r.try_get(3)?,
                    record: record.map_or(0, |h| u64::from_ne_bytes(h.to_ne_bytes())),
                    country: r.try_get(4)?,
                    last_online: r.try_get(5)?,
                    up_since: r.try_get(6)?,
                    down_since: r.try_get(7)?,
                    sessions: Map::default(),
                },
            );
        }
        let rows = sqlx::query(
            "SELECT s.server_id, s.player_id, s.nth, s.joined, s.last_seen, s.last_score, \
             s.team, p.name_raw, p.dialect, s.id FROM sessions s \
             JOIN players p ON p.id = s.player_id WHERE s.left_at IS NULL",
        )
        .fetch_all(&mut *conn)
        .await?;
        for r in &rows {
            let server_id: i64 = r.try_get(0)?;
            let Some(srv) = by_id.get(&server_id).and_then(|a| st.servers.get_mut(a)) else {
                continue;
            };
            let last_seen: i64 = r.try_get(4)?;
            let name: Vec<u8> = r.try_get(7)?;
            let dialect: String = r.try_get(8)?;
            srv.sessions.insert(
                (name.into_boxed_slice(), dialect_of(&dialect), r.try_get(2)?),
                Session {
                    id: r.try_get(9)?,
                    player_id: r.try_get(1)?,
                    joined: r.try_get(3)?,
                    last_seen,
                    score: r.try_get(5)?,
                    team: r.try_get(6)?,
                    written_seen: last_seen,
                },
            );
        }
        st.last_round = sqlx::query("SELECT MAX(at) FROM rounds")
            .fetch_one(&mut *conn)
            .await?
            .try_get(0)?;
        st.resumed = true;
        Ok(st)
    }
}

/// A session to close or refresh: its key and the values to write.
struct SessionUpdate {
    /// The session's row.
    id: i64,
    server_id: i64,
    player_id: i64,
    last_seen: i64,
    left: Option<i64>,
    score: Option<i64>,
    team: Option<i64>,
}

/// A session to open, once its player has an id.
struct NewSession {
    /// The server, an index into the round's records.
    server: usize,
    key: PlayerKey,
    name: String,
    score: Option<i64>,
    team: Option<i64>,
    is_bot: Option<bool>,
    clan: Option<Vec<u8>>,
}

/// How the writer keeps history: the session gap and how often open sessions are refreshed.
#[derive(Debug, Clone, Copy)]
pub(super) struct WriteParams {
    pub(super) session_gap_ms: i64,
    pub(super) flush_rounds: u64,
    pub(super) backend: Backend,
}

/// The players on each server that answered, in its order, as the round saw them.
pub(super) type Live = HashMap<String, Vec<PlayerRow>>;

/// The player list a record gives: its list, none when it says it has no players, or `None`
/// when the players are unknown this round (a Quake III `getinfo` answered and its
/// `getstatus` was lost): then sessions and the live list stay as they were.
fn listed(info: &fragstat::ServerInfo) -> Option<&[fragstat::Player]> {
    match info.players.as_deref() {
        Some(l) => Some(l),
        None if info.num_players == 0 => Some(&[]),
        None => None,
    }
}

/// The keys of a server's listed players, in its order: the name's bytes (capped), its
/// dialect, and which of that name it is.
fn player_keys(list: &[fragstat::Player]) -> Vec<PlayerKey> {
    let mut keys: Vec<PlayerKey> = Vec::with_capacity(list.len());
    // Small lists (nearly all) count earlier equal names; long ones (up to MAX_PLAYERS) a map.
    let mut counts: Option<Map<(&[u8], Dialect), i64>> = (list.len() > 16).then(Map::default);
    for pl in list {
        let bytes = pl.name.as_bytes();
        let bytes = bytes.get(..MAX_NAME_BYTES).unwrap_or(bytes);
        let d = pl.name.dialect();
        let nth = match counts.as_mut() {
            Some(c) => {
                let n = c.entry((bytes, d)).or_insert(0);
                *n += 1;
                *n - 1
            }
            None => keys.iter().filter(|k| k.1 == d && *k.0 == *bytes).count() as i64,
        };
        keys.push((bytes.into(), d, nth));
    }
    keys
}

/// A listed player of a server that answered, for the live list: its session when it was
/// open already, else the index of the session it opens.
enum Slot {
    Known { player_id: i64, joined: i64 },
    Opened(usize),
}

/// One server's numbers this round: its `series` row once its id is known (copied into
/// `server_latest` from there).
struct SeriesRow {
    server: usize,
    status: i64,
    players: Option<i64>,
    bots: Option<i64>,
    rtt: Option<i64>,
}

/// Writes `round` given the database's state `st` (updated in place; the caller drops it
/// when the transaction fails, so it is reloaded). Returns the players on each server that
/// answered, and the servers that answered without saying who plays.
pub(super) async fn write(
    tx: &mut Tx<'_>,
    st: &mut State,
    round: &RoundData,
    p: WriteParams,
) -> Result<(Live, Vec<String>), StoreError> {
    let at = round.at;
    st.rounds += 1;
    let mut closes: Vec<SessionUpdate> = Vec::new();
    // A restart after a long pause: the sessions open in the database ended, at the last
    // round each was seen in (the tracker did not see them leave).
    if st.resumed {
        st.resumed = false;
        if st.last_round.is_none_or(|l| at - l > p.session_gap_ms) {
            for srv in st.servers.values_mut() {
                srv.end_sessions(&mut closes);
            }
        }
    }

    // One row per address and round.
    let mut seen: HashSet<&str, foldhash::fast::RandomState> = HashSet::default();
    let records: Vec<(&str, &Record)> = round
        .records
        .iter()
        .filter_map(|rec| {
            let addr = rec.address.as_deref()?;
            seen.insert(addr).then_some((addr, rec))
        })
        .collect();
    // Each record's server id (0 until a new server's row is written).
    let mut ids: Vec<i64> = vec![0; records.len()];

    let mut online = 0i64;
    let mut players_total = 0i64;
    let mut upserts: Vec<Vec<Val>> = Vec::new();
    let mut series: Vec<SeriesRow> = Vec::with_capacity(records.len());
    let mut changes: Vec<(usize, Vec<Val>)> = Vec::new();
    let mut opens: Vec<NewSession> = Vec::new();
    let mut flushes: Vec<SessionUpdate> = Vec::new();
    // The live list: (record, its listed players and their slots).
    let mut live_slots: Vec<(usize, Vec<Slot>)> = Vec::new();
    let mut unlisted = Vec::new();

    for (i, &(addr, rec)) in records.iter().enumerate() {
        let is_online = rec.status == Status::Online;
        let status = status_str(rec.status);
        let info = rec.info.as_ref().filter(|_| is_online);
        let num_players = info.map(|i| i64::from(i.num_players));
        let num_bots = info.and_then(|i| i.num_bots.map(i64::from));
        if is_online {
            online += 1;
            players_total += num_players.unwrap_or(0);
        }
        let name = info.map(|i| i.name.as_bytes());
        let dialect = info.map(|i| dialect_str(i.name.dialect()));
        let map = info.map(|i| no_nul(i.map.display()));
        let gametype = info.and_then(|i| i.gametype.as_deref());
        let gametype = gametype.map(|g| {
            if g.contains('\0') {
                std::borrow::Cow::Owned(no_nul(g.to_string()))
            } else {
                std::borrow::Cow::Borrowed(g)
            }
        });
        let max_players = info.map(|i| i64::from(i.max_players));
        let password = info.and_then(|i| i.password);
        let change = change_hash(
            is_online,
            name,
            dialect,
            map.as_deref(),
            gametype.as_deref(),
            max_players,
            password,
        );
        let country = round.countries.get(addr);
        let record_hash = record_hash(rec);
        let rtt = rec.rtt_ms.filter(|r| r.is_finite());
        series.push(SeriesRow {
            server: i,
            status: status_code(status),
            players: num_players,
            bots: num_bots,
            rtt: rtt.map(|r| (r * 10.0).round() as i64),
        });

        let known = st.servers.get(addr);
        let changed = known.is_none_or(|s| s.change != change);
        let upsert = changed
            || known.is_some_and(|s| {
                s.status != status
                    || s.error != rec.error
                    || s.record != record_hash
                    || (country.is_some() && s.country.as_ref() != country)
            });
        let was_online = known.is_some_and(|s| s.status == "online");
        let (up_since, down_since) = match known {
            Some(s) if was_online == is_online => (s.up_since, s.down_since),
            _ if is_online => (Some(at), None),
            _ => (None, Some(at)),
        };
        let last_online = if is_online {
            Some(at)
        } else {
            known.and_then(|s| s.last_online)
        };
        if upsert {
            upserts.push(vec![
                Val::S(Some(addr.to_string())),
                Val::S(Some(rec.game.clone())),
                Val::I(Some(at)),
                Val::I(Some(at)),
                Val::I(last_online),
                Val::S(Some(status.to_string())),
                Val::S(rec.error.clone()),
                Val::B(name.map(<[u8]>::to_vec)),
                Val::S(info.map(|i| i.name.display().to_lowercase())),
                Val::S(dialect.map(str::to_string)),
                Val::S(map.clone()),
                Val::S(gametype.as_deref().map(str::to_string)),
                Val::I(num_players),
                Val::I(max_players),
                Val::I(num_bots),
                Val::F(rtt),
                Val::I(password.map(i64::from)),
                Val::S(country.cloned()),
                Val::I(up_since),
                Val::I(down_since),
                Val::S(Some(stored_record(rec)?)),
                // The hash as its bits.
                Val::I(Some(i64::from_ne_bytes(record_hash.to_ne_bytes()))),
            ]);
        }
        if changed {
            changes.push((
                i,
                vec![
                    Val::I(Some(at)),
                    Val::I(Some(i64::from(is_online))),
                    Val::B(name.map(<[u8]>::to_vec)),
                    Val::S(dialect.map(str::to_string)),
                    Val::S(map),
                    Val::S(gametype.map(std::borrow::Cow::into_owned)),
                    Val::I(max_players),
                    Val::I(password.map(i64::from)),
                ],
            ));
        }

        // The server as remembered from now on.
        let entry = match st.servers.get_mut(addr) {
            Some(e) => e,
            None => st
                .servers
                .entry(addr.to_string())
                .or_insert_with(|| ServerState {
                    id: 0,
                    status: "",
                    error: None,
                    change: 0,
                    record: 0,
                    country: None,
                    last_online: None,
                    up_since: None,
                    down_since: None,
                    sessions: Map::default(),
                }),
        };
        entry.status = status;
        if entry.error != rec.error {
            entry.error.clone_from(&rec.error);
        }
        entry.change = change;
        entry.record = record_hash;
        if let Some(c) = country.filter(|c| entry.country.as_ref() != Some(*c)) {
            entry.country = Some(c.clone());
        }
        entry.last_online = last_online;
        entry.up_since = up_since;
        entry.down_since = down_since;
        ids[i] = entry.id;
        let server_id = entry.id;

        // Sessions: each listed player continues its open session or opens one; the open
        // sessions not listed end (the round saw them gone).
        let Some(info) = info else {
            continue;
        };
        let Some(list) = listed(info) else {
            unlisted.push(addr.to_string());
            continue;
        };
        let list = list.get(..MAX_PLAYERS).unwrap_or(list);
        let mut slots = Vec::with_capacity(list.len());
        let mut continued = 0usize;
        for (key, pl) in player_keys(list).into_iter().zip(list) {
            let score = pl.score.map(i64::from);
            let team = pl.team.map(i64::from);
            match entry.sessions.get_mut(&key) {
                Some(s) => {
                    continued += 1;
                    s.last_seen = at;
                    s.score = score;
                    s.team = team;
                    slots.push(Slot::Known {
                        player_id: s.player_id,
                        joined: s.joined,
                    });
                    let turn = (s.player_id.unsigned_abs() + st.rounds) % p.flush_rounds == 0;
                    if turn && s.written_seen != at {
                        s.written_seen = at;
                        flushes.push(SessionUpdate {
                            id: s.id,
                            server_id,
                            player_id: s.player_id,
                            last_seen: at,
                            left: None,
                            score,
                            team,
                        });
                    }
                }
                None => {
                    slots.push(Slot::Opened(opens.len()));
                    opens.push(NewSession {
                        server: i,
                        name: no_nul(pl.name.display().to_lowercase()),
                        key,
                        score,
                        team,
                        is_bot: pl.is_bot,
                        clan: pl.clan.as_ref().map(|c| capped(c.as_bytes())),
                    });
                }
            }
        }
        // Gone: the open sessions this round did not continue (every continued one was
        // seen this round; a session opened this round is not in the map yet).
        if continued < entry.sessions.len() {
            entry.sessions.retain(|_, s| {
                if s.last_seen == at {
                    return true;
                }
                closes.push(SessionUpdate {
                    id: s.id,
                    server_id,
                    player_id: s.player_id,
                    last_seen: s.last_seen,
                    left: Some(at),
                    score: s.score,
                    team: s.team,
                });
                false
            });
        }
        live_slots.push((i, slots));
    }
    // Servers that did not answer (or were not probed) for longer than the gap: their
    // sessions end at the last round each player was seen in.
    for srv in st.servers.values_mut() {
        if srv.sessions.is_empty() || srv.last_online.is_some_and(|l| at - l <= p.session_gap_ms) {
            continue;
        }
        srv.end_sessions(&mut closes);
    }

    // Servers: new and changed ones with all their columns (and their ids back).
    let rows = insert_rows(
        tx,
        "INSERT INTO servers (addr, game, first_seen, last_seen, last_online, status, error, \
         name_raw, name, dialect, map, gametype, num_players, max_players, num_bots, rtt_ms, \
         password, country, up_since, down_since, record, record_hash) VALUES ",
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
         password = COALESCE(excluded.password, servers.password), \
         country = COALESCE(excluded.country, servers.country), \
         up_since = excluded.up_since, down_since = excluded.down_since, \
         record = excluded.record, record_hash = excluded.record_hash RETURNING id, addr",
        upserts,
    )
    .await?;
    if !rows.is_empty() {
        for r in &rows {
            let id: i64 = r.try_get(0)?;
            let addr: String = r.try_get(1)?;
            if let Some(s) = st.servers.get_mut(&addr) {
                s.id = id;
            }
        }
        // The new servers' ids.
        for (i, &(addr, _)) in records.iter().enumerate() {
            if ids[i] == 0 {
                ids[i] = st.servers.get(addr).map_or(0, |s| s.id);
            }
        }
    }
    number_rows(
        tx,
        p.backend,
        "INSERT INTO series (server_id, at, status, players, bots, rtt) \
         SELECT column1, column2, column3, column4, column5, column6 FROM ROWS \
         WHERE true ON CONFLICT (at, server_id) DO NOTHING",
        &series,
        &[
            &|r: &SeriesRow| Some(ids[r.server]),
            &|_| Some(at),
            &|r| Some(r.status),
            &|r| r.players,
            &|r| r.bots,
            &|r| r.rtt,
        ],
    )
    .await?;
    // The same numbers, copied from the round's series rows, as each server's latest (an
    // older round written late by another tracker does not replace a newer one).
    sqlx::query(
        "INSERT INTO server_latest (server_id, at, status, players, bots, rtt) \
         SELECT server_id, at, status, players, bots, rtt FROM series WHERE at = $1 \
         ON CONFLICT (server_id) DO UPDATE SET at = excluded.at, status = excluded.status, \
         players = excluded.players, bots = excluded.bots, rtt = excluded.rtt \
         WHERE excluded.at >= server_latest.at",
    )
    .bind(at)
    .execute(&mut **tx)
    .await?;
    let changes: Vec<Vec<Val>> = changes
        .into_iter()
        .map(|(i, mut row)| {
            row.insert(0, Val::I(Some(ids[i])));
            row
        })
        .collect();
    insert_rows(
        tx,
        "INSERT INTO server_changes (server_id, at, online, name_raw, dialect, map, gametype, \
         max_players, password) VALUES ",
        " ON CONFLICT (server_id, at) DO NOTHING",
        changes,
    )
    .await?;

    // Sessions closed and refreshed (before any opens: a session can end and its player's
    // next begin in one round), and their players' last sighting.
    let mut last_sighting: Map<i64, (i64, i64)> = Map::default();
    let updates: Vec<&SessionUpdate> = closes.iter().chain(&flushes).collect();
    for u in &updates {
        let e = last_sighting
            .entry(u.player_id)
            .or_insert((u.last_seen, u.server_id));
        if u.last_seen > e.0 {
            *e = (u.last_seen, u.server_id);
        }
    }
    number_rows(
        tx,
        p.backend,
        "UPDATE sessions SET last_seen = v.column2, left_at = v.column3, \
         last_score = v.column4, team = v.column5 FROM ROWS \
         WHERE sessions.id = v.column1 AND sessions.left_at IS NULL",
        &updates,
        &[
            &|u: &&SessionUpdate| Some(u.id),
            &|u| Some(u.last_seen),
            &|u| u.left,
            &|u| u.score,
            &|u| u.team,
        ],
    )
    .await?;
    let sightings: Vec<(i64, (i64, i64))> = last_sighting.into_iter().collect();
    number_rows(
        tx,
        p.backend,
        "UPDATE players SET last_seen = v.column2, last_server_id = v.column3 FROM ROWS \
         WHERE players.id = v.column1 AND players.last_seen < v.column2",
        &sightings,
        &[
            &|s: &(i64, (i64, i64))| Some(s.0),
            &|s| Some(s.1 .0),
            &|s| Some(s.1 .1),
        ],
    )
    .await?;

    // Players of the new sessions: their identities, ids back.
    let mut identities: Map<(&[u8], Dialect), (&str, usize)> = Map::default();
    for o in &opens {
        identities
            .entry((&o.key.0, o.key.1))
            .or_insert((&o.name, o.server));
    }
    let rows = insert_rows(
        tx,
        "INSERT INTO players (name_raw, dialect, name, first_seen, last_seen, last_server_id) \
         VALUES ",
        " ON CONFLICT (name_raw, dialect) DO UPDATE SET last_seen = excluded.last_seen, \
         last_server_id = excluded.last_server_id RETURNING id, name_raw, dialect",
        identities
            .into_iter()
            .map(|((bytes, dialect), (name, server))| {
                vec![
                    Val::B(Some(bytes.to_vec())),
                    Val::S(Some(dialect_str(dialect).to_string())),
                    Val::S(Some(name.to_string())),
                    Val::I(Some(at)),
                    Val::I(Some(at)),
                    Val::I(Some(ids[server])),
                ]
            })
            .collect(),
    )
    .await?;
    let mut player_ids: Map<(Vec<u8>, Dialect), i64> = Map::default();
    for r in &rows {
        let dialect: String = r.try_get(2)?;
        player_ids.insert((r.try_get(1)?, dialect_of(&dialect)), r.try_get(0)?);
    }
    let mut session_rows: Vec<Vec<Val>> = Vec::with_capacity(opens.len());
    // Each opened session's player id and join time, for the live list.
    let mut opened: Vec<Option<(i64, i64)>> = Vec::with_capacity(opens.len());
    // The sessions to remember once their rows' ids are known.
    let mut remember: Vec<(usize, PlayerKey, Session)> = Vec::with_capacity(opens.len());
    for o in opens {
        let player_id = player_ids.get(&(o.key.0.to_vec(), o.key.1)).copied();
        opened.push(player_id.map(|id| (id, at)));
        let Some(player_id) = player_id else {
            continue;
        };
        session_rows.push(vec![
            Val::I(Some(player_id)),
            Val::I(Some(ids[o.server])),
            Val::I(Some(o.key.2)),
            Val::I(Some(at)),
            Val::I(Some(at)),
            Val::I(o.score),
            Val::I(o.team),
            Val::I(o.is_bot.map(i64::from)),
            Val::B(o.clan),
        ]);
        remember.push((
            o.server,
            o.key,
            Session {
                id: 0,
                player_id,
                joined: at,
                last_seen: at,
                score: o.score,
                team: o.team,
                written_seen: at,
            },
        ));
    }
    let rows = insert_rows(
        tx,
        "INSERT INTO sessions (player_id, server_id, nth, joined, last_seen, last_score, team, \
         is_bot, clan_raw) VALUES ",
        " ON CONFLICT (server_id, player_id, nth) WHERE left_at IS NULL DO NOTHING \
         RETURNING id, server_id, player_id, nth",
        session_rows,
    )
    .await?;
    let mut session_ids: Map<(i64, i64, i64), i64> = Map::default();
    for r in &rows {
        session_ids.insert((r.try_get(1)?, r.try_get(2)?, r.try_get(3)?), r.try_get(0)?);
    }
    for (server, key, mut session) in remember {
        let server_id = ids[server];
        let wanted = (server_id, session.player_id, key.2);
        session.id = match session_ids.get(&wanted) {
            Some(&id) => id,
            // Open already (another tracker writing this server): that row.
            None => sqlx::query(
                "SELECT id FROM sessions WHERE server_id = $1 AND player_id = $2 AND nth = $3 \
                 AND left_at IS NULL",
            )
            .bind(server_id)
            .bind(session.player_id)
            .bind(key.2)
            .fetch_optional(&mut **tx)
            .await?
            .map(|r| r.try_get(0))
            .transpose()?
            .unwrap_or(0),
        };
        if let Some(srv) = st.servers.get_mut(records[server].0) {
            srv.sessions.insert(key, session);
        }
    }

    sqlx::query(
        "INSERT INTO rounds (at, finished, servers, online, players) VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (at) DO NOTHING",
    )
    .bind(at)
    .bind(round.finished)
    .bind(i64::try_from(records.len()).unwrap_or(i64::MAX))
    .bind(online)
    .bind(players_total)
    .execute(&mut **tx)
    .await?;
    st.last_round = Some(at);

    // The players now, for the pages.
    let mut live = Live::with_capacity(live_slots.len());
    for (i, slots) in live_slots {
        let (addr, rec) = records[i];
        let Some(list) = rec.info.as_ref().and_then(listed) else {
            continue;
        };
        let mut rows = Vec::with_capacity(slots.len());
        for (slot, pl) in slots.into_iter().zip(list) {
            let known = match slot {
                Slot::Known { player_id, joined } => Some((player_id, joined)),
                Slot::Opened(o) => opened.get(o).copied().flatten(),
            };
            let Some((player_id, joined)) = known else {
                continue;
            };
            rows.push(PlayerRow {
                player_id,
                addr: addr.to_string(),
                at,
                joined,
                clan_raw: pl.clan.as_ref().map(|c| capped(c.as_bytes())),
                name_raw: capped(pl.name.as_bytes()),
                dialect: dialect_str(pl.name.dialect()).to_string(),
                score: pl.score.map(i64::from),
                ping: pl.ping.map(i64::from),
                team: pl.team.map(i64::from),
                is_bot: pl.is_bot,
            });
        }
        live.insert(addr.to_string(), rows);
    }
    Ok((live, unlisted))
}

impl Store {
    /// Writes one round in one transaction on the writer's own connection (never the
    /// readers' pool): what changed since the last round, and the round's series (module
    /// docs). Fails only when the database does; the next round then reloads what the
    /// database holds.
    pub async fn write_round(&self, round: &RoundData) -> Result<(), StoreError> {
        let mut w = self.writer.lock().await;
        let params = self.write_params();
        match w.write(round, params, &self.pool).await {
            Ok((mut live, unlisted)) => {
                if let Ok(mut l) = self.live.write() {
                    // Servers whose players are unknown this round keep the last list seen.
                    for addr in unlisted {
                        if let Some(old) = l.remove(&addr) {
                            live.insert(addr, old);
                        }
                    }
                    *l = live;
                }
                Ok(())
            }
            Err(e) => {
                w.reset();
                Err(e)
            }
        }
    }

    /// Deletes rounds, series, changes and sessions older than `before` (Unix ms), players and
    /// servers not seen since; in one transaction. Returns the rows deleted. (A round's
    /// maintenance, [`Store::maintain`], keeps each table for its own time.)
    pub async fn prune(&self, before: i64) -> Result<u64, StoreError> {
        self.prune_tables(&super::Retention::all(before)).await
    }
}

/// Opens `sqlx::Connection::begin` on the writer's connection.
pub(super) async fn begin(conn: &mut sqlx::AnyConnection) -> Result<Tx<'_>, sqlx::Error> {
    conn.begin().await
}
